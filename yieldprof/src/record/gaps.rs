//! Work done inside a wait where no frame names it: a pool worker whose wait loop runs
//! the jobs it finds between its waits.
//!
//! The thread keeps the tick its last wait call (or nested frame) ended at, and the
//! page's switch count then. When the next one begins, or the frame closes, a stretch
//! of at least [`GAP_NS`] since then is added to the current frame's `gap_ticks` (or
//! `gap_switched_ticks`, where the thread was switched in it): time outside every
//! recognised wait, far longer than a loop's own checks between two waits. A spin (a probe-counted call, a
//! nested episode opened on the fast path) ends the stretch without one: spinning is
//! waiting. The report makes the on-CPU part of these stretches the site's
//! `[unmarked work]`, not its waiting (`model::own`). Direct spins are counted only when
//! their episode ends, so a frame that counted any has no unmarked work.
//!
//! Each wait call pays two loads, a compare and two stores at its close (the switch
//! count is the one its close reads anyway); the stretch's own bump only where one was
//! that long.

use crate::base::arena::bump;
use crate::base::clock::Scale;
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
fn gap_ticks() -> u64 {
    match GAP_TICKS.load(Relaxed) {
        0 => gap_ticks_now(),
        t => t,
    }
}

impl Local {
    /// A wait or a nested frame of `node` begins (or `node` closes) at `at`, with the
    /// page's switch count `switches`: the stretch since the last one ended is
    /// `node`'s, if it was that long; on the CPU all of it where the count did not
    /// move, else the report tells how much (`model::own`).
    #[inline(always)]
    pub(crate) fn gap_to(&self, node: u32, at: u64, switches: Option<u32>) {
        let (from, was) = self.gap_from.get();
        if from != 0 && at > from && at - from >= gap_ticks() {
            let n = self.data.node(node);
            match (was, switches) {
                (Some(a), Some(b)) if a == b => bump(&n.gap_ticks, at - from),
                _ => bump(&n.gap_switched_ticks, at - from),
            }
        }
    }

    /// A wait or a nested frame ended at `at` (0: a spin, which ends no stretch), at
    /// the page's switch count `switches`.
    #[inline(always)]
    pub(crate) fn gap_from(&self, at: u64, switches: Option<u32>) {
        self.gap_from.set((at, switches));
    }
}
