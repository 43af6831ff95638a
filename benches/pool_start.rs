//! What yieldprof adds to starting a thread pool, in a fresh process each time.
//!
//! `cargo bench --bench pool_start` runs this binary again as a child per trial. Each
//! child starts `WORKERS` threads that each run one wait fn (a `yield_now` inside,
//! so its episode opens and the thread registers) and joins them, timed by the caller
//! from the first spawn to the last join. The first registration in a process runs
//! the one-time counter probe unless `init` ran it (it does, before the timed start);
//! threads that register meanwhile wait for it. Variants alternate trial by trial; the
//! medians and their ratio are printed.

mod child;

use std::time::Instant;

const WORKERS: usize = 4;
const TRIALS: usize = 61;

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated_first_wait() {
    std::thread::yield_now();
}

#[inline(never)]
fn raw_first_wait() {
    std::thread::yield_now();
}

/// Starts the pool in this process and prints the ns it took.
fn child(variant: &str) {
    let out = std::env::temp_dir().join(format!("yieldprof-pool-start-{}", std::process::id()));
    let wait: fn() = if variant == "raw" {
        raw_first_wait
    } else {
        annotated_first_wait
    };
    let guard = (variant != "raw").then(|| {
        yieldprof::Options::from_env()
            .out_dir(&out)
            .name("pool")
            .init()
    });
    let t = Instant::now();
    let workers: Vec<_> = (0..WORKERS).map(|_| std::thread::spawn(wait)).collect();
    workers.into_iter().for_each(|w| w.join().expect("worker"));
    println!("{}", t.elapsed().as_nanos());
    // Nothing written: the trial is the start, not the report.
    std::mem::forget(guard);
    let _ = std::fs::remove_dir_all(&out);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "child") {
        child(args.get(at + 1).map_or("raw", String::as_str));
        return;
    }
    let (mut raw, mut profiled) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        raw.push(child::trial("raw"));
        profiled.push(child::trial("profiled"));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (raw, profiled) = (median(&mut raw), median(&mut profiled));
    println!("pool start, {WORKERS} workers, median of {TRIALS} fresh processes each\n");
    println!("| case | raw | yieldprof | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| spawn {WORKERS} workers, one first wait each, join | {:.0} µs | {:.0} µs | {:.2}× | ≤ 2× |",
        raw / 1e3,
        profiled / 1e3,
        profiled / raw
    );
}
