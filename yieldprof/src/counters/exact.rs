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

use super::mark::{Mark, Split};
use super::method::SplitMethod;
use super::rseq::Rseq;
pub(crate) use super::sources::*;
use super::userpage::{pages_gone, tsc, UserPage};
use crate::base::clock;
use std::cell::Cell;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

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
                // The set-up's reads come before any mark (`Mark::ZERO`): no offset.
                (last.is_read() && !last.is_pageless() && fits).then(|| Split {
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
    /// (`Mark::unread_at`), with the split read at a switched close since, where
    /// there was one: exact where that is at `at`, else nearer than the read's.
    pub(crate) fn unread_at(&self, at: u32) -> Mark {
        let last = self.last.get().unread_at(at);
        match self
            .split
            .get()
            .filter(|s| at.wrapping_sub(s.at) < last.split_ahead)
        {
            Some(s) => Mark {
                voluntary: s.voluntary,
                involuntary: s.involuntary,
                split_ahead: at.wrapping_sub(s.at),
                ..last
            },
            None => last,
        }
    }

    /// The split known at switch count `at` without a read: the last read's, or a
    /// switched close's, where either was taken at that count.
    pub(crate) fn split_at(&self, at: u32) -> Option<Split> {
        let m = self.unread_at(at);
        (m.split_ahead == 0).then_some(Split {
            at,
            voluntary: m.voluntary,
            involuntary: m.involuntary,
        })
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
            m if m.split_ahead == 0 => {
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
        split_ahead: 0,
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
