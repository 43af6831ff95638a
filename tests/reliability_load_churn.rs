//! Load: 20 000 threads started and exited in churn, 8 at a time, each running three
//! episodes. Every episode is counted; the first `MAX_EXITED_THREADS` exited threads
//! are listed one by one, the rest merged into one profile of their name, which counts
//! them; the heap the
//! profiler keeps per exited thread is measured with a counting allocator, and stops
//! growing once threads are merged.
//! (Own test binary: it reads every thread of the process, and owns the allocator.)

mod counting_alloc;

use counting_alloc::Counting;
use yieldprof::{Kind, Session};

/// Exited threads kept one by one before they merge per name (documented in the
/// crate's `Profile::threads`).
const MAX_EXITED_THREADS: usize = 10_000;
use yieldprof::counters::capabilities;

const THREADS: u64 = 20_000;
const AT_ONCE: u64 = 8;
const EPISODES: u64 = 3;

#[global_allocator]
static ALLOC: Counting = Counting;

#[yieldprof::instrument_wait]
fn step() {
    std::hint::spin_loop();
    std::thread::yield_now();
}

fn churn(batches: u64) {
    for _ in 0..batches {
        let batch: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                std::thread::Builder::new()
                    .name("churn".into())
                    .spawn(|| {
                        for _ in 0..EPISODES {
                            step();
                        }
                    })
                    .unwrap()
            })
            .collect();
        for t in batch {
            t.join().unwrap();
        }
    }
}

#[test]
fn twenty_thousand_threads_in_churn_are_all_counted_exactly_in_bounded_memory() {
    let _guard = yieldprof::Options::from_env()
        .out_dir(std::env::temp_dir().join(format!("yieldprof-churn-{}", std::process::id())))
        .init();
    let fds_before = capabilities().fds_in_use;
    // Warm-up: one batch, so tables and the registry's vectors exist.
    churn(1);
    let session = Session::start();
    let heap_before = counting_alloc::live();
    let t = std::time::Instant::now();
    churn(THREADS / AT_ONCE / 2);
    let heap_half = counting_alloc::live();
    churn(THREADS / AT_ONCE / 2);
    let elapsed = t.elapsed();
    let heap_after = counting_alloc::live();
    let report = session.finish();
    let site = report.site("step").unwrap();
    assert_eq!(site.episodes, THREADS * EPISODES);
    assert_eq!(site.calls_of(Kind::Spin), THREADS * EPISODES);
    assert_eq!(site.calls_of(Kind::Yield), THREADS * EPISODES);
    let threads = report.threads();
    let churned: Vec<_> = threads.iter().filter(|t| t.name == "churn").collect();
    // The warm-up's 8 count among the first kept, but exited before the session, so
    // are not in it; every one past the first kept is in the merged "churn" profile.
    assert_eq!(churned.len(), MAX_EXITED_THREADS - AT_ONCE as usize + 1);
    assert!(churned.iter().all(|t| t.exited));
    // Every thread counted once, the merged ones in the profile that holds them (it
    // read as one thread, with the last one's tid, before 2026-12-06: flume's suite).
    assert_eq!(churned.iter().map(|t| t.threads).sum::<u64>(), THREADS);
    let merged = churned
        .iter()
        .find(|t| t.threads > 1)
        .expect("the merged profile");
    assert_eq!(
        (merged.threads, merged.tid),
        (THREADS - churned.len() as u64 + 1, 0)
    );
    let text = report.summary();
    assert!(
        text.contains(&format!(
            "churn: {} threads that exited after",
            merged.threads
        )),
        "{text}"
    );
    assert_eq!(capabilities().fds_in_use, fds_before);
    let per_thread = (heap_half - heap_before) as f64 / (THREADS / 2) as f64;
    let per_merged = (heap_after - heap_half) as f64 / (THREADS / 2) as f64;
    eprintln!(
        "{THREADS} threads in {elapsed:.2?}: first half +{} KiB ({per_thread:.0} B per \
         thread), second half +{} KiB ({per_merged:.0} B per thread)",
        (heap_half - heap_before) / 1024,
        (heap_after - heap_half) / 1024
    );
    // An exited thread is kept as a compact copy of its tree (3 nodes here) ...
    assert!(per_thread < 8192.0, "{per_thread} B per exited thread");
    // ... until the cap, after which its counts are added to the merged profile.
    assert!(per_merged < 64.0, "{per_merged} B per merged thread");
    // A window that began after the merging did holds only the threads since: the
    // merged row's count less the one it had (all of it before 2026-12-06).
    let mid = yieldprof::snapshot();
    churn(13);
    let since_mid: u64 = yieldprof::snapshot()
        .since(&mid)
        .threads()
        .iter()
        .filter(|t| t.name == "churn")
        .map(|t| t.threads)
        .sum();
    assert_eq!(since_mid, 13 * AT_ONCE);
}
