//! Exact switches, migrations and the on-CPU / queued / blocked split of every wait
//! episode and timed call: switches seen from the perf user page of the thread's
//! context-switch counter (the default), or through rseq and counted by getrusage
//! (`Options::rseq`).
//!
//! Everything measured here changes only when the thread is switched out and back:
//! its voluntary and involuntary switch counts, its migrations, its run-queue wait
//! (schedstat `run_delay`), and its off-CPU clock, `CLOCK_MONOTONIC` minus its CPU
//! time, which stands still while the thread runs. So a [`Mark`] of them taken at a
//! switch stays exact until the next one, and rseq's bit or the page's count (~1 ns, no
//! syscall) says whether one happened. Only after one are the sources read again, and
//! not at the episode's end but at the thread's next mark or now and then
//! (`record::deferred`, docs/cost.md): the figures stay as they were until its next switch.

use super::method::SplitMethod;
use super::rseq::Rseq;
pub(crate) use super::sources::*;
use super::userpage::{pages_gone, tsc, UserPage};
use crate::base::clock;
use std::cell::Cell;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Figures of the calling thread that change only at a switch. Counts are kept in 32
/// bits and compared by wrapping difference: an episode sees far fewer than 2^32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The context-switch counter (the page's `offset`) when the mark was taken; 0
    /// without a page.
    pub(crate) switches: u32,
    /// How many switches the figures below are older than `switches`: 0 for a read
    /// mark, else the mark was taken unread (`Mark::unread_at`).
    ahead: u32,
    /// Whether `voluntary` and `involuntary` are at `switches` though the rest is
    /// `ahead` (`Exact::current` through rseq: getrusage's count and split).
    counted: bool,
    voluntary: u32,
    involuntary: u32,
    migrations: u32,
    /// `CLOCK_MONOTONIC` minus the thread's CPU time, ns.
    off_ns: u64,
    /// `CLOCK_MONOTONIC` when the figures were read, ns.
    mono_ns: u64,
    /// schedstat `run_delay`, ns: time runnable but waiting for a CPU.
    queued_ns: u64,
}

/// What happened between two marks of one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Delta {
    pub(crate) voluntary: u64,
    pub(crate) involuntary: u64,
    pub(crate) switches: u64,
    pub(crate) migrations: u64,
    pub(crate) off_ns: u64,
    pub(crate) queued_ns: u64,
}

/// The thread's voluntary and involuntary switches (getrusage) read at the page's switch
/// count `at`: read at the close of a switched episode (`Exact::split_now`), they keep
/// its split exact however the thread is switched before its other figures are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    at: u32,
    voluntary: u32,
    involuntary: u32,
}

impl Mark {
    /// No figures: the mark of a thread without a page.
    pub(crate) const ZERO: Mark = Mark {
        switches: 0,
        ahead: 0,
        counted: false,
        voluntary: 0,
        involuntary: 0,
        migrations: 0,
        off_ns: 0,
        mono_ns: 0,
        queued_ns: 0,
    };

    /// From `self` to the later `end`.
    pub(crate) fn until(&self, end: &Mark) -> Delta {
        let n = |a: u32, b: u32| u64::from(b.wrapping_sub(a));
        Delta {
            voluntary: n(self.voluntary, end.voluntary),
            involuntary: n(self.involuntary, end.involuntary),
            switches: n(self.read_at(), end.read_at()),
            migrations: n(self.migrations, end.migrations),
            off_ns: end.off_ns.saturating_sub(self.off_ns),
            queued_ns: end.queued_ns.saturating_sub(self.queued_ns),
        }
    }

    /// What an episode from `self` to the page's switch count `end` saw, read from
    /// `now`, a mark taken later; and whether that is exact. It is when `now` was
    /// taken at count `end` (nothing changed since the episode ended). Else the thread
    /// was switched after the episode too and the figures are apportioned: the
    /// episode keeps its own number of switches, exact, voluntary ones first (a wait
    /// blocks; a thread running its own code is preempted), and of the off-CPU and
    /// queued time the same share as of the switches, at most `wall_ns`, and at least
    /// what the time around the episode cannot hold: off-CPU time outside it fits in
    /// the time between the two reads less the episode's own (one switch after a
    /// long episode was short, the share gave it an average switch's: 20 ms of 400 ms
    /// seen under load).
    /// A mark taken unread (`Mark::unread_at`) is apportioned the same way, over the
    /// figures from the read its values come from.
    /// With `at_end`, the getrusage split read at the episode's close (count `end`),
    /// the voluntary/involuntary split of a read or counted mark is that exact
    /// difference: a later switch (a join, a blocking write in the thread's own code)
    /// is no longer guessed into it.
    pub(crate) fn until_count(
        &self,
        end: u32,
        now: &Mark,
        wall_ns: u64,
        at_end: Option<Split>,
    ) -> (Delta, bool) {
        let all = self.until(now);
        if end == now.switches && self.is_read() {
            return (all, true);
        }
        let mine = u64::from(end.wrapping_sub(self.switches)).min(all.switches);
        let share = |v: u64| {
            let v = u128::from(v) * u128::from(mine) / u128::from(all.switches.max(1));
            u64::try_from(v).unwrap_or(u64::MAX)
        };
        // Taken unread without its split, the window's first `ahead` switches came
        // before it, and the episodes that ended there take its voluntary ones first
        // (apportioned from the same read): this one has what they leave, so that
        // the two never count one switch twice.
        let before = match self.counted {
            true => 0,
            false => u64::from(self.ahead).min(all.voluntary),
        };
        let voluntary = match at_end {
            Some(s) if s.at == end && (self.is_read() || self.counted) => {
                u64::from(s.voluntary.wrapping_sub(self.voluntary)).min(mine)
            }
            _ => (all.voluntary - before).min(mine),
        };
        let around = now
            .mono_ns
            .saturating_sub(self.mono_ns)
            .saturating_sub(wall_ns);
        let off_ns = share(all.off_ns)
            .max(all.off_ns.saturating_sub(around))
            .min(wall_ns);
        let d = Delta {
            voluntary,
            involuntary: mine - voluntary,
            switches: mine,
            migrations: all.migrations.min(mine),
            off_ns,
            // The window's queued share of its off-CPU time: an episode given more
            // off-CPU time than its share of switches gets its queued part too.
            queued_ns: proportion(all.queued_ns, off_ns, all.off_ns).min(off_ns),
        };
        (d, false)
    }

    /// This read mark taken again at switch count `switches` without reading: the
    /// figures at `switches` are not known yet. An episode that starts there and
    /// continues one of the same target that ended there needs none of them: the
    /// two telescope (`record::deferred`).
    pub(crate) fn unread_at(&self, switches: u32) -> Mark {
        Mark {
            switches,
            ahead: switches.wrapping_sub(self.read_at()),
            counted: false,
            ..*self
        }
    }

    /// The figures as they stood where the read that took them began, the thread
    /// switched `self.switches - at` times in it and `off_ns` off the CPU: a read does
    /// not block, so those were preemptions (involuntary switches, time queued). They
    /// are the caller's: its clock started before the read (rayon's caller, woken
    /// workers on its CPU: preempted in the read at a wait call's open for 3–8 ms).
    pub(crate) fn before_read(&self, at: u32, off_ns: u64) -> Mark {
        let n = self.switches.wrapping_sub(at);
        Mark {
            switches: at,
            involuntary: self.involuntary.saturating_sub(n),
            off_ns: self.off_ns.saturating_sub(off_ns),
            mono_ns: self.mono_ns.saturating_sub(off_ns),
            queued_ns: self.queued_ns.saturating_sub(off_ns),
            ..*self
        }
    }

    /// Whether this is the mark of a thread without a page (taken before its
    /// counters opened late): no later page mark can be measured from it.
    pub(crate) fn is_pageless(&self) -> bool {
        self.mono_ns == 0
    }

    /// The page's switch count at the mark, where it has one.
    pub(crate) fn page_count(&self) -> Option<u32> {
        (!self.is_pageless()).then_some(self.switches)
    }

    /// Whether the figures were read at the mark's switch count.
    pub(crate) fn is_read(&self) -> bool {
        self.ahead == 0
    }

    /// The switch count the figures were read at.
    fn read_at(&self) -> u32 {
        self.switches.wrapping_sub(self.ahead)
    }

    /// The thread's off-CPU clock (`CLOCK_MONOTONIC` minus its CPU time, ns) at the
    /// mark, where it was read there: it stands still while the thread runs, so a
    /// reader of the thread's clocks later has the off-CPU time since
    /// ([`off_clock_of`]). `None` for a mark taken unread or without a page.
    pub(crate) fn off_clock(&self) -> Option<u64> {
        (self.is_read() && self.mono_ns != 0).then_some(self.off_ns)
    }

    /// The thread's run-queue wait (schedstat `run_delay`) at the mark; 0 without
    /// schedstat.
    pub(crate) fn queued_ns(&self) -> u64 {
        self.queued_ns
    }

    /// The thread's voluntary plus involuntary switches over its life (getrusage's)
    /// when the mark was read.
    pub(crate) fn rusage_switches(&self) -> u64 {
        u64::from(self.voluntary) + u64::from(self.involuntary)
    }

    /// The thread's totals since `base` (its first mark).
    pub(crate) fn since(&self, base: &Mark) -> Delta {
        base.until(self)
    }
}

/// Where a thread's switch count comes from.
enum Count {
    /// The context-switch counter's user page: ~2 ns a read, but the event costs the
    /// kernel time at every switch of the thread.
    Page(UserPage),
    /// The rseq bit, and getrusage's count read after it was cleared (`at`, the
    /// split at that count kept in `Exact::split`).
    Rseq { bit: Rseq, at: Cell<u32> },
}

/// A thread's switch pages and the sources read when its switch count moves.
pub(crate) struct Exact {
    switches: Count,
    /// The migration counter's page: its count is read as the switch count's, without
    /// a syscall (a `read()` of its fd cost ~0.9 µs per re-read).
    migrations: Option<UserPage>,
    schedstat: Option<File>,
    page_time: bool,
    last: Cell<Mark>,
    /// The fewest ticks a re-read of every source has taken on this thread: what a
    /// re-read costs here, for callers that read at once only where it is cheap
    /// next to the episode.
    read_ticks: Cell<u64>,
    /// How many times the sources were read on this thread.
    reads: Cell<u64>,
    /// The last split read at a switched close, which a read at the same switch count
    /// takes instead of calling getrusage again.
    split: Cell<Option<Split>>,
    /// The fewest ticks a getrusage has taken on this thread (`Exact::split_now`).
    split_ticks: Cell<u64>,
    /// Ticks all getrusage counts (rseq) have taken on this thread, for timings
    /// that charge them to the frame they were taken in (`record::deferred`).
    count_ticks: Cell<u64>,
    pub(crate) base: Mark,
}

impl Exact {
    /// Maps the pages of the thread's context-switch (and migration) counters (the
    /// migrations go uncounted where that page does not map);
    /// `schedstat` is its schedstat file, if any (its fd is reserved with the group's).
    pub(crate) fn open(
        switches: RawFd,
        migrations: Option<RawFd>,
        schedstat: Option<File>,
    ) -> io::Result<Exact> {
        let switches = UserPage::map(switches)?;
        let page_time = switches.read().cap_user_time();
        Ok(Exact::with(
            Count::Page(switches),
            page_time,
            migrations,
            schedstat,
        ))
    }

    /// As [`Exact::open`], with no perf event: switches seen through rseq, counted by
    /// getrusage; `None` where rseq does not tell switches here.
    pub(crate) fn open_rseq(schedstat: Option<File>) -> Option<Exact> {
        let bit = Rseq::here()?;
        let at = Cell::new(0);
        Some(Exact::with(Count::Rseq { bit, at }, false, None, schedstat))
    }

    fn with(
        switches: Count,
        page_time: bool,
        migrations: Option<RawFd>,
        schedstat: Option<File>,
    ) -> Exact {
        let mut x = Exact {
            switches,
            migrations: migrations.and_then(|fd| UserPage::map(fd).ok()),
            schedstat,
            page_time,
            last: Cell::new(Mark::ZERO),
            read_ticks: Cell::new(u64::MAX),
            reads: Cell::new(0),
            split: Cell::new(None),
            split_ticks: Cell::new(u64::MAX),
            count_ticks: Cell::new(0),
            base: Mark::ZERO,
        };
        if let Count::Rseq { at, .. } = &x.switches {
            at.set(x.recount());
        }
        // What a split costs here is known before the first close asks for one: the
        // fewest of three, since a read preempted here (a new thread under load) would
        // keep every close of the thread from reading its split (`tests/cost.rs` saw
        // the 35 switched episodes of one thread all apportioned, 1 run in 20).
        for _ in 0..3 {
            let _ = x.split_now();
        }
        x.base = x.remark();
        x
    }

    pub(crate) fn method(&self) -> SplitMethod {
        SplitMethod {
            every_episode: true,
            page_time: self.page_time,
            schedstat: self.schedstat.is_some(),
            migrations: self.migrations.is_some(),
            rseq: matches!(self.switches, Count::Rseq { .. }),
        }
    }

    pub(crate) fn counts_migrations(&self) -> bool {
        self.migrations.is_some()
    }

    /// The thread's switch count now: whether it was switched since a mark is whether
    /// this differs from the mark's `switches`. The page's, ~2 ns; or, through rseq,
    /// the last count while the bit stays armed (~1 ns), getrusage's after a switch.
    #[inline(always)]
    pub(crate) fn switches(&self) -> u32 {
        match &self.switches {
            Count::Page(p) => p.offset() as u32,
            Count::Rseq { bit, at } if bit.armed() || pages_gone() => at.get(),
            Count::Rseq { at, .. } => {
                let n = self.recount();
                at.set(n);
                n
            }
        }
    }

    /// Through rseq: arms the bit, then reads getrusage (a switch between the two is
    /// in the count and clears the bit again, so none is missed); the count, its
    /// split kept for a read at the same count.
    #[cold]
    #[inline(never)]
    fn recount(&self) -> u32 {
        if let Count::Rseq { bit, .. } = &self.switches {
            bit.arm();
        }
        let t0 = clock::now();
        let mut ru = super::zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        let took = clock::now().saturating_sub(t0);
        self.split_ticks.set(self.split_ticks.get().min(took));
        self.count_ticks.set(self.count_ticks.get() + took);
        let (voluntary, involuntary) = (ru.ru_nvcsw as u32, ru.ru_nivcsw as u32);
        let at = voluntary.wrapping_add(involuntary);
        self.split.set(ok.then_some(Split {
            at,
            voluntary,
            involuntary,
        }));
        at
    }

    /// Whether the switch count moved since the last mark.
    #[inline(always)]
    pub(crate) fn moved(&self) -> bool {
        self.switches() != self.last.get().switches
    }

    /// What one re-read of every source costs on this thread, in ticks: the fewest
    /// it has taken yet.
    pub(crate) fn read_ticks(&self) -> u64 {
        self.read_ticks.get()
    }

    /// What one getrusage costs on this thread, in ticks: the fewest it has taken.
    pub(crate) fn split_ticks(&self) -> u64 {
        self.split_ticks.get()
    }

    /// The thread's voluntary and involuntary switches now, at the page's switch count
    /// now; `None` when getrusage failed, or a switch landed during the read and the
    /// count its figures belong to is not known. ~0.4 µs.
    #[cold]
    #[inline(never)]
    pub(crate) fn split_now(&self) -> Option<Split> {
        if let Count::Rseq { .. } = self.switches {
            // Counted by getrusage: the split at the count now is the one read with it.
            let at = self.switches();
            return self.split.get().filter(|s| s.at == at);
        }
        let t0 = clock::now();
        let at = self.switches();
        let mut ru = super::zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        let took = clock::now().saturating_sub(t0);
        let unswitched = self.switches() == at;
        // A read switched in is no measure of what a read costs.
        if unswitched {
            self.split_ticks.set(self.split_ticks.get().min(took));
        }
        let (voluntary, involuntary) = (ru.ru_nvcsw as u32, ru.ru_nivcsw as u32);
        let split = match ok {
            true if unswitched => Some(Split {
                at,
                voluntary,
                involuntary,
            }),
            // Preempted around the read (under load, with a partner on the CPU): the
            // profiler's code does not block, so the switches getrusage saw past `at`
            // were involuntary, and the last read tells which count it saw (its
            // getrusage total less the page's count then, a constant per thread).
            // Else a close would lose its exact split to a preemption in its read.
            true => {
                let last = self.last.get();
                let offset =
                    (last.voluntary.wrapping_add(last.involuntary)).wrapping_sub(last.read_at());
                let past = voluntary
                    .wrapping_add(involuntary)
                    .wrapping_sub(offset)
                    .wrapping_sub(at);
                let fits = past <= self.switches().wrapping_sub(at) && past <= involuntary;
                (last.is_read() && fits).then(|| Split {
                    at,
                    voluntary,
                    involuntary: involuntary - past,
                })
            }
            false => None,
        };
        self.split.set(split);
        split
    }

    /// The ticks all getrusage counts have taken on this thread: a timing of the
    /// profiler's work charges the difference exactly, not sampled.
    pub(crate) fn count_ticks(&self) -> u64 {
        self.count_ticks.get()
    }

    /// How many times every source was read on this thread.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.get()
    }

    /// The last mark read, whatever the switch count now.
    #[inline(always)]
    pub(crate) fn last(&self) -> Mark {
        self.last.get()
    }

    /// The last mark read, taken again unread at switch count `at`
    /// (`Mark::unread_at`): counted (its split exact) where the split read at a
    /// switched close is at `at`.
    pub(crate) fn unread_at(&self, at: u32) -> Mark {
        let last = self.last.get().unread_at(at);
        match self.split.get().filter(|s| s.at == at) {
            Some(s) => Mark {
                voluntary: s.voluntary,
                involuntary: s.involuntary,
                counted: true,
                ..last
            },
            None => last,
        }
    }

    /// The thread's mark now, read: the last one while the switch count has not moved
    /// and it was read.
    #[inline(always)]
    pub(crate) fn mark(&self) -> (Mark, bool) {
        let last = self.last.get();
        if self.switches() == last.switches && last.is_read() {
            (last, false)
        } else {
            (self.remark(), true)
        }
    }

    /// Whether switches are counted by getrusage (rseq), so that a mark can have an
    /// exact count and split without the other sources ([`Exact::current`]).
    pub(crate) fn counted(&self) -> bool {
        matches!(self.switches, Count::Rseq { .. })
    }

    /// The mark now, for an open: through rseq, the switch count and split now
    /// (getrusage after a switch, else none) with the times of the last read
    /// (`ahead`), kept as the last mark; the page's, [`Exact::mark`].
    #[inline(always)]
    pub(crate) fn current(&self) -> (Mark, bool) {
        if !self.counted() {
            return self.mark();
        }
        let last = self.last.get();
        let at = self.switches();
        if at == last.switches {
            return (last, false);
        }
        match self.unread_at(at) {
            m if m.counted => {
                self.last.set(m);
                (m, false)
            }
            // getrusage failed, or a switch landed in it: read everything.
            _ => (self.remark(), true),
        }
    }

    #[cold]
    #[inline(never)]
    fn remark(&self) -> Mark {
        let t0 = clock::now();
        let at = self.switches();
        let m = self.measure();
        let took = clock::now().saturating_sub(t0);
        // A read switched in is no measure of what a read costs.
        if m.switches == at {
            self.read_ticks.set(self.read_ticks.get().min(took));
        }
        self.reads.set(self.reads.get() + 1);
        self.last.set(m);
        m
    }

    /// Reads every source, retried (a few times at most) while a switch lands between
    /// the first and the last read, so the figures belong to one switch count.
    fn measure(&self) -> Mark {
        let mut m = Mark::ZERO;
        for _ in 0..4 {
            let before = self.switches();
            let cpu = match &self.switches {
                Count::Page(p) if self.page_time => {
                    let r = p.read();
                    tsc()
                        .and_then(|t| r.times_at(t, true))
                        .map(|(enabled, _)| enabled)
                }
                _ => None,
            };
            let split = self.split.get().filter(|s| s.at == before);
            m = read_sources(cpu, self.schedstat.as_ref().map(|f| f.as_raw_fd()), split);
            m.switches = before;
            m.migrations = self.migrations.as_ref().map_or(0, |p| p.offset() as u32);
            if self.switches() == before {
                break;
            }
        }
        m
    }
}

/// `v × num / den`, 0 where `den` is.
fn proportion(v: u64, num: u64, den: u64) -> u64 {
    let p = u128::from(v) * u128::from(num) / u128::from(den.max(1));
    u64::try_from(p).unwrap_or(u64::MAX)
}

/// getrusage (unless `split`, read at the same switch count, is given), the CPU clock
/// (unless `cpu_ns` is given) and the monotonic clock, and the run-queue wait from the
/// open schedstat file `schedstat`.
fn read_sources(cpu_ns: Option<u64>, schedstat: Option<RawFd>, split: Option<Split>) -> Mark {
    let (voluntary, involuntary) = match split {
        Some(s) => (s.voluntary, s.involuntary),
        None => {
            let mut ru = super::zeroed_rusage();
            // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
            let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
            match ok {
                true => (ru.ru_nvcsw as u32, ru.ru_nivcsw as u32),
                false => (0, 0),
            }
        }
    };
    let cpu_ns = cpu_ns.unwrap_or_else(|| clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
    let mono_ns = clock_ns(libc::CLOCK_MONOTONIC);
    Mark {
        switches: 0,
        ahead: 0,
        counted: false,
        voluntary,
        involuntary,
        migrations: 0,
        off_ns: mono_ns.saturating_sub(cpu_ns),
        mono_ns,
        queued_ns: schedstat.and_then(run_delay_of).unwrap_or(0),
    }
}

#[cfg(test)]
#[path = "exact_tests.rs"]
mod tests;
