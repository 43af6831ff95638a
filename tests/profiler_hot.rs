//! The hot path's own time is the profiler's: an episode closed on the fast path (one
//! record, no switch in it) is too short to time, so one in 256 is timed around its
//! two clock reads and charged for all to the frame around it (`record::lazy`,
//! `hot_sample`). Against the thread's CPU clock around the same loop run raw and
//! annotated: a loop of 100k episodes nested in an outer one, each one spin or one
//! `recv` that finds its message, shows most of what it cost as the outer frame's
//! `[profiler]`, where before it was the frame's own `[on-cpu]` time (a spin lock's
//! `relax` loop, 2026-12-06; the `recv` until later that day). Rounds are interleaved
//! and judged on their median; an attempt under a quarter is run again, a few times at
//! most. (Own test binary: it reads the process profile.)

use std::sync::mpsc::{channel, Receiver};
use yieldprof::Session;

mod clocks;
use clocks::cpu_ns;

const EPISODES: u32 = 100_000;
const ROUNDS: usize = 5;
const ATTEMPTS: usize = 3;

#[inline(never)]
fn spin_raw(_: &Receiver<u32>) {
    std::hint::spin_loop();
}

#[inline(never)]
fn recv_raw(rx: &Receiver<u32>) {
    rx.recv().unwrap();
}

#[inline(never)]
fn outer_raw(n: u32, rx: &Receiver<u32>, inner: fn(&Receiver<u32>)) {
    for _ in 0..n {
        inner(rx);
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn spin(_: &Receiver<u32>) {
    std::hint::spin_loop();
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn recv(rx: &Receiver<u32>) {
    rx.recv().unwrap();
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn outer(n: u32, rx: &Receiver<u32>, inner: fn(&Receiver<u32>)) {
    for _ in 0..n {
        inner(rx);
    }
}

/// A receiver holding `n` messages.
fn filled(n: u32) -> Receiver<u32> {
    let (tx, rx) = channel();
    (0..n).for_each(|i| tx.send(i).unwrap());
    rx
}

/// One round: (raw CPU ns, annotated CPU ns, the outer frame's `[profiler]` ns).
fn round(raw_inner: fn(&Receiver<u32>), inner: fn(&Receiver<u32>)) -> (u64, u64, u64) {
    let rx = filled(EPISODES);
    let t = cpu_ns();
    outer_raw(EPISODES, &rx, raw_inner);
    let raw = cpu_ns() - t;
    let rx = filled(EPISODES);
    let session = Session::this_thread();
    let t = cpu_ns();
    outer(EPISODES, &rx, inner);
    let annotated = cpu_ns() - t;
    let p = session.finish();
    (raw, annotated, p.site("outer").unwrap().profiler_ns)
}

fn shows_most_of_its_cost(raw_inner: fn(&Receiver<u32>), inner: fn(&Receiver<u32>)) {
    for attempt in 1..=ATTEMPTS {
        let mut shares: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                let (raw, annotated, shown) = round(raw_inner, inner);
                let measured = annotated.saturating_sub(raw);
                eprintln!(
                    "raw {} ns, annotated {} ns an episode; shown {} ns",
                    raw / u64::from(EPISODES),
                    annotated / u64::from(EPISODES),
                    shown / u64::from(EPISODES)
                );
                shown as f64 / measured.max(1) as f64
            })
            .collect();
        shares.sort_by(f64::total_cmp);
        let median = shares[ROUNDS / 2];
        eprintln!("attempt {attempt}: shown / measured {shares:.2?}");
        assert!(median <= 1.0, "more shown than the loop cost: {shares:.2?}");
        // Not all of it: the clock reads and the episode's own bookkeeping between its
        // start and end are in its own time (debug 0.5, release 0.6 of it on the
        // build VM). Nothing timed (the code before): 0.
        if median >= 0.25 {
            return;
        }
        assert!(attempt < ATTEMPTS, "shown / measured {shares:.2?}");
    }
}

#[test]
fn a_hot_loops_own_episodes_cost_shows_as_the_frame_arounds_profiler_time() {
    shows_most_of_its_cost(spin_raw, spin);
}

#[test]
fn so_does_a_hot_loop_of_calls_that_do_not_wait() {
    shows_most_of_its_cost(recv_raw, recv);
}
