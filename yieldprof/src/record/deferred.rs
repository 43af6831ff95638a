//! Switch figures read after the fact, off the woken thread's critical path.
//!
//! An episode or timed call that the thread was switched in (the page's count moved)
//! needs the figures that change only at a switch (`counters::Mark`): voluntary and
//! involuntary switches, migrations, off-CPU and queued time. Reading them costs a few
//! syscalls (~1.5–3 µs), and at the episode's end that is between the wait returning
//! and the user's code going on. But they stay as they were at the episode's end until
//! the thread's next switch, so the close only notes what they go to ([`Ended`]) and
//! the thread reads them at its next mark: when it is about to wait again (every frame
//! open and timed call takes one), when it reports, at its exit. If it was switched
//! in between (preempted while running its own code), the episode's split is
//! apportioned and counted as estimated (`Mark::until_count`); its switch count and
//! the thread's totals stay exact. An episode long enough that a read is at most 2 %
//! of it is read at its end. Wall ticks are claimed at a guard's close, off-CPU ns when
//! read (`claim_ticks`, `claim_off`), so nested calls' time counts once.

use crate::base::arena::bump;
use crate::base::clock::{self, Scale};
use crate::counters::Mark;
use crate::record::open::{Claimed, Ended, EndedOf, UNREAD};
use crate::record::thread::Local;

/// An episode at least this many times as long as one read of the figures is read at
/// its end: the read is ≤ 2 % of it.
const READ_AT_END: u64 = 50;

impl Local {
    /// The thread's switch figures now, for a frame or call that opens: reading them
    /// (when the thread was switched since the last read) also gives the figures of
    /// the episodes that ended unread.
    #[inline(always)]
    pub(crate) fn mark(&self) -> Mark {
        let (m, ticks) = self.mark_uncharged();
        if ticks > 0 {
            self.charge(ticks);
        }
        m
    }

    /// As [`Local::mark`], with the ticks reading took (0 where nothing was read),
    /// for the caller to [`charge`](Local::charge) to the frame whose time holds them.
    #[inline(always)]
    pub(crate) fn mark_uncharged(&self) -> (Mark, u64) {
        if !self.counters.moved() && self.unread.0.borrow().is_empty() {
            return (self.counters.mark(&self.data.counters), 0);
        }
        self.read_mark()
    }

    #[cold]
    #[inline(never)]
    fn read_mark(&self) -> (Mark, u64) {
        let t0 = clock::now();
        let m = self.counters.mark(&self.data.counters);
        self.attribute(&m);
        (m, clock::now().saturating_sub(t0).max(1))
    }

    /// `ticks` of the current frame's wall time (or the thread's) were yieldprof's
    /// own: its `[profiler]` frame, not the frame's own time.
    pub(crate) fn charge(&self, ticks: u64) {
        self.charge_to(self.current.get(), ticks);
    }

    /// As [`Local::charge`], to the frame of `node`.
    pub(crate) fn charge_to(&self, node: u32, ticks: u64) {
        bump(&self.data.node(node).profiler_ticks, ticks);
        bump(&self.data.profiler_ticks, ticks);
    }

    /// Reads the figures of the episodes that ended unread, if any.
    pub(crate) fn settle(&self) {
        if !self.unread.0.borrow().is_empty() {
            self.mark();
        }
    }

    /// A wait frame or a timed call that opened at `start` closed after `ticks`:
    /// where the thread was switched in it, notes what its figures go to (`to`, and
    /// the off-CPU time claimed when it opened), read now if it is a long frame.
    #[inline]
    pub(crate) fn ended(&self, start: &Mark, to: EndedOf, claimed_off: u64, ticks: u64) {
        let Some(end) = self.counters.switches() else {
            return;
        };
        if end == start.switches {
            return;
        }
        let full = {
            let mut unread = self.unread.0.borrow_mut();
            unread.push(Ended {
                start: *start,
                end,
                to,
                claimed_off,
                ticks,
            });
            unread.len() >= UNREAD
        };
        // A call is read with its frame, which closes later, outside the caller's clock
        // around the call.
        let long =
            matches!(to, EndedOf::Frame(_)) && ticks / READ_AT_END >= self.counters.read_ticks();
        if full || long {
            self.settle();
        }
    }

    /// Gives each episode that ended unread its figures from `now`, in the order they
    /// closed, so that a frame's own off-CPU time is claimed after its calls'.
    fn attribute(&self, now: &Mark) {
        let scale = Scale::rough();
        let mut unread = self.unread.0.borrow_mut();
        for e in unread.drain(..) {
            let wall_ns = scale.map_or(e.ticks, |s| s.ns(e.ticks));
            let (mut d, read_at_end) = e.start.until_count(e.end, now, wall_ns);
            // Read exactly, it may still pass the guard's length by the clocks' rounding,
            // or by a switch in the profiler's own time inside it.
            d.off_ns = d.off_ns.min(wall_ns);
            d.queued_ns = d.queued_ns.min(d.off_ns);
            let own_off = self.claim_off(e.claimed_off, d.off_ns);
            match e.to {
                EndedOf::Frame(node) => {
                    self.counters
                        .add(&self.data.node(node).counts, &d, read_at_end)
                }
                EndedOf::Call(slot) => {
                    if own_off > 0 {
                        bump(&self.data.slot(slot).off_ns, own_off);
                    }
                }
            }
        }
    }

    /// A guard that opened when `at_open` ticks were claimed closes after `ticks`:
    /// its own share, less what guards closed inside it claimed, is claimed now and
    /// returned. The claims only grow, so a guard that outlives the guards opened
    /// after it (held across an `.await`) miscounts only itself.
    #[inline]
    pub(crate) fn claim_ticks(&self, at_open: u64, ticks: u64) -> u64 {
        let now = self.claimed.get();
        let own = ticks.saturating_sub(now.ticks.wrapping_sub(at_open));
        self.claimed.set(Claimed {
            ticks: now.ticks.wrapping_add(own),
            ..now
        });
        own
    }

    /// As [`Local::claim_ticks`], for off-CPU ns, claimed when a guard's figures are
    /// read (above), in the order the guards closed.
    pub(crate) fn claim_off(&self, at_open: u64, off_ns: u64) -> u64 {
        let now = self.claimed.get();
        let own = off_ns.saturating_sub(now.off_ns.wrapping_sub(at_open));
        self.claimed.set(Claimed {
            off_ns: now.off_ns.wrapping_add(own),
            ..now
        });
        own
    }
}
