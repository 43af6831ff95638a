//! The calibration of the switch counter's kernel cost (at a process's first report that
//! needs it) runs on two threads of its own, in no recording thread's figures: the
//! report says what it cost, so that its figures add up against the process's
//! (flume's suite: each report's process made ~21 000 switches more than its threads,
//! 2026-12-06). Ground truth: the process's getrusage around the first
//! `profiler_time()`. (Own test binary: the calibration runs once per process.)

use std::time::Duration;
use yieldprof::counters::capabilities;
use yieldprof::counters::CounterEvent;

/// The whole process's (switches, CPU ns), exited threads included.
fn process() -> (u64, u64) {
    // SAFETY: an all-zero rusage is valid; getrusage only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        ns(ru.ru_utime) + ns(ru.ru_stime),
    )
}

#[yieldprof::instrument_wait]
fn nap() {
    std::thread::sleep(Duration::from_micros(200));
}

#[test]
fn the_calibrations_own_switches_and_cpu_time_are_reported() {
    if !capabilities()
        .get(CounterEvent::ContextSwitches)
        .is_available()
    {
        eprintln!("perf unavailable: no switch counter to calibrate: skipped");
        return;
    }
    let _guard = yieldprof::Options::from_env()
        .counters_after(0)
        .out_dir(std::env::temp_dir().join(format!("yieldprof-cal-{}", std::process::id())))
        .init();
    // Switching waits on a thread with its counter open: the estimate needs it.
    std::thread::spawn(|| (0..50).for_each(|_| nap()))
        .join()
        .unwrap();
    let snapshot = yieldprof::snapshot();
    let before = process();
    let own = snapshot.profiler_time();
    let after = process();
    eprintln!("{own}");
    if own.kernel_ns_per_switch.is_none() {
        eprintln!("the calibration could not run here (no pinning): nothing to check");
        return;
    }
    let (switches, cpu) = (after.0 - before.0, after.1 - before.1);
    // Its threads block at every round trip: the process's switches are theirs, and a
    // few of the test's; getrusage's CPU time is in ticks of 1–4 ms.
    assert!(
        own.calibration_switches > 0
            && switches >= own.calibration_switches * 9 / 10
            && switches <= own.calibration_switches * 3 / 2,
        "reported {} switches, the process made {switches}",
        own.calibration_switches
    );
    assert!(
        own.calibration_cpu_ns <= cpu + 10_000_000,
        "reported {} ns of CPU, the process used {cpu} ns",
        own.calibration_cpu_ns
    );
    assert!(own.to_string().contains("the calibration itself"), "{own}");
    // Once per process: a later report does not run it again.
    let again = process();
    yieldprof::snapshot().profiler_time();
    assert!(process().0 - again.0 < 1_000);
}
