//! What yieldprof costs a short-lived thread: CPU per thread that is spawned, waits
//! once or twice and is joined, in a fresh process per trial.
//!
//! `cargo bench --bench thread_churn` runs this binary again as a child per trial.
//! Each child spawns `THREADS` threads one after another; each receives one message
//! on a fresh channel (its sender sends after the spawn, so the receive usually
//! blocks) and then yields once: one or two wait episodes. The child prints the
//! process's CPU time (user + system, getrusage) over the loop. Variants alternate
//! trial by trial: raw, annotated with the default set-up (perf counters open after a
//! thread's first 16 episodes, so these threads never open them), and annotated with
//! `counters_after(0)` (every thread opens its perf counter, page and schedstat file
//! at its first episode, the set-up before the deferral). Medians per thread and the
//! ratios are printed.

mod child;

use std::sync::mpsc;

const THREADS: usize = 2000;
const TRIALS: usize = 9;

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated_recv(rx: &mpsc::Receiver<u64>) -> u64 {
    rx.recv().unwrap_or(0)
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn annotated_yield() {
    std::thread::yield_now();
}

#[inline(never)]
fn raw_recv(rx: &mpsc::Receiver<u64>) -> u64 {
    rx.recv().unwrap_or(0)
}

#[inline(never)]
fn raw_yield() {
    std::thread::yield_now();
}

/// The process's CPU time so far, ns.
fn cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

/// Runs the churn in this process and prints the CPU ns it took.
fn child(variant: &str) {
    let out = std::env::temp_dir().join(format!("yieldprof-churn-{}", std::process::id()));
    let raw = variant == "raw";
    let guard = (!raw).then(|| {
        let o = yieldprof::Options::from_env().out_dir(&out).name("churn");
        match variant {
            "open-at-first" => o.counters_after(0),
            _ => o,
        }
        .init()
    });
    let t = cpu_ns();
    for i in 0..THREADS as u64 {
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            if raw {
                raw_recv(&rx);
                raw_yield();
            } else {
                annotated_recv(&rx);
                annotated_yield();
            }
        });
        tx.send(i).expect("receiver alive");
        h.join().expect("thread");
    }
    println!("{}", cpu_ns() - t);
    // Nothing written: the trial is the churn, not the report.
    std::mem::forget(guard);
    let _ = std::fs::remove_dir_all(&out);
}

/// CPU ns per short thread of one trial.
fn trial(variant: &str) -> f64 {
    child::trial(variant) / THREADS as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "child") {
        child(args.get(at + 1).map_or("raw", String::as_str));
        return;
    }
    let variants = ["raw", "default", "open-at-first"];
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..TRIALS {
        for (v, r) in variants.iter().zip(&mut runs) {
            r.push(trial(v));
        }
    }
    let med: Vec<f64> = runs
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    println!(
        "thread churn: {THREADS} threads spawned and joined one by one, each a recv and a \
         yield; CPU per thread, median of {TRIALS} fresh processes each\n"
    );
    println!("| case | CPU per thread | vs raw | added |");
    println!("|---|---|---|---|");
    for (v, m) in variants.iter().zip(&med) {
        println!(
            "| {v} | {:.1} µs | {:.2}× | {:+.1} µs |",
            m / 1e3,
            m / med[0],
            (m - med[0]) / 1e3
        );
    }
    println!(
        "\ndeferred set-up saves {:.1} µs per short thread ({:.2}× the open-at-first cost added)",
        (med[2] - med[1]) / 1e3,
        (med[1] - med[0]) / (med[2] - med[0])
    );
}
