//! Whether this thread is running yieldprof's own code, so that an entry which
//! interrupts it (a signal handler, or an allocator calling back into annotated code)
//! is skipped instead of touching state in use: a lock this thread holds, a `RefCell`
//! it borrowed, a node it is adding.

use std::cell::Cell;

/// This thread's state here. Plain `Cell`s in a `const` thread-local: no lazy
/// initialisation and no destructor, so a signal handler can read it at any point,
/// thread teardown included.
struct State {
    /// Nesting depth of `Inside` tokens on this thread.
    depth: Cell<u32>,
    /// Entries skipped on this thread because they interrupted yieldprof.
    skipped: Cell<u64>,
}

thread_local! {
    static STATE: State = const {
        State {
            depth: Cell::new(0),
            skipped: Cell::new(0),
        }
    };
}

/// Marks this thread as inside yieldprof until dropped. It keeps the address of the
/// thread's `State`, so that its drop and [`Inside::skipped`] reach it without another
/// thread-local access (each one a call where the compiler does not inline it).
#[must_use = "the thread is inside yieldprof only while this lives"]
pub(crate) struct Inside(*const State);

impl Inside {
    /// For yieldprof's own critical sections (its locks): marks the thread whatever it
    /// was doing.
    pub(crate) fn mark() -> Inside {
        STATE.with(|s| {
            // Interrupted between the read and the write, a handler sees the old depth:
            // 0 means nothing was touched yet, so its entry is safe.
            s.depth.set(s.depth.get() + 1);
            Inside(s)
        })
    }

    /// For an entry from the host's code: `None` when the thread is already inside,
    /// that is, the entry interrupted yieldprof.
    #[inline(always)]
    pub(crate) fn enter() -> Option<Inside> {
        STATE.with(|s| {
            (s.depth.get() == 0).then(|| {
                s.depth.set(1);
                Inside(s)
            })
        })
    }

    /// Entries skipped on this thread so far.
    #[inline(always)]
    pub(crate) fn skipped(&self) -> u64 {
        // SAFETY: this thread's `State` (an `Inside` is not `Send`), which lives as long
        // as the thread: a `const` thread-local without a destructor.
        unsafe { (*self.0).skipped.get() }
    }
}

impl Drop for Inside {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: as in `skipped`.
        let depth = unsafe { &(*self.0).depth };
        depth.set(depth.get() - 1);
    }
}

/// Whether this thread is inside yieldprof now.
pub(crate) fn is_inside() -> bool {
    STATE.with(|s| s.depth.get() != 0)
}

/// Counts an entry (a frame or a call) skipped because it interrupted yieldprof.
pub(crate) fn skip() {
    STATE.with(|s| s.skipped.set(s.skipped.get() + 1));
}

/// Entries skipped on this thread so far.
pub(crate) fn skipped() -> u64 {
    STATE.with(|s| s.skipped.get())
}
