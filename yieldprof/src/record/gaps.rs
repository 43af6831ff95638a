//! Work done inside a wait where no frame names it: a pool worker whose wait loop runs
//! the jobs it finds between its waits.
//!
//! The thread keeps the tick its last wait call (or nested frame) ended at, the page's
//! switch count then, its count of records and its profiler's ticks. When the next one
//! begins, or the frame closes, a stretch of at least [`GAP_NS`] since then, less the
//! profiler's own time in it, is added to the current frame's `gap_ticks` (or
//! `gap_switched_ticks`, where the thread was switched in it): time outside every
//! recognised wait, far longer than a loop's own checks between two waits. A spin ends
//! the stretch without one, spinning being waiting: a probe-counted call, a nested
//! episode made a frame, or one closed on the fast path (its record moved the count of
//! records, so that path pays nothing for this). The report makes the on-CPU part of
//! these stretches the site's `[unmarked work]`, not its waiting (`model::own`). Direct
//! spins are counted only when their episode ends, so a frame that counted any has no
//! unmarked work. A wake call (`notify_one`, `unpark`) ends a stretch and begins the
//! next as a wait call does, its own time the frame's. The stretch in progress is
//! published (its start and node) for a copy made while it runs: a job still running
//! at a report is work up to then.
//!
//! Each wait call pays a store at its open, four loads, a compare and six stores at its
//! close (the switch
//! count is the one its close reads anyway); the stretch's own bump only where one was
//! that long.

use crate::base::arena::bump;
use crate::base::clock::{self, Scale};
use crate::record::thread::Local;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A stretch between two waits at least this long is work, not the loop's checks: a
/// loop's own steps between waits (a steal attempt, a queue's lock, a flag) take
/// tens of ns to a few µs.
pub(crate) const GAP_NS: u64 = 10_000;

/// [`GAP_NS`] in ticks, once the tick rate is known; until then ticks are taken as ns
/// at 3 GHz (a longer bound on a slower TSC, never a shorter one past 3 GHz).
static GAP_TICKS: AtomicU64 = AtomicU64::new(0);

#[cold]
fn gap_ticks_now() -> u64 {
    match Scale::rough() {
        Some(s) => {
            let t = (GAP_NS as f64 / s.ns_per_tick()) as u64;
            GAP_TICKS.store(t.max(1), Relaxed);
            t.max(1)
        }
        None => GAP_NS * 3,
    }
}

#[inline(always)]
pub(super) fn gap_ticks() -> u64 {
    match GAP_TICKS.load(Relaxed) {
        0 => gap_ticks_now(),
        t => t,
    }
}

/// `ticks` of the profiler's own time, measured, or 0 where they are as long as a
/// stretch of work: the thread was switched out or interrupted in them (which a thread
/// without a perf page cannot see), and their wall is no measure of their cost.
pub(super) fn unless_interrupted(ticks: u64) -> u64 {
    ticks * u64::from(ticks < gap_ticks())
}

/// `Local::gap_count` where the count is not known.
const UNKNOWN: u32 = u32::MAX;

impl Local {
    /// A wait or a nested frame of `node` begins (or `node` closes) at `at`, with the
    /// page's switch count `switches`: the stretch since the last one ended is
    /// `node`'s, if it was that long; on the CPU all of it where the count did not
    /// move, else the report tells how much (`model::own`).
    #[inline(always)]
    pub(crate) fn gap_to(&self, node: u32, at: u64, switches: Option<u32>) {
        let from = self.gap_from.get();
        // An episode closed on the fast path since (a nested spin) ends the stretch.
        let spun = self.data.records.written() != self.gap_records.get();
        if from != 0 && at > from && at - from >= gap_ticks() && !spun {
            self.gap_long(node, at - from, switches);
        }
    }

    #[cold]
    #[inline(never)]
    fn gap_long(&self, node: u32, ticks: u64, switches: Option<u32>) {
        // The profiler's own time in it (a nested frame's opening, a read) is its own.
        let profiler = self.data.profiler_ticks.load(Relaxed);
        let ticks = ticks.saturating_sub(profiler.wrapping_sub(self.gap_profiler.get()));
        if ticks < gap_ticks() {
            return;
        }
        let n = self.data.node(node);
        match switches {
            Some(b) if b == self.gap_count.get() && b != UNKNOWN => bump(&n.gap_ticks, ticks),
            _ => bump(&n.gap_switched_ticks, ticks),
        }
    }

    /// A spin: no stretch runs on from here.
    #[inline(always)]
    pub(crate) fn spun_here(&self) {
        self.gap_from.set(0);
        self.data.stretch.store(0, Relaxed);
    }

    /// A wake call (`notify_one`, `unpark`) ran from `start` until now: the stretch
    /// before it ends at its start, the next one begins at its end, as around a wait
    /// call; its own time stays the frame's (a condvar turn's notify took 10–15 µs on
    /// the build VM, and read as `[unmarked work]`).
    #[inline(never)]
    pub(crate) fn woke(&self, start: u64) {
        let at = self.counters.switches();
        let charged = self.data.profiler_ticks.load(Relaxed);
        self.gap_to(self.current.get(), start, at);
        self.gap_from(clock::now(), at, charged);
    }

    /// A wait call begins: a copy made while it waits finds no stretch in progress.
    #[inline(always)]
    pub(crate) fn in_call(&self) {
        self.data.stretch.store(0, Relaxed);
    }

    /// A wait or a nested frame ended at `at`, at the page's switch count `switches`,
    /// the profiler's ticks `charged` then (its reads since, in the close, are its own).
    #[inline(always)]
    pub(crate) fn gap_from(&self, at: u64, switches: Option<u32>, charged: u64) {
        self.gap_from.set(at);
        self.gap_count.set(switches.unwrap_or(UNKNOWN));
        self.gap_records.set(self.data.records.written());
        self.gap_profiler.set(charged);
        // For a copy made while the stretch runs (a job in progress at a report).
        self.data.stretch_node.store(self.current.get(), Relaxed);
        self.data.stretch.store(at, Relaxed);
    }
}
