//! Counts kept per thread and per node, their copies, and their sums as report figures.

use super::*;
use crate::base::arena::bump;
use crate::base::clock;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// How a thread was set up; written once by the owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    pub(super) source: CounterSource,
    /// Bit per [`CounterEvent`] this thread counts.
    pub(super) mask: u16,
    /// The events of `mask` counted on every wait episode (the user page's), not on
    /// a sample.
    pub(super) exact: u16,
    /// How its episodes' time is split into on-CPU, queued and blocked; `None` with
    /// counters off.
    pub(super) split: Option<SplitMethod>,
}

/// A thread's counters as a report reads them.
#[derive(Default)]
pub(crate) struct ThreadCounters {
    pub(super) setup: OnceLock<Setup>,
    /// Its set-up once its counters opened after deferred episodes; read before `setup`.
    pub(super) reopened: OnceLock<Setup>,
    pub(super) totals: [AtomicU64; N],
    pub(super) overhead_ns: AtomicU64,
    pub(super) sampled: AtomicU64,
    pub(super) scaled: AtomicBool,
    /// The kernel's run-queue wait of the thread when its counters opened; unset with
    /// counters off.
    pub(super) run_queue_start: OnceLock<u64>,
    /// The same at the thread's exit, read by the thread on its open schedstat file
    /// (`LocalCounters::close`): its exit copy then opens no file by path.
    pub(super) run_queue_end: OnceLock<u64>,
    /// The thread's CPU time (the kernel's run-time sum) where it registered, and at
    /// its exit: read on it; unset where its clock could not be read.
    pub(super) cpu_start: OnceLock<u64>,
    pub(super) cpu_end: OnceLock<u64>,
    /// Events of perf groups opened after setup (`LocalCounters`), by bit.
    late_mask: AtomicU16,
    /// Per group, ns from setup until it opened: its thread totals miss that much.
    late_ns: [AtomicU64; GROUPS],
    /// The thread's switches when its registration began: the part of its whole-life
    /// totals from before it first recorded.
    pub(super) before: OnceLock<Switches>,
}

impl ThreadCounters {
    /// How the thread counts now: its set-up, or the one its counters opened later with.
    fn setup_now(&self) -> Option<&Setup> {
        self.reopened.get().or(self.setup.get())
    }

    /// Owner only: group `k` opened `late` ns after setup, counting `events`.
    pub(super) fn opened_late(&self, k: usize, events: &[CounterEvent], late: u64) {
        self.late_ns[k].store(late, Relaxed);
        let bits = events.iter().fold(0, |m, e| m | e.bit());
        self.late_mask.fetch_or(bits, Relaxed);
    }

    fn mask(&self) -> u16 {
        self.setup_now().map_or(0, |s| s.mask) | self.late_mask.load(Relaxed)
    }

    /// Whether the thread's switches are counted (its totals are then its whole life's).
    pub(crate) fn counts_switches(&self) -> bool {
        self.mask() & CounterEvent::VoluntarySwitches.bit() != 0
    }

    /// The switch totals `s` (the thread's whole life's, read now) as `(event, value)`
    /// for the events this thread counts: the context-switch count too where it is
    /// the page's (a perf group's starts late and stays its own).
    fn switch_totals(&self, s: Switches) -> impl Iterator<Item = (CounterEvent, u64)> {
        let (mask, exact) = (self.mask(), self.setup_now().map_or(0, |x| x.exact));
        [
            (CounterEvent::VoluntarySwitches, s.voluntary),
            (CounterEvent::InvoluntarySwitches, s.involuntary),
            (CounterEvent::ContextSwitches, s.all()),
        ]
        .into_iter()
        .filter(move |(e, _)| {
            mask & e.bit() != 0 && (*e != CounterEvent::ContextSwitches || exact & e.bit() != 0)
        })
    }

    /// Owner only: the thread's whole-life switches, read on it now, become its totals.
    pub(crate) fn store_switches(&self, s: Switches) {
        for (e, v) in self.switch_totals(s) {
            self.totals[e.index()].store(v, Relaxed);
        }
    }

    /// Whether every wait episode's context switches are counted (the exact page).
    pub(crate) fn switches_exact(&self) -> bool {
        let bit = CounterEvent::ContextSwitches.bit();
        self.setup_now().is_some_and(|s| s.exact & bit != 0)
    }

    /// How the thread's time split is measured; `None` when it is not.
    pub(crate) fn split_method(&self) -> Option<SplitMethod> {
        self.setup_now().and_then(|s| s.split)
    }

    /// The root node's counts: the thread totals over its whole `wall`, except the
    /// events of groups that opened late, which cover the thread from then on (and
    /// so show scaled to its wall). Switch totals are the thread's whole life's: `now`
    /// where they were read for this copy, else as the thread last stored them.
    pub(crate) fn root(&self, wall: u64, now: Option<Switches>) -> NodeSnap {
        let mask = self.mask();
        let late_mask = self.late_mask.load(Relaxed);
        let mut n = NodeSnap::default();
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                let late = match e.source() {
                    _ if late_mask & e.bit() == 0 => 0,
                    EventSource::PerfHardware => self.late_ns[1].load(Relaxed),
                    _ => self.late_ns[0].load(Relaxed),
                };
                n.values[e.index()] = self.totals[e.index()].load(Relaxed);
                n.ns[e.index()] = wall.saturating_sub(late).max(1);
            }
        }
        for (e, v) in now.into_iter().flat_map(|s| self.switch_totals(s)) {
            n.values[e.index()] = v;
        }
        n.sampled = self.sampled.load(Relaxed);
        n.scaled = u64::from(self.scaled.load(Relaxed));
        n
    }

    /// A copy of what the thread-level view needs.
    pub(crate) fn snapshot(&self) -> ThreadSnap {
        ThreadSnap {
            source: self.setup_now().map_or(CounterSource::Off, |s| s.source),
            overhead_ns: self.overhead_ns.load(Relaxed),
            run_queue_ns: None,
            cpu_ns: None,
            split: self.split_method(),
            switches_before: self
                .before
                .get()
                .copied()
                .filter(|_| self.counts_switches()),
            switches_stale: false,
        }
    }

    /// Per-node counts, masked by what this thread counts. `wall` is the node's wall
    /// time: what the events counted on every episode cover. Only wait frames measure
    /// their episodes; for other nodes the figures stay unread.
    pub(crate) fn node(&self, c: &NodeCounts, wall: u64) -> NodeSnap {
        let Some(setup) = self.setup_now() else {
            return NodeSnap::default();
        };
        let mask = self.mask();
        let sampled_ns = c.src_ns[EventSource::Getrusage.index()].load(Relaxed);
        let mut n = NodeSnap {
            sampled: c.sampled.load(Relaxed),
            scaled: c.scaled.load(Relaxed),
            ..NodeSnap::default()
        };
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                n.values[e.index()] = c.values[e.index()].load(Relaxed);
                n.ns[e.index()] = if setup.exact & e.bit() != 0 {
                    wall
                } else {
                    c.src_ns[e.source().index()].load(Relaxed)
                };
            }
        }
        if let Some(method) = setup.split {
            n.off_ns = c.off_ns.load(Relaxed);
            n.queued_ns = c.queued_ns.load(Relaxed);
            n.estimated = c.estimated.load(Relaxed);
            n.split_ns = if method.every_episode {
                wall
            } else {
                sampled_ns
            };
            n.queued_split_ns = if method.schedstat { n.split_ns } else { 0 };
            n.calls_split = method.every_episode;
            n.every_split = method.every_episode
                || matches!(
                    setup.source,
                    CounterSource::Getrusage(Reason::Deferred { .. })
                );
        }
        n
    }
}

/// Counter sums of one calling-context node; the owner writes them with `bump`.
#[derive(Default)]
pub(crate) struct NodeCounts {
    pub(super) values: [AtomicU64; N],
    /// Wall time of the sampled episodes, per source.
    pub(super) src_ns: [AtomicU64; 3],
    pub(super) sampled: AtomicU64,
    /// Sampled episodes whose perf deltas were scaled for multiplexing.
    pub(super) scaled: AtomicU64,
    /// Off-CPU time of the measured episodes, ns (not ticks).
    pub(super) off_ns: AtomicU64,
    /// The part of it spent runnable, waiting for a CPU, ns.
    pub(super) queued_ns: AtomicU64,
    /// Episodes whose split was apportioned (`Mark::until_count`), not read at their end.
    pub(super) estimated: AtomicU64,
}

impl NodeCounts {
    /// Adds what an episode saw between its two marks, for the events that `exact`
    /// counts on every episode.
    /// `read_at_end`: the figures were read at the episode's end, else apportioned.
    pub(crate) fn add(&self, d: &Delta, exact: u16, read_at_end: bool) {
        for (e, v) in [
            (CounterEvent::VoluntarySwitches, d.voluntary),
            (CounterEvent::InvoluntarySwitches, d.involuntary),
            (CounterEvent::ContextSwitches, d.switches),
            (CounterEvent::CpuMigrations, d.migrations),
        ] {
            if exact & e.bit() != 0 {
                bump(&self.values[e.index()], v);
            }
        }
        bump(&self.off_ns, d.off_ns);
        bump(&self.queued_ns, d.queued_ns);
        if !read_at_end {
            bump(&self.estimated, 1);
        }
    }
}

/// A copy of a node's counts: values and, per event, the wall time they cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeSnap {
    pub(super) values: [u64; N],
    pub(super) ns: [u64; N],
    pub(super) sampled: u64,
    pub(super) scaled: u64,
    /// Off-CPU and queued time (ns) of the episodes whose split was measured, and the
    /// wall time those cover (split_ns; queued_split_ns for the queued part).
    pub(super) off_ns: u64,
    pub(super) queued_ns: u64,
    pub(super) split_ns: u64,
    pub(super) queued_split_ns: u64,
    /// Episodes whose split was apportioned, not read at their end.
    pub(super) estimated: u64,
    /// Whether its timed calls measured their own off-CPU time too.
    pub(crate) calls_split: bool,
    /// Whether every episode's split is measured: the page's, or getrusage's on each
    /// while the thread's counters are deferred.
    pub(super) every_split: bool,
}

impl NodeSnap {
    /// For tests: `off_ns` off the CPU over `split_ns` of a node's wall, its calls
    /// without figures of their own; `every_split`: every episode read.
    #[cfg(test)]
    pub(crate) fn measured(off_ns: u64, split_ns: u64, every_split: bool) -> NodeSnap {
        NodeSnap {
            off_ns,
            split_ns,
            every_split,
            ..NodeSnap::default()
        }
    }

    /// Whether its figures are read on every one of its `episodes`: the page's, or
    /// getrusage's on each (a thread with deferred counters; a job without a page).
    pub(crate) fn every_read(&self, episodes: u64) -> bool {
        self.every_split || self.sampled >= episodes
    }

    /// Threads record clock ticks; reports speak nanoseconds.
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        // A sampled episode keeps at least 1 ns of counted time. `off_ns` and
        // `queued_ns` are ns already.
        let to_ns = |t: &mut u64| *t = scale.ns(*t).max(u64::from(*t > 0));
        self.ns.iter_mut().for_each(to_ns);
        to_ns(&mut self.split_ns);
        to_ns(&mut self.queued_split_ns);
    }

    /// A frame on the node still open at the copy was off the CPU for `off_ns` of its
    /// `ticks` so far (read from the thread's clocks by the copier): counted with the
    /// closed ones, where every episode's split is measured. Whether it was.
    pub(crate) fn add_open(&mut self, off_ns: u64, ticks: u64) -> bool {
        if !self.every_split {
            return false;
        }
        self.off_ns += off_ns;
        self.split_ns += ticks;
        true
    }

    /// Zeroes its switch counts (voluntary, involuntary, context switches).
    pub(crate) fn forget_switches(&mut self) {
        for e in [
            CounterEvent::VoluntarySwitches,
            CounterEvent::InvoluntarySwitches,
            CounterEvent::ContextSwitches,
        ] {
            self.values[e.index()] = 0;
        }
    }

    /// The counts of two nodes together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &NodeSnap) -> NodeSnap {
        self.zip(other, |a, b| a + b)
    }

    /// This copy minus an earlier copy of the same node.
    pub(crate) fn minus(&self, earlier: &NodeSnap) -> NodeSnap {
        self.zip(earlier, u64::saturating_sub)
    }

    /// Every figure of `self` and `other` combined by `f`.
    fn zip(&self, other: &NodeSnap, f: impl Fn(u64, u64) -> u64) -> NodeSnap {
        let mut n = *self;
        for i in 0..N {
            n.values[i] = f(self.values[i], other.values[i]);
            n.ns[i] = f(self.ns[i], other.ns[i]);
        }
        n.sampled = f(self.sampled, other.sampled);
        n.scaled = f(self.scaled, other.scaled);
        n.off_ns = f(self.off_ns, other.off_ns);
        n.queued_ns = f(self.queued_ns, other.queued_ns);
        n.split_ns = f(self.split_ns, other.split_ns);
        n.queued_split_ns = f(self.queued_split_ns, other.queued_split_ns);
        n.estimated = f(self.estimated, other.estimated);
        n.calls_split = self.calls_split || other.calls_split;
        n.every_split = self.every_split || other.every_split;
        n
    }

    /// The node's off-CPU time, estimated from its measured episodes where only some
    /// were, for `wall` ns of episodes; `None` where none was measured.
    pub(crate) fn off_cpu_ns(&self, wall: u64) -> Option<u64> {
        scaled_to(self.off_ns, self.split_ns, wall)
    }

    /// As [`NodeSnap::off_cpu_ns`], of the time queued (runnable, waiting for a CPU).
    pub(crate) fn queued_ns(&self, wall: u64) -> Option<u64> {
        scaled_to(self.queued_ns, self.queued_split_ns, wall)
    }
}

/// `v` measured over `split` ns of a node's `wall`, scaled to all of it.
fn scaled_to(v: u64, split: u64, wall: u64) -> Option<u64> {
    figure(u128::from(v), u128::from(split), u128::from(wall), false)
        .value()
        .map(|v| v.min(wall))
}

/// The thread-level part of a thread's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadSnap {
    pub(crate) source: CounterSource,
    pub(crate) overhead_ns: u64,
    /// Time runnable but waiting for a CPU since the thread first recorded
    /// (`/proc/.../schedstat`); `None` where the kernel does not say.
    pub(crate) run_queue_ns: Option<u64>,
    /// Its CPU time since it first recorded; `None` where its clock could not be read.
    pub(crate) cpu_ns: Option<u64>,
    /// How its episodes' time is split; `None` with counters off.
    pub(crate) split: Option<SplitMethod>,
    /// Its switches before it first recorded (inside its totals); `None` when unread.
    pub(crate) switches_before: Option<Switches>,
    /// Whether its switch totals are as the thread last stored them, not read for the
    /// copy (its status file could not be read): estimated, a lower bound.
    pub(crate) switches_stale: bool,
}

impl Default for ThreadSnap {
    fn default() -> Self {
        ThreadSnap {
            source: CounterSource::Off,
            overhead_ns: 0,
            run_queue_ns: None,
            cpu_ns: None,
            split: None,
            switches_before: None,
            switches_stale: false,
        }
    }
}

impl ThreadSnap {
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        self.overhead_ns = scale.ns(self.overhead_ns);
    }

    pub(crate) fn minus(&self, earlier: &ThreadSnap) -> ThreadSnap {
        ThreadSnap {
            overhead_ns: self.overhead_ns.saturating_sub(earlier.overhead_ns),
            run_queue_ns: minus(self.run_queue_ns, earlier.run_queue_ns),
            cpu_ns: minus(self.cpu_ns, earlier.cpu_ns),
            switches_before: match (self.switches_before, earlier.switches_before) {
                (Some(now), Some(then)) => Some(Switches {
                    voluntary: now.voluntary.saturating_sub(then.voluntary),
                    involuntary: now.involuntary.saturating_sub(then.involuntary),
                }),
                (now, _) => now,
            },
            ..*self
        }
    }

    /// Two threads' figures together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &ThreadSnap) -> ThreadSnap {
        ThreadSnap {
            overhead_ns: self.overhead_ns + other.overhead_ns,
            run_queue_ns: plus(self.run_queue_ns, other.run_queue_ns),
            cpu_ns: plus(self.cpu_ns, other.cpu_ns),
            source: other.source,
            split: other.split,
            switches_before: match (self.switches_before, other.switches_before) {
                (Some(a), Some(b)) => Some(Switches {
                    voluntary: a.voluntary + b.voluntary,
                    involuntary: a.involuntary + b.involuntary,
                }),
                (a, b) => a.or(b),
            },
            switches_stale: self.switches_stale || other.switches_stale,
        }
    }

    /// The part of a thread's totals `total` (as read, before any stale label) from
    /// before it first recorded: its switches then, read on the thread (exact), for the
    /// switch events `total` counts over the thread's whole life.
    pub(crate) fn before(&self, total: &Counters) -> Counters {
        let mut c = Counters::default();
        let Some(s) = self.switches_before else {
            return c;
        };
        for (e, v) in [
            (CounterEvent::VoluntarySwitches, s.voluntary),
            (CounterEvent::InvoluntarySwitches, s.involuntary),
            (CounterEvent::ContextSwitches, s.all()),
        ] {
            // A total that is not exact is a perf group's, which starts late: none
            // of it is before.
            if let Count::Exact(t) = total.get(e) {
                *c.slot(e) = Count::Exact(v.min(t));
            }
        }
        c
    }
}

/// A figure of a window since a snapshot: `then` is 0 where the snapshot had none.
fn minus(now: Option<u64>, then: Option<u64>) -> Option<u64> {
    now.map(|n| n.saturating_sub(then.unwrap_or(0)))
}

/// Two threads' figures together: either where one has none.
fn plus(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// A figure counted over `covered` ns of `wall` ns of episodes: exact when it covers
/// them all (and `estimated` is false), else scaled up to `wall`; not available when
/// it covers none.
fn figure(v: u128, covered: u128, wall: u128, estimated: bool) -> Count {
    if covered == 0 {
        Count::NotAvailable
    } else if covered >= wall && !estimated {
        Count::Exact(u64::try_from(v).unwrap_or(u64::MAX))
    } else {
        let est = v * wall.max(covered) / covered;
        Count::Scaled(u64::try_from(est).unwrap_or(u64::MAX))
    }
}

/// Sums of nodes, turned into [`Counters`] by scaling each event's count from the wall
/// time it covers to the wall time of all the episodes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    values: [u128; N],
    ns: [u128; N],
    wall: u128,
    sampled: u64,
    scaled: u64,
    off: u128,
    /// Each node's own estimate of its off-CPU time, summed: what the nodes' own-time
    /// splits (`model::own`) add up to.
    off_by_node: u128,
    queued: u128,
    split_ns: u128,
    queued_split_ns: u128,
    estimated: u64,
}

impl Acc {
    /// Nothing added: no wall time and no sampled episode.
    pub(crate) fn is_empty(&self) -> bool {
        self.wall == 0 && self.sampled == 0
    }

    pub(crate) fn add(&mut self, n: &NodeSnap, wall_ns: u64) {
        for i in 0..N {
            self.values[i] += u128::from(n.values[i]);
            self.ns[i] += u128::from(n.ns[i]);
        }
        self.wall += u128::from(wall_ns);
        self.sampled += n.sampled;
        self.scaled += n.scaled;
        self.off += u128::from(n.off_ns);
        self.off_by_node += u128::from(n.off_cpu_ns(wall_ns).unwrap_or(0));
        self.queued += u128::from(n.queued_ns);
        self.split_ns += u128::from(n.split_ns);
        self.queued_split_ns += u128::from(n.queued_split_ns);
        self.estimated += n.estimated;
    }

    pub(crate) fn counters(&self) -> Counters {
        let mut c = Counters {
            sampled: self.sampled,
            ..Counters::default()
        };
        for e in CounterEvent::ALL {
            let multiplexed = self.scaled > 0 && e.source() != EventSource::Getrusage;
            *c.slot(e) = figure(
                self.values[e.index()],
                self.ns[e.index()],
                self.wall,
                multiplexed,
            );
        }
        c
    }

    /// Where the episodes' time went: off-CPU and queued as measured (scaled where
    /// only some episodes were), on-CPU and blocked the rest of each.
    pub(crate) fn split(&self) -> TimeSplit {
        let wall = u64::try_from(self.wall).unwrap_or(u64::MAX);
        // Estimated: the sum of the nodes' estimates, not one ratio over all of them
        // (the two differ when nodes were sampled unevenly), so that a site's own-time
        // parts, estimated per node, never exceed its on- or off-CPU figure.
        // Apportioned episodes (switched again before their split was read) make it
        // an estimate.
        let apportioned = self.estimated > 0;
        let off = match figure(self.off, self.split_ns, self.wall, apportioned) {
            Count::Scaled(_) => Count::Scaled(u64::try_from(self.off_by_node).unwrap_or(u64::MAX)),
            c => c,
        }
        .map(|v| v.min(wall));
        let queued = figure(self.queued, self.queued_split_ns, self.wall, apportioned);
        let queued = match (queued, off.value()) {
            (q, Some(off)) => q.map(|v| v.min(off)),
            (q, None) => q,
        };
        TimeSplit {
            on_cpu_ns: off.map(|v| wall - v),
            off_cpu_ns: off,
            queued_ns: queued,
            // The rest of an estimate is one too: a spin lock's sampled threads without
            // schedstat had their queued time scaled from one thread's, and read
            // "blocked 300 ms" as if measured, where they never blocked (2026-12-06).
            blocked_ns: match (off.value(), queued.value()) {
                (Some(o), Some(q)) if queued.is_scaled() => Count::Scaled(o - q),
                (Some(o), Some(q)) => off.map(|_| o - q),
                _ => Count::NotAvailable,
            },
            estimated_episodes: self.estimated,
        }
    }
}
