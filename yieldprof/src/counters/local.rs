//! The calling thread's counters: when they open, and the reads around an episode.

use super::*;
use crate::base::arena::bump;
use crate::base::clock;
use std::cell::{Cell, OnceCell, RefCell};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// A thread without a page reads its run-queue total at exit where it was preempted
/// this many times: what the `[oversubscribed]` finding needs (a short thread preempted
/// once or twice exits without the read, its total n/a).
const PREEMPTED_READS_QUEUE: u64 = 10;

thread_local! {
    /// Marks threads whose counters are open, so a report can refresh the calling
    /// thread's totals without registering it.
    pub(super) static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread has counters to refresh.
pub(crate) fn open_here() -> bool {
    OPEN.with(Cell::get)
}

/// A thread's own counter state: only the owner touches it.
///
/// Under the default sampling (`Auto`) a thread first reads getrusage and its CPU
/// clock at both ends of each of its wait episodes until [`episodes_before_open`]
/// waits (episodes or timed calls) have opened (exact switches and split per
/// episode, ~2.3 µs each, no fd; calls get no figures of their own meanwhile): most short-lived threads
/// wait once or twice and never pay the ~36 µs of perf set-up, its fds or its
/// unmap at exit (docs/cost.md, "Short threads"). Then, at the mark of the next wait (an
/// episode still open ends on getrusage, as it began: `finish_deferred`), it
/// opens only what it needs to count every episode's switches: the context-switch
/// counter with its user page, the migration counter (read when a switch was seen)
/// and the schedstat file. Its perf groups (page faults, hardware events) open at its
/// next sampled episode, so setup costs are spread over two episodes; the group
/// events' thread totals then start later than the thread and are shown scaled
/// (`ThreadCounters::root`).
pub(crate) struct LocalCounters {
    pub(super) credit: Cell<i64>,
    // Readings of the sampled episodes still open, innermost last. Kept here rather
    // than in each guard so that a guard stays a few words: every episode moves one.
    pub(super) open_samples: RefCell<Vec<Begin>>,
    pub(super) policy: Policy,
    pub(super) on: bool,
    pub(super) phase: Cell<Phase>,
    // When the counters opened: the groups' lateness is measured from it.
    pub(super) opened: Cell<Instant>,
    // Whether a sampled episode has begun since they opened: the next one opens the
    // pending groups.
    pub(super) sampled_once: Cell<bool>,
    // Whether a sampled episode reads anything: getrusage (no page), or a perf group
    // open or still to open. A page alone has nothing to sample (no PMU, no group).
    pub(super) samples: Cell<bool>,
    // Fields drop in order: the pages unmap before their fds close, and fds close
    // before their reservation is given back.
    pub(super) exact: OnceCell<Exact>,
    // The counters behind `exact`'s pages.
    pub(super) exact_fds: OnceCell<Vec<OwnedFd>>,
    // Events counted on every episode through `exact`, by bit.
    pub(super) exact_mask: Cell<u16>,
    pub(super) groups: [OnceCell<PerfGroup>; GROUPS],
    pub(super) pending: [Cell<Option<Pending>>; GROUPS],
    pub(super) exact_reserved: OnceCell<Reservation>,
}

impl LocalCounters {
    /// The thread's switch figures now (see [`Mark`]): the last ones while the
    /// page's switch count has not moved, which costs ~1 ns. A default mark where
    /// there is no page.
    ///
    /// Taken where an episode or call opens, each counted against the deferred
    /// episodes: at the last of them, the counters open first, so this mark and every later one are the page's. An
    /// episode still open from before (a worker's life-long wait) ends on the source
    /// it began on (`finish_deferred`); a call's pageless mark is skipped
    /// (`Mark::is_pageless` in `record::deferred`).
    #[inline(always)]
    pub(crate) fn mark(&self, shared: &ThreadCounters) -> Mark {
        if self.exact.get().is_none() {
            match self.phase.get() {
                Phase::Open => {}
                Phase::Deferred(n) if n > 1 => self.phase.set(Phase::Deferred(n - 1)),
                Phase::Deferred(_) => {
                    self.phase.set(Phase::Open);
                    self.open_counters(shared, true);
                }
            }
        }
        self.mark_now(shared)
    }

    /// The mark an open takes where nothing unread waits for a read: through rseq
    /// its count and split only (`Exact::current`), else as [`LocalCounters::mark`].
    #[inline(always)]
    pub(crate) fn current(&self, shared: &ThreadCounters) -> Mark {
        match self.exact.get() {
            Some(x) if x.counted() => match x.current() {
                (m, false) => m,
                (m, true) => {
                    self.publish_exact(shared, &m);
                    m
                }
            },
            _ => self.mark(shared),
        }
    }

    /// Whether switches are counted by getrusage after rseq saw one: a mark's count
    /// and split are then exact without the thread's clocks and schedstat.
    pub(crate) fn counted(&self) -> bool {
        self.exact.get().is_some_and(Exact::counted)
    }

    /// The thread's switch figures now, opening nothing.
    #[inline(always)]
    fn mark_now(&self, shared: &ThreadCounters) -> Mark {
        match self.exact.get() {
            Some(x) => match x.mark() {
                (m, false) => m,
                (m, true) => {
                    self.publish_exact(shared, &m);
                    m
                }
            },
            None => Mark::ZERO,
        }
    }

    /// Whether the thread was switched since its last mark (or its counters open at
    /// the next one): the next [`mark`] reads.
    ///
    /// [`mark`]: LocalCounters::mark
    #[inline(always)]
    pub(crate) fn moved(&self) -> bool {
        match self.exact.get() {
            Some(x) => x.moved(),
            // The next mark opens the counters: taken on the read path, which
            // charges its time to the profiler (`record::deferred`).
            None => self.phase.get() == Phase::Deferred(1),
        }
    }

    /// The page's switch count now (~1 ns, no syscall); `None` without a page.
    #[inline(always)]
    pub(crate) fn switches(&self) -> Option<u32> {
        self.exact.get().map(Exact::switches)
    }

    /// The last [`Mark`] read, whatever the switch count now; `None` without a page.
    #[inline(always)]
    pub(crate) fn last(&self) -> Option<Mark> {
        self.exact.get().map(Exact::last)
    }

    /// The last [`Mark`] read taken again unread at switch count `at`
    /// (`Exact::unread_at`); `None` without a page.
    pub(crate) fn unread_at(&self, at: u32) -> Option<Mark> {
        self.exact.get().map(|x| x.unread_at(at))
    }

    /// The split known at switch count `at` without a read (`Exact::split_at`).
    pub(crate) fn split_at(&self, at: u32) -> Option<Split> {
        self.exact.get().and_then(|x| x.split_at(at))
    }

    /// The thread's voluntary/involuntary split now, at the page's switch count now
    /// (getrusage, ~0.4 µs); `None` without a page or when a switch landed in the read.
    pub(crate) fn split_now(&self) -> Option<Split> {
        self.exact.get().and_then(Exact::split_now)
    }

    /// What one [`LocalCounters::split_now`] costs on this thread, in ticks (the fewest
    /// seen); `u64::MAX` without a page.
    pub(crate) fn split_ticks(&self) -> u64 {
        self.exact.get().map_or(u64::MAX, Exact::split_ticks)
    }

    /// Ticks the getrusage counts (rseq) have taken on this thread
    /// (`Exact::count_ticks`).
    pub(crate) fn count_ticks(&self) -> u64 {
        self.exact.get().map_or(0, Exact::count_ticks)
    }

    /// How many times the sources of a [`Mark`] were read on this thread.
    pub(crate) fn reads(&self) -> u64 {
        self.exact.get().map_or(0, Exact::reads)
    }

    /// What re-reading every source of a [`Mark`] costs on this thread, in ticks
    /// (the fewest seen); `u64::MAX` before the first re-read or without a page.
    pub(crate) fn read_ticks(&self) -> u64 {
        self.exact.get().map_or(u64::MAX, Exact::read_ticks)
    }

    /// Adds what a wait episode saw between its marks to its node (`read_at_end`:
    /// else apportioned).
    #[inline]
    pub(crate) fn add(&self, node: &NodeCounts, d: &Delta, read_at_end: bool) {
        node.add(d, self.exact_mask.get(), read_at_end);
    }

    /// The thread totals of the events counted through the page: switches over the
    /// thread's whole life (the mark's getrusage figures), migrations since its first
    /// mark.
    #[cold]
    fn publish_exact(&self, shared: &ThreadCounters, m: &Mark) {
        let Some(x) = self.exact.get() else {
            return;
        };
        let whole = m.since(&Mark::ZERO);
        shared.store_switches(Switches {
            voluntary: whole.voluntary,
            involuntary: whole.involuntary,
        });
        let migrations = CounterEvent::CpuMigrations;
        if self.exact_mask.get() & migrations.bit() != 0 {
            shared.totals[migrations.index()].store(m.since(&x.base).migrations, Relaxed);
        }
    }

    /// Whether the episode opening now has its counters read: one load and compare.
    #[inline(always)]
    pub(crate) fn wants_sample(&self) -> bool {
        (self.credit.get() >= 0 && self.samples.get()) || self.deferred()
    }

    /// Whether the thread's figures are read on getrusage, not through a page: its
    /// counters deferred, or no page to open (perf denied, the fd budget spent).
    pub(crate) fn on_rusage(&self) -> bool {
        self.on && self.exact.get().is_none()
    }

    /// Whether the counters are still deferred: no page, every episode read on getrusage.
    #[inline(always)]
    pub(crate) fn deferred(&self) -> bool {
        self.phase.get() != Phase::Open
    }

    /// Reads every source at a sampled episode's start; the returned index goes
    /// back to [`LocalCounters::finish`]. `started`: the episode's clock started before
    /// this read (a pending episode opened at its first wait), not after it.
    #[inline(never)]
    pub(crate) fn begin(&self, shared: &ThreadCounters, started: bool) -> u32 {
        if self.sampled_once.replace(true) {
            self.open_pending(shared);
        }
        // An outermost wait read on getrusage checks what rseq tells (`counters/rseq`).
        let watched = self.deferred() && self.open_samples.borrow().is_empty();
        if watched {
            super::rseq::watch();
        }
        let t0 = clock::now();
        let reading = self.read(if started { Side::Closes } else { Side::Opens });
        let begin = Begin {
            t0,
            read_ticks: clock::now().saturating_sub(t0),
            watched,
            reading,
        };
        let mut open = self.open_samples.borrow_mut();
        open.push(begin);
        open.len() as u32 - 1
    }

    /// The off-CPU clock read at the start of sampled episode `sample`, where it was
    /// read on getrusage (no page: deferred counters).
    pub(crate) fn begun_off_clock(&self, sample: u32) -> Option<u64> {
        let open = self.open_samples.borrow();
        open.get(sample as usize).and_then(|b| b.reading.off_ns)
    }

    /// A wait episode that was not sampled closed after `elapsed` ns.
    #[inline(always)]
    pub(crate) fn earn(&self, elapsed: u64) {
        self.credit
            .set(self.policy.earn(self.credit.get(), elapsed));
    }

    /// A sampled episode on `node` ran from `start` to `end`: adds its deltas to the
    /// node, refreshes the thread totals and pays for the reads. Its context switches
    /// where it was read on getrusage at both ends (no page), else `None`.
    #[inline(never)]
    pub(crate) fn finish(
        &self,
        shared: &ThreadCounters,
        node: &NodeCounts,
        sample: u32,
        start: u64,
        end: u64,
    ) -> Option<u64> {
        let mut r = self.read(Side::Closes);
        let begin = {
            let mut open = self.open_samples.borrow_mut();
            let &begin = open.get(sample as usize)?;
            // Also drops readings of inner episodes whose guards were leaked.
            open.truncate(sample as usize);
            begin
        };
        let begin = &begin;
        if begin.reading.off_ns.is_some() && r.off_ns.is_none() {
            self.finish_deferred(shared, node, &begin.reading, &mut r);
        }
        // At least 1 ns, so a sampled episode always shows as counted time.
        let wall = end.saturating_sub(start).max(1);
        let b = &begin.reading;
        let mut switches = None;
        if b.off_ns.is_some() && r.off_ns.is_some() {
            let mut all = 0;
            for e in [
                CounterEvent::VoluntarySwitches,
                CounterEvent::InvoluntarySwitches,
            ] {
                let i = e.index();
                let delta = r.values[i].saturating_sub(b.values[i]);
                bump(&node.values[i], delta);
                all += delta;
            }
            // The same switches, for a node the page counts after a late open.
            bump(&node.values[CounterEvent::ContextSwitches.index()], all);
            // The clocks are read outside the episode's own `start..end`: its time on
            // the CPU is the CPU clock's between the reads, plus its stretch before
            // the first read where it began before it (a pending episode, its frame
            // opened at its first wait: on the CPU), at most its wall; the rest of
            // its wall is off the CPU. So a switch in the profiler's work between its
            // end and the read (a first call slot made under a lock another thread
            // held) is outside it, where only that work's µs on the CPU are not: the
            // off-CPU clock's delta took its slice, 4 ms of a 200 ms spin's off-CPU
            // time in 8–25 % of attempts under 4 busy loops. A vCPU's stolen time is
            // off the CPU without a switch.
            let ns = |ticks| clock::Scale::rough().map_or(ticks, |s| s.ns(ticks));
            let wall_ns = ns(wall);
            let before = ns(begin.t0.saturating_sub(start));
            let on = (r.cpu_ns.saturating_sub(b.cpu_ns) + before).min(wall_ns);
            bump(&node.off_ns, wall_ns - on);
            bump(&node.src_ns[EventSource::Getrusage.index()], wall);
            switches = Some(all);
            if begin.watched {
                super::rseq::judge(all > 0);
            }
        }
        for (k, g) in self.groups.iter().enumerate() {
            let (Some(g), Some(t0), Some(t1)) = (g.get(), b.times[k], r.times[k]) else {
                continue;
            };
            let enabled = t1.0.saturating_sub(t0.0);
            let running = t1.1.saturating_sub(t0.1);
            // Not scheduled at all in this window: nothing to scale from.
            let Some((_, scaled)) = scale(1, enabled, running) else {
                continue;
            };
            for &e in g.events() {
                let i = e.index();
                if self.exact_mask.get() & e.bit() != 0 {
                    continue;
                }
                let delta = r.values[i].saturating_sub(b.values[i]);
                if let Some((v, _)) = scale(delta, enabled, running) {
                    bump(&node.values[i], v);
                }
            }
            bump(&node.src_ns[k + 1], wall);
            if scaled {
                bump(&node.scaled, 1);
            }
        }
        bump(&node.sampled, 1);
        self.publish(shared, &r);
        // Both reads: the first one's from its start to the episode's where it came
        // before it, else its own length (a pending episode's first read comes after
        // its start tick, and went uncounted: only the second was paid for).
        let first = start.saturating_sub(begin.t0).max(begin.read_ticks);
        let cost = first + clock::now().saturating_sub(end);
        bump(&shared.overhead_ns, cost);
        bump(&shared.sampled, 1);
        let credit = self.policy.spend(self.credit.get(), cost);
        self.credit
            .set(self.policy.earn(credit, end.saturating_sub(start)));
        switches
    }

    /// A sampled episode begun on getrusage before the counters opened ends on
    /// getrusage too (its switches and CPU time stay exact); its run-queue wait is
    /// read from the page's opening on. That is all of it where the thread was not
    /// switched between the episode's start and the opening (run-queue wait accrues
    /// only at a switch back in); else the part before is unknown, and the episode is
    /// counted as estimated.
    #[cold]
    #[inline(never)]
    fn finish_deferred(
        &self,
        shared: &ThreadCounters,
        node: &NodeCounts,
        begin: &Reading,
        r: &mut Reading,
    ) {
        read_rusage(r, Side::Closes);
        if let Some(x) = self.exact.get().filter(|x| x.method().schedstat) {
            let queued = self.mark_now(shared).queued_ns();
            bump(&node.queued_ns, queued.saturating_sub(x.base.queued_ns()));
            let (v, i) = (
                CounterEvent::VoluntarySwitches.index(),
                CounterEvent::InvoluntarySwitches.index(),
            );
            if begin.values[v] + begin.values[i] != x.base.rusage_switches() {
                bump(&node.estimated, 1);
            }
        }
    }

    /// Brings the thread totals up to now (a report on this thread, thread exit): its
    /// switches read whole, whatever its marks saw; those switches.
    pub(crate) fn refresh(&self, shared: &ThreadCounters) -> Option<Switches> {
        if !self.on {
            return None;
        }
        self.mark_now(shared);
        self.publish(shared, &self.read(Side::Closes));
        let s = Switches::own()?;
        shared.store_switches(s);
        Some(s)
    }

    /// At the thread's exit: [`LocalCounters::refresh`], and its run-queue wait kept
    /// from its last mark, which read its open schedstat file when the thread last
    /// switched (the kernel adds to it only then), so that the exit copy does not
    /// open `/proc/self/task/<tid>/schedstat` by path (~10 µs, measured on the
    /// build VM in a pool's start).
    pub(crate) fn close(&self, shared: &ThreadCounters) {
        let switches = self.refresh(shared);
        if self.exact.get().is_some_and(|x| x.method().schedstat) {
            // 0: the file's read failed (the total is then n/a).
            let queued = self.mark_now(shared).queued_ns();
            if queued > 0 {
                let _ = shared.run_queue_end.set(queued);
            }
        } else if shared.run_queue_start.get().is_some()
            && switches.is_some_and(|s| s.involuntary >= PREEMPTED_READS_QUEUE)
        {
            // No page (deferred): read once (~8 µs, against the slices it lost), so a
            // thread that never waits still has the figure `[oversubscribed]` needs.
            if let Some(q) = exact::run_delay_now() {
                let _ = shared.run_queue_end.set(q);
            }
        }
    }

    /// Every source sampled episodes read: the perf groups, and getrusage with the
    /// off-CPU clock where there is no page to see switches on every episode.
    pub(super) fn read(&self, side: Side) -> Reading {
        let mut r = Reading {
            values: [0; N],
            times: [None; GROUPS],
            off_ns: None,
            cpu_ns: 0,
        };
        if self.exact.get().is_none() {
            read_rusage(&mut r, side);
        }
        for (k, g) in self.groups.iter().enumerate() {
            if let Some(g) = g.get() {
                r.times[k] = g.read_into(&mut r.values);
            }
        }
        r
    }

    /// Stores the thread totals: getrusage's over the thread's life, perf since its
    /// groups opened (scaled like `perf stat` when multiplexed).
    pub(super) fn publish(&self, shared: &ThreadCounters, r: &Reading) {
        if r.off_ns.is_some() {
            let (v, i) = (
                CounterEvent::VoluntarySwitches.index(),
                CounterEvent::InvoluntarySwitches.index(),
            );
            shared.totals[v].store(r.values[v], Relaxed);
            shared.totals[i].store(r.values[i], Relaxed);
            // Shown only where every episode is read (deferred): their sum, exact.
            let all = r.values[v] + r.values[i];
            shared.totals[CounterEvent::ContextSwitches.index()].store(all, Relaxed);
        }
        for (k, g) in self.groups.iter().enumerate() {
            let (Some(g), Some((enabled, running))) = (g.get(), r.times[k]) else {
                continue;
            };
            for &e in g
                .events()
                .iter()
                .filter(|e| self.exact_mask.get() & e.bit() == 0)
            {
                if let Some((v, scaled)) = scale(r.values[e.index()], enabled, running) {
                    shared.totals[e.index()].store(v, Relaxed);
                    if scaled {
                        shared.scaled.store(true, Relaxed);
                    }
                }
            }
        }
    }
}

/// Which side of a reading the time it bounds lies on. Reading the thread's CPU clock
/// brings the scheduler's accounting up to date, and a thread whose slice is spent is
/// switched out as that call returns (Linux 6.18 here, a loop under 4 busy loops:
/// 0.29 % of CPU clock reads took a slice, against 0.005 % of getrusage calls; docs/
/// cost.md). So the CPU clock is read where such a switch falls outside the time: its
/// switch count and its clocks both.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// The time starts after the reading: the CPU clock first.
    Opens,
    /// The time ends at the reading, or is running through it: the CPU clock last.
    Closes,
}

/// Adds the thread's voluntary and involuntary switches (getrusage), its CPU clock and
/// its off-CPU clock (`CLOCK_MONOTONIC` minus the CPU clock) to `r`, where getrusage
/// answers, read in the order `side` needs.
fn read_rusage(r: &mut Reading, side: Side) {
    let cpu_first = (side == Side::Opens).then(|| exact::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
    let mut ru = zeroed_rusage();
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0 {
        r.values[CounterEvent::VoluntarySwitches.index()] = ru.ru_nvcsw as u64;
        r.values[CounterEvent::InvoluntarySwitches.index()] = ru.ru_nivcsw as u64;
        let mono = exact::clock_ns(libc::CLOCK_MONOTONIC);
        let cpu = cpu_first.unwrap_or_else(|| exact::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
        r.off_ns = Some(mono.saturating_sub(cpu));
        r.cpu_ns = cpu;
    }
}

impl Drop for LocalCounters {
    fn drop(&mut self) {
        OPEN.with(|o| o.set(false));
    }
}
