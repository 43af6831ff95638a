use super::*;

#[test]
fn enoent_on_a_hardware_event_means_no_pmu() {
    let r = Reason::from_errno(libc::ENOENT, Some(2), EventSource::PerfHardware);
    assert_eq!(
        r,
        Reason::NoPmu {
            errno: libc::ENOENT
        }
    );
    assert_eq!(r.to_string(), "no hardware PMU (ENOENT) — typical in VMs");
    assert_eq!(r.errno(), Some(2));
}

#[test]
fn enoent_on_a_software_event_is_unsupported_not_a_missing_pmu() {
    let r = Reason::from_errno(libc::ENOENT, Some(2), EventSource::PerfSoftware);
    assert_eq!(
        r,
        Reason::NotSupported {
            errno: libc::ENOENT
        }
    );
}

#[test]
fn paranoid_three_explains_both_eacces_and_eperm() {
    for errno in [libc::EACCES, libc::EPERM] {
        let r = Reason::from_errno(errno, Some(3), EventSource::PerfSoftware);
        assert_eq!(r, Reason::Paranoid { level: 3, errno });
        assert!(r.to_string().starts_with("perf_event_paranoid=3"), "{r}");
    }
}

#[test]
fn paranoid_two_blocks_kernel_mode_software_counters_only() {
    let sw = Reason::from_errno(libc::EACCES, Some(2), EventSource::PerfSoftware);
    assert_eq!(
        sw,
        Reason::Paranoid {
            level: 2,
            errno: libc::EACCES
        }
    );
    assert!(sw.to_string().contains("CAP_PERFMON"));
    // Hardware counters are user-mode only, which level 2 allows: something else.
    let hw = Reason::from_errno(libc::EACCES, Some(2), EventSource::PerfHardware);
    assert_eq!(
        hw,
        Reason::Denied {
            errno: libc::EACCES
        }
    );
}

#[test]
fn eperm_below_paranoid_three_points_at_seccomp() {
    let r = Reason::from_errno(libc::EPERM, Some(1), EventSource::PerfSoftware);
    assert_eq!(r, Reason::Denied { errno: libc::EPERM });
    assert_eq!(
        r.to_string(),
        "blocked by seccomp or a security module (EPERM)"
    );
}

#[test]
fn the_other_errnos_map_to_their_own_hints() {
    let hw = EventSource::PerfHardware;
    assert_eq!(
        Reason::from_errno(libc::ENOSYS, None, hw),
        Reason::NoSyscall
    );
    assert_eq!(
        Reason::from_errno(libc::EMFILE, None, hw),
        Reason::FdLimit {
            errno: libc::EMFILE
        }
    );
    assert_eq!(Reason::from_errno(libc::EBUSY, None, hw), Reason::Busy);
    assert_eq!(
        Reason::from_errno(libc::EINVAL, None, hw),
        Reason::NotSupported {
            errno: libc::EINVAL
        }
    );
    assert_eq!(
        Reason::from_errno(libc::EOPNOTSUPP, None, hw),
        Reason::NoPmu {
            errno: libc::EOPNOTSUPP
        }
    );
    assert_eq!(
        Reason::from_errno(9999, None, hw).to_string(),
        "perf_event_open failed (errno 9999)"
    );
    assert_eq!(
        Reason::FdBudget { budget: 512 }.to_string(),
        "fd budget reached (512 fds)"
    );
}

#[test]
fn every_hint_fits_a_100_column_table_row() {
    let reasons = [
        Reason::NoPmu {
            errno: libc::EOPNOTSUPP,
        },
        Reason::Paranoid {
            level: 3,
            errno: libc::EACCES,
        },
        Reason::Paranoid {
            level: 2,
            errno: libc::EACCES,
        },
        Reason::Denied { errno: libc::EPERM },
        Reason::Denied {
            errno: libc::EACCES,
        },
        Reason::NoSyscall,
        Reason::NotSupported {
            errno: libc::EOPNOTSUPP,
        },
        Reason::FdLimit {
            errno: libc::EMFILE,
        },
        Reason::FdBudget { budget: usize::MAX },
        Reason::Busy,
        Reason::PmuFull,
        Reason::Off,
        Reason::Other { errno: 9999 },
    ];
    for r in reasons {
        // The capability row is 2 + 22 + 1 + 10 + 1 + "n/a: " before the hint.
        let width = 41 + r.to_string().chars().count();
        assert!(width <= 100, "{r}: {width} columns");
    }
}

#[test]
fn paranoid_is_parsed_with_its_newline_and_rejects_garbage() {
    assert_eq!(parse_paranoid("2\n"), Some(2));
    assert_eq!(parse_paranoid("-1\n"), Some(-1));
    assert_eq!(parse_paranoid("  4 "), Some(4));
    assert_eq!(parse_paranoid(""), None);
    assert_eq!(parse_paranoid("two"), None);
}

#[test]
fn the_hardware_plan_keeps_only_available_hardware_events_in_order() {
    let no_pmu = Availability::Unavailable(Reason::NoPmu {
        errno: libc::ENOENT,
    });
    let mut status = [Availability::Available; N];
    assert_eq!(
        plan(&status, EventSource::PerfHardware),
        vec![
            CounterEvent::CacheMisses,
            CounterEvent::CacheReferences,
            CounterEvent::L1dReadMisses,
            CounterEvent::Instructions,
            CounterEvent::Cycles
        ]
    );
    assert_eq!(group_fds(5), 6);
    // A CPU without an L1D read-miss event: the rest still form a group.
    status[CounterEvent::L1dReadMisses.index()] = no_pmu;
    assert_eq!(plan(&status, EventSource::PerfHardware).len(), 4);
    // No PMU at all: no group, no fd.
    for e in events_of(EventSource::PerfHardware, |_| true) {
        status[e.index()] = no_pmu;
    }
    assert!(plan(&status, EventSource::PerfHardware).is_empty());
    assert_eq!(group_fds(0), 0);
    assert_eq!(
        plan(&status, EventSource::PerfSoftware),
        vec![
            CounterEvent::ContextSwitches,
            CounterEvent::CpuMigrations,
            CounterEvent::PageFaults
        ]
    );
}

#[test]
fn a_hardware_group_too_big_for_the_pmu_loses_its_last_events() {
    let all = vec![
        CounterEvent::CacheMisses,
        CounterEvent::CacheReferences,
        CounterEvent::L1dReadMisses,
        CounterEvent::Instructions,
        CounterEvent::Cycles,
    ];
    // A PMU with room for three of them.
    let mut tries = Vec::new();
    let (kept, dropped) = fit_group(all.clone(), |g| {
        tries.push(g.len());
        g.len() <= 3
    });
    assert_eq!(kept, all[..3]);
    assert_eq!(dropped, all[3..]);
    assert_eq!(tries, vec![5, 4, 3]);
    // One that runs everything is asked once; one that runs nothing keeps nothing.
    assert_eq!(fit_group(all.clone(), |_| true), (all.clone(), vec![]));
    assert_eq!(fit_group(all.clone(), |_| false), (vec![], all.clone()));
    // No hardware events (no PMU): nothing is tried.
    assert_eq!(
        fit_group(vec![], |_| panic!("tried an empty group")),
        (vec![], vec![])
    );
}

#[test]
fn a_group_read_is_parsed_by_id_whatever_the_order() {
    let ids = [41, 42, 43];
    let events = [
        CounterEvent::CacheMisses,
        CounterEvent::Instructions,
        CounterEvent::Cycles,
    ];
    // nr, enabled, running, then {value, id}: the dummy leader (id 40) first, the
    // members in another order than they were opened.
    let buf = [4, 1000, 250, 0, 40, 900, 43, 7, 41, 300, 42];
    let mut out = [0; N];
    assert_eq!(
        parse_group(&buf, &ids, &events, &mut out),
        Some((1000, 250))
    );
    assert_eq!(out[CounterEvent::CacheMisses.index()], 7);
    assert_eq!(out[CounterEvent::Instructions.index()], 300);
    assert_eq!(out[CounterEvent::Cycles.index()], 900);
}

#[test]
fn a_short_or_incomplete_group_read_is_rejected() {
    let ids = [41, 42];
    let events = [CounterEvent::CacheMisses, CounterEvent::Cycles];
    let mut out = [0; N];
    assert_eq!(parse_group(&[], &ids, &events, &mut out), None);
    assert_eq!(
        parse_group(&[3, 10, 10, 0, 40, 5], &ids, &events, &mut out),
        None
    );
    // Complete buffer, but member 42 is gone (its counter was closed).
    assert_eq!(
        parse_group(&[2, 10, 10, 0, 40, 5, 41], &ids, &events, &mut out),
        None
    );
    assert_eq!(
        parse_group(&[u64::MAX, 10, 10], &ids, &events, &mut out),
        None
    );
}

#[test]
fn multiplexed_counts_scale_by_enabled_over_running() {
    assert_eq!(scale(100, 1000, 1000), Some((100, false)));
    assert_eq!(scale(100, 1000, 250), Some((400, true)));
    assert_eq!(scale(0, 0, 0), Some((0, false)));
    // Never on the PMU in this window: no estimate, rather than a fake 0.
    assert_eq!(scale(0, 1000, 0), None);
    assert_eq!(scale(u64::MAX, 2, 1), Some((u64::MAX, true)));
}

#[test]
fn the_pool_never_hands_out_more_than_the_limit() {
    let pool: &'static FdPool = Box::leak(Box::new(FdPool::new()));
    let held: Vec<Reservation> = (0..200).filter_map(|_| pool.reserve(4, 512)).collect();
    assert_eq!(held.len(), 128);
    assert_eq!(pool.in_use(), 512);
    assert!(pool.reserve(1, 512).is_none());
    drop(held);
    assert_eq!(pool.in_use(), 0);
    assert!(pool.reserve(usize::MAX, usize::MAX).is_some());
}

#[test]
fn every_n_samples_one_episode_in_n() {
    let p = Policy::of(CounterSampling::Every(4));
    let mut credit = p.start();
    let mut sampled = Vec::new();
    for episode in 0..12 {
        if credit >= 0 {
            sampled.push(episode);
            credit = p.spend(credit, 5_000);
        }
        credit = p.earn(credit, 1_000);
    }
    assert_eq!(sampled, vec![0, 4, 8]);
}

#[test]
fn auto_spends_at_most_its_share_of_wait_time_on_reads() {
    let p = Policy::of(CounterSampling::Auto);
    // 1 µs episodes, 2 µs of reads each time one is sampled.
    let (episode, cost) = (1_000u64, 2_000u64);
    let mut credit = p.start();
    let (mut reads, n) = (0u64, 100_000u64);
    for _ in 0..n {
        if credit >= 0 {
            reads += 1;
            credit = p.spend(credit, cost);
        }
        credit = p.earn(credit, episode);
    }
    let spent = reads * cost;
    let waited = n * episode;
    assert!(
        spent * 100 <= waited * u64::from(AUTO_BUDGET_PERCENT) + cost * 100,
        "{reads} reads"
    );
    // ... and it does read: about 1 in (cost / 2% of the episode) = 1 in 100.
    assert!((900..=1_100).contains(&reads), "{reads} reads");
}

#[test]
fn auto_reads_every_episode_that_is_long_enough_to_pay_for_it() {
    let p = Policy::of(CounterSampling::Auto);
    let mut credit = p.start();
    for _ in 0..1000 {
        assert!(credit >= 0);
        credit = p.spend(credit, 1_000);
        // A 60 µs sleep earns 1.2 µs of reads.
        credit = p.earn(credit, 60_000);
    }
}

#[test]
fn off_never_samples() {
    let p = Policy::of(CounterSampling::Off);
    let mut credit = p.start();
    for _ in 0..1000 {
        assert!(credit < 0);
        credit = p.earn(credit, 1 << 50);
    }
    assert_eq!(Policy::of(CounterSampling::Every(0)), p);
}

#[test]
fn sampling_round_trips_through_its_encoding() {
    for s in [
        CounterSampling::Off,
        CounterSampling::Auto,
        CounterSampling::Every(1),
        CounterSampling::Every(64),
    ] {
        assert_eq!(CounterSampling::decode(s.encode()), s);
    }
    assert_eq!(
        CounterSampling::decode(CounterSampling::Every(0).encode()),
        CounterSampling::Off
    );
    assert_eq!(CounterSampling::Every(8).to_string(), "1 of 8 episodes");
}

fn snap(values: &[(CounterEvent, u64)], ns: u64, sampled: u64) -> NodeSnap {
    let mut n = NodeSnap {
        sampled,
        ..NodeSnap::default()
    };
    for &(e, v) in values {
        n.values[e.index()] = v;
        n.ns[e.index()] = ns;
    }
    n
}

#[test]
fn fully_sampled_sites_are_exact_and_missing_events_are_not_zero() {
    let mut acc = Acc::default();
    acc.add(
        &snap(&[(CounterEvent::VoluntarySwitches, 500)], 1000, 1),
        1000,
    );
    let c = acc.counters();
    assert_eq!(c.voluntary_switches, Count::Exact(500));
    assert_eq!(c.involuntary_switches, Count::NotAvailable);
    assert_eq!(c.cache_misses, Count::NotAvailable);
    assert_eq!(c.sampled, 1);
}

#[test]
fn sampled_sites_scale_by_the_wall_time_they_cover() {
    let mut acc = Acc::default();
    // One thread read a quarter of its episodes' time, another none at all.
    acc.add(
        &snap(&[(CounterEvent::VoluntarySwitches, 10)], 250, 3),
        1000,
    );
    acc.add(&NodeSnap::default(), 1000);
    assert_eq!(acc.counters().voluntary_switches, Count::Scaled(80));
}

/// Time queued known for part of the episodes is scaled up: what it leaves of the
/// off-CPU time, blocked, is an estimate too, never an exact figure (a spin lock's
/// threads without schedstat read "blocked 300 ms", 2026-12-06).
#[test]
fn blocked_time_beside_an_estimated_queued_time_is_an_estimate() {
    let mut acc = Acc::default();
    // Off-CPU split measured on both; queued on the first only.
    let with_queued = NodeSnap {
        off_ns: 400,
        queued_ns: 100,
        split_ns: 1000,
        queued_split_ns: 1000,
        ..NodeSnap::default()
    };
    let without = NodeSnap {
        off_ns: 600,
        split_ns: 1000,
        ..NodeSnap::default()
    };
    acc.add(&with_queued, 1000);
    acc.add(&without, 1000);
    let t = acc.split();
    assert_eq!(t.off_cpu_ns, Count::Exact(1000));
    assert_eq!(t.queued_ns, Count::Scaled(200));
    assert_eq!(t.blocked_ns, Count::Scaled(800));
}

#[test]
fn multiplexing_marks_perf_figures_only() {
    let mut n = snap(
        &[
            (CounterEvent::VoluntarySwitches, 3),
            (CounterEvent::Cycles, 1000),
        ],
        100,
        1,
    );
    n.scaled = 1;
    let mut acc = Acc::default();
    acc.add(&n, 100);
    let c = acc.counters();
    assert_eq!(c.voluntary_switches, Count::Exact(3));
    assert_eq!(c.cycles, Count::Scaled(1000));
    assert_eq!(c.switches(), Count::NotAvailable);
}

#[test]
fn a_delta_of_two_copies_subtracts_every_figure() {
    let later = snap(&[(CounterEvent::PageFaults, 9)], 900, 4);
    let earlier = snap(&[(CounterEvent::PageFaults, 4)], 400, 1);
    let d = later.minus(&earlier);
    assert_eq!(d, snap(&[(CounterEvent::PageFaults, 5)], 500, 3));
}

/// A deferred episode reads getrusage and its off-CPU clock outside its own start and
/// end; time off the CPU there is not the episode's. Ground truth: a 2 ms sleep
/// between the first read and the episode's start, and an episode of two clock reads.
#[test]
fn a_deferred_episode_holds_at_most_its_wall_off_the_cpu() {
    std::thread::spawn(|| {
        let shared = ThreadCounters::default();
        let local = LocalCounters::open(&shared, None);
        assert!(local.deferred(), "the default sampling defers the counters");
        let node = NodeCounts::default();
        let sample = local.begin(&shared, false);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (start, end) = (crate::base::clock::now(), crate::base::clock::now());
        local.finish(&shared, &node, sample, start, end);
        let wall_ns = crate::base::clock::Scale::rough().map_or(end - start, |s| s.ns(end - start));
        let off = node.off_ns.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            off <= wall_ns.max(1),
            "off-CPU {off} ns in an episode of {wall_ns} ns"
        );
    })
    .join()
    .unwrap();
}

/// A deferred episode's reads are outside its own start and end, and a switch there
/// is not the episode's: its off-CPU time is its wall less its time on the CPU.
/// Ground truth: the thread's CPU clock read at the episode's start and end; 5 ms of
/// sleep after its end, before the read; for an episode begun before its first read
/// (a pending one), 2 ms of spinning before that read, on the CPU. The code takes that
/// stretch, up to the read, as on the CPU (a frame opening), so an attempt switched out
/// in it (in the spin, or in the syscalls the read begins with) says nothing and runs
/// again (5 at most, then inconclusive).
#[test]
fn a_deferred_episode_takes_no_off_cpu_time_from_outside_it() {
    use crate::base::clock;
    use std::time::{Duration, Instant};
    let spin = |d: Duration| {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    };
    let cpu = || super::exact::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    let ns = |ticks: u64| clock::Scale::rough().map_or(ticks, |s| s.ns(ticks));
    std::thread::spawn(move || {
        let shared = ThreadCounters::default();
        let local = LocalCounters::open(&shared, None);
        for started in [false, true] {
            let checked = (1..=5).any(|attempt| {
                let node = NodeCounts::default();
                let early = (!started).then(|| local.begin(&shared, false));
                let (start, c0) = (clock::now(), cpu());
                if started {
                    spin(Duration::from_millis(2));
                }
                let sample = early.unwrap_or_else(|| local.begin(&shared, true));
                // Where the code's stretch ends: the first read's start, and its CPU clock.
                let (read, c_read) = {
                    let open = local.open_samples.borrow();
                    (
                        open[sample as usize].t0,
                        open[sample as usize].reading.cpu_ns,
                    )
                };
                spin(Duration::from_millis(8));
                let (end, c1) = (clock::now(), cpu());
                std::thread::sleep(Duration::from_millis(5));
                local.finish(&shared, &node, sample, start, end);
                if started && ns(read - start).saturating_sub(c_read - c0) > 200_000 {
                    eprintln!("attempt {attempt}: switched out before the first read");
                    return false;
                }
                let truth = ns(end - start).saturating_sub(c1 - c0);
                let off = node.off_ns.load(std::sync::atomic::Ordering::Relaxed);
                assert!(
                    off.abs_diff(truth) <= 500_000,
                    "begun before its read: {started}; off-CPU {off} ns, its wall less its \
                     CPU clock {truth} ns"
                );
                true
            });
            if !checked {
                eprintln!("inconclusive: switched out before the first read in every attempt");
            }
        }
    })
    .join()
    .unwrap();
}
