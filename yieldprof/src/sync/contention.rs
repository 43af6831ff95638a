//! The books of a contended lock: who waits, and whose hold each waited tick belongs
//! to. Waited time is integrated exactly: at every change (a waiter arrives or leaves,
//! a holder releases to waiters) the ticks since the last change are charged, once per
//! waiter, to the pair (waiting site, holder site). Only contended paths come here.

use crate::base::clock;
use crate::base::fork::ForkMutex;
use crate::sync::state::{Books, Contention, LockState, HANDOFF};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

/// Waited ticks per (waiting site, holder site); holder `HANDOFF`: the lock was free
/// and the waiter was waking up.
static CHARGES: ForkMutex<BTreeMap<(usize, usize), u64>> = ForkMutex::new(BTreeMap::new(), |_| {});

/// Charges the ticks since the last change to `holder`, once per waiting thread.
fn settle(b: &mut Books, holder: usize, now: u64) {
    let span = now.saturating_sub(b.last);
    b.last = now;
    if span == 0 || b.waiters.iter().all(|w| w.1 == 0) {
        return;
    }
    let mut charges = CHARGES.lock();
    for &(site, n) in b.waiters.iter().filter(|w| w.1 > 0) {
        *charges.entry((site, holder)).or_default() += span * u64::from(n);
    }
}

/// A thread starts waiting at `site` for `lock`.
pub(crate) fn arrive(lock: &LockState, site: usize) {
    let c = lock.contention_or_make();
    let mut b = c.books();
    let now = clock::now();
    settle(&mut b, lock.holder(), now);
    if let Some(w) = b.waiters.iter_mut().find(|w| w.0 == site) {
        w.1 += 1;
    } else if let Some(w) = b.waiters.iter_mut().find(|w| w.1 == 0) {
        *w = (site, 1);
    } else {
        b.waiters.push((site, 1));
    }
    c.waiting.fetch_add(1, Relaxed);
}

/// The thread that arrived at `site` holds the lock now; returns the tick.
pub(crate) fn leave(lock: &LockState, site: usize) -> u64 {
    let c = lock.contention_or_make();
    let mut b = c.books();
    let now = clock::now();
    settle(&mut b, lock.holder(), now);
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
    settle(&mut b, holder, clock::now());
    lock.set_holder(HANDOFF);
}

/// Every (waiting site, holder site) pair and its waited ticks.
pub(crate) fn charges() -> BTreeMap<(usize, usize), u64> {
    CHARGES.lock().clone()
}
