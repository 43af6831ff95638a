//! A pool worker whose jobs are preempted (`preempted`), on a thread with no perf
//! page (the fd budget spent, as where perf is denied): its jobs are read on getrusage.

mod affinity;
mod clocks;
mod preempted;

use yieldprof::counters::{CounterSource, Reason};

#[test]
fn without_a_perf_page_a_jobs_time_off_the_cpu_is_still_waiting() {
    // Its counters try to open at its first wait, and find no fd left. Its jobs were
    // read on nothing then, and a preempted one was business: rayon's workers showed
    // 3-13 % waiting against 67 % (2026-12-06).
    let out =
        std::env::temp_dir().join(format!("yieldprof-preempted-rusage-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .fd_budget(0)
        .counters_after(0)
        .out_dir(&out)
        .init();
    preempted::attempts(|s| matches!(s, CounterSource::Getrusage(Reason::FdBudget { .. })));
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
