//! The profiler's own time as a report gives it (`Profile::profiler_time`: what its
//! clocks timed, plus the kernel's work for each thread's switch counter at every
//! switch, calibrated and labelled estimated) against what a run with and without the
//! profiler measures: two threads pinned to one CPU pass a token through two channels,
//! the `recv` a wait site in the annotated rounds and a plain fn in the raw ones; the
//! two threads' CPU clocks summed per round trip. On one CPU nothing crosses CPUs and
//! load elsewhere moves when the threads run, not the CPU they take, so annotated − raw
//! is what the profiler cost them.
//!
//! Rounds are interleaved (raw, annotated, raw again) and the median over rounds of
//! each round's shown / measured is judged; an attempt whose two raw rounds differ by
//! more than a tenth of the measured difference, or one of whose rounds shared the CPU
//! with another process (wall time 1.3× the threads' CPU time), was too noisy to judge
//! and is run again, a few times at most, then reported inconclusive. (Own test binary: the
//! profile is read process-wide.)

use std::sync::mpsc::{channel, Receiver};

mod clocks;

const TRIPS: u64 = 4_000;
const ROUNDS: usize = 5;
const ATTEMPTS: usize = 4;
/// The least share shown: a fifth below in an optimized build (the target:
/// `cargo test --release --test profiler_time`). Unoptimized, the hot path's own
/// opening of each episode, which is neither timed nor estimated, is a larger part of
/// it: 75 % shown on the build VM, where the release build shows 87 %; 46–74 % on a
/// VM whose switches cost ~4× (2026-12-06, the code before that day's changes as after
/// them; its release build showed 99–104 %).
const LOWEST: f64 = if cfg!(debug_assertions) { 0.35 } else { 0.8 };

#[inline(never)]
fn recv_raw(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap_or(0)
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn recv_annotated(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap_or(0)
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: the set is zeroed, then `cpu` (< CPU_SETSIZE) is set; the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The CPU the calling thread runs on now.
fn this_cpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions.
    usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0)
}

/// Both threads' CPU ns per round trip, waiting in `recv`, on `cpu`, and the round's
/// wall time over that CPU time: about 1 where the CPU was theirs, 2 where another
/// process (a busy loop) shared it.
fn round(recv: fn(&Receiver<u64>) -> u64, cpu: usize) -> (f64, f64) {
    let wall = std::time::Instant::now();
    let (to_b, b_rx) = channel();
    let (to_a, a_rx) = channel();
    let cpu_ns = std::thread::scope(|s| {
        let b = s.spawn(move || {
            pin(cpu);
            let t0 = clocks::cpu_ns();
            for _ in 0..TRIPS {
                let v = recv(&b_rx);
                to_a.send(v + 1).expect("a alive");
            }
            clocks::cpu_ns() - t0
        });
        let a = s.spawn(move || {
            pin(cpu);
            let t0 = clocks::cpu_ns();
            for i in 0..TRIPS {
                to_b.send(i).expect("b alive");
                recv(&a_rx);
            }
            clocks::cpu_ns() - t0
        });
        a.join().expect("a") + b.join().expect("b")
    });
    let shared = wall.elapsed().as_nanos() as f64 / cpu_ns.max(1) as f64;
    (cpu_ns as f64 / TRIPS as f64, shared)
}

/// A round whose wall time exceeds its threads' CPU time by this much shared the CPU
/// with another process: its CPU times, and so the measured cost, are the load's too.
const SHARED: f64 = 1.3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_profilers_own_time_shown_is_within_a_fifth_of_what_it_costs() {
    let cpu = this_cpu();
    // Warm both paths: the first annotated round opens counters and nodes.
    let _ = round(recv_raw, cpu);
    let _ = round(recv_annotated, cpu);
    let mut outside = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let (mut shares, mut noise, mut added) = (Vec::new(), Vec::new(), Vec::new());
        let (mut labelled, mut counted, mut shared) = (true, true, 0.0f64);
        for _ in 0..ROUNDS {
            let (raw, s1) = round(recv_raw, cpu);
            let before = yieldprof::snapshot();
            let (annotated, s2) = round(recv_annotated, cpu);
            let own = yieldprof::snapshot().since(&before).profiler_time();
            let (raw_again, s3) = round(recv_raw, cpu);
            shared = shared.max(s1).max(s2).max(s3);
            let measured = annotated - (raw + raw_again) / 2.0;
            let shown = own.total_ns() as f64 / TRIPS as f64;
            // Every switch of a counted thread is in the estimate, said per switch.
            labelled &= own.switches == 0 || own.kernel_ns_per_switch.is_some();
            counted &= own.switches > 0;
            shares.push(shown / measured.max(1.0));
            noise.push((raw - raw_again).abs());
            added.push(measured);
        }
        let (share, noise, added) = (median(shares), median(noise), median(added));
        eprintln!(
            "attempt {attempt}: profiler shown / measured {:.0} % (measured {added:.0} ns per \
             round trip, raw rounds {noise:.0} ns apart, wall / CPU up to {shared:.2})",
            100.0 * share
        );
        assert!(
            labelled,
            "switches counted but no per-switch estimate given"
        );
        if !counted {
            eprintln!("not judged: no switch counter on these threads (perf-event unavailable)");
            return;
        }
        if noise > added / 10.0 || shared > SHARED {
            continue;
        }
        // A quiet attempt decides, but one outside the band may be the load's: the
        // measured side is a difference of CPU times, and under 4 busy loops one quiet
        // attempt read 121 %. Each quiet attempt is kept; all of them outside fails.
        if (LOWEST..=1.2).contains(&share) {
            return;
        }
        outside.push(share);
    }
    assert!(
        outside.is_empty(),
        "the profiler's own time shown is {:.0?} % of what it cost in every quiet attempt",
        outside.iter().map(|s| 100.0 * s).collect::<Vec<_>>()
    );
    eprintln!(
        "inconclusive: the raw rounds moved more than a tenth of the profiler's cost, or \
         another process shared the CPU, in every attempt"
    );
}
