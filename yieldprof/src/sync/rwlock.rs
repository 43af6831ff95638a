//! `RwLock`: std's reader-writer lock, tried first and timed only when the try fails.
//! With several readers, the holder word names the latest one: a writer's wait is
//! charged to the latest reader's site.

use crate::sync::acquire;
use crate::sync::local::{self, Token};
use crate::sync::state::LockState;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, TryLockResult};

/// A reader-writer lock with [`std::sync::RwLock`]'s API that records who holds it and
/// who waits for it ([module docs](crate::sync)). Its class in the lock-order graph is
/// the line that called [`RwLock::new`].
pub struct RwLock<T: ?Sized> {
    state: LockState,
    inner: std::sync::RwLock<T>,
}

/// Shared access to an [`RwLock`]'s value; released, and its hold recorded, on drop.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    state: &'a LockState,
    token: Token,
    inner: std::sync::RwLockReadGuard<'a, T>,
}

/// Exclusive access to an [`RwLock`]'s value; released, and its hold recorded, on drop.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    state: &'a LockState,
    token: Token,
    inner: std::sync::RwLockWriteGuard<'a, T>,
}

impl<T> RwLock<T> {
    /// A new unlocked lock; the caller's line is its class.
    #[track_caller]
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            state: LockState::new(Location::caller()),
            inner: std::sync::RwLock::new(value),
        }
    }

    /// Consumes the lock and returns its value; `Err` if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access, blocking while a writer holds the lock; the caller's line is
    /// the site.
    #[track_caller]
    #[inline]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        acquire::blocking(
            &self.state,
            Location::caller(),
            || self.inner.try_read(),
            || self.inner.read(),
            |inner, token| self.reader(inner, token),
        )
    }

    /// Shared access if no writer holds the lock, without blocking.
    #[track_caller]
    #[inline]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        acquire::tried(
            &self.state,
            Location::caller(),
            || self.inner.try_read(),
            |inner, token| self.reader(inner, token),
        )
    }

    /// Exclusive access, blocking while anyone holds the lock; the caller's line is
    /// the site.
    #[track_caller]
    #[inline]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        acquire::blocking(
            &self.state,
            Location::caller(),
            || self.inner.try_write(),
            || self.inner.write(),
            |inner, token| self.writer(inner, token),
        )
    }

    /// Exclusive access if nobody holds the lock, without blocking.
    #[track_caller]
    #[inline]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        acquire::tried(
            &self.state,
            Location::caller(),
            || self.inner.try_write(),
            |inner, token| self.writer(inner, token),
        )
    }

    /// Whether a thread panicked while holding the lock for writing.
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

    fn reader<'a>(
        &'a self,
        inner: std::sync::RwLockReadGuard<'a, T>,
        token: Token,
    ) -> RwLockReadGuard<'a, T> {
        RwLockReadGuard {
            state: &self.state,
            token,
            inner,
        }
    }

    fn writer<'a>(
        &'a self,
        inner: std::sync::RwLockWriteGuard<'a, T>,
        token: Token,
    ) -> RwLockWriteGuard<'a, T> {
        RwLockWriteGuard {
            state: &self.state,
            token,
            inner,
        }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        local::released(self.state, self.token);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        local::released(self.state, self.token);
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> RwLock<T> {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    #[track_caller]
    fn from(value: T) -> RwLock<T> {
        RwLock::new(value)
    }
}
