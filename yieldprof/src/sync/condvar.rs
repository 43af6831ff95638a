//! `Condvar`: std's condition variable, recording who wakes whom. A notify writes its
//! site, tick and a count into the condvar; a waiter that returns reads them: the
//! count moved while it slept if a notify came, and the notify's tick gives the time
//! until the waiter runs again with its lock.

use crate::base::clock;
use crate::base::fork::ForkMutex;
use crate::base::site::Kind;
use crate::config;
use crate::record::episode::call_at;
use crate::sync::acquire::map_lock;
use crate::sync::mutex::MutexGuard;
use crate::sync::state::key_of;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LockResult, WaitTimeoutResult};
use std::time::Duration;

/// A condition variable with [`std::sync::Condvar`]'s API that records the notifying
/// site of each wake and the wake-to-running latency ([module docs](crate::sync)).
#[derive(Default)]
pub struct Condvar {
    inner: std::sync::Condvar,
    notifies: AtomicU64,
    notifier: AtomicUsize,
    notified_at: AtomicU64,
}

/// What the waits at one site saw from one notifying site (0: no notify).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct WakeBook {
    pub(crate) wakes: u64,
    /// Ticks from the notify to running again with the lock: sum and max.
    pub(crate) latency: u64,
    pub(crate) latency_max: u64,
    /// Returned with no notify and no timeout.
    pub(crate) spurious: u64,
    /// Timed out, and a notify came during the wait, too late.
    pub(crate) late: u64,
    pub(crate) timed_out: u64,
}

/// Per (waiting site, notifying site).
static WAKES: ForkMutex<BTreeMap<(usize, usize), WakeBook>> =
    ForkMutex::new(BTreeMap::new(), |_| {});

/// Every (waiting site, notifying site) pair's book.
pub(crate) fn wakes() -> BTreeMap<(usize, usize), WakeBook> {
    WAKES.lock().clone()
}

type Waited<'a, T> = LockResult<(std::sync::MutexGuard<'a, T>, Option<WaitTimeoutResult>)>;

impl Condvar {
    /// A new condition variable.
    pub const fn new() -> Condvar {
        Condvar {
            inner: std::sync::Condvar::new(),
            notifies: AtomicU64::new(0),
            notifier: AtomicUsize::new(0),
            notified_at: AtomicU64::new(0),
        }
    }

    /// Blocks until notified; the caller's line is the waiting site.
    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let r = self.around(guard, Location::caller(), None, |g| {
            map_lock(self.inner.wait(g), |g| (g, None))
        });
        map_lock(r, |(g, _)| g)
    }

    /// Blocks while `condition` holds for the value.
    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        let checks = Cell::new(0);
        let counted = |v: &mut T| {
            checks.set(checks.get() + 1);
            condition(v)
        };
        let r = self.around(guard, Location::caller(), Some(&checks), |g| {
            map_lock(self.inner.wait_while(g, counted), |g| (g, None))
        });
        map_lock(r, |(g, _)| g)
    }

    /// Blocks until notified or `dur` passed.
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let r = self.around(guard, Location::caller(), None, |g| {
            map_lock(self.inner.wait_timeout(g, dur), |(g, t)| (g, Some(t)))
        });
        map_lock(r, |(g, t)| (g, t.expect("a timed wait")))
    }

    /// Blocks while `condition` holds, at most `dur`.
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let checks = Cell::new(0);
        let counted = |v: &mut T| {
            checks.set(checks.get() + 1);
            condition(v)
        };
        let r = self.around(guard, Location::caller(), Some(&checks), |g| {
            map_lock(self.inner.wait_timeout_while(g, dur, counted), |(g, t)| {
                (g, Some(t))
            })
        });
        map_lock(r, |(g, t)| (g, t.expect("a timed wait")))
    }

    /// Wakes one waiter; the caller's line is the notifying site.
    #[track_caller]
    pub fn notify_one(&self) {
        self.mark(Location::caller());
        self.inner.notify_one();
    }

    /// Wakes every waiter; the caller's line is the notifying site.
    #[track_caller]
    pub fn notify_all(&self) {
        self.mark(Location::caller());
        self.inner.notify_all();
    }

    fn mark(&self, site: &'static Location<'static>) {
        if config::enabled() {
            self.notifier.store(key_of(site), Ordering::Relaxed);
            self.notified_at.store(clock::now(), Ordering::Relaxed);
            self.notifies.fetch_add(1, Ordering::Release);
        }
    }

    /// Runs std's `wait` on the guard's std guard, timed as a `[condvar]` wait at
    /// `site`, and books what woke it. `checks`: how often a `*_while` wait checked
    /// its condition; once means it held at once and nothing waited.
    fn around<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        site: &'static Location<'static>,
        checks: Option<&Cell<u32>>,
        wait: impl FnOnce(std::sync::MutexGuard<'a, T>) -> Waited<'a, T>,
    ) -> LockResult<(MutexGuard<'a, T>, Option<WaitTimeoutResult>)> {
        let before = self.notifies.load(Ordering::Acquire);
        let start = clock::now();
        let g = guard.unlock_for_wait();
        let call = call_at(Kind::Condvar, site);
        let r = wait(g);
        drop(call);
        let timeout = match &r {
            Ok((_, t)) => *t,
            Err(p) => p.get_ref().1,
        };
        if config::enabled() && checks.map_or(true, |c| c.get() > 1) {
            self.book(
                key_of(site),
                before,
                start,
                timeout.is_some_and(|t| t.timed_out()),
            );
        }
        map_lock(r, |(g, t)| {
            guard.relock_after_wait(g, site);
            (guard, t)
        })
    }

    fn book(&self, site: usize, before: u64, start: u64, timed_out: bool) {
        let now = clock::now();
        let notified = self.notifies.load(Ordering::Acquire) != before;
        let notifier = if notified {
            self.notifier.load(Ordering::Relaxed)
        } else {
            0
        };
        let mut wakes = WAKES.lock();
        let b = wakes.entry((site, notifier)).or_default();
        match (notified, timed_out) {
            (true, false) => {
                let at = self.notified_at.load(Ordering::Relaxed).max(start);
                let latency = now.saturating_sub(at);
                b.wakes += 1;
                b.latency += latency;
                b.latency_max = b.latency_max.max(latency);
            }
            (true, true) => b.late += 1,
            (false, true) => b.timed_out += 1,
            (false, false) => b.spurious += 1,
        }
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}
