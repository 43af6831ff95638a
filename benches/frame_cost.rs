//! What a business frame costs to open and close, side by side in one run: outside
//! any wait (a frame of the caller's own code), and inside an open wait episode (a
//! job a pool worker runs while it waits), where it also takes a switch mark at open
//! and close (one read of the perf user page while the thread is not switched).
//!
//! `cargo bench --bench frame_cost`: rounds alternate the variants; prints the best
//! and median ns per frame of each, and the loop alone.

use std::hint::black_box;
use std::time::Instant;

const FRAMES: u64 = 200_000;
const ROUNDS: usize = 15;

/// ns per iteration of a loop with nothing in it but `black_box`.
#[inline(never)]
fn bare() -> f64 {
    let t = Instant::now();
    for i in 0..FRAMES {
        black_box(i);
    }
    t.elapsed().as_nanos() as f64 / FRAMES as f64
}

/// ns per business frame outside any wait.
#[inline(never)]
fn outside() -> f64 {
    let t = Instant::now();
    for i in 0..FRAMES {
        yieldprof::frame!("work");
        black_box(i);
    }
    t.elapsed().as_nanos() as f64 / FRAMES as f64
}

/// ns per business frame inside a wait episode: a job. The yield first opens the
/// episode (episodes open at their first wait call).
#[yieldprof::instrument_wait]
#[inline(never)]
fn inside() -> f64 {
    std::thread::yield_now();
    let t = Instant::now();
    for i in 0..FRAMES {
        yieldprof::frame!("job");
        black_box(i);
    }
    t.elapsed().as_nanos() as f64 / FRAMES as f64
}

fn main() {
    let mut runs: [Vec<f64>; 3] = Default::default();
    for _ in 0..ROUNDS {
        runs[0].push(bare());
        runs[1].push(outside());
        runs[2].push(inside());
    }
    for (name, mut v) in [
        "loop alone",
        "frame outside a wait",
        "job frame inside a wait",
    ]
    .into_iter()
    .zip(runs)
    {
        v.sort_by(f64::total_cmp);
        println!(
            "{name}: best {:.1} ns, median {:.1} ns per iteration",
            v[0],
            v[v.len() / 2]
        );
    }
}
