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
//!
//! A hot loop does not read once per episode either: episodes of one target (a frame's
//! node, a call's slot) with no switch between them telescope (the sum of their deltas
//! is the last one's end less the first one's start), so an opener that continues one
//! takes its mark unread and merges into it at its close (`Local::coalesced`).

use crate::base::arena::bump;
use crate::base::clock::{self, Scale};
use crate::counters::Mark;
use crate::record::gaps;
use crate::record::open::{Claimed, Ended, EndedOf, UNREAD};
use crate::record::thread::Local;
use std::sync::atomic::Ordering::Relaxed;

/// An episode at least this many times as long as one read of the figures is read at
/// its end: the read is ≤ 0.5 % of it. That read is on the woken thread's critical
/// path, which a cross-CPU handoff amplifies (on the build VM 1 µs of plain spinning
/// there made a ping-pong's round trip ~10 µs slower): at 50× the 55 µs episodes of
/// such a ping-pong were read at their ends (0.78–0.81× raw), read at the next open
/// and merged they ran at 0.84–0.94× (2026-12-05). Not much more: a pool worker's
/// 300 µs sleep read later is apportioned with the job after it when that job is
/// preempted (`tests/pool.rs` read 5.3 % short of the jobs' CPU at 500×).
const READ_AT_END: u64 = 200;

/// A wait frame at least this many times as long as one getrusage has its
/// voluntary/involuntary split read at its close (≤ 2 % of it): the one figure a
/// later switch could not be told from.
const SPLIT_AT_END: u64 = 50;

/// Episodes merged into unread ones before an open reads anyway: a read (~2 µs) then
/// costs ~35 ns per episode of a hot loop, and a site's figures in a report taken
/// from another thread are at most this many episodes behind.
const MERGED_BEFORE_READ: u32 = 64;

/// Or this long since the last read, for slow loops: a report from another thread
/// sees a waiting thread's figures at most this late (plus the episode in progress).
/// Until then its last calls' time off the CPU is its frame's own (`[off-cpu]`): at
/// 10 ms a live pool worker's last sleeps read as 9 ms of it. A read (~2 µs) per ms
/// of a slow loop is 0.2 % of it.
const READ_LAG_NS: u64 = 1_000_000;

/// One switched close in this many is timed (`Local::ended`).
const CLOSE_SAMPLE: u32 = 16;

/// One slow open in this many is timed (`Local::timed_open`).
const OPEN_SAMPLE: u32 = 16;

thread_local! {
    /// Switched closes on this thread, for `CLOSE_SAMPLE`.
    static SWITCHED_CLOSES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Slow opens on this thread, for `OPEN_SAMPLE`.
    static SLOW_OPENS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl Local {
    /// The thread's switch figures now, for a frame or call that opens and whose
    /// figures go to `to` (`None`: to nothing that can have ended unread yet): reading
    /// them (when the thread was switched since the last read) also gives the figures
    /// of the episodes that ended unread. Not read where the opener may continue one of
    /// those, or is a lock (`lock`), which seldom blocks (`Local::coalesced`).
    #[inline(always)]
    pub(crate) fn mark(&self, to: impl FnOnce() -> Option<EndedOf>, lock: bool) -> Mark {
        if !self.counters.moved() && self.unread.ended.borrow().is_empty() {
            return self.counters.current(&self.data.counters);
        }
        self.mark_slow(to, lock)
    }

    /// As [`Local::mark`], read: a job's, whose off-CPU time so far is the pool's in a
    /// report taken while it is open (`OpenFrames`), which needs the thread's clocks
    /// at its mark; through rseq the last mark may hold only the count.
    pub(crate) fn mark_read(&self) -> Mark {
        let m = self.mark(|| None, false);
        if m.off_clock().is_some() || !self.counters.counted() {
            return m;
        }
        let (m, ticks) = self.read_mark(false);
        self.charge(ticks);
        m
    }

    /// Out of line: taken at most once per switched episode.
    #[inline(never)]
    fn mark_slow(&self, to: impl FnOnce() -> Option<EndedOf>, lock: bool) -> Mark {
        // A getrusage count (rseq) since the last charge (the check that led here)
        // is the profiler's: charged here, in the frame around the opener.
        let charged = self.unread.count_charged.get();
        let to = to();
        let m = match self.coalesced(to, lock) {
            Some(m) => m,
            // Through rseq: the count and split now (getrusage, where the thread was
            // switched), exact; the clocks and schedstat wait for the next read, and
            // the episodes between share what they saw (estimated). An opener with no
            // target (a job, a call's first) reads, as `Local::mark_read` does.
            None if to.is_some() && self.counters.counted() && !self.read_due() => {
                self.counters.current(&self.data.counters)
            }
            None => {
                let (m, ticks) = self.read_mark(false);
                self.charge(ticks);
                m
            }
        };
        let counting = self.counters.count_ticks();
        self.unread.count_charged.set(counting);
        self.charge(counting.saturating_sub(charged));
        m
    }

    /// Whether the episodes that ended unread are due a read: `MERGED_BEFORE_READ`
    /// of them merged, or `READ_LAG_NS` since the last read.
    fn read_due(&self) -> bool {
        let u = &self.unread;
        if u.ended.borrow().is_empty() {
            return false;
        }
        let lag = clock::now().saturating_sub(u.read_tick.get());
        u.merged.get() >= MERGED_BEFORE_READ
            || Scale::rough().map_or(lag, |s| s.ns(lag)) >= READ_LAG_NS
    }

    /// A mark taken unread (`Mark::unread_at`), where every episode that ended unread
    /// ended at the switch count now (no switch since) and one of them has the
    /// opener's target: when the opener switches, its episode continues that one
    /// (`ended` merges them), and only the figures at their two far ends are needed,
    /// so a hot loop of episodes reads once per `MERGED_BEFORE_READ` of them or
    /// `READ_LAG_NS`. A different target reads now, but for a lock (`lock`: the lock
    /// before a condvar wait, a Mutex loop's acquire, whose frame is still pending):
    /// it needs no figures where it does not block, the common case, and where it
    /// does, it and the episodes before it are apportioned (estimated) from the next
    /// read. Reading for it cost a Mutex+Condvar ping-pong a full read per episode
    /// (117k preads for 120k episodes, 20k after, 2026-12-05). Nor does a lock read
    /// where episodes ended before a switch since (a condvar's re-lock right after its
    /// park): a read there comes too late to make them exact, and cost parking_lot's
    /// condvar ping-pong one per episode (197k preads for 185k episodes, 25k after).
    /// Other calls still read: taking the unread mark for all made a pool worker's
    /// sleep share its figures with the yields after it, and its jobs read 5.4 % short
    /// (`tests/pool.rs`).
    fn coalesced(&self, to: Option<EndedOf>, lock: bool) -> Option<Mark> {
        let now = self.counters.switches()?;
        if self.read_due() {
            return None;
        }
        let ended = self.unread.ended.borrow();
        if ended.is_empty() {
            return None;
        }
        let continued =
            ended.iter().all(|e| e.end == now) && ended.iter().any(|e| Some(e.to) == to);
        if !lock && !continued {
            return None;
        }
        drop(ended);
        match self.counters.counted() {
            true => Some(self.counters.current(&self.data.counters)),
            false => self.counters.unread_at(now),
        }
    }

    /// Reads the figures now and gives the episodes that ended unread theirs
    /// (`all`: every one of them, else those that frames still open continue stay).
    /// The mark read, and the ticks that took.
    fn read_mark(&self, all: bool) -> (Mark, u64) {
        let t0 = clock::now();
        let counting = self.counters.count_ticks();
        let at = self.counters.switches();
        let before = self.counters.last();
        let mut m = self.counters.mark(&self.data.counters);
        // Preempted in the read: its time off the CPU is not the profiler's, and the
        // figures go back to where the read began (`Mark::before_read`), what it cost
        // unswitched after them.
        let mut lost = 0;
        if let Some(at) = at.filter(|&at| at != m.switches) {
            let read = clock::now().saturating_sub(t0);
            lost = read.saturating_sub(self.counters.read_ticks());
            m = m.before_read(at, Scale::rough().map_or(0, |s| s.ns(lost)));
        }
        self.attribute(&m, before, all);
        if let Some(off) = m.off_clock() {
            self.unread.read_off.set(off);
        }
        self.open.read_at(&m);
        self.unread.merged.set(0);
        self.unread.read_tick.set(t0);
        // Less a getrusage count in it: charged by `mark_slow`. One past a stretch of
        // work was switched out after the read (in `attribute`): not timed.
        let counted = self.counters.count_ticks() - counting;
        let took = clock::now()
            .saturating_sub(t0)
            .saturating_sub(counted)
            .saturating_sub(lost);
        (m, gaps::unless_interrupted(took))
    }

    /// Opens the pending episodes the slow way (`open`: after a switch, a timed call
    /// first, several pending): its time up to their start tick, less what it charged
    /// itself (reads), is the profiler's, in the frame around them. Timed on one in
    /// `OPEN_SAMPLE` and charged for all, as switched closes are; a sample the thread
    /// was switched in is dropped, and so is one as long as a stretch of work
    /// (`gaps::GAP_NS`), which a thread without a page cannot tell from one switched
    /// in (a spin lock's worker preempted in one showed 10.5 ms of `[profiler]` in
    /// 13.9 ms of wall, 2026-12-06). What `open` gave.
    #[inline]
    pub(crate) fn timed_open(
        &self,
        open: impl FnOnce() -> Option<(u64, Mark)>,
    ) -> Option<(u64, Mark)> {
        let n = SLOW_OPENS.get().wrapping_add(1);
        SLOW_OPENS.set(n);
        if n % OPEN_SAMPLE != 0 {
            return open();
        }
        let parent = self.current.get();
        let charged = self.data.profiler_ticks.load(Relaxed);
        let at = self.counters.switches();
        let counting = self.counters.count_ticks();
        let t0 = clock::now();
        let began = open();
        let (start, _) = began?;
        if self.counters.switches() == at {
            // Getrusage counts in it are charged whole (`mark_slow`).
            let itself = self.data.profiler_ticks.load(Relaxed).wrapping_sub(charged)
                + (self.counters.count_ticks() - counting);
            let own = start.saturating_sub(t0).saturating_sub(itself);
            self.charge_to(
                parent,
                gaps::unless_interrupted(own) * u64::from(OPEN_SAMPLE),
            );
        }
        began
    }

    /// The off-CPU clock at `start`, bounded, for a frame whose mark was taken unread
    /// (`Local::coalesced`): the last read's plus all the time since (off the CPU at
    /// most that). A report made while the frame is open reads its open part off the
    /// CPU at least that far, short of the truth by the time the thread ran between
    /// the read and `start`: under `READ_LAG_NS` where episodes wait unread, since a
    /// mark is then taken unread only before a read falls due (through rseq, with none
    /// waiting, it can be longer, and the open part reads shorter, never longer).
    /// Without it, a `recv` blocked 50 ms in an episode that continued a switched one
    /// read its open part on the CPU.
    pub(crate) fn unread_off_clock(&self, start: u64) -> Option<u64> {
        let (tick, off) = (self.unread.read_tick.get(), self.unread.read_off.get());
        let scale = Scale::rough().filter(|_| tick != 0 && off != 0)?;
        Some(off + scale.ns(start.saturating_sub(tick)))
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

    /// Reads the figures of the episodes that ended unread, if any (`all`: at the
    /// thread's exit, those open frames continue too).
    pub(crate) fn settle(&self, all: bool) {
        if !self.unread.ended.borrow().is_empty() {
            let (_, ticks) = self.read_mark(all);
            self.charge(ticks);
        }
    }

    /// A wait frame or a timed call that opened at `start` closed after `ticks`, its
    /// close begun at tick `closing`:
    /// where the thread was switched in it, notes what its figures go to (`to`, and
    /// the off-CPU time claimed when it opened), read now if it is a long frame. One
    /// whose mark was taken unread continues the unread one of the same target that
    /// ended where it started: that one now ends here, and moves to the end of the
    /// list, so calls are still claimed before the frames around them. A switched
    /// close's own time, from `closing` on (~80 ns on the build VM: its caches are
    /// cold after the switch), is timed on one in `CLOSE_SAMPLE` of them and charged
    /// for all: a timed close on each cost about as much again. The page's switch count
    /// at the close, where there is a page.
    #[inline]
    pub(crate) fn ended(
        &self,
        start: &Mark,
        to: EndedOf,
        claimed_off: u64,
        ticks: u64,
        closing: u64,
    ) -> Option<u32> {
        let counting = self.counters.count_ticks();
        let end = self.counters.switches()?;
        // Opened before the counters did (`LocalCounters::mark`): its figures were the
        // sampled reads' or none, never the page's whole count.
        if end == start.switches || start.is_pageless() {
            return Some(end);
        }
        // A getrusage count at this close (rseq) is charged whole, not sampled.
        let counting = self.counters.count_ticks() - counting;
        self.unread
            .count_charged
            .set(self.unread.count_charged.get() + counting);
        let mut read = counting;
        // The split is the one figure a later switch could not be told from (a
        // voluntary switch in the thread's own code, a join, would otherwise be guessed
        // into a preempted episode): read now, where it is ≤ 2 % of the frame.
        // Through rseq the split is getrusage's at the count just read: free.
        let counted = self.counters.counted();
        let split = match to {
            EndedOf::Frame(_) if counted => self.counters.split_now(),
            EndedOf::Frame(_) if ticks / SPLIT_AT_END >= self.counters.split_ticks() => {
                let t0 = clock::now();
                let split = self.counters.split_now();
                // None where a switch landed in it: then not the profiler's time.
                if split.is_some() {
                    read += clock::now().saturating_sub(t0).max(1);
                }
                split
            }
            _ => None,
        }
        // Else the split known at its end without a read, where a read or a switched
        // close was at that count: an episode merged past a read (its frame closed at
        // the read's count) was apportioned from the next read without it, voluntary
        // switches first, and took the next episode's (flume's 4 producers: 17 935
        // voluntary in waits of 17 929, 2026-12-06).
        .filter(|s| s.at() == end)
        .or_else(|| self.counters.split_at(end));
        let lone;
        let full = {
            let mut unread = self.unread.ended.borrow_mut();
            let continued = match start.is_read() {
                true => None,
                false => unread
                    .iter()
                    .position(|e| e.to == to && e.end == start.switches),
            };
            lone = !start.is_read() && continued.is_none();
            match continued {
                Some(i) => {
                    let mut e = unread.remove(i);
                    e.end = end;
                    e.split = split;
                    e.ticks = e.ticks.saturating_add(ticks);
                    unread.push(e);
                    self.unread.merged.set(self.unread.merged.get() + 1);
                }
                None => unread.push(Ended {
                    start: *start,
                    end,
                    to,
                    claimed_off,
                    ticks,
                    split,
                }),
            }
            unread.len() >= UNREAD
        };
        // A call is read with its frame, which closes later, outside the caller's clock
        // around the call.
        let long =
            matches!(to, EndedOf::Frame(_)) && ticks / READ_AT_END >= self.counters.read_ticks();
        // One switched close in `CLOSE_SAMPLE` is timed and charged for all of them.
        let n = SWITCHED_CLOSES.get().wrapping_add(1);
        SWITCHED_CLOSES.set(n);
        // Not one the thread was switched in: that time was not the profiler's.
        // Nor one past a stretch of work: switched out before its count was read.
        if n % CLOSE_SAMPLE == 0 && self.counters.switches() == Some(end) {
            let close = clock::now().saturating_sub(closing).saturating_sub(read);
            read += gaps::unless_interrupted(close) * u64::from(CLOSE_SAMPLE);
        }
        if read > 0 {
            self.charge(read);
        }
        // One marked unread that continues none: its split is apportioned from the
        // last read (estimated), best read at once; through rseq its split is exact
        // and its times wait for the next read.
        if full || long || (lone && !counted) {
            self.settle(full);
        }
        Some(end)
    }

    /// Gives each episode that ended unread its figures from `now` (or from `before`,
    /// the read before it, where it ended at that read's count), in the order they
    /// closed, so that a frame's own off-CPU time is claimed after its calls'. Unless
    /// `all`, one that a frame still open continues (marked unread where it ended:
    /// `OpenFrames::continues`) stays, to be merged when that frame closes.
    fn attribute(&self, now: &Mark, before: Option<Mark>, all: bool) {
        let scale = Scale::rough();
        let mut unread = self.unread.ended.borrow_mut();
        let mut kept = 0;
        // The off-CPU time since the last read is all these episodes can hold (older
        // time was given out then): apportioned ones share what the exact ones leave,
        // so that episodes whose switches and waits do not match (a long block, many
        // short preemptions) are not given more than the thread was off the CPU.
        let since = now
            .off_clock()
            .map_or(u64::MAX, |o| o.saturating_sub(self.unread.read_off.get()));
        let mut given = 0u64;
        for i in 0..unread.len() {
            let e = unread[i];
            let stays = match e.to {
                EndedOf::Frame(node) => {
                    !all && e.end != now.switches && self.open.continues(node, e.end)
                }
                EndedOf::Call(_) => false,
            };
            if stays {
                unread[kept] = e;
                kept += 1;
                continue;
            }
            let wall_ns = scale.map_or(e.ticks, |s| s.ns(e.ticks));
            // Ended at the count of the read before, unswitched since (that read was
            // in its frame, as a lock's after its wait): its figures are that read's.
            // Apportioned from this read instead, a frame shared the next wait's time
            // with it: 1.5 % more and 3 % less off-CPU time than the thread's, once
            // each in 40 runs under 2 busy loops (`tests/coalesced_reads.rs`).
            let earlier = before.filter(|b| {
                e.end == b.switches
                    && e.end != now.switches
                    && e.start.is_read()
                    && b.off_clock().is_some()
            });
            let at = earlier.as_ref().unwrap_or(now);
            let (mut d, read_at_end) = e.start.until_count(e.end, at, wall_ns, e.split);
            // Read exactly, it may still pass the guard's length by the clocks' rounding,
            // or by a switch in the profiler's own time inside it.
            d.off_ns = d.off_ns.min(wall_ns);
            // Its own part (less its calls', claimed already) counts against that.
            let inner = self.claimed.get().off_ns.wrapping_sub(e.claimed_off);
            let own = d.off_ns.saturating_sub(inner);
            if !read_at_end {
                d.off_ns -= own.saturating_sub(since.saturating_sub(given));
            }
            // Of one given the read before's figures, only what came after the last
            // read's clock is in the window: none, unless that read was preempted (its
            // clock taken back) or the read before was not one of these.
            let in_window = earlier
                .and_then(|b| b.off_clock())
                .map_or(u64::MAX, |b| b.saturating_sub(self.unread.read_off.get()));
            given = given.saturating_add(d.off_ns.saturating_sub(inner).min(in_window));
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
        unread.truncate(kept);
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

/// How many times this thread has read its switch figures (the sources of a [`Mark`])
/// since it began recording; 0 without a page.
pub(crate) fn reads_here() -> u64 {
    crate::record::thread::with(|l| l.counters.reads()).unwrap_or(0)
}
