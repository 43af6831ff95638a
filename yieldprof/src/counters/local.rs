//! The calling thread's counters: the sampling policy and the reads around an episode.

use super::*;
use crate::base::arena::bump;
use crate::base::clock;
use std::cell::{Cell, OnceCell, RefCell};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// The sampling policy as credit arithmetic: each closed wait episode earns
/// `elapsed × per_ns + per_episode`, each sample costs `cost × debit_per_ns +
/// debit_per_sample`, and an episode is sampled when the credit is not negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Policy {
    per_ns: i64,
    per_episode: i64,
    debit_per_ns: i64,
    debit_per_sample: i64,
    cap: i64,
}

/// Credit is kept in ns × 100 × 100: percent with two decimals, no division.
pub(super) const AUTO_UNIT: i64 = 10_000;
/// Auto saves up at most this much counter time (ns): a long sleep does not buy a
/// burst of reads on the short episodes after it.
pub(super) const AUTO_CAP_NS: i64 = 100_000;

impl Policy {
    pub(super) fn of(s: CounterSampling) -> Policy {
        match s.normal() {
            CounterSampling::Off => Policy {
                per_ns: 0,
                per_episode: 0,
                debit_per_ns: 0,
                debit_per_sample: 0,
                cap: -1,
            },
            CounterSampling::Every(n) => Policy {
                per_ns: 0,
                per_episode: 1,
                debit_per_ns: 0,
                debit_per_sample: i64::from(n),
                cap: 0,
            },
            CounterSampling::Auto => Policy {
                per_ns: i64::from(AUTO_BUDGET_PERCENT) * 100,
                per_episode: 0,
                debit_per_ns: AUTO_UNIT,
                debit_per_sample: 0,
                cap: AUTO_CAP_NS * AUTO_UNIT,
            },
        }
    }

    pub(super) fn start(self) -> i64 {
        // Off never samples; the others sample the thread's first episode.
        self.cap.min(0)
    }

    pub(super) fn earn(self, credit: i64, elapsed_ns: u64) -> i64 {
        // 2^40 ns is 18 minutes: no overflow, and the cap is far below anyway.
        let elapsed = elapsed_ns.min(1 << 40) as i64;
        credit
            .saturating_add(elapsed * self.per_ns + self.per_episode)
            .min(self.cap)
    }

    pub(super) fn spend(self, credit: i64, cost_ns: u64) -> i64 {
        let cost = cost_ns.min(1 << 40) as i64;
        credit.saturating_sub(cost * self.debit_per_ns + self.debit_per_sample)
    }
}

thread_local! {
    /// Marks threads whose counters are open, so a report can refresh the calling
    /// thread's totals without registering it.
    static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread has counters to refresh.
pub(crate) fn open_here() -> bool {
    OPEN.with(Cell::get)
}

/// A perf group planned when the thread's counters opened, opened at its second
/// sampled episode: its events and the fds reserved for it.
struct Pending {
    events: Vec<CounterEvent>,
    fds: Reservation,
}

/// A thread's own counter state: only the owner touches it.
///
/// A thread's first episode opens only what it needs to count every episode's
/// switches: the context-switch counter with its user page, the migration counter
/// (read when a switch was seen) and the schedstat file. Its perf groups (page faults, hardware events) open
/// at its second sampled episode, so setup costs are spread over two episodes; the
/// group events' thread totals then start later than the thread and are shown scaled
/// (`ThreadCounters::root`).
pub(crate) struct LocalCounters {
    credit: Cell<i64>,
    // Readings of the sampled episodes still open, innermost last. Kept here rather
    // than in each guard so that a guard stays a few words: every episode moves one.
    open_samples: RefCell<Vec<Begin>>,
    policy: Policy,
    on: bool,
    // When the counters opened: the groups' lateness is measured from it.
    opened: Instant,
    // Whether a sampled episode has begun: the next one opens the pending groups.
    sampled_once: Cell<bool>,
    // Fields drop in order: the pages unmap before their fds close, and fds close
    // before their reservation is given back.
    exact: Option<Exact>,
    // The counters behind `exact`'s pages.
    exact_fds: Vec<OwnedFd>,
    // Events counted on every episode through `exact`, by bit.
    exact_mask: u16,
    groups: [OnceCell<PerfGroup>; GROUPS],
    pending: [Cell<Option<Pending>>; GROUPS],
    exact_reserved: Option<Reservation>,
}

impl LocalCounters {
    /// Opens this thread's counters, within the fd budget. `before`: the thread's
    /// switches when its registration began, read on it.
    pub(crate) fn open(shared: &ThreadCounters, before: Option<Switches>) -> LocalCounters {
        let sampling = sampling();
        let policy = Policy::of(sampling);
        let mut local = LocalCounters {
            credit: Cell::new(policy.start()),
            open_samples: RefCell::new(Vec::new()),
            policy,
            on: sampling != CounterSampling::Off,
            opened: Instant::now(),
            sampled_once: Cell::new(false),
            exact: None,
            exact_fds: Vec::new(),
            exact_mask: 0,
            groups: [OnceCell::new(), OnceCell::new()],
            pending: [Cell::new(None), Cell::new(None)],
            exact_reserved: None,
        };
        if !local.on {
            let _ = shared.setup.set(Setup {
                source: CounterSource::Off,
                mask: 0,
                exact: 0,
                split: None,
            });
            return local;
        }
        let p = probed();
        let budget = fd_budget();
        let mut why = None;
        let mut mask = 0u16;
        for e in events_of(EventSource::Getrusage, |e| {
            p.status[e.index()].is_available()
        }) {
            mask |= e.bit();
        }
        for (k, source) in [EventSource::PerfSoftware, EventSource::PerfHardware]
            .into_iter()
            .enumerate()
        {
            let mut events = thread_plan(&p.status, source, sampling);
            if events.is_empty() {
                if source == EventSource::PerfSoftware {
                    why = p.status[CounterEvent::ContextSwitches.index()].reason();
                }
                continue;
            }
            let need = match source {
                EventSource::PerfSoftware => thread_software_fds(&events, p.schedstat),
                _ => group_fds(events.len()),
            };
            let Some(mut fds) = FDS.reserve(need, budget) else {
                why = why.or(Some(Reason::FdBudget { budget }));
                continue;
            };
            if source == EventSource::PerfSoftware {
                match local.open_exact(&events, p.schedstat, &mut fds) {
                    Ok(counted) => events.retain(|e| !counted.contains(e)),
                    Err(err) => {
                        why = why.or(Some(reason_of(&err, p.paranoid, source)));
                        continue;
                    }
                }
            }
            if !events.is_empty() {
                local.pending[k].set(Some(Pending { events, fds }));
            }
        }
        let source = if local.exact.is_some() || local.pending[0].get_mut().is_some() {
            THREADS_ON_PERF.fetch_add(1, Relaxed);
            CounterSource::Perf
        } else {
            THREADS_ON_GETRUSAGE.fetch_add(1, Relaxed);
            CounterSource::Getrusage(why.unwrap_or(Reason::Off))
        };
        mask |= local.exact_mask;
        let split = match &local.exact {
            Some(x) => x.method(),
            None => SplitMethod {
                every_episode: false,
                page_time: false,
                schedstat: false,
                migrations: false,
            },
        };
        let _ = shared.setup.set(Setup {
            source,
            mask,
            exact: local.exact_mask,
            split: Some(split),
        });
        // The thread's run-queue wait so far: the page's first mark read it already.
        let queued = match &local.exact {
            Some(x) if split.schedstat => Some(x.base.queued_ns()),
            _ if p.schedstat => exact::run_delay_now(),
            _ => None,
        };
        if let Some(q) = queued {
            let _ = shared.run_queue_start.set(q);
        }
        if let Some(b) = before {
            let _ = shared.before.set(b);
        }
        // Switch totals are the thread's whole life's (getrusage's); perf counters start
        // at 0 now.
        let r = local.read();
        local.publish(shared, &r);
        OPEN.with(|o| o.set(true));
        local
    }

    /// Opens the context-switch counter and, where available, the migration counter,
    /// each alone, and maps the first's user page, so switches are counted on every
    /// episode; keeps the thread's schedstat file open where the machine has one.
    /// Takes their fds out of `fds`; returns the events counted this way, none when
    /// the page could not be mapped (the group then counts them on sampled episodes).
    fn open_exact(
        &mut self,
        events: &[CounterEvent],
        schedstat: bool,
        fds: &mut Reservation,
    ) -> std::io::Result<Vec<CounterEvent>> {
        if !events.contains(&CounterEvent::ContextSwitches) {
            return Ok(Vec::new());
        }
        let switches = open_alone(CounterEvent::ContextSwitches)?;
        let migrations = events
            .contains(&CounterEvent::CpuMigrations)
            .then(|| open_alone(CounterEvent::CpuMigrations).ok())
            .flatten();
        let schedstat = schedstat.then(exact::open_schedstat_unread).flatten();
        let reserved = 1 + usize::from(migrations.is_some()) + usize::from(schedstat.is_some());
        let Ok(x) = Exact::open(
            switches.as_raw_fd(),
            migrations.as_ref().map(AsRawFd::as_raw_fd),
            schedstat,
        ) else {
            return Ok(Vec::new());
        };
        let mut counted = vec![CounterEvent::ContextSwitches];
        self.exact_mask = CounterEvent::VoluntarySwitches.bit()
            | CounterEvent::InvoluntarySwitches.bit()
            | CounterEvent::ContextSwitches.bit();
        if x.counts_migrations() {
            self.exact_mask |= CounterEvent::CpuMigrations.bit();
            counted.push(CounterEvent::CpuMigrations);
        }
        self.exact = Some(x);
        self.exact_fds = [Some(switches), migrations].into_iter().flatten().collect();
        self.exact_reserved = Some(fds.split(reserved));
        Ok(counted)
    }

    /// Opens the groups planned at setup: the thread's second sampled episode, so
    /// that its first pays only for the switch counters.
    #[cold]
    #[inline(never)]
    fn open_pending(&self, shared: &ThreadCounters) {
        for (k, pending) in self.pending.iter().enumerate() {
            let Some(Pending { events, mut fds }) = pending.take() else {
                continue;
            };
            // What the group needs; the rest (a schedstat file that did not open) goes back.
            let reserved = fds.split(group_fds(events.len()));
            drop(fds);
            // Rare (the fds were reserved): on failure its events stay uncounted, n/a.
            if let Ok(g) = PerfGroup::open(&events, reserved) {
                let late = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
                shared.opened_late(k, g.events(), late);
                let _ = self.groups[k].set(g);
            }
        }
    }

    /// The thread's switch figures now (see [`Mark`]): the last ones while the
    /// page's switch count has not moved, which costs ~1 ns. A default mark where
    /// there is no page.
    #[inline(always)]
    pub(crate) fn mark(&self, shared: &ThreadCounters) -> Mark {
        match &self.exact {
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

    /// Whether the thread was switched since its last mark: the next [`mark`] reads.
    ///
    /// [`mark`]: LocalCounters::mark
    #[inline(always)]
    pub(crate) fn moved(&self) -> bool {
        self.exact.as_ref().is_some_and(Exact::moved)
    }

    /// The page's switch count now (~1 ns, no syscall); `None` without a page.
    #[inline(always)]
    pub(crate) fn switches(&self) -> Option<u32> {
        self.exact.as_ref().map(Exact::switches)
    }

    /// The last [`Mark`] read, whatever the switch count now; `None` without a page.
    #[inline(always)]
    pub(crate) fn last(&self) -> Option<Mark> {
        self.exact.as_ref().map(Exact::last)
    }

    /// The thread's voluntary/involuntary split now, at the page's switch count now
    /// (getrusage, ~0.4 µs); `None` without a page or when a switch landed in the read.
    pub(crate) fn split_now(&self) -> Option<Split> {
        self.exact.as_ref().and_then(Exact::split_now)
    }

    /// What one [`LocalCounters::split_now`] costs on this thread, in ticks (the fewest
    /// seen); `u64::MAX` without a page.
    pub(crate) fn split_ticks(&self) -> u64 {
        self.exact.as_ref().map_or(u64::MAX, Exact::split_ticks)
    }

    /// How many times the sources of a [`Mark`] were read on this thread.
    pub(crate) fn reads(&self) -> u64 {
        self.exact.as_ref().map_or(0, Exact::reads)
    }

    /// What re-reading every source of a [`Mark`] costs on this thread, in ticks
    /// (the fewest seen); `u64::MAX` before the first re-read or without a page.
    pub(crate) fn read_ticks(&self) -> u64 {
        self.exact.as_ref().map_or(u64::MAX, Exact::read_ticks)
    }

    /// Adds what a wait episode saw between its marks to its node (`read_at_end`:
    /// else apportioned).
    #[inline]
    pub(crate) fn add(&self, node: &NodeCounts, d: &Delta, read_at_end: bool) {
        node.add(d, self.exact_mask, read_at_end);
    }

    /// The thread totals of the events counted through the page: switches over the
    /// thread's whole life (the mark's getrusage figures), migrations since its first
    /// mark.
    #[cold]
    fn publish_exact(&self, shared: &ThreadCounters, m: &Mark) {
        let Some(x) = &self.exact else {
            return;
        };
        let whole = m.since(&Mark::ZERO);
        shared.store_switches(Switches {
            voluntary: whole.voluntary,
            involuntary: whole.involuntary,
        });
        let migrations = CounterEvent::CpuMigrations;
        if self.exact_mask & migrations.bit() != 0 {
            shared.totals[migrations.index()].store(m.since(&x.base).migrations, Relaxed);
        }
    }

    /// Whether the episode opening now has its counters read: one load and compare.
    #[inline(always)]
    pub(crate) fn wants_sample(&self) -> bool {
        self.credit.get() >= 0
    }

    /// Reads every source at a sampled episode's start; the returned index goes
    /// back to [`LocalCounters::finish`].
    #[inline(never)]
    pub(crate) fn begin(&self, shared: &ThreadCounters) -> u32 {
        if self.sampled_once.replace(true) {
            self.open_pending(shared);
        }
        let begin = Begin {
            t0: clock::now(),
            reading: self.read(),
        };
        let mut open = self.open_samples.borrow_mut();
        open.push(begin);
        open.len() as u32 - 1
    }

    /// A wait episode that was not sampled closed after `elapsed` ns.
    #[inline(always)]
    pub(crate) fn earn(&self, elapsed: u64) {
        self.credit
            .set(self.policy.earn(self.credit.get(), elapsed));
    }

    /// A sampled episode on `node` ran from `start` to `end`: adds its deltas to the
    /// node, refreshes the thread totals and pays for the reads.
    #[inline(never)]
    pub(crate) fn finish(
        &self,
        shared: &ThreadCounters,
        node: &NodeCounts,
        sample: u32,
        start: u64,
        end: u64,
    ) {
        let r = self.read();
        let begin = {
            let mut open = self.open_samples.borrow_mut();
            let Some(&begin) = open.get(sample as usize) else {
                return;
            };
            // Also drops readings of inner episodes whose guards were leaked.
            open.truncate(sample as usize);
            begin
        };
        let begin = &begin;
        // At least 1 ns, so a sampled episode always shows as counted time.
        let wall = end.saturating_sub(start).max(1);
        let b = &begin.reading;
        if let (Some(b_off), Some(r_off)) = (b.off_ns, r.off_ns) {
            for e in [
                CounterEvent::VoluntarySwitches,
                CounterEvent::InvoluntarySwitches,
            ] {
                let i = e.index();
                bump(&node.values[i], r.values[i].saturating_sub(b.values[i]));
            }
            bump(&node.off_ns, r_off.saturating_sub(b_off));
            bump(&node.src_ns[EventSource::Getrusage.index()], wall);
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
                if self.exact_mask & e.bit() != 0 {
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
        let cost = start.saturating_sub(begin.t0) + clock::now().saturating_sub(end);
        bump(&shared.overhead_ns, cost);
        bump(&shared.sampled, 1);
        let credit = self.policy.spend(self.credit.get(), cost);
        self.credit
            .set(self.policy.earn(credit, end.saturating_sub(start)));
    }

    /// Brings the thread totals up to now (a report on this thread, thread exit): its
    /// switches read whole, whatever its marks saw.
    pub(crate) fn refresh(&self, shared: &ThreadCounters) {
        if self.on {
            self.mark(shared);
            self.publish(shared, &self.read());
            if let Some(s) = Switches::own() {
                shared.store_switches(s);
            }
        }
    }

    /// At the thread's exit: [`LocalCounters::refresh`], and its run-queue wait kept
    /// from its last mark, which read its open schedstat file when the thread last
    /// switched (the kernel adds to it only then), so that the exit copy does not
    /// open `/proc/self/task/<tid>/schedstat` by path (~10 µs, measured on the
    /// build VM in a pool's start).
    pub(crate) fn close(&self, shared: &ThreadCounters) {
        self.refresh(shared);
        if self.exact.as_ref().is_some_and(|x| x.method().schedstat) {
            // 0: the file's read failed (the copy then reads it by path).
            let queued = self.mark(shared).queued_ns();
            if queued > 0 {
                let _ = shared.run_queue_end.set(queued);
            }
        }
    }

    /// Every source sampled episodes read: the perf groups, and getrusage with the
    /// off-CPU clock where there is no page to see switches on every episode.
    fn read(&self) -> Reading {
        let mut r = Reading {
            values: [0; N],
            times: [None; GROUPS],
            off_ns: None,
        };
        let mut ru = zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
        if self.exact.is_none() && unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0 {
            r.values[CounterEvent::VoluntarySwitches.index()] = ru.ru_nvcsw as u64;
            r.values[CounterEvent::InvoluntarySwitches.index()] = ru.ru_nivcsw as u64;
            r.off_ns = Some(exact::off_clock_ns());
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
    fn publish(&self, shared: &ThreadCounters, r: &Reading) {
        if r.off_ns.is_some() {
            for e in [
                CounterEvent::VoluntarySwitches,
                CounterEvent::InvoluntarySwitches,
            ] {
                shared.totals[e.index()].store(r.values[e.index()], Relaxed);
            }
        }
        for (k, g) in self.groups.iter().enumerate() {
            let (Some(g), Some((enabled, running))) = (g.get(), r.times[k]) else {
                continue;
            };
            for &e in g.events().iter().filter(|e| self.exact_mask & e.bit() == 0) {
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

impl Drop for LocalCounters {
    fn drop(&mut self) {
        OPEN.with(|o| o.set(false));
    }
}
