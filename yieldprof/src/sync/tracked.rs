//! `Tracked`: a lock type of the user's own (a spinlock, a parking_lot lock) recorded
//! like `yieldprof::sync`'s: acquisitions, holders, hold times and lock order.
//! Without the `enabled` feature it keeps only the lock: `lock` is the lock's own.

#[cfg(feature = "enabled")]
use crate::sync::acquire;
#[cfg(feature = "enabled")]
use crate::sync::local::{self, Token};
#[cfg(feature = "enabled")]
use crate::sync::state::LockState;
use std::fmt;
use std::ops::{Deref, DerefMut};
#[cfg(feature = "enabled")]
use std::panic::Location;
#[cfg(feature = "enabled")]
use std::sync::TryLockError;

/// How to take a lock type that [`Tracked`] records: a blocking acquisition and a
/// non-blocking one, each giving the lock's own guard (the lock is held while it lives).
///
/// Implement it for your lock type; for a type of another crate (which the orphan rule
/// keeps you from implementing it for), for a newtype around it.
pub trait Lockable {
    /// The lock's guard.
    type Guard<'a>
    where
        Self: 'a;

    /// Takes the lock, waiting (spinning, parking, ...) until it is free.
    fn lock(&self) -> Self::Guard<'_>;

    /// Takes the lock if it is free now.
    fn try_lock(&self) -> Option<Self::Guard<'_>>;
}

/// A lock of a type of the user's own, recorded like [`Mutex`](crate::sync::Mutex):
/// each acquisition's line is its site, a contended one is timed as a `[lock]` wait and
/// split by holder, holds are sampled, and the line that called [`Tracked::new`] is
/// its class in the lock-order graph (shared with `yieldprof::sync`'s locks).
pub struct Tracked<L> {
    #[cfg(feature = "enabled")]
    state: LockState,
    inner: L,
}

/// The guard of a [`Tracked`] lock: wraps the lock's own guard and records the release
/// before that guard releases the lock. Derefs to what the lock's guard derefs to.
#[must_use = "if unused the lock will immediately unlock"]
pub struct TrackedGuard<'a, L: Lockable + 'a> {
    #[cfg(feature = "enabled")]
    state: &'a LockState,
    #[cfg(feature = "enabled")]
    token: Token,
    inner: L::Guard<'a>,
}

impl<L> Tracked<L> {
    /// Wraps `lock`; the caller's line is its class.
    #[track_caller]
    pub const fn new(lock: L) -> Tracked<L> {
        Tracked {
            #[cfg(feature = "enabled")]
            state: LockState::new(Location::caller()),
            inner: lock,
        }
    }

    /// The lock itself: what is taken through it is not recorded.
    pub fn get_ref(&self) -> &L {
        &self.inner
    }

    /// The lock itself.
    pub fn into_inner(self) -> L {
        self.inner
    }
}

impl<L: Lockable> Tracked<L> {
    /// Takes the lock at the caller's line: tried first, counted when free, timed and
    /// split by holder when it waits.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> TrackedGuard<'_, L> {
        #[cfg(not(feature = "enabled"))]
        return TrackedGuard {
            inner: self.inner.lock(),
        };
        #[cfg(feature = "enabled")]
        let r = acquire::blocking(
            &self.state,
            Location::caller(),
            || self.inner.try_lock().ok_or(TryLockError::WouldBlock),
            || Ok(self.inner.lock()),
            |g, token| self.wrap(g, token),
        );
        // Never poisoned: neither closure above makes a `PoisonError`.
        #[cfg(feature = "enabled")]
        r.unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the lock at the caller's line if it is free now.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> Option<TrackedGuard<'_, L>> {
        #[cfg(not(feature = "enabled"))]
        return self.inner.try_lock().map(|inner| TrackedGuard { inner });
        #[cfg(feature = "enabled")]
        acquire::tried(
            &self.state,
            Location::caller(),
            || self.inner.try_lock().ok_or(TryLockError::WouldBlock),
            |g, token| self.wrap(g, token),
        )
        .ok()
    }

    #[cfg(feature = "enabled")]
    fn wrap<'a>(&'a self, g: L::Guard<'a>, token: Token) -> TrackedGuard<'a, L> {
        TrackedGuard {
            state: &self.state,
            token,
            inner: g,
        }
    }
}

impl<'a, L: Lockable> TrackedGuard<'a, L> {
    /// The lock's own guard.
    pub fn guard(&self) -> &L::Guard<'a> {
        &self.inner
    }
}

#[cfg(feature = "enabled")]
impl<L: Lockable> Drop for TrackedGuard<'_, L> {
    #[inline(always)]
    fn drop(&mut self) {
        // Runs before the fields drop: the release is recorded while the lock is held.
        local::released(self.state, self.token);
    }
}

impl<'a, L: Lockable> Deref for TrackedGuard<'a, L>
where
    L::Guard<'a>: Deref,
{
    type Target = <L::Guard<'a> as Deref>::Target;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<'a, L: Lockable> DerefMut for TrackedGuard<'a, L>
where
    L::Guard<'a>: DerefMut,
{
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl<L: fmt::Debug> fmt::Debug for Tracked<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
