//! `fork()`: a child process must neither overwrite the parent's files nor report the
//! parent's recording as its own.
//!
//! What a child inherits, and what it does with it:
//! - The guard: it writes nothing when it drops in the child (nor at exit, nor does it
//!   wait for the parent's snapshot thread, which the child does not have). An explicit
//!   [`Guard::write`](crate::Guard::write) or [`flush`](crate::flush) there, and a
//!   guard from [`init`](crate::init) called in the child, write `<name>.<child pid>.*`.
//! - The recording: a `pthread_atfork` child handler drops the parent's other threads
//!   (they do not exist in the child) and its exited ones, and takes the forking
//!   thread's counts at the fork as a baseline that every report in the child
//!   subtracts. So the child's reports hold only what the child did.
//! - Counters: the forking thread's perf-event fds, and the user page mapped from one,
//!   still count the *parent's* thread; in the child its perf figures are not its own
//!   (getrusage ones are), and its per-episode switches are read when the parent's
//!   thread switches rather than its own. Threads the child starts open their own.
//!
//! The handlers also hold the registry and site-table locks across the fork, so the
//! child never inherits them locked by a thread that does not exist there.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Once;

/// Set in a child (and its descendants) made by `fork()` after profiling began.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Registers the `fork()` handlers once (the thread registry's, which hold and release
/// its locks); later calls do nothing.
pub(crate) fn install(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: the handlers are `extern "C" fn()`s that never unwind.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if rc != 0 {
            eprintln!("yieldprof: pthread_atfork failed ({rc}); a forked child may misreport");
        }
    });
}

/// Marks this process as a child forked after profiling began; the child handler's
/// first step.
pub(crate) fn mark_child() {
    FORKED.store(true, Relaxed);
}

/// Whether this process is a child forked after profiling began.
pub(crate) fn is_child() -> bool {
    FORKED.load(Relaxed)
}
