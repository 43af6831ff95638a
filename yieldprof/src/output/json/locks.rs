//! The report's `locks` part: what `yieldprof::sync` recorded, as in
//! [`crate::sync::LockReport`]. Absent from files written before it existed, and
//! `null` when no `yieldprof::sync` lock was used.

use crate::sync::{LockReport, LockSite};
use serde::{Deserialize, Serialize};
use std::panic::Location;

/// Every `yieldprof::sync` lock's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Locks {
    /// Hold times are sampled: the first per site and thread, then one in this many.
    pub hold_sample_every: u32,
    /// Acquisition sites, those that waited longest first.
    pub sites: Vec<Lock>,
    /// Lock-order cycles (potential deadlocks), each a list of edges around it.
    pub cycles: Vec<Vec<OrderEdge>>,
    /// Condvar waits per waiting and notifying site.
    pub wakes: Vec<Wake>,
}

/// One acquisition site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lock {
    /// `file:line:column` of the acquisition.
    pub site: String,
    /// Acquisitions, free and contended.
    pub acquisitions: u64,
    /// Acquisitions that waited.
    pub contended: u64,
    /// `contended / acquisitions`, 0..=1.
    pub contended_share: f64,
    /// Time the contended acquisitions waited, ns.
    pub waited_ns: u64,
    /// That wait by holder site (`null`: handoff, the lock free and the waiter waking).
    pub held_by: Vec<HeldBy>,
    /// Sampled hold times (`hold_sample_every`), ns.
    pub holds: Holds,
}

/// A share of a site's wait.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HeldBy {
    /// `file:line:column` of the holder's acquisition; `null` for the handoff.
    pub holder: Option<String>,
    /// Waited ns charged to it.
    pub waited_ns: u64,
}

/// Sampled hold times, ns; `null` figures when no hold was sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Holds {
    /// Holds sampled.
    pub sampled: u64,
    /// Their mean.
    pub mean_ns: Option<u64>,
    /// Their median.
    pub p50_ns: Option<u64>,
    /// Their 99th percentile.
    pub p99_ns: Option<u64>,
    /// The longest.
    pub max_ns: Option<u64>,
}

/// `taken` acquired at `taken_at` while holding `held`, acquired at `held_at`; locks are
/// named by the line that created them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OrderEdge {
    /// Where the held lock was created.
    pub held: String,
    /// Where it was acquired.
    pub held_at: String,
    /// Where the lock taken was created.
    pub taken: String,
    /// Where it was taken.
    pub taken_at: String,
    /// The thread that took them in this order first.
    pub thread: String,
}

/// Condvar waits at one site woken by one notifying site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Wake {
    /// `file:line:column` of the wait.
    pub waiter: String,
    /// `file:line:column` of the notify; `null` for waits no notify reached.
    pub notifier: Option<String>,
    /// Waits a notify ended.
    pub wakes: u64,
    /// Notify to running again with the mutex, ns.
    pub latency_mean_ns: u64,
    /// The longest such latency, ns.
    pub latency_max_ns: u64,
    /// Returned with no notify and no timeout.
    pub spurious: u64,
    /// Timed out though a notify came during the wait.
    pub late: u64,
    /// Timed out with no notify.
    pub timed_out: u64,
}

fn at(l: &Location<'_>) -> String {
    l.to_string()
}

fn lock(s: &LockSite) -> Lock {
    let n = s.holds.count();
    Lock {
        site: at(s.site),
        acquisitions: s.acquisitions,
        contended: s.contended,
        contended_share: s.contended_share(),
        waited_ns: s.waited_ns,
        held_by: s
            .held_by
            .iter()
            .map(|h| HeldBy {
                holder: h.holder.map(at),
                waited_ns: h.waited_ns,
            })
            .collect(),
        holds: Holds {
            sampled: n,
            mean_ns: s.mean_hold_ns(),
            p50_ns: s.holds.quantile(0.5),
            p99_ns: s.holds.quantile(0.99),
            max_ns: s.holds.max(),
        },
    }
}

/// The `locks` part, `None` when no `yieldprof::sync` lock recorded anything.
pub(super) fn locks(r: &LockReport) -> Option<Locks> {
    if r.is_empty() {
        return None;
    }
    Some(Locks {
        hold_sample_every: crate::sync::HOLD_SAMPLE_EVERY,
        sites: r.sites.iter().map(lock).collect(),
        cycles: r
            .cycles
            .iter()
            .map(|c| {
                c.edges
                    .iter()
                    .map(|e| OrderEdge {
                        held: at(e.held),
                        held_at: at(e.held_at),
                        taken: at(e.taken),
                        taken_at: at(e.taken_at),
                        thread: e.thread.clone(),
                    })
                    .collect()
            })
            .collect(),
        wakes: r
            .wakes
            .iter()
            .map(|w| Wake {
                waiter: at(w.waiter),
                notifier: w.notifier.map(at),
                wakes: w.wakes,
                latency_mean_ns: w.latency_mean_ns,
                latency_max_ns: w.latency_max_ns,
                spurious: w.spurious,
                late: w.late,
                timed_out: w.timed_out,
            })
            .collect(),
    })
}
