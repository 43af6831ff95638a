//! The workers of a pool share a name (tokio's are all `tokio-runtime-worker`): while
//! they run, each is a root of its own in the folded stacks, told apart by its tid;
//! once they exit they merge under the name, so thread-per-request programs keep
//! bounded output.

use std::sync::Barrier;
use yieldprof::report::Metric;

#[yieldprof::instrument_wait]
fn pool_task() {
    std::thread::yield_now();
}

#[test]
fn live_workers_with_one_name_are_separate_roots_and_merge_when_they_exit() {
    let (running, done) = (Barrier::new(3), Barrier::new(3));
    let tids: Vec<i32> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::Builder::new()
                    .name("pool-worker".into())
                    .spawn_scoped(s, || {
                        pool_task();
                        running.wait();
                        done.wait();
                        // SAFETY: gettid has no preconditions.
                        unsafe { libc::gettid() }
                    })
                    .unwrap()
            })
            .collect();
        running.wait();
        let live = yieldprof::snapshot().folded(Metric::Calls);
        // Let the workers go before checking, so a failure does not hang them.
        done.wait();
        let tids: Vec<i32> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        let roots: Vec<&str> = live
            .iter()
            .filter(|l| l.contains("::pool_task;"))
            .filter_map(|l| l.split(';').next())
            .collect();
        assert_eq!(roots.len(), 2, "{live:?}");
        for tid in &tids {
            assert!(
                roots.contains(&format!("pool-worker (tid {tid})").as_str()),
                "{roots:?}"
            );
        }
        tids
    });
    let exited = yieldprof::snapshot().folded(Metric::Calls);
    let lines: Vec<&String> = exited
        .iter()
        .filter(|l| l.contains("::pool_task;"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("pool-worker;"), "{lines:?}");
    assert!(lines[0].ends_with(";[yield] 2"), "{lines:?}");
    // The thread table keeps them apart all along.
    let threads = yieldprof::snapshot().threads();
    for tid in tids {
        assert!(threads
            .iter()
            .any(|t| t.tid == tid && t.name == "pool-worker"));
    }
}
