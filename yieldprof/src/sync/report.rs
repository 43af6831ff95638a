//! What the locks recorded, read live from every thread's table and the process-wide
//! books: per acquisition site its holders, hold times and contention; lock-order
//! cycles; condvar wakes. Figures count from the start of the process.

use crate::base::clock::Scale;
use crate::base::text::{duration, percent};
use crate::model::histogram::Histogram;
use crate::model::profile::Profile;
use crate::sync::condvar::wakes;
use crate::sync::contention::charges;
use crate::sync::local::{tables, HOLD_SAMPLE_EVERY};
use crate::sync::order::{cycles, Edge};
use crate::sync::state::{location, HANDOFF};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::Location;

type Site = &'static Location<'static>;

/// Per waiting site (file, line, column): its holder frames and their shares.
pub(crate) type HolderFrames = BTreeMap<(&'static str, u32, u32), Vec<(String, f64)>>;

/// Every `yieldprof::sync` lock's figures ([`Profile::locks`]).
#[derive(Clone, Debug, Default)]
pub struct LockReport {
    /// Acquisition sites, those that waited longest first.
    pub sites: Vec<LockSite>,
    /// Lock-order cycles: potential deadlocks, each reported once.
    pub cycles: Vec<LockCycle>,
    /// Condvar waits per (waiting site, notifying site).
    pub wakes: Vec<Wakes>,
    /// Acquisitions made at sites beyond a thread's table (64 sites): counted only.
    pub unplaced: u64,
}

/// One acquisition site (the line of a `lock()`, `read()`, `write()`, `try_*`).
#[derive(Clone, Debug)]
pub struct LockSite {
    /// Where the acquisition is written.
    pub site: Site,
    /// Acquisitions, free and contended.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and waited.
    pub contended: u64,
    /// Time the contended acquisitions waited, ns.
    pub waited_ns: u64,
    /// That wait split by the site holding the lock meanwhile, largest first.
    pub held_by: Vec<HeldBy>,
    /// Hold times of the acquisitions made here, ns: sampled, the first at the site on
    /// each thread and then one in [`HOLD_SAMPLE_EVERY`](crate::sync::HOLD_SAMPLE_EVERY).
    pub holds: Histogram,
    /// The sampled holds' sum, ns: their mean is this over `holds.count()`.
    pub held_ns: u64,
}

impl LockSite {
    /// The mean sampled hold, ns; `None` before any was sampled.
    pub fn mean_hold_ns(&self) -> Option<u64> {
        self.held_ns.checked_div(self.holds.count())
    }

    /// Contended acquisitions as a share of all, 0..=1.
    pub fn contended_share(&self) -> f64 {
        percent(self.contended, self.acquisitions) / 100.0
    }
}

/// A share of a site's wait, by whoever held the lock.
#[derive(Clone, Debug)]
pub struct HeldBy {
    /// The holder's acquisition site; `None`: the lock was free and the waiter was
    /// being woken (a handoff).
    pub holder: Option<Site>,
    /// Waited time charged to it, ns (summed over waiting threads).
    pub waited_ns: u64,
}

/// One edge of the lock-order graph: `taken` acquired while `held` was held.
#[derive(Clone, Debug)]
pub struct OrderEdge {
    /// The line that created the lock held (its class).
    pub held: Site,
    /// Where the held lock was acquired.
    pub held_at: Site,
    /// The line that created the lock taken.
    pub taken: Site,
    /// Where it was taken.
    pub taken_at: Site,
    /// The thread that first took them in this order.
    pub thread: String,
}

/// Locks taken in a circle of orders: threads taking them at these sites at once can
/// deadlock, whether or not this run did.
#[derive(Clone, Debug)]
pub struct LockCycle {
    /// The edges around the cycle: each one's `taken` is the next one's `held`.
    pub edges: Vec<OrderEdge>,
}

/// Condvar waits at one site that one notifying site woke.
#[derive(Clone, Debug)]
pub struct Wakes {
    /// The line of the `wait*` call.
    pub waiter: Site,
    /// The line of the `notify_*` call; `None` for waits no notify reached.
    pub notifier: Option<Site>,
    /// Waits a notify ended.
    pub wakes: u64,
    /// From the notify until the waiter ran again holding its mutex, ns: mean and max.
    pub latency_mean_ns: u64,
    /// See `latency_mean_ns`.
    pub latency_max_ns: u64,
    /// Waits that returned with no notify and no timeout.
    pub spurious: u64,
    /// Waits that timed out although a notify came during them: too late.
    pub late: u64,
    /// Waits that timed out with no notify.
    pub timed_out: u64,
}

impl Profile {
    /// What the `yieldprof::sync` locks recorded since the process started, read
    /// live: holders, hold times, lock-order cycles and condvar wakes.
    ///
    /// ```
    /// use yieldprof::sync::Mutex;
    ///
    /// let m = Mutex::new(0);
    /// *m.lock().unwrap() += 1;
    /// let locks = yieldprof::snapshot().locks();
    /// assert!(locks.sites.iter().any(|s| s.acquisitions >= 1));
    /// ```
    pub fn locks(&self) -> LockReport {
        let scale = Scale::current();
        let mut sites: BTreeMap<usize, LockSite> = BTreeMap::new();
        let mut unplaced = 0;
        for t in tables() {
            unplaced += t.unplaced.load(std::sync::atomic::Ordering::Relaxed);
            for slot in &t.slots {
                use std::sync::atomic::Ordering::Relaxed;
                let key = slot.site.load(Relaxed);
                if key == 0 {
                    continue;
                }
                let s = sites.entry(key).or_insert_with(|| LockSite {
                    site: location(key),
                    acquisitions: 0,
                    contended: 0,
                    waited_ns: 0,
                    held_by: Vec::new(),
                    holds: Histogram::default(),
                    held_ns: 0,
                });
                s.acquisitions += slot.acquisitions.load(Relaxed);
                s.contended += slot.contended.load(Relaxed);
                s.waited_ns += scale.ns(slot.waited.load(Relaxed));
                let mut holds = slot.holds.load();
                holds.scale_to_ns(scale);
                s.holds.add(&holds);
                s.held_ns += scale.ns(slot.held.load(Relaxed));
            }
        }
        for ((waiter, holder), ticks) in charges() {
            if let Some(s) = sites.get_mut(&waiter) {
                s.held_by.push(HeldBy {
                    holder: (holder != HANDOFF).then(|| location(holder)),
                    waited_ns: scale.ns(ticks),
                });
            }
        }
        let mut sites: Vec<LockSite> = sites.into_values().collect();
        for s in &mut sites {
            s.held_by.sort_by_key(|h| std::cmp::Reverse(h.waited_ns));
        }
        sites.sort_by_key(|s| std::cmp::Reverse((s.waited_ns, s.acquisitions)));
        let cycles = cycles()
            .into_iter()
            .map(|edges| LockCycle {
                edges: edges.iter().map(order_edge).collect(),
            })
            .collect();
        let wakes = wakes()
            .into_iter()
            .map(|((waiter, notifier), b)| Wakes {
                waiter: location(waiter),
                notifier: (notifier != 0).then(|| location(notifier)),
                wakes: b.wakes,
                latency_mean_ns: scale.ns(b.latency.checked_div(b.wakes).unwrap_or(0)),
                latency_max_ns: scale.ns(b.latency_max),
                spurious: b.spurious,
                late: b.late,
                timed_out: b.timed_out,
            })
            .collect();
        LockReport {
            sites,
            cycles,
            wakes,
            unplaced,
        }
    }
}

fn order_edge(e: &Edge) -> OrderEdge {
    OrderEdge {
        held: location(e.held.class),
        held_at: location(e.held.site),
        taken: location(e.taken.class),
        taken_at: location(e.taken.site),
        thread: e.thread.clone(),
    }
}

/// `file:line`, the way frames name sites.
pub(crate) fn short(site: Site) -> String {
    format!("{}:{}", site.file(), site.line())
}

impl LockReport {
    /// Whether no lock recorded anything.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty() && self.cycles.is_empty() && self.wakes.is_empty()
    }

    /// Per waiting site (file, line, column), the frames its `[lock]` time splits into,
    /// `[held by worker.rs:88]` or `[handoff]`, with each one's share of the wait.
    pub(crate) fn holder_frames(&self) -> HolderFrames {
        self.sites
            .iter()
            .filter(|s| !s.held_by.is_empty())
            .map(|s| {
                let whole: u64 = s.held_by.iter().map(|h| h.waited_ns).sum();
                let frames = s
                    .held_by
                    .iter()
                    .map(|h| {
                        let name = h.holder.map_or("[handoff]".to_string(), |l| {
                            let file = l.file().rsplit(['/', '\\']).next().unwrap_or(l.file());
                            format!("[held by {file}:{}]", l.line())
                        });
                        (name, h.waited_ns as f64 / whole.max(1) as f64)
                    })
                    .collect();
                ((s.site.file(), s.site.line(), s.site.column()), frames)
            })
            .collect()
    }
}

/// The summary's lock sections.
impl fmt::Display for LockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Locks (yieldprof::sync; hold times sampled: first per site and thread, then 1 in {HOLD_SAMPLE_EVERY})"
        )?;
        for s in &self.sites {
            writeln!(
                f,
                "  {}  {} acquisitions, {} contended ({:.1} %), waited {}",
                short(s.site),
                s.acquisitions,
                s.contended,
                s.contended_share() * 100.0,
                duration(s.waited_ns)
            )?;
            let charged: u64 = s.held_by.iter().map(|h| h.waited_ns).sum();
            for h in &s.held_by {
                let who = h
                    .holder
                    .map_or("handoff (lock free, waiter waking)".into(), |l| {
                        format!("held by {}", short(l))
                    });
                writeln!(
                    f,
                    "      {who:<40} {:>5.1} %  {}",
                    percent(h.waited_ns, charged),
                    duration(h.waited_ns)
                )?;
            }
            let n = s.holds.count();
            if let Some(mean) = s.mean_hold_ns() {
                writeln!(
                    f,
                    "      holds (sampled {n}): mean {}, p50 {}, p99 {}, max {}",
                    duration(mean),
                    duration(s.holds.quantile(0.5).unwrap_or(0)),
                    duration(s.holds.quantile(0.99).unwrap_or(0)),
                    duration(s.holds.max().unwrap_or(0))
                )?;
            }
        }
        if self.unplaced > 0 {
            writeln!(
                f,
                "  {} acquisitions at sites past a thread's 64: counted only",
                self.unplaced
            )?;
        }
        if !self.cycles.is_empty() {
            writeln!(f, "Lock-order cycles (potential deadlocks)")?;
        }
        for (i, c) in self.cycles.iter().enumerate() {
            for (j, e) in c.edges.iter().enumerate() {
                writeln!(
                    f,
                    "  {} lock made at {} taken at {} while holding lock made at {} (taken at {}), thread {}",
                    if j == 0 { format!("cycle {}:", i + 1) } else { " ".repeat(format!("cycle {}:", i + 1).len()) },
                    short(e.taken),
                    short(e.taken_at),
                    short(e.held),
                    short(e.held_at),
                    e.thread
                )?;
            }
        }
        if !self.wakes.is_empty() {
            writeln!(f, "Condvar wakes")?;
        }
        for w in &self.wakes {
            let by = w
                .notifier
                .map_or("no notify".into(), |n| format!("woken by {}", short(n)));
            writeln!(
                f,
                "  {} {by}: {} wakes, notify to running mean {}, max {}; {} spurious, {} late notify, {} timed out",
                short(w.waiter),
                w.wakes,
                duration(w.latency_mean_ns),
                duration(w.latency_max_ns),
                w.spurious,
                w.late,
                w.timed_out
            )?;
        }
        Ok(())
    }
}
