//! A thread's switch figures at one moment ([`Mark`]) and what an episode between two
//! of them saw ([`Delta`]): exact where both ends were read at the episode's switch
//! counts, else apportioned (`Mark::until_count`). Read by `counters::exact`.

/// Figures of the calling thread that change only at a switch. Counts are kept in 32
/// bits and compared by wrapping difference: an episode sees far fewer than 2^32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The context-switch counter (the page's `offset`) when the mark was taken; 0
    /// without a page.
    pub(crate) switches: u32,
    /// How many switches the figures below are older than `switches`: 0 for a read
    /// mark, else the mark was taken unread (`Mark::unread_at`).
    pub(super) ahead: u32,
    /// How many switches `voluntary` and `involuntary` are older than `switches`:
    /// 0 for a read mark and through rseq (`Exact::current`: getrusage's count and
    /// split); for one taken unread, `ahead`, or fewer where a close's split was read
    /// since (`Exact::unread_at`).
    pub(super) split_ahead: u32,
    pub(super) voluntary: u32,
    pub(super) involuntary: u32,
    pub(super) migrations: u32,
    /// `CLOCK_MONOTONIC` minus the thread's CPU time, ns.
    pub(super) off_ns: u64,
    /// `CLOCK_MONOTONIC` when the figures were read, ns.
    pub(super) mono_ns: u64,
    /// schedstat `run_delay`, ns: time runnable but waiting for a CPU.
    pub(super) queued_ns: u64,
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
    pub(super) at: u32,
    pub(super) voluntary: u32,
    pub(super) involuntary: u32,
}

impl Split {
    /// The page's switch count it was read at.
    pub(crate) fn at(&self) -> u32 {
        self.at
    }
}

impl Mark {
    /// No figures: the mark of a thread without a page.
    pub(crate) const ZERO: Mark = Mark {
        switches: 0,
        ahead: 0,
        split_ahead: 0,
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
    /// the voluntary/involuntary split is that difference, exact where the mark's
    /// split is at its count (`split_ahead` 0): a later switch (a join, a blocking
    /// write in the thread's own code) is no longer guessed into it.
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
        // The voluntary switches from the mark's split on: to the episode's close
        // where its split was read there, else to `now`.
        let voluntary = match at_end {
            Some(s) if s.at == end => u64::from(s.voluntary.wrapping_sub(self.voluntary)),
            _ => all.voluntary,
        };
        // Taken unread, the first `split_ahead` of them came before it, and the
        // episodes that ended there take voluntary ones first (apportioned from the
        // same read): this one has what they leave, so that the two never count one
        // switch twice. A yield's split read at its close, then a lock's block after
        // a `recv`: with the split of the read before the yield, that block was
        // counted involuntary, one more in waits than the thread made (CI, 1 run in
        // ~200, 2026-12-05).
        let voluntary = (voluntary - u64::from(self.split_ahead).min(voluntary)).min(mine);
        let around = now
            .mono_ns
            .saturating_sub(self.mono_ns)
            .saturating_sub(wall_ns);
        // Time blocked goes with the voluntary switches, time queued (a preemption's
        // whole off-CPU time, a wake-up's delay) with every switch: by count alone, a
        // pool worker's 300 µs sleep read with a job preempted after it got half the
        // window's off-CPU time, and the other half read as the pool's own
        // (`tests/pool.rs`, 8 ms where its jobs were preempted 1.9 ms). By count
        // without schedstat (no time queued), or where the split is not the read's.
        // Its time queued is then its share of the window's by count, not by off-CPU
        // time (which gave it a blocked share's queued part too: 15 % over schedstat's).
        let by_kind = all.queued_ns > 0 && self.split_ahead == self.ahead;
        let (off_ns, queued) = match by_kind {
            true => {
                let queued = share(all.queued_ns.min(all.off_ns));
                let blocked = all.off_ns.saturating_sub(all.queued_ns);
                (
                    proportion(blocked, voluntary, all.voluntary) + queued,
                    Some(queued),
                )
            }
            false => (share(all.off_ns), None),
        };
        let off_ns = off_ns.max(all.off_ns.saturating_sub(around)).min(wall_ns);
        let d = Delta {
            voluntary,
            involuntary: mine - voluntary,
            switches: mine,
            migrations: all.migrations.min(mine),
            off_ns,
            // By count, the window's queued share of its off-CPU time: an episode given
            // more off-CPU time than its share of switches gets its queued part too.
            queued_ns: queued
                .unwrap_or_else(|| proportion(all.queued_ns, off_ns, all.off_ns))
                .min(off_ns),
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
            split_ahead: switches.wrapping_sub(self.read_at()),
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
    pub(super) fn read_at(&self) -> u32 {
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

/// `v × num / den`, 0 where `den` is.
fn proportion(v: u64, num: u64, den: u64) -> u64 {
    let p = u128::from(v) * u128::from(num) / u128::from(den.max(1));
    u64::try_from(p).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "mark_tests.rs"]
mod tests;
