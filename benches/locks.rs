//! What `yieldprof::sync::Mutex` costs against std's and parking_lot's, in one run.
//!
//! `cargo bench --bench locks` prints ns per lock+unlock and the ratio to std:
//!
//! - **uncontended**: one thread, lock, add one, unlock; the wrapper with profiling on
//!   (counted, not timed), with `YIELDPROF=0` at run time (`set_enabled(false)`), std,
//!   parking_lot. With the `enabled` feature off the wrapper *is* std's type.
//! - **contended**: 2 and 4 threads adding to one counter under the lock.
//!
//! Rounds alternate the variants and each keeps its best, so a change in the
//! machine's load hits all of them alike.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Many short rounds: on a loaded machine the best of them is the least disturbed.
const ROUNDS: usize = 41;
const UNCONTENDED: u64 = 300_000;
/// Fewer, longer rounds for the contended tables, so the threads overlap for most of
/// each round.
const CONTENDED_ROUNDS: usize = 9;
const CONTENDED: u64 = 200_000;

/// The three locks behind one shape.
trait Lock: Send + Sync + 'static {
    fn add(&self);
    fn get(&self) -> u64;
}

impl Lock for std::sync::Mutex<u64> {
    #[inline(never)]
    fn add(&self) {
        *self.lock().unwrap() += 1;
    }
    fn get(&self) -> u64 {
        *self.lock().unwrap()
    }
}

impl Lock for yieldprof::sync::Mutex<u64> {
    #[inline(never)]
    fn add(&self) {
        *self.lock().unwrap() += 1;
    }
    fn get(&self) -> u64 {
        *self.lock().unwrap()
    }
}

impl Lock for parking_lot::Mutex<u64> {
    #[inline(never)]
    fn add(&self) {
        *self.lock() += 1;
    }
    fn get(&self) -> u64 {
        *self.lock()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Std,
    Wrapper,
    WrapperOff,
    ParkingLot,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::Std,
        Variant::Wrapper,
        Variant::WrapperOff,
        Variant::ParkingLot,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Std => "std::sync::Mutex",
            Variant::Wrapper => "yieldprof::sync::Mutex",
            Variant::WrapperOff => "yieldprof::sync::Mutex, YIELDPROF=0",
            Variant::ParkingLot => "parking_lot::Mutex",
        }
    }

    fn lock(self) -> Arc<dyn Lock> {
        yieldprof::set_enabled(self != Variant::WrapperOff);
        match self {
            Variant::Std => Arc::new(std::sync::Mutex::new(0u64)),
            Variant::Wrapper | Variant::WrapperOff => Arc::new(yieldprof::sync::Mutex::new(0u64)),
            Variant::ParkingLot => Arc::new(parking_lot::Mutex::new(0u64)),
        }
    }
}

/// ns per lock+unlock with `threads` threads adding `per_thread` each: from the first
/// thread's start to the last one's end, each read by the threads themselves (the
/// spawning thread may be descheduled at any point).
fn run(v: Variant, threads: u64, per_thread: u64) -> f64 {
    let lock = v.lock();
    let start_line = Arc::new(Barrier::new(threads as usize));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let lock = lock.clone();
            let start_line = start_line.clone();
            std::thread::spawn(move || {
                start_line.wait();
                let start = Instant::now();
                for _ in 0..per_thread {
                    black_box(&*lock).add();
                }
                (start, Instant::now())
            })
        })
        .collect();
    let spans: Vec<(Instant, Instant)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let first = spans.iter().map(|s| s.0).min().unwrap();
    let last = spans.iter().map(|s| s.1).max().unwrap();
    assert_eq!(lock.get(), threads * per_thread);
    (last - first).as_nanos() as f64 / (threads * per_thread) as f64
}

fn table(title: &str, threads: u64, per_thread: u64, rounds: usize) {
    let mut best = [f64::MAX; 4];
    for _ in 0..rounds {
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            best[i] = best[i].min(run(v, threads, per_thread));
        }
    }
    yieldprof::set_enabled(true);
    println!("\n{title}");
    println!(
        "  {:<38} {:>10} {:>10} {:>9}",
        "lock", "ns/op", "vs std", "ratio"
    );
    for (i, v) in Variant::ALL.into_iter().enumerate() {
        println!(
            "  {:<38} {:>10.2} {:>+10.2} {:>8.2}x",
            v.name(),
            best[i],
            best[i] - best[0],
            best[i] / best[0]
        );
    }
}

fn main() {
    // `cargo bench --bench locks -- WORD` runs the tables whose title holds WORD.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    println!("best round of each variant, variants alternating");
    for (title, threads, per_thread, rounds) in [
        (
            "uncontended: 1 thread, lock + add + unlock (41 rounds)",
            1,
            UNCONTENDED,
            ROUNDS,
        ),
        (
            "contended: 2 threads on one lock (9 rounds)",
            2,
            CONTENDED,
            CONTENDED_ROUNDS,
        ),
        (
            "contended: 4 threads on one lock (9 rounds)",
            4,
            CONTENDED,
            CONTENDED_ROUNDS,
        ),
    ] {
        if only.as_ref().is_none_or(|w| title.contains(w.as_str())) {
            table(title, threads, per_thread, rounds);
        }
    }
}
