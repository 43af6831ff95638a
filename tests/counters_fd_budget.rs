//! 600 threads under a 512-fd budget, with a soft fd limit (2048) lower than what
//! one group per thread would need (600 × 4): threads past the budget count with
//! getrusage, every thread reports its switches, and no fd error reaches the host.

use std::sync::{Arc, Barrier};
use yieldprof::counters::{capabilities, Availability, CounterEvent, CounterSource, Reason};

mod fd_limit;
use fd_limit::set_soft_fd_limit;

const THREADS: usize = 600;
const BUDGET: usize = 512;

#[yieldprof::instrument_wait]
fn nap_twice() {
    for _ in 0..2 {
        // SAFETY: usleep has no preconditions.
        unsafe { libc::usleep(1) };
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn six_hundred_threads_stay_within_the_fd_budget_and_all_report_switches() {
    let soft = set_soft_fd_limit(2048);
    let out = std::env::temp_dir().join(format!("yieldprof-fd-budget-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .fd_budget(BUDGET)
        // Each thread's perf counters open at its first wait: the budget is the subject.
        .counters_after(0)
        .out_dir(&out)
        .name("fd_budget")
        .init();
    let caps = capabilities();
    // The budget never exceeds a quarter of the soft limit (512 of 2048 here).
    let budget = BUDGET.min(soft as usize / 4);
    assert_eq!(caps.fd_budget, budget);

    // Every thread naps, opens a file (the host's own use of fds), then waits until
    // all 600 hold their counters at once.
    let all_here = Arc::new(Barrier::new(THREADS + 1));
    let release = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (here, go) = (all_here.clone(), release.clone());
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .stack_size(128 * 1024)
                .spawn(move || {
                    nap_twice();
                    let file = std::fs::File::open("/proc/self/stat");
                    here.wait();
                    go.wait();
                    file.map(drop)
                })
                .unwrap()
        })
        .collect();
    all_here.wait();
    let busy = capabilities();
    let fds_now = open_fds();
    release.wait();
    for w in workers {
        w.join().unwrap().expect("the host can still open files");
    }

    assert!(busy.fds_in_use <= budget, "{} fds in use", busy.fds_in_use);
    assert!((fds_now as u64) < soft, "{fds_now} fds open");
    let profile = yieldprof::snapshot();
    let threads: Vec<_> = profile
        .threads()
        .into_iter()
        .filter(|t| t.name.starts_with("worker-"))
        .collect();
    assert_eq!(threads.len(), THREADS);
    let mut on_perf = 0;
    for t in &threads {
        let switches = t.counters.voluntary_switches.value();
        assert!(switches >= Some(2), "{}: {switches:?}", t.name);
        match t.counter_source {
            CounterSource::Perf => {
                on_perf += 1;
                assert!(t.counters.context_switches.value() >= Some(2), "{}", t.name);
            }
            CounterSource::Getrusage(why) => {
                if caps.get(CounterEvent::ContextSwitches) == Availability::Available {
                    assert_eq!(why, Reason::FdBudget { budget }, "{}", t.name);
                }
            }
            CounterSource::Off => panic!("{}: counters off", t.name),
        }
    }
    if caps.get(CounterEvent::ContextSwitches) == Availability::Available {
        // What was in use before the workers (the probe's anchor group, a thread
        // registered by init) leaves the rest of the budget to them, whole threads.
        assert_eq!(
            on_perf,
            (budget - caps.fds_in_use) / caps.fds_per_thread,
            "{} fds in use before, {} per thread",
            caps.fds_in_use,
            caps.fds_per_thread
        );
    } else {
        assert_eq!(on_perf, 0);
    }
    // Exited threads closed their fds.
    assert_eq!(capabilities().fds_in_use, caps.fds_in_use);

    let written = guard.write().expect("the profile is written");
    assert!(!written.is_empty());
    let summary = std::fs::read_to_string(out.join("fd_budget.txt")).unwrap();
    assert!(summary.contains("getrusage"), "{summary}");
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
