//! `fork()`: a child process must not hang on a lock, overwrite the parent's files, or
//! report the parent's recording as its own.
//!
//! Locks: every process-wide lock yieldprof takes is a [`ForkMutex`]. One set of
//! `pthread_atfork` handlers takes all of them before `fork()` runs and releases them
//! after it, in the parent and in the child, so a child never inherits one held by a
//! thread it does not have (it would wait for it forever). No code holds two of them
//! at once, so the order in which the prepare handler takes them cannot deadlock.
//!
//! What a child inherits, and what it does with it:
//! - The guard: it writes nothing when it drops in the child (nor at exit, nor does it
//!   wait for the parent's snapshot thread, which the child does not have). An explicit
//!   [`Guard::write`](crate::Guard::write) or [`flush`](crate::flush) there, and a
//!   guard from [`init`](crate::init) called in the child, write `<name>.<child pid>.*`.
//! - The recording: the thread registry's child step drops the parent's other threads
//!   (they do not exist in the child) and its exited ones, and takes the forking
//!   thread's counts at the fork as a baseline that every report in the child
//!   subtracts. So the child's reports hold only what the child did.
//! - Counters: the forking thread's perf-event fds still count the *parent's* thread;
//!   in the child its perf figures are not its own (getrusage ones are). Threads the
//!   child starts open their own.

use crate::base::reentry::Inside;
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Set in a child (and its descendants) made by `fork()` after the handlers were
/// installed.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether this process is a child forked after profiling began.
pub(crate) fn is_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// A `Mutex` that `fork()` never copies into a child while another thread holds it:
/// the prepare handler locks it, and the parent and child handlers unlock it (the
/// child after running `in_child` on the value).
pub(crate) struct ForkMutex<T: 'static> {
    mutex: Mutex<T>,
    /// The lock the forking thread holds from prepare until the fork returns. Only
    /// the thread holding `mutex` touches it.
    held: UnsafeCell<Option<Locked<T>>>,
    /// On the list the handlers walk.
    listed: AtomicBool,
    in_child: fn(&mut T),
}

// SAFETY: the value is reached only through `mutex`; `held` only by the thread that
// holds `mutex` (see `Hold`), so no two threads ever touch it at once.
unsafe impl<T: Send> Sync for ForkMutex<T> {}

impl<T: Send> ForkMutex<T> {
    /// `in_child` runs in a forked child, on the forking thread, before the lock is
    /// released there.
    pub(crate) const fn new(value: T, in_child: fn(&mut T)) -> Self {
        ForkMutex {
            mutex: Mutex::new(value),
            held: UnsafeCell::new(None),
            listed: AtomicBool::new(false),
            in_child,
        }
    }

    /// Locks it, marking the thread as inside yieldprof while it holds it (an entry
    /// from a signal handler then skips instead of waiting for it forever). Every
    /// update leaves the value consistent, so a lock poisoned by a panic is still
    /// usable.
    pub(crate) fn lock(&'static self) -> Locked<T> {
        if !self.listed.load(Ordering::Acquire) {
            self.list();
        }
        self.locked()
    }

    fn locked(&'static self) -> Locked<T> {
        let inside = Inside::mark();
        Locked {
            guard: self.mutex.lock().unwrap_or_else(PoisonError::into_inner),
            _inside: inside,
        }
    }

    #[cold]
    fn list(&'static self) {
        let mut list = LIST.locked();
        install(&mut list);
        // Checked again under the list's lock: two threads may race here.
        if !self.listed.load(Ordering::Relaxed) {
            list.locks.push(self);
            self.listed.store(true, Ordering::Release);
        }
    }
}

/// A `OnceLock` that a forked child never inherits half made: it is filled under a
/// [`ForkMutex`], which the fork handlers hold across `fork()`. (A child forked while
/// another thread was filling a plain `OnceLock` waits for it forever: seen with the
/// counter probe, 1 hang in ~50 forks of a busy host.)
pub(crate) struct ForkOnce<T: 'static> {
    cell: OnceLock<T>,
    filling: ForkMutex<()>,
}

impl<T: Send + Sync> ForkOnce<T> {
    pub(crate) const fn new() -> Self {
        ForkOnce {
            cell: OnceLock::new(),
            filling: ForkMutex::new((), |_| ()),
        }
    }

    /// The value, made by `f` the first time.
    pub(crate) fn get_or_init(&'static self, f: impl FnOnce() -> T) -> &'static T {
        if let Some(v) = self.cell.get() {
            return v;
        }
        let _filling = self.filling.lock();
        self.cell.get_or_init(f)
    }
}

/// A held [`ForkMutex`].
pub(crate) struct Locked<T: 'static> {
    guard: MutexGuard<'static, T>,
    // Dropped after `guard`: the thread stays marked until the lock is released.
    _inside: Inside,
}

impl<T> Deref for Locked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Locked<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// A lock the fork handlers hold across `fork()`.
trait Hold: Sync {
    fn hold(&'static self);
    fn release(&'static self, in_child: bool);
}

impl<T: Send> Hold for ForkMutex<T> {
    fn hold(&'static self) {
        let locked = self.locked();
        // SAFETY: this thread holds `mutex`, which alone gives access to `held`.
        unsafe { *self.held.get() = Some(locked) };
    }

    fn release(&'static self, in_child: bool) {
        // SAFETY: this thread has held `mutex` since `hold`; the guard it takes is that hold.
        let guard = unsafe { (*self.held.get()).take() };
        if let Some(mut guard) = guard {
            if in_child {
                (self.in_child)(&mut *guard);
            }
        }
    }
}

struct Listed {
    installed: bool,
    locks: Vec<&'static dyn Hold>,
}

/// The locks the handlers hold. Itself held across `fork()` (first), so a lock being
/// listed while a fork runs is either held by it or not yet taken by anyone.
static LIST: ForkMutex<Listed> = ForkMutex::new(
    Listed {
        installed: false,
        locks: Vec::new(),
    },
    |_| (),
);

extern "C" fn prepare() {
    LIST.hold();
    // SAFETY: this thread holds LIST's mutex (just above), which alone gives access to `held`.
    if let Some(list) = unsafe { &*LIST.held.get() } {
        for lock in &list.locks {
            lock.hold();
        }
    }
}

fn release(in_child: bool) {
    // SAFETY: this thread holds LIST's mutex since `prepare`.
    if let Some(list) = unsafe { &*LIST.held.get() } {
        for lock in list.locks.iter().rev() {
            lock.release(in_child);
        }
    }
    LIST.release(in_child);
}

extern "C" fn parent() {
    release(false);
}

extern "C" fn child() {
    FORKED.store(true, Ordering::Relaxed);
    release(true);
}

/// Registers the handlers once, under the list's lock (no `Once`, which a fork
/// during its first call would leave running forever in the child).
fn install(list: &mut Listed) {
    if list.installed {
        return;
    }
    list.installed = true;
    // SAFETY: the handlers are `extern "C" fn()`s that never unwind: they lock and
    // unlock mutexes, ignoring poison, and the `in_child` steps do not panic.
    let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    if rc != 0 {
        eprintln!("yieldprof: pthread_atfork failed ({rc}); a forked child may hang or misreport");
    }
}

/// Installs the handlers now, so that a child forked before anything is recorded
/// knows it is one ([`is_child`]).
pub(crate) fn install_handlers() {
    install(&mut LIST.locked());
}
