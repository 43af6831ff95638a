//! The hot path closes a common episode (its first wait a direct spin, no switch in it)
//! with one record that its thread folds into the tree in batches of 64. A report from
//! another thread still counts every episode the thread closed, folded or not: its
//! episodes, spins, durations and timeline entries equal the counts the test arranged,
//! while the thread is alive with records waiting, and after it exits; one still open
//! counts as open up to the report.

use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

/// Spins per episode, each one counted.
const SPINS: u64 = 3;
/// Episodes each thread keeps in its timeline here.
const KEPT: u32 = 100;

#[yieldprof::instrument_wait]
fn hot_spin(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// Spins, then yields: the yield, a timed call, turns the episode opened on the fast
/// path into an ordinary frame.
#[yieldprof::instrument_wait]
fn spin_then_yield() {
    for _ in 0..SPINS {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
}

/// Spins, then runs an episode that spins: the inner one's first wait finds the outer
/// open on the fast path and makes it a frame first.
#[yieldprof::instrument_wait]
fn outer_spin() {
    std::hint::spin_loop();
    inner_spin();
}

/// As `hot_spin`, for the test of its own (tests run at once, sites are per process).
#[yieldprof::instrument_wait]
fn inner_spin() {
    for _ in 0..SPINS {
        std::hint::spin_loop();
    }
}

/// Runs `k` episodes for each `k` it receives, says when done, and exits when the
/// sender goes.
fn worker(batches: Receiver<u64>, done: Sender<()>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("hot-worker".into())
        .spawn(move || {
            for k in batches {
                for _ in 0..k {
                    hot_spin(SPINS);
                }
                done.send(()).unwrap();
            }
        })
        .unwrap()
}

/// The site's episodes, spins and durations recorded, and the worker's timeline:
/// recorded, kept, and the spins of each kept episode.
fn seen() -> (u64, u64, u64, u64, Vec<u64>) {
    let p = yieldprof::snapshot();
    let s = p.site("hot_spin").expect("the site");
    let spins: u64 = s.calls.iter().map(|c| c.calls).sum();
    let mut text = Vec::new();
    p.write_trace(&mut text).unwrap();
    let trace: Value = serde_json::from_slice(&text).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let meta = events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == "hot-worker")
        .expect("the worker's track");
    let calls = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == meta["tid"])
        .map(|e| e["args"]["calls"].as_u64().unwrap())
        .collect();
    let recorded = meta["args"]["episodes_recorded"].as_u64().unwrap();
    (s.episodes, spins, s.durations.count(), recorded, calls)
}

#[test]
fn reports_count_every_episode_closed_on_the_hot_path_folded_or_not() {
    let dir = std::env::temp_dir().join(format!("yieldprof-hot-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .timeline(KEPT)
        .out_dir(&dir)
        .name("hot")
        .init();
    let (tx, batches) = channel();
    let (done, finished) = channel();
    let w = worker(batches, done);
    let mut total = 0;
    // 10: none folded yet (the thread waits outside any episode); then 150 more: two
    // folds of 64 and 32 waiting; 3 more, left at the thread's exit.
    for k in [10, 150, 3] {
        tx.send(k).unwrap();
        finished.recv().unwrap();
        total += k;
        let (episodes, spins, durations, recorded, calls) = seen();
        eprintln!("after {total}: {episodes} episodes, {spins} spins, {recorded} in the timeline");
        assert_eq!(episodes, total, "episodes");
        assert_eq!(spins, total * SPINS, "spins");
        assert_eq!(durations, total, "durations");
        assert_eq!(recorded, total, "timeline recorded");
        assert_eq!(calls.len() as u64, total.min(u64::from(KEPT)), "kept");
        assert!(calls.iter().all(|&c| c == SPINS), "{calls:?}");
    }
    drop(tx);
    w.join().unwrap();
    let (episodes, spins, durations, recorded, calls) = seen();
    assert_eq!(
        (episodes, spins, durations, recorded),
        (total, total * SPINS, total, total),
        "after the thread's exit"
    );
    assert_eq!(calls.len() as u64, u64::from(KEPT));
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn episodes_opened_on_the_hot_path_keep_their_counts_when_something_else_happens_in_them() {
    const N: u64 = 100;
    let before = yieldprof::snapshot();
    std::thread::spawn(|| {
        for _ in 0..N {
            spin_then_yield();
            outer_spin();
        }
    })
    .join()
    .unwrap();
    let d = yieldprof::snapshot().since(&before);
    let kinds = |name: &str| {
        let s = d.site(name).expect("the site");
        let spins = s.calls_of(yieldprof::Kind::Spin);
        let yields = s.calls_of(yieldprof::Kind::Yield);
        (s.episodes, spins, yields, s.durations.count())
    };
    assert_eq!(kinds("spin_then_yield"), (N, N * SPINS, N, N));
    assert_eq!(kinds("outer_spin"), (N, N, 0, N));
    // Only the calls made directly in it: the inner episode's spins are its own.
    assert_eq!(kinds("inner_spin"), (N, N * SPINS, 0, N));
}

static STARTED: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Spins until `release`, saying in `started` that it spins: open on the hot path (its
/// first spin) for as long as the test holds it.
#[yieldprof::instrument_wait]
fn held_spin(started: &AtomicBool, release: &AtomicBool) {
    loop {
        std::hint::spin_loop();
        started.store(true, SeqCst);
        if release.load(SeqCst) {
            break;
        }
    }
}

#[test]
fn a_report_counts_an_episode_open_on_the_hot_path_up_to_the_report() {
    let worker = std::thread::spawn(|| {
        // Its first episodes add the site's node and set up the thread's counters: the
        // held one opens on the hot path unless the thread was switched just before.
        let (warm, released) = (AtomicBool::new(false), AtomicBool::new(true));
        for _ in 0..100 {
            held_spin(&warm, &released);
        }
        let begun = Instant::now();
        held_spin(&STARTED, &RELEASE);
        begun
    });
    while !STARTED.load(SeqCst) {
        std::thread::yield_now();
    }
    // The episode is open from before `open` (its first spin) to after the report.
    let open = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    let before = open.elapsed().as_nanos() as u64;
    let p = yieldprof::snapshot();
    let s = p.site("held_spin").expect("the site");
    RELEASE.store(true, SeqCst);
    let begun = worker.join().unwrap();
    let most = begun.elapsed().as_nanos() as u64;
    eprintln!("open {} ns, at least {before}, at most {most}", s.open_ns);
    // The clock's ns are within 1e-5 of the test's once calibrated: 1 % leaves room.
    assert!(
        s.open_ns >= before - before / 100,
        "{} < {before}",
        s.open_ns
    );
    assert!(s.open_ns <= most + most / 100, "{} > {most}", s.open_ns);
    assert_eq!(s.episodes, 100, "the held one not closed yet");
    let after = yieldprof::snapshot();
    let s = after.site("held_spin").expect("the site");
    assert_eq!((s.episodes, s.open_ns), (101, 0), "closed");
}
