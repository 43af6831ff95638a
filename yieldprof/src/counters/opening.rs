//! When a thread's counters open: deferred past its first wait episodes, then the
//! switch counter with its user page, then its perf groups.

use super::*;
use std::cell::{Cell, OnceCell, RefCell};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// A perf group planned when the thread's counters opened, opened at its second
/// sampled episode: its events and the fds reserved for it.
pub(super) struct Pending {
    pub(super) events: Vec<CounterEvent>,
    pub(super) fds: Reservation,
}

/// Where a thread is in opening its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Opened (or nothing to open).
    Open,
    /// On getrusage, every episode read: the counters open at the mark of the wait
    /// episode or timed call that opens this many from now (a pool worker's life is
    /// one episode of many calls).
    Deferred(u32),
}

/// The getrusage events the machine gives (every thread counts them).
fn getrusage_mask(p: &Probed) -> u16 {
    events_of(EventSource::Getrusage, |e| {
        p.status[e.index()].is_available()
    })
    .into_iter()
    .fold(0, |m, e| m | e.bit())
}

/// Waits (episodes and timed calls) a thread reads on getrusage before it opens perf
/// counters (`Auto` sampling only). Break-even: opening costs ~36 µs and its unmap and close at exit
/// ~20 µs more (docs/thread-pools.md, "Pool start"), where an episode read on
/// getrusage and the CPU clock costs ~2.3 µs more than one on the page when it does
/// not switch, and about the same when it does (the page's episodes re-read those
/// after a switch): 16 unswitched episodes pay for it.
pub(crate) fn episodes_before_open() -> u32 {
    match AFTER.load(Relaxed) {
        u32::MAX => crate::config::DEFAULT_COUNTERS_AFTER,
        n => n,
    }
}

static AFTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(u32::MAX);

/// Sets [`episodes_before_open`] for threads registered from now on (0: at once).
pub(crate) fn set_episodes_before_open(n: u32) {
    AFTER.store(n.min(u32::MAX - 1), Relaxed);
}

impl LocalCounters {
    /// Opens this thread's counters, within the fd budget, or defers their opening
    /// (see [`LocalCounters`]). `before`: the thread's switches when its registration
    /// began, read on it.
    pub(crate) fn open(shared: &ThreadCounters, before: Option<Switches>) -> LocalCounters {
        let sampling = sampling();
        let policy = Policy::of(sampling);
        let local = LocalCounters {
            credit: Cell::new(policy.start()),
            open_samples: RefCell::new(Vec::new()),
            policy,
            on: sampling != CounterSampling::Off,
            phase: Cell::new(Phase::Open),
            opened: Cell::new(Instant::now()),
            sampled_once: Cell::new(false),
            samples: Cell::new(true),
            exact: OnceCell::new(),
            exact_fds: OnceCell::new(),
            exact_mask: Cell::new(0),
            groups: [OnceCell::new(), OnceCell::new()],
            pending: [Cell::new(None), Cell::new(None)],
            exact_reserved: OnceCell::new(),
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
        if let Some(b) = before {
            let _ = shared.before.set(b);
        }
        let p = probed();
        let defer = match sampling {
            CounterSampling::Auto => episodes_before_open(),
            _ => 0,
        };
        if defer > 0 {
            local.phase.set(Phase::Deferred(defer.saturating_add(1)));
            THREADS_ON_GETRUSAGE.fetch_add(1, Relaxed);
            // Every episode is read while deferred: its switches, and their sum, are
            // exact.
            let mask = match getrusage_mask(p) {
                0 => 0,
                m => m | CounterEvent::ContextSwitches.bit(),
            };
            let _ = shared.setup.set(Setup {
                source: CounterSource::Getrusage(Reason::Deferred { episodes: defer }),
                mask,
                exact: mask,
                split: Some(SplitMethod {
                    every_episode: false,
                    page_time: false,
                    schedstat: false,
                    migrations: false,
                    rseq: false,
                }),
            });
            // Its run-queue total without the schedstat file (~9 µs to open cold, what
            // a short thread is spared): a thread that has not switched yet has queued
            // only for its first run, so its total counts from 0, that wait included;
            // one that has switched reads it now. Read at exit where it was preempted
            // (`close`), by path while it lives.
            if p.schedstat {
                let fresh = before.is_some_and(|b| b.voluntary + b.involuntary == 0);
                let start = if fresh {
                    Some(0)
                } else {
                    exact::run_delay_now()
                };
                if let Some(q) = start {
                    let _ = shared.run_queue_start.set(q);
                }
            }
        } else {
            local.open_counters(shared, false);
        }
        // Switch totals are the thread's whole life's (getrusage's); perf counters start
        // at 0 now.
        let r = local.read(Side::Closes);
        local.publish(shared, &r);
        OPEN.with(|o| o.set(true));
        local
    }

    /// Whether the counters are still deferred (not open, not counted through rseq).
    pub(crate) fn still_deferred(&self) -> bool {
        self.exact.get().is_none() && self.phase.get() != Phase::Open
    }

    /// Opens the deferred counters now (where [`Self::still_deferred`]): before a lock
    /// call whose episode, if it blocks, begins only after it
    /// (`record::lazy::materialise_at`), too late for a getrusage reading, so its
    /// figures come from the page's marks.
    pub(crate) fn open_deferred(&self, shared: &ThreadCounters) {
        self.phase.set(Phase::Open);
        self.open_counters(shared, true);
    }

    /// Opens the counters: at registration, or `late`, after the deferred episodes
    /// (the thread's set-up then says so where it changed).
    #[cold]
    #[inline(never)]
    pub(super) fn open_counters(&self, shared: &ThreadCounters, late: bool) {
        let p = probed();
        let sampling = sampling();
        let budget = fd_budget();
        let mut why = None;
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
                match self.open_exact(&events, p.schedstat, &mut fds) {
                    Ok(counted) => events.retain(|e| !counted.contains(e)),
                    Err(err) => {
                        why = why.or(Some(reason_of(&err, p.paranoid, source)));
                        continue;
                    }
                }
            }
            if !events.is_empty() {
                self.pending[k].set(Some(Pending { events, fds }));
            }
        }
        self.opened.set(Instant::now());
        self.sampled_once.set(false);
        let perf = self.exact.get().is_some() || is_pending(&self.pending[0]);
        // With a page and no group to read, a sample would read nothing: none is
        // taken (on a VM without a PMU, 1 episode in 1 200 of a hot loop was, each
        // off the fast path, 2026-12-06).
        self.samples.set(self.has_samples());
        let source = if perf {
            CounterSource::Perf
        } else {
            CounterSource::Getrusage(why.unwrap_or(Reason::Off))
        };
        match (perf, late) {
            (true, true) => {
                THREADS_ON_GETRUSAGE.fetch_sub(1, Relaxed);
                THREADS_ON_PERF.fetch_add(1, Relaxed);
            }
            (true, false) => {
                THREADS_ON_PERF.fetch_add(1, Relaxed);
            }
            (false, false) => {
                THREADS_ON_GETRUSAGE.fetch_add(1, Relaxed);
            }
            (false, true) => {}
        }
        let split = match self.exact.get() {
            Some(x) => x.method(),
            None => SplitMethod {
                every_episode: false,
                page_time: false,
                schedstat: false,
                migrations: false,
                rseq: false,
            },
        };
        let setup = Setup {
            source,
            mask: getrusage_mask(p) | self.exact_mask.get(),
            exact: self.exact_mask.get(),
            split: Some(split),
        };
        let _ = match late {
            true => shared.reopened.set(setup),
            false => shared.setup.set(setup),
        };
        // The thread's run-queue wait so far: the page's first mark read it already.
        // Late, its run-queue total keeps the start `open` gave it, else counts from here.
        let queued = match self.exact.get() {
            Some(x) if split.schedstat => Some(x.base.queued_ns()),
            _ if p.schedstat && !late => exact::run_delay_now(),
            _ => None,
        };
        if let Some(q) = queued {
            let _ = shared.run_queue_start.set(q);
        }
    }

    /// Opens the context-switch counter and, where available, the migration counter,
    /// each alone, and maps the first's user page, so switches are counted on every
    /// episode; keeps the thread's schedstat file open where the machine has one.
    /// Takes their fds out of `fds`; returns the events counted this way, none when
    /// the page could not be mapped (the group then counts them on sampled episodes).
    fn open_exact(
        &self,
        events: &[CounterEvent],
        schedstat: bool,
        fds: &mut Reservation,
    ) -> std::io::Result<Vec<CounterEvent>> {
        if !events.contains(&CounterEvent::ContextSwitches) {
            return Ok(Vec::new());
        }
        let mask = CounterEvent::VoluntarySwitches.bit()
            | CounterEvent::InvoluntarySwitches.bit()
            | CounterEvent::ContextSwitches.bit();
        // On rseq (`Options::rseq`, where it tells switches) no perf event at all: each
        // costs the kernel ~1 µs at every switch of its thread on the build VM
        // (2026-12-05), rseq ~50 ns (`counters/rseq.rs`).
        if sampling() == CounterSampling::Auto {
            let file = schedstat.then(exact::open_schedstat_unread).flatten();
            let reserved = usize::from(file.is_some());
            if let Some(x) = Exact::open_rseq(file) {
                self.exact_mask.set(mask);
                let _ = self.exact.set(x);
                let _ = self.exact_fds.set(Vec::new());
                let _ = self.exact_reserved.set(fds.split(reserved));
                return Ok(vec![CounterEvent::ContextSwitches]);
            }
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
        let mut mask = mask;
        if x.counts_migrations() {
            mask |= CounterEvent::CpuMigrations.bit();
            counted.push(CounterEvent::CpuMigrations);
        }
        self.exact_mask.set(mask);
        let _ = self.exact.set(x);
        let _ = self
            .exact_fds
            .set([Some(switches), migrations].into_iter().flatten().collect());
        let _ = self.exact_reserved.set(fds.split(reserved));
        Ok(counted)
    }

    /// Opens the groups planned at setup: the thread's second sampled episode, so
    /// that its first pays only for the switch counters.
    #[cold]
    #[inline(never)]
    pub(super) fn open_pending(&self, shared: &ThreadCounters) {
        for (k, pending) in self.pending.iter().enumerate() {
            let Some(Pending { events, mut fds }) = pending.take() else {
                continue;
            };
            // What the group needs; the rest (a schedstat file that did not open) goes back.
            let reserved = fds.split(group_fds(events.len()));
            drop(fds);
            // Rare (the fds were reserved): on failure its events stay uncounted, n/a.
            if let Ok(g) = PerfGroup::open(&events, reserved) {
                let late =
                    u64::try_from(self.opened.get().elapsed().as_nanos()).unwrap_or(u64::MAX);
                shared.opened_late(k, g.events(), late);
                let _ = self.groups[k].set(g);
            }
        }
        self.samples.set(self.has_samples());
    }

    /// Whether a sampled episode reads anything: getrusage (no page), or a perf group
    /// open or still to open.
    fn has_samples(&self) -> bool {
        self.exact.get().is_none()
            || self.pending.iter().any(is_pending)
            || self.groups.iter().any(|g| g.get().is_some())
    }
}

/// Whether a group waits in `p` to open (a `Cell` of a non-`Copy` value is read by
/// taking it and putting it back).
fn is_pending(p: &Cell<Option<Pending>>) -> bool {
    let g = p.take();
    let some = g.is_some();
    p.set(g);
    some
}
