//! The process-wide budget of perf-event file descriptors.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Fds held by counters, process-wide.
pub(crate) struct FdPool {
    used: AtomicUsize,
}

pub(super) static FDS: FdPool = FdPool::new();
pub(super) static THREADS_ON_PERF: AtomicU64 = AtomicU64::new(0);
pub(super) static THREADS_ON_GETRUSAGE: AtomicU64 = AtomicU64::new(0);

impl FdPool {
    pub(crate) const fn new() -> FdPool {
        FdPool {
            used: AtomicUsize::new(0),
        }
    }

    /// Takes `n` fds if that keeps the pool within `limit`.
    pub(crate) fn reserve(&'static self, n: usize, limit: usize) -> Option<Reservation> {
        let mut used = self.used.load(Relaxed);
        loop {
            let next = used.checked_add(n).filter(|&t| t <= limit)?;
            match self
                .used
                .compare_exchange_weak(used, next, Relaxed, Relaxed)
            {
                Ok(_) => return Some(Reservation { pool: self, n }),
                Err(now) => used = now,
            }
        }
    }

    pub(crate) fn in_use(&self) -> usize {
        self.used.load(Relaxed)
    }
}

/// Fds taken from a pool; given back when dropped (after the fds it covers are
/// closed: it is the last field of its owner).
pub(crate) struct Reservation {
    pool: &'static FdPool,
    n: usize,
}

impl Reservation {
    /// Moves `n` of these fds (at most all) into a reservation of their own.
    pub(crate) fn split(&mut self, n: usize) -> Reservation {
        let n = n.min(self.n);
        self.n -= n;
        Reservation { pool: self.pool, n }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.n, Relaxed);
    }
}
