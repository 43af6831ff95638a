//! `Mutex`: std's mutex, tried first and timed only when the try fails.

use crate::config;
use crate::sync::acquire;
use crate::sync::local::{self, How, Token};
use crate::sync::state::LockState;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, TryLockResult};

/// A mutual exclusion lock with [`std::sync::Mutex`]'s API that records who holds it
/// and who waits for it (module docs). Its class in the lock-order graph is the line
/// that called [`Mutex::new`].
pub struct Mutex<T: ?Sized> {
    state: LockState,
    inner: std::sync::Mutex<T>,
}

/// The guard of a [`Mutex`]: the lock is released, and its hold recorded, on drop.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    lock: &'a Mutex<T>,
    token: Token,
    // `Some` except inside `Condvar` waits, which hand std's guard to std's condvar.
    inner: Option<std::sync::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex; the caller's line is its class.
    #[track_caller]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            state: LockState::new(Location::caller()),
            inner: std::sync::Mutex::new(value),
        }
    }

    /// Consumes the mutex and returns its value; `Err` if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Acquires the mutex, blocking until it is free; the caller's line is the site.
    /// A free mutex is counted, not timed; a held one is timed as a `[lock]` wait and
    /// its wait charged to the sites that held it meanwhile.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        acquire::blocking(
            &self.state,
            Location::caller(),
            || self.inner.try_lock(),
            || self.inner.lock(),
            |g, token| self.wrap(g, token),
        )
    }

    /// Acquires the mutex if it is free, without blocking.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        acquire::tried(
            &self.state,
            Location::caller(),
            || self.inner.try_lock(),
            |g, token| self.wrap(g, token),
        )
    }

    /// Whether a thread panicked while holding the mutex.
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// Clears the poisoned state.
    pub fn clear_poison(&self) {
        self.inner.clear_poison();
    }

    /// The value, through `&mut self`: no locking needed.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }

    fn wrap<'a>(&'a self, g: std::sync::MutexGuard<'a, T>, token: Token) -> MutexGuard<'a, T> {
        MutexGuard {
            lock: self,
            token,
            inner: Some(g),
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Takes std's guard out for a condvar wait, recording the release.
    pub(crate) fn unlock_for_wait(&mut self) -> std::sync::MutexGuard<'a, T> {
        local::released(&self.lock.state, self.token);
        self.token = Token::OFF;
        self.inner
            .take()
            .expect("a guard outside a wait holds std's guard")
    }

    /// Puts std's guard back after a condvar wait, recording the acquisition at
    /// `site` (the wait's line); the wait itself is the condvar's.
    pub(crate) fn relock_after_wait(
        &mut self,
        g: std::sync::MutexGuard<'a, T>,
        site: &'static Location<'static>,
    ) {
        if config::enabled() {
            self.token = local::acquired(&self.lock.state, site, How::Free);
        }
        self.inner = Some(g);
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        local::released(&self.lock.state, self.token);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner
            .as_deref()
            .expect("a guard outside a wait holds std's guard")
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner
            .as_deref_mut()
            .expect("a guard outside a wait holds std's guard")
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(value: T) -> Mutex<T> {
        Mutex::new(value)
    }
}
