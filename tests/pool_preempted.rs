//! A pool worker whose jobs are preempted (`preempted`), its counters deferred for its
//! whole life: its wait % against its CPU clock.

mod affinity;
mod clocks;
mod preempted;

use yieldprof::counters::{CounterSource, Reason};

#[test]
fn a_jobs_time_off_the_cpu_is_waiting_not_business() {
    // The worker's life is one wait that begins while its counters are deferred
    // (getrusage, calls without figures of their own), which it stays on throughout:
    // the jobs' and the loop's off-CPU time are told apart from the episode's total
    // and the jobs' own. Under the default (16 waits) a worker under load ended there
    // or on its perf page by chance: the stretches between its waits, preempted, read
    // as `[unmarked work]` (wait 6-11 points under truth in 7 of 10 runs under 4 busy
    // loops, 2026-12-06).
    let out = std::env::temp_dir().join(format!("yieldprof-preempted-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .counters_after(u32::MAX - 1)
        .out_dir(&out)
        .init();
    preempted::attempts(|s| matches!(s, CounterSource::Getrusage(Reason::Deferred { .. })));
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
