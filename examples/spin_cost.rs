//! What counting a `spin_loop()` costs: a raw loop of PAUSEs against the same loop in an
//! `#[instrument_wait]` function, and against the loop inside a closure there (closures
//! keep the per-call probe, since they may outlive or leave the episode).
//!
//! `cargo run --release --example spin_cost [iterations]` prints ns per spin and each
//! ratio to raw. It only prints: timings on a shared machine are no pass/fail test.

use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 9;

#[inline(never)]
fn raw(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// A loop whose trip count the optimiser cannot see, like a real wait loop's.
#[inline(never)]
fn raw_opaque(n: u64) {
    let mut i = 0;
    while black_box(i) < n {
        std::hint::spin_loop();
        i += 1;
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated_opaque(n: u64) {
    let mut i = 0;
    while black_box(i) < n {
        std::hint::spin_loop();
        i += 1;
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated_closure(n: u64) {
    (0..n).for_each(|_| std::hint::spin_loop());
}

/// Best ns per spin of each case; rounds alternate the cases, so drift on a busy
/// machine hits them alike.
fn measure(n: u64, cases: &[fn(u64)]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; cases.len()];
    for _ in 0..ROUNDS {
        for (case, best) in cases.iter().zip(&mut best) {
            let t = Instant::now();
            case(black_box(n));
            *best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
        }
    }
    best
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("iterations: a number"))
        .unwrap_or(10_000_000);
    let ns = measure(
        n,
        &[
            raw,
            annotated,
            annotated_closure,
            raw_opaque,
            annotated_opaque,
        ],
    );
    println!("{n} spin_loop() per run, best of {ROUNDS} rounds");
    let rows = [
        ("annotated fn", ns[1], ns[0]),
        ("closure in annotated fn", ns[2], ns[0]),
        ("opaque loop, annotated fn", ns[4], ns[3]),
    ];
    println!("raw loop                      {:>7.3} ns/spin", ns[0]);
    println!("raw opaque loop               {:>7.3} ns/spin", ns[3]);
    for (name, case, base) in rows {
        println!(
            "{name:<29} {case:>7.3} ns/spin  {:.3}x raw  ({:+.3} ns)",
            case / base,
            case - base,
        );
    }
    // The counts are real: every spin of every round is in the profile.
    let site = yieldprof::snapshot()
        .site("annotated")
        .expect("annotated ran");
    println!(
        "annotated: {} episodes, {} spins counted",
        site.episodes,
        site.calls_of(yieldprof::Kind::Spin)
    );
}
