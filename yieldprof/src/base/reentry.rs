//! Whether this thread is running yieldprof's own code, so that an entry which
//! interrupts it (a signal handler, or an allocator calling back into annotated code)
//! is skipped instead of touching state in use: a lock this thread holds, a `RefCell`
//! it borrowed, a node it is adding.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// Nesting depth of `Inside` tokens on this thread. A plain `Cell` in a `const`
    /// thread-local: no lazy initialisation and no destructor, so a signal handler can
    /// read it at any point, thread teardown included.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Entries skipped on this thread because they interrupted yieldprof.
    static SKIPPED: Cell<u64> = const { Cell::new(0) };
}

/// Marks this thread as inside yieldprof until dropped.
#[must_use = "the thread is inside yieldprof only while this lives"]
pub(crate) struct Inside(PhantomData<*const ()>);

impl Inside {
    /// For yieldprof's own critical sections (its locks): marks the thread whatever it
    /// was doing.
    pub(crate) fn mark() -> Inside {
        // Interrupted between the read and the write, a handler sees the old depth: 0
        // means nothing was touched yet, so its entry is safe.
        DEPTH.set(DEPTH.get() + 1);
        Inside(PhantomData)
    }

    /// For an entry from the host's code: `None` when the thread is already inside,
    /// that is, the entry interrupted yieldprof.
    #[inline(always)]
    pub(crate) fn enter() -> Option<Inside> {
        (DEPTH.get() == 0).then(Inside::mark)
    }
}

impl Drop for Inside {
    #[inline(always)]
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get() - 1);
    }
}

/// Whether this thread is inside yieldprof now.
pub(crate) fn is_inside() -> bool {
    DEPTH.get() != 0
}

/// Counts an entry (a frame or a call) skipped because it interrupted yieldprof.
pub(crate) fn skip() {
    SKIPPED.set(SKIPPED.get() + 1);
}

/// Entries skipped on this thread so far.
pub(crate) fn skipped() -> u64 {
    SKIPPED.get()
}
