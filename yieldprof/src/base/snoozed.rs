//! What each backoff call did: spun only, or yielded (made a `sched_yield`). A
//! `crossbeam_utils::Backoff::snooze()` spins while its step is low and yields after;
//! which one a call did cannot be told by its time (on the build VM a bare yield took
//! ~175 ns, the same as its 16-PAUSE spin step), so `record::snooze` counts the thread's
//! `sched_yield` calls and each backoff call reads how many it made.
//!
//! Each thread keeps its own table (one writer, no atomic read-modify-write on a call
//! that may spin for 30 ns); the tables are listed here for reports, and a thread's is
//! folded into the exited totals when it ends.

use crate::base::clock::Scale;
use crate::base::fork::{ForkMutex, Locked};
use crate::base::site::CallSite;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Backoff call lines one thread keeps figures for; calls at lines past these are not
/// split (the report then shows no split for them).
const LINES: usize = 32;

/// One backoff call line's figures on one thread, in clock ticks.
#[derive(Default)]
struct Line {
    site: AtomicPtr<CallSite>,
    spun: AtomicU64,
    spun_ticks: AtomicU64,
    yielded: AtomicU64,
    yielded_ticks: AtomicU64,
}

/// One thread's backoff lines: written by the thread, read by reports.
#[derive(Default)]
pub(crate) struct ThreadSnoozes {
    lines: [Line; LINES],
    /// Lines published: readers read no further.
    len: AtomicUsize,
}

/// Owner-only increment: a load and a store, no read-modify-write.
fn add(a: &AtomicU64, n: u64) {
    a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

impl ThreadSnoozes {
    /// Owner only: one call at `site` that lasted `ticks` and yielded or not.
    pub(crate) fn add(&self, site: &'static CallSite, yielded: bool, ticks: u64) {
        let len = self.len.load(Ordering::Relaxed);
        let ptr = site as *const CallSite as *mut CallSite;
        let i = match (0..len).find(|&i| self.lines[i].site.load(Ordering::Relaxed) == ptr) {
            Some(i) => i,
            None if len < LINES => {
                self.lines[len].site.store(ptr, Ordering::Relaxed);
                self.len.store(len + 1, Ordering::Release);
                len
            }
            None => return,
        };
        let l = &self.lines[i];
        if yielded {
            add(&l.yielded, 1);
            add(&l.yielded_ticks, ticks);
        } else {
            add(&l.spun, 1);
            add(&l.spun_ticks, ticks);
        }
    }

    /// Each published line's site and figures: `[spun, spun_ticks, yielded, yielded_ticks]`.
    fn read(&self) -> impl Iterator<Item = (*const CallSite, [u64; 4])> + '_ {
        let len = self.len.load(Ordering::Acquire);
        self.lines[..len].iter().map(|l| {
            let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
            (
                l.site.load(Ordering::Relaxed) as *const CallSite,
                [
                    r(&l.spun),
                    r(&l.spun_ticks),
                    r(&l.yielded),
                    r(&l.yielded_ticks),
                ],
            )
        })
    }
}

/// How the calls of one backoff line went, over the whole run and every thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Snoozes {
    /// Calls that made no `sched_yield`: they spun (or returned at once).
    pub spun: u64,
    /// Their time, ns.
    pub spun_ns: u64,
    /// Calls that made a `sched_yield`.
    pub yielded: u64,
    /// Their time, ns.
    pub yielded_ns: u64,
}

#[derive(Default)]
struct Tables {
    live: Vec<Arc<ThreadSnoozes>>,
    /// Ended threads' figures, per call site.
    exited: Vec<(*const CallSite, [u64; 4])>,
}

// SAFETY: the pointers are to the macro's `static` call sites, never written through.
unsafe impl Send for Tables {}

fn tables() -> Locked<Tables> {
    static TABLES: ForkMutex<Tables> = ForkMutex::new(
        Tables {
            live: Vec::new(),
            exited: Vec::new(),
        },
        |_| (),
    );
    TABLES.lock()
}

/// A new table for the calling thread, listed for reports.
pub(crate) fn listed() -> Arc<ThreadSnoozes> {
    let t = Arc::new(ThreadSnoozes::default());
    tables().live.push(t.clone());
    t
}

/// The thread that owned `t` has ended: its figures join the exited totals.
pub(crate) fn retire(t: &Arc<ThreadSnoozes>) {
    let mut tables = tables();
    tables.live.retain(|x| !Arc::ptr_eq(x, t));
    for (site, f) in t.read() {
        match tables.exited.iter_mut().find(|(s, _)| *s == site) {
            Some((_, sum)) => sum.iter_mut().zip(f).for_each(|(s, v)| *s += v),
            None => tables.exited.push((site, f)),
        }
    }
}

/// How the backoff calls at `file:line:column` went; `None` where none was split.
pub(crate) fn snoozes_at(file: &str, line: u32, column: u32) -> Option<Snoozes> {
    let tables = tables();
    let is_it = |s: *const CallSite| {
        // SAFETY: every pointer listed is a `&'static CallSite`.
        let s = unsafe { &*s };
        (s.file, s.line, s.column) == (file, line, column)
    };
    let mut sum = [0u64; 4];
    let mut found = false;
    let live = tables
        .live
        .iter()
        .flat_map(|t| t.read().collect::<Vec<_>>());
    for (_, f) in live
        .chain(tables.exited.iter().copied())
        .filter(|(s, _)| is_it(*s))
    {
        found = true;
        sum.iter_mut().zip(f).for_each(|(s, v)| *s += v);
    }
    let scale = Scale::current();
    found.then(|| Snoozes {
        spun: sum[0],
        spun_ns: scale.ns(sum[1]),
        yielded: sum[2],
        yielded_ns: scale.ns(sum[3]),
    })
}
