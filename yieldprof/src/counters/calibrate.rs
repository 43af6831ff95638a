//! What a thread's context-switch counter costs the kernel at each of its switches:
//! the part of yieldprof's own time that no clock of the thread's can bracket (the
//! kernel updates the event and its user page inside the switch), calibrated so that
//! a report can charge it as an estimate.
//!
//! Two threads pinned to one CPU pass a token back and forth through two channels, in
//! rounds with and without the counter (and its mapped page) open on both, interleaved;
//! each round's figure is the two threads' CPU time per round trip. On one CPU every
//! round trip is one switch out and one in of each thread and nothing crosses CPUs,
//! and load elsewhere changes when the threads run, not the CPU time they take, so the
//! difference is the counter's kernel work per switch of one thread (~0.3 µs on the
//! build VM on 2026-12-04, ~1 µs on 2026-12-05, `docs/cost.md`). 1 000 round trips per
//! round, 5 pairs of rounds: about 30 ms of CPU, once per process. The same for the
//! rseq bit (`counters/rseq`), re-armed after each wait as a recording thread does:
//! the kernel's check and clearing of it at each switch (the getrusage that counts
//! the switch is timed on the threads).

use super::exact::clock_ns;
use super::perf::open_alone;
use super::rseq::Rseq;
use super::userpage::UserPage;
use super::CounterEvent;
use std::os::fd::AsRawFd;
use std::sync::mpsc::{channel, Receiver, Sender};

/// Round trips per round: enough that one round's CPU time is ~100× the clock's read.
const TRIPS: u64 = 1_000;
/// Pairs of rounds (without, with), interleaved.
const PAIRS: usize = 5;

/// What a calibration found, and what running it cost: its two threads are no
/// recording thread's, so their switches and CPU time are in no thread's figures,
/// only in the process's (`perf stat`, `time`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Calibrated {
    /// The kernel's work per switch of one thread, ns.
    pub(crate) ns_per_switch: f64,
    /// Both threads' CPU time in the rounds, ns.
    pub(crate) cpu_ns: u64,
    /// Their context switches in the rounds.
    pub(crate) switches: u64,
}

/// The kernel's work for one thread's context-switch counter with its user page, per
/// switch of that thread (out and back in); `None` where the counter cannot be
/// opened or the threads cannot be pinned to one CPU. Each side keeps its least CPU
/// time: other load on the CPU only adds to a round (cache refills after someone
/// else ran), so the least is the one it touched least.
pub(crate) fn kernel_ns_per_switch() -> Option<Calibrated> {
    per_switch(Source::Page)
}

/// As [`kernel_ns_per_switch`], for a thread that sees its switches through rseq.
pub(crate) fn rseq_ns_per_switch() -> Option<Calibrated> {
    per_switch(Source::Rseq)
}

/// What a round's threads hold.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Nothing,
    Page,
    Rseq,
}

fn per_switch(source: Source) -> Option<Calibrated> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
    let (mut without, mut with, mut cpu_ns) = (u64::MAX, u64::MAX, 0);
    for _ in 0..PAIRS {
        let (a, b) = (round(cpu, Source::Nothing)?, round(cpu, source)?);
        (without, with) = (without.min(a), with.min(b));
        cpu_ns += a + b;
    }
    // Per round trip each of the two threads is switched out and in once.
    let per_trip = |ns: u64| ns as f64 / TRIPS as f64;
    Some(Calibrated {
        ns_per_switch: ((per_trip(with) - per_trip(without)) / 2.0).max(0.0),
        cpu_ns,
        switches: 2 * PAIRS as u64 * 2 * TRIPS,
    })
}

/// Both threads' CPU ns in one round, each with its own `source`; `None` where a
/// thread could not be pinned or open its counter.
fn round(cpu: usize, source: Source) -> Option<u64> {
    let (to_b, b_rx) = channel::<u64>();
    let (to_a, a_rx) = channel::<u64>();
    let side = move |first: bool, rx: Receiver<u64>, tx: Sender<u64>| {
        // The counter is opened before the clock starts and closed after it stops.
        let kept = (source == Source::Page).then(counter);
        let bit = (source == Source::Rseq).then(Rseq::here);
        let ready = pin(cpu)
            && kept.as_ref().map_or(true, Option::is_some)
            && bit.as_ref().map_or(true, Option::is_some);
        let bit = bit.flatten();
        let t0 = cpu_ns();
        for i in 0..TRIPS {
            if first {
                let _ = tx.send(i);
                let _ = rx.recv();
            } else {
                let v = rx.recv().unwrap_or(0);
                let _ = tx.send(v);
            }
            if let Some(b) = &bit {
                b.arm();
            }
        }
        let spent = cpu_ns().saturating_sub(t0);
        drop(kept);
        ready.then_some(spent)
    };
    // A thread that cannot be spawned (the process is exiting, out of threads)
    // leaves the other's channel closed: it returns at once, and nothing is calibrated.
    let (a, b) = std::thread::scope(|s| {
        let b = std::thread::Builder::new()
            .spawn_scoped(s, move || side(false, b_rx, to_a))
            .ok();
        let a = std::thread::Builder::new()
            .spawn_scoped(s, move || side(true, a_rx, to_b))
            .ok();
        let joined = |t: Option<std::thread::ScopedJoinHandle<'_, Option<u64>>>| {
            t.and_then(|t| t.join().ok().flatten())
        };
        (joined(a), joined(b))
    });
    Some(a? + b?)
}

/// The calling thread's context-switch counter and its mapped page, as a recording
/// thread holds them.
fn counter() -> Option<(std::os::fd::OwnedFd, UserPage)> {
    let fd = open_alone(CounterEvent::ContextSwitches).ok()?;
    let page = UserPage::map(fd.as_raw_fd()).ok()?;
    Some((fd, page))
}

/// Pins the calling thread to `cpu`; whether that worked.
pub(crate) fn pin(cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t; CPU_SET checks `cpu` against its size.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is valid for its size; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 }
}

fn cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}
