//! Hardware counters where there is no PMU: reported unavailable with the reason,
//! shown as `n/a` (never 0), and nothing else breaks.

use yieldprof::counters::{capabilities, Availability, Count, CounterEvent, EventSource, Reason};

#[yieldprof::instrument_wait]
fn short_nap() {
    // SAFETY: usleep has no preconditions.
    unsafe { libc::usleep(1) };
}

/// Whether the kernel registered a CPU PMU (`cpu`, `cpu_core`, `armv8_pmuv3_0`, ...).
fn kernel_has_a_pmu() -> bool {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().to_lowercase();
                name.starts_with("cpu") || name.contains("pmu")
            })
        })
        .unwrap_or(true)
}

#[test]
fn without_a_pmu_hardware_counters_say_why_and_read_na() {
    let caps = capabilities();
    let hardware: Vec<_> = CounterEvent::ALL
        .into_iter()
        .filter(|e| e.source() == EventSource::PerfHardware)
        .collect();
    assert_eq!(hardware.len(), 5);
    if !kernel_has_a_pmu() {
        for &e in &hardware {
            let Availability::Unavailable(why) = caps.get(e) else {
                panic!("{} available without a PMU", e.name());
            };
            assert_eq!(
                why,
                Reason::NoPmu {
                    errno: libc::ENOENT
                },
                "{}",
                e.name()
            );
            assert_eq!(why.to_string(), "no hardware PMU (ENOENT) — typical in VMs");
        }
    }
    // getrusage is always there.
    assert!(caps.get(CounterEvent::VoluntarySwitches).is_available());

    std::thread::spawn(short_nap).join().unwrap();
    let profile = yieldprof::snapshot();
    let site = profile.site("short_nap").unwrap();
    assert!(site.counters.voluntary_switches.value().unwrap() >= 1);
    for &e in &hardware {
        let count = site.counters.get(e);
        match caps.get(e) {
            Availability::Unavailable(_) => {
                assert_eq!(count, Count::NotAvailable, "{}", e.name());
                assert_eq!(count.to_string(), "n/a");
            }
            Availability::Available => assert!(count.value().is_some(), "{}", e.name()),
        }
    }
    let summary = profile.summary();
    for (e, line) in hardware.iter().filter_map(|&e| {
        let why = caps.get(e).reason()?;
        Some((
            e,
            format!("  {:<22} {:<10} n/a: {why}", e.name(), "perf hw"),
        ))
    }) {
        assert!(
            summary.contains(&line),
            "{} missing from:\n{summary}",
            e.name()
        );
    }
    assert!(
        summary.lines().all(|l| l.chars().count() <= 100),
        "{summary}"
    );
}
