//! Memory bound: a recursion through two annotated functions makes 2^20 (1 048 576)
//! distinct stacks. The thread's tree stops at the node cap, every entry past it folds
//! into `[overflow]` and is counted, the heap stays flat, and the counts still add up
//! to every call made. (Own test binary: the cap is process-wide.)
//!
//! The soak variant, 2^24 (16.8M) stacks on 4 threads, is `#[ignore]`d:
//! `cargo test --release --test reliability_memory_bound -- --ignored`.

mod counting_alloc;

use counting_alloc::Counting;
use yieldprof::report::Metric;
use yieldprof::{Kind, Session};

const CAP: u32 = 4096;

#[global_allocator]
static ALLOC: Counting = Counting;

#[yieldprof::instrument_wait]
fn left(depth: u32) {
    std::hint::spin_loop();
    if depth > 0 {
        left(depth - 1);
        right(depth - 1);
    }
}

#[yieldprof::instrument_wait]
fn right(depth: u32) {
    std::hint::spin_loop();
    if depth > 0 {
        left(depth - 1);
        right(depth - 1);
    }
}

/// Distinct stacks (leaves) and episodes of `left(depth)` and `right(depth)`.
fn shape(depth: u32) -> (u64, u64) {
    (2u64 << depth, (4u64 << depth) - 2)
}

fn run(depth: u32, threads: u64) {
    let _guard = yieldprof::Options::from_env()
        .max_nodes(CAP)
        .out_dir(std::env::temp_dir().join(format!("yieldprof-bound-{}", std::process::id())))
        .init();
    let session = Session::start();
    let heap_before = counting_alloc::reset_peak();
    let t = std::time::Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                left(depth - 1);
                right(depth - 1);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let elapsed = t.elapsed();
    let peak = counting_alloc::peak() - heap_before;
    let report = session.finish();
    let (stacks, episodes) = shape(depth - 1);
    let (l, r) = (report.site("left").unwrap(), report.site("right").unwrap());
    let overflowed: u64 = report.threads().iter().map(|t| t.overflowed).sum();
    // Nodes 0 and 1 of each thread are its root and `[overflow]`.
    assert_eq!(l.episodes + r.episodes, threads * u64::from(CAP - 2));
    assert_eq!(l.episodes + r.episodes + overflowed, threads * episodes);
    let folded = report.folded(Metric::Calls);
    let in_overflow: u64 = folded
        .iter()
        .filter(|line| line.contains("[overflow]"))
        .map(|line| line.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        l.calls_of(Kind::Spin) + r.calls_of(Kind::Spin) + in_overflow,
        threads * episodes
    );
    assert_eq!(in_overflow, overflowed);
    assert!(
        folded.len() as u64 <= threads * u64::from(CAP),
        "{} lines",
        folded.len()
    );
    assert!(report.summary().contains("overflow"));
    eprintln!(
        "{threads} thread(s) × {stacks} stacks, {episodes} episodes each, in {elapsed:.2?}: \
         {} nodes kept, {overflowed} entries in [overflow], heap peak +{} KiB",
        l.episodes + r.episodes,
        peak / 1024
    );
    // Per thread, the tree of 4094 nodes, its slots and the copies a report makes:
    // about 4 MiB, whatever the number of stacks.
    assert!(peak < threads as isize * (8 << 20), "heap peak +{peak} B");
}

#[test]
fn a_million_distinct_stacks_stay_under_the_node_cap_and_are_counted() {
    run(20, 1);
}

#[test]
#[ignore = "soak: 4 threads × 16.8M stacks; run with --release --ignored"]
fn soak_sixteen_million_stacks_on_four_threads() {
    run(24, 4);
}
