//! The false-sharing detector names threads with 16 bits in its per-line history. A
//! process that has started more than 65 535 threads, each accessing watched data, must
//! still tell two live threads apart: the first thread and the 65 536th, then two
//! threads started after them, alternate on one line, one reading word 0 and the other
//! writing word 1. The host is a child process: it starts the threads in between, and
//! owns the thread registry.

mod child_process;

use child_process::run;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use yieldprof::Watched;

/// Threads started between the first two that alternate.
const BETWEEN: u64 = 65_534;
const ROUNDS: u64 = 100;

/// Watched data on another line, for the threads in between.
static ELSEWHERE: Watched<AtomicU64> = Watched::from_atomic(AtomicU64::new(0));

#[repr(C, align(64))]
struct Line {
    read: Watched<AtomicU64>,
    written: Watched<AtomicU64>,
}

/// `ROUNDS` times: `read` reads word 0 (on the calling thread), then a thread started
/// here writes word 1.
fn alternate(line: &Line, read: impl Fn()) {
    let (go, turns) = mpsc::channel::<()>();
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(|| {
            for () in turns {
                line.written.fetch_add(1, Ordering::Relaxed);
                done.send(()).unwrap();
            }
        });
        for _ in 0..ROUNDS {
            read();
            go.send(()).unwrap();
            finished.recv().unwrap();
        }
        drop(go);
    });
}

fn print_invalidations() {
    let line = yieldprof::snapshot()
        .sharing()
        .into_iter()
        .find(|l| l.words.iter().any(|w| w.name == "read"))
        .unwrap();
    println!(
        "invalidations {} false {}",
        line.invalidations, line.false_invalidations
    );
}

fn host() {
    let line = Line {
        read: Watched::new(0),
        written: Watched::new(0),
    };
    yieldprof::watch(&line.read, "read");
    yieldprof::watch(&line.written, "written");
    yieldprof::watch(&ELSEWHERE, "elsewhere");
    // This thread records first: it is the first thread yieldprof knows.
    line.read.load(Ordering::Relaxed);
    // Threads that access watched data once each and end, a few at a time, on small
    // stacks.
    for _ in 0..BETWEEN / 2 {
        let pair = [(); 2].map(|()| {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(|| ELSEWHERE.load(Ordering::Relaxed))
                .unwrap()
        });
        for t in pair {
            t.join().unwrap();
        }
    }
    // The first thread reads; the 65 536th writes.
    alternate(&line, || {
        line.read.load(Ordering::Relaxed);
    });
    print_invalidations();
    // Two threads started after all the others.
    std::thread::scope(|s| {
        s.spawn(|| {
            alternate(&line, || {
                line.read.load(Ordering::Relaxed);
            })
        });
    });
    print_invalidations();
}

#[test]
fn child() {
    if child_process::role().is_some() {
        host();
        std::process::exit(0);
    }
}

#[test]
fn two_live_threads_are_told_apart_after_65535_others_came_and_went() {
    let exit = run(
        "many-threads",
        &[
            ("YIELDPROF_WATCH_SAMPLE", "1"),
            // Threads in between need no counters: they only take a serial.
            ("YIELDPROF_COUNTERS_EVERY", "off"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let phases: Vec<[u64; 2]> = exit
        .stdout
        .lines()
        .filter_map(|l| l.split_once("invalidations ").map(|(_, rest)| rest))
        .map(|rest| {
            let n: Vec<u64> = rest.split(' ').filter_map(|w| w.parse().ok()).collect();
            [n[0], n[1]]
        })
        .collect();
    // Each of the writers' writes takes the line from the reader, which read only the
    // other word. The second writer's first write also finds the first writer's entry,
    // for the same word: that one is true sharing.
    assert_eq!(
        phases,
        [[ROUNDS, ROUNDS], [2 * ROUNDS, 2 * ROUNDS - 1]],
        "{exit:?}"
    );
}
