//! What each lock carries besides std's lock: its class, its holder's site, and its
//! contention books, made at its first contended acquisition (`contention` keeps them).

use std::panic::Location;
use std::ptr;
use std::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
};
use std::sync::{Mutex, PoisonError};

/// The holder word's value while nobody is known to hold the lock: a holder released
/// it to waiters that have not run yet.
pub(crate) const HANDOFF: usize = 0;

pub(crate) struct LockState {
    /// The line that created the lock: its class in the lock-order graph.
    pub(crate) class: &'static Location<'static>,
    /// The site of the latest acquisition (a `&'static Location` as an address).
    holder: AtomicUsize,
    /// The contention books (a leaked `Box`), null until the first contended
    /// acquisition: a release checks it with one load (a `OnceLock` took three).
    contention: AtomicPtr<Contention>,
}

impl LockState {
    pub(crate) const fn new(class: &'static Location<'static>) -> LockState {
        LockState {
            class,
            holder: AtomicUsize::new(HANDOFF),
            contention: AtomicPtr::new(ptr::null_mut()),
        }
    }

    pub(crate) fn class_key(&self) -> usize {
        self.class as *const Location<'static> as usize
    }

    #[inline(always)]
    pub(crate) fn set_holder(&self, site: usize) {
        self.holder.store(site, Relaxed);
    }

    pub(crate) fn holder(&self) -> usize {
        self.holder.load(Relaxed)
    }

    /// The books, if the lock was ever contended.
    #[inline(always)]
    pub(crate) fn contention(&self) -> Option<&Contention> {
        // SAFETY: non-null only once set to a leaked `Box` that lives as long as the
        // lock (freed in `drop`, which `&self` outlives).
        unsafe { self.contention.load(Acquire).as_ref() }
    }

    pub(crate) fn contention_or_make(&self) -> &Contention {
        if let Some(c) = self.contention() {
            return c;
        }
        let made = Box::into_raw(Box::<Contention>::default());
        match self
            .contention
            .compare_exchange(ptr::null_mut(), made, AcqRel, Acquire)
        {
            // SAFETY: `made` now belongs to the lock, freed in `drop`.
            Ok(_) => unsafe { &*made },
            Err(theirs) => {
                // SAFETY: `made` was never shared; `theirs` is the lock's (as above).
                unsafe {
                    drop(Box::from_raw(made));
                    &*theirs
                }
            }
        }
    }
}

impl Drop for LockState {
    fn drop(&mut self) {
        let c = *self.contention.get_mut();
        if !c.is_null() {
            // SAFETY: a `Box` leaked by `contention_or_make`, owned by this lock only.
            drop(unsafe { Box::from_raw(c) });
        }
    }
}

/// The `&'static Location` a site key was made from.
pub(crate) fn location(key: usize) -> &'static Location<'static> {
    // SAFETY: every non-HANDOFF key is the address of a `&'static Location<'static>`
    // (`key_of`), which lives for the whole program.
    unsafe { &*(key as *const Location<'static>) }
}

/// A contended lock's books: who waits, and since when their wait is charged.
#[derive(Default)]
pub(crate) struct Contention {
    /// Threads waiting now: a release reads it to know whether to cut a segment.
    pub(crate) waiting: AtomicU32,
    pub(crate) books: Mutex<Books>,
}

/// What the waiters' time is charged from, under the books' own lock.
#[derive(Default)]
pub(crate) struct Books {
    /// Tick up to which waiting was charged.
    pub(crate) last: u64,
    /// Waiting sites and how many threads wait at each; entries at 0 are reused.
    pub(crate) waiters: Vec<(usize, u32)>,
}

impl Contention {
    /// Whether a release must cut the waiters' time here: one relaxed load.
    #[inline(always)]
    pub(crate) fn has_waiters(&self) -> bool {
        self.waiting.load(Relaxed) > 0
    }

    pub(crate) fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A site's key: the address of its `Location`.
#[inline(always)]
pub(crate) fn key_of(site: &'static Location<'static>) -> usize {
    site as *const Location<'static> as usize
}
