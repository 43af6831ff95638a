//! The books of a contended lock: who waits, and whose hold each waited tick belongs
//! to. Waited time is integrated exactly: at every change (a waiter arrives or leaves,
//! a holder releases to waiters) the ticks since the last change are charged, once per
//! waiter, to the pair (waiting site, holder site). Only contended paths come here.

use crate::base::clock;
use crate::base::fork::ForkMutex;
use crate::sync::state::{LockState, HANDOFF};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// Waited ticks per (waiting site, holder site); holder `HANDOFF`: the lock was free
/// and the waiter was waking up.
static CHARGES: ForkMutex<BTreeMap<(usize, usize), u64>> = ForkMutex::new(BTreeMap::new(), |_| {});

#[derive(Default)]
pub(crate) struct Contention {
    /// Threads waiting now: a release reads it to know whether to cut a segment.
    waiting: AtomicU32,
    books: Mutex<Books>,
}

#[derive(Default)]
struct Books {
    /// Tick up to which waiting was charged.
    last: u64,
    /// Waiting sites and how many threads wait at each; entries at 0 are reused.
    waiters: Vec<(usize, u32)>,
}

impl Contention {
    /// Whether a release must cut the waiters' time here: one relaxed load.
    #[inline(always)]
    pub(crate) fn has_waiters(&self) -> bool {
        self.waiting.load(Relaxed) > 0
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Books {
    /// Charges the ticks since the last change to `holder`, once per waiting thread.
    fn settle(&mut self, holder: usize, now: u64) {
        let span = now.saturating_sub(self.last);
        self.last = now;
        if span == 0 || self.waiters.iter().all(|w| w.1 == 0) {
            return;
        }
        let mut charges = CHARGES.lock();
        for &(site, n) in self.waiters.iter().filter(|w| w.1 > 0) {
            *charges.entry((site, holder)).or_default() += span * u64::from(n);
        }
    }
}

/// A thread starts waiting at `site` for `lock`; returns the tick it started.
pub(crate) fn arrive(lock: &LockState, site: usize) -> u64 {
    let c = lock.contention_or_make();
    let mut b = c.books();
    let now = clock::now();
    b.settle(lock.holder(), now);
    if let Some(w) = b.waiters.iter_mut().find(|w| w.0 == site) {
        w.1 += 1;
    } else if let Some(w) = b.waiters.iter_mut().find(|w| w.1 == 0) {
        *w = (site, 1);
    } else {
        b.waiters.push((site, 1));
    }
    c.waiting.fetch_add(1, Relaxed);
    now
}

/// The thread that arrived at `site` holds the lock now; returns the tick.
pub(crate) fn leave(lock: &LockState, site: usize) -> u64 {
    let c = lock.contention_or_make();
    let mut b = c.books();
    let now = clock::now();
    b.settle(lock.holder(), now);
    if let Some(w) = b.waiters.iter_mut().find(|w| w.0 == site && w.1 > 0) {
        w.1 -= 1;
    }
    c.waiting.fetch_sub(1, Relaxed);
    now
}

/// `holder` releases the lock while threads wait: their time up to now was its hold;
/// from now until one of them runs, it is the handoff's.
#[cold]
#[inline(never)]
pub(crate) fn release_to_waiters(lock: &LockState, c: &Contention, holder: usize) {
    let mut b = c.books();
    b.settle(holder, clock::now());
    lock.set_holder(HANDOFF);
}

/// Every (waiting site, holder site) pair and its waited ticks.
pub(crate) fn charges() -> BTreeMap<(usize, usize), u64> {
    CHARGES.lock().clone()
}
