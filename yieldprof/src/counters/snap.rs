//! Counts kept per thread and per node, their copies, and their sums as report figures.

use super::*;
use crate::base::clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// How a thread was set up; written once by the owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    pub(super) source: CounterSource,
    /// Bit per [`CounterEvent`] this thread counts.
    pub(super) mask: u16,
}

/// A thread's counters as a report reads them.
#[derive(Default)]
pub(crate) struct ThreadCounters {
    pub(super) setup: OnceLock<Setup>,
    pub(super) totals: [AtomicU64; N],
    pub(super) overhead_ns: AtomicU64,
    pub(super) sampled: AtomicU64,
    pub(super) scaled: AtomicBool,
}

impl ThreadCounters {
    fn mask(&self) -> u16 {
        self.setup.get().map_or(0, |s| s.mask)
    }

    /// The root node's counts: the thread totals over its whole `wall`.
    pub(crate) fn root(&self, wall: u64) -> NodeSnap {
        let mask = self.mask();
        let mut n = NodeSnap::default();
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                n.values[e.index()] = self.totals[e.index()].load(Relaxed);
                n.ns[e.index()] = wall.max(1);
            }
        }
        n.sampled = self.sampled.load(Relaxed);
        n.scaled = u64::from(self.scaled.load(Relaxed));
        n
    }

    /// A copy of what the thread-level view needs.
    pub(crate) fn snapshot(&self) -> ThreadSnap {
        ThreadSnap {
            source: self.setup.get().map_or(CounterSource::Off, |s| s.source),
            overhead_ns: self.overhead_ns.load(Relaxed),
            run_queue_ns: None,
        }
    }

    /// Per-node counts, masked by what this thread counts.
    pub(crate) fn node(&self, c: &NodeCounts) -> NodeSnap {
        let mask = self.mask();
        let mut n = NodeSnap {
            sampled: c.sampled.load(Relaxed),
            scaled: c.scaled.load(Relaxed),
            ..NodeSnap::default()
        };
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                n.values[e.index()] = c.values[e.index()].load(Relaxed);
                n.ns[e.index()] = c.src_ns[e.source().index()].load(Relaxed);
            }
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
}

/// A copy of a node's counts: values and, per event, the wall time they cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeSnap {
    pub(super) values: [u64; N],
    pub(super) ns: [u64; N],
    pub(super) sampled: u64,
    pub(super) scaled: u64,
}

impl NodeSnap {
    /// Threads record clock ticks; reports speak nanoseconds.
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        for ns in &mut self.ns {
            // A sampled episode keeps at least 1 ns of counted time.
            *ns = scale.ns(*ns).max(u64::from(*ns > 0));
        }
    }

    /// The counts of two nodes together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &NodeSnap) -> NodeSnap {
        let mut n = *self;
        for i in 0..N {
            n.values[i] += other.values[i];
            n.ns[i] += other.ns[i];
        }
        n.sampled += other.sampled;
        n.scaled += other.scaled;
        n
    }

    /// This copy minus an earlier copy of the same node.
    pub(crate) fn minus(&self, earlier: &NodeSnap) -> NodeSnap {
        let mut n = *self;
        for i in 0..N {
            n.values[i] = self.values[i].saturating_sub(earlier.values[i]);
            n.ns[i] = self.ns[i].saturating_sub(earlier.ns[i]);
        }
        n.sampled = self.sampled.saturating_sub(earlier.sampled);
        n.scaled = self.scaled.saturating_sub(earlier.scaled);
        n
    }
}

/// The thread-level part of a thread's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadSnap {
    pub(crate) source: CounterSource,
    pub(crate) overhead_ns: u64,
    /// Time runnable but waiting for a CPU since the thread first recorded
    /// (`/proc/.../schedstat`); `None` where the kernel does not say.
    pub(crate) run_queue_ns: Option<u64>,
}

impl Default for ThreadSnap {
    fn default() -> Self {
        ThreadSnap {
            source: CounterSource::Off,
            overhead_ns: 0,
            run_queue_ns: None,
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
            run_queue_ns: match (self.run_queue_ns, earlier.run_queue_ns) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                (now, _) => now,
            },
            ..*self
        }
    }

    /// Two threads' figures together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &ThreadSnap) -> ThreadSnap {
        ThreadSnap {
            overhead_ns: self.overhead_ns + other.overhead_ns,
            run_queue_ns: match (self.run_queue_ns, other.run_queue_ns) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            },
            source: other.source,
        }
    }
}

/// Nanoseconds thread `tid` of this process has spent runnable but waiting for a
/// CPU: the second field of `/proc/self/task/<tid>/schedstat`.
pub(crate) fn run_queue_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
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
    }

    pub(crate) fn counters(&self) -> Counters {
        let mut c = Counters {
            sampled: self.sampled,
            ..Counters::default()
        };
        for e in CounterEvent::ALL {
            let (v, ns) = (self.values[e.index()], self.ns[e.index()]);
            if ns == 0 {
                continue;
            }
            let multiplexed = self.scaled > 0 && e.source() != EventSource::Getrusage;
            *c.slot(e) = if ns >= self.wall && !multiplexed {
                Count::Exact(u64::try_from(v).unwrap_or(u64::MAX))
            } else {
                let est = v * self.wall.max(ns) / ns;
                Count::Scaled(u64::try_from(est).unwrap_or(u64::MAX))
            };
        }
        c
    }
}

/// What one read of each source costs on the calling thread, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReadCost {
    pub(crate) getrusage_ns: f64,
    /// One read of this thread's software group; `None` where perf is unavailable.
    pub(crate) perf_software_ns: Option<f64>,
}

/// Times `reads` reads of getrusage and of a software group opened for the purpose
/// (within the fd budget, closed again).
pub(crate) fn read_cost(reads: u32) -> ReadCost {
    let reads = reads.max(1);
    let mut ru = zeroed_rusage();
    let t = std::time::Instant::now();
    for _ in 0..reads {
        // SAFETY: `ru` is a valid, writable rusage.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    }
    let getrusage_ns = t.elapsed().as_nanos() as f64 / f64::from(reads);
    let events = plan(&probed().status, EventSource::PerfSoftware);
    let perf_software_ns = FDS
        .reserve(group_fds(events.len()), fd_budget())
        .filter(|_| !events.is_empty())
        .and_then(|fds| PerfGroup::open(&events, fds).ok())
        .map(|g| {
            let mut out = [0; N];
            let t = std::time::Instant::now();
            for _ in 0..reads {
                std::hint::black_box(g.read_into(&mut out));
            }
            t.elapsed().as_nanos() as f64 / f64::from(reads)
        });
    ReadCost {
        getrusage_ns,
        perf_software_ns,
    }
}
