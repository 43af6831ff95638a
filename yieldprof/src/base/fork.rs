//! `fork()`: a child process must not hang on a lock, overwrite the parent's files, or
//! report the parent's recording as its own.
//!
//! Locks: every process-wide lock yieldprof takes is a [`ForkMutex`]. One set of
//! `pthread_atfork` handlers takes all of them before `fork()` runs and releases them
//! after it, in the parent and in the child, so a child never inherits one held by a
//! thread it does not have (it would wait for it forever). No code holds two of them
//! at once, so the order in which the prepare handler takes them cannot deadlock.
//! Values made once per process (the settings, the counter probe, the cost estimate)
//! are [`ForkOnce`]s: one a child inherits half made, it makes again itself.
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
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    // The threads that were making these are not in the child: it makes them again.
    for state in &ONCES {
        let state = state.load(Ordering::Acquire);
        // SAFETY: a non-null entry points at a `ForkOnce`'s state, in a `static`.
        if let Some(state) = unsafe { state.as_ref() } {
            let _ = state.compare_exchange(MAKING, UNMADE, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
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

const UNMADE: u32 = 0;
const MAKING: u32 = 1;
const MADE: u32 = 2;

/// The states of the `ForkOnce`s made so far, for the child handler. A fixed table:
/// listing one takes no lock, so it may happen under any of the locks above.
static ONCES: [AtomicPtr<AtomicU32>; 16] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 16];
static ONCES_USED: AtomicUsize = AtomicUsize::new(0);

/// A value made once per process, like `OnceLock`, that never leaves a forked child
/// waiting: a child forked while another thread makes it finds it unmade and makes it
/// itself. (A child forked while another thread filled a plain `OnceLock` waited for it
/// forever: seen with the counter probe, 1 hang in ~50 forks of a busy host, and with
/// the quick cost estimate.) No lock is held while it is made, so making one under a
/// `ForkMutex` (the settings, read while a thread registers) orders against nothing.
/// A thread that finds it being made sleeps on the state word (a futex: no lock a fork
/// could copy held) until the maker stores the value and wakes it. It used to yield
/// in a loop: while the counter probe ran, each registering thread of a new pool made
/// thousands of `sched_yield` calls, taken by Linux as involuntary switches.
pub(crate) struct ForkOnce<T: 'static> {
    state: AtomicU32,
    value: UnsafeCell<MaybeUninit<T>>,
    listed: AtomicBool,
}

// SAFETY: `value` is written once, by the one thread that moved `state` to MAKING,
// before it stores MADE (release); it is read only after MADE is seen (acquire).
unsafe impl<T: Send + Sync> Sync for ForkOnce<T> {}

impl<T> ForkOnce<T> {
    pub(crate) const fn new() -> Self {
        ForkOnce {
            state: AtomicU32::new(UNMADE),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            listed: AtomicBool::new(false),
        }
    }

    /// The value, if made.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        // SAFETY: MADE is stored after the value is written (see `Sync`).
        (self.state.load(Ordering::Acquire) == MADE)
            .then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// The value, made by `make` if no thread has made it.
    #[inline]
    pub(crate) fn get_or_init(&'static self, make: impl FnOnce() -> T) -> &'static T {
        match self.get() {
            Some(v) => v,
            None => self.make(make),
        }
    }

    /// Makes it `value` unless it is made already.
    pub(crate) fn set(&'static self, value: T) {
        self.get_or_init(|| value);
    }

    #[cold]
    fn make(&'static self, make: impl FnOnce() -> T) -> &'static T {
        // Listed before it can be MAKING, so a fork from then on resets it in the child.
        if !self.listed.swap(true, Ordering::AcqRel) {
            let i = ONCES_USED.fetch_add(1, Ordering::Relaxed);
            if let Some(slot) = ONCES.get(i) {
                slot.store(
                    &self.state as *const AtomicU32 as *mut AtomicU32,
                    Ordering::Release,
                );
            }
        }
        let mut make = Some(make);
        loop {
            match self
                .state
                .compare_exchange(UNMADE, MAKING, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    // Unmade again if `make` panics, so another caller can try.
                    let unmade = Unmade(&self.state);
                    let value = (make.take().expect("made once"))();
                    // SAFETY: this thread moved `state` to MAKING: no other writes or reads.
                    unsafe { (*self.value.get()).write(value) };
                    std::mem::forget(unmade);
                    self.state.store(MADE, Ordering::Release);
                    wake_all(&self.state);
                }
                Err(MADE) => {}
                Err(_) => wait_while(&self.state, MAKING),
            }
            if let Some(v) = self.get() {
                return v;
            }
        }
    }
}

/// Puts a `ForkOnce` back to unmade when its making unwinds.
struct Unmade<'a>(&'a AtomicU32);

impl Drop for Unmade<'_> {
    fn drop(&mut self) {
        self.0.store(UNMADE, Ordering::Release);
        wake_all(self.0);
    }
}

/// Sleeps while `word` holds `value` (returns at once if it does not, or on any wake).
fn wait_while(word: &AtomicU32, value: u32) {
    // SAFETY: `word` is a live, aligned 32-bit atomic; a null timeout waits until woken.
    // EAGAIN (the value changed) and EINTR return to the caller's loop, which checks.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            value,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes every thread sleeping in [`wait_while`] on `word`.
fn wake_all(word: &AtomicU32) {
    // SAFETY: as above; waking has no precondition.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// Far above what a child here takes (well under a second on a loaded machine).
    const HUNG_AFTER: Duration = Duration::from_secs(60);

    /// Waits for child `pid`: its exit code, or `None` if it hung (then it is killed).
    fn exit_code(pid: libc::pid_t) -> Option<i32> {
        let start = Instant::now();
        let mut status = 0;
        // SAFETY: `pid` is this process's child; `status` is writable.
        while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } != pid {
            if start.elapsed() > HUNG_AFTER {
                // SAFETY: as above; the child is hung, so it is killed, then reaped.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
    }

    #[test]
    fn a_child_forked_while_another_thread_makes_a_value_makes_it_itself() {
        static VALUE: ForkOnce<u32> = ForkOnce::new();
        install_handlers();
        let (making, made_here) = (mpsc::channel(), mpsc::channel::<()>());
        let maker = std::thread::spawn(move || {
            *VALUE.get_or_init(|| {
                making.0.send(()).unwrap();
                made_here.1.recv().unwrap();
                1
            })
        });
        // The other thread is making the value now.
        making.1.recv().unwrap();
        // SAFETY: the child only reads the value, then ends in `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = if *VALUE.get_or_init(|| 2) == 2 { 0 } else { 1 };
            // SAFETY: ends the child without the test harness it copied.
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0, "fork failed");
        let code = exit_code(pid);
        made_here.0.send(()).unwrap();
        assert_eq!(maker.join().unwrap(), 1);
        assert_eq!(code, Some(0), "the child hung (None) or read another value");
    }

    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is writable.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[test]
    fn threads_waiting_for_a_value_being_made_sleep_until_it_is_made() {
        static VALUE: ForkOnce<u32> = ForkOnce::new();
        const MAKING_FOR: Duration = Duration::from_millis(200);
        let (making, waiting) = mpsc::channel();
        let maker = std::thread::spawn(move || {
            *VALUE.get_or_init(|| {
                making.send(()).unwrap();
                std::thread::sleep(MAKING_FOR);
                7
            })
        });
        waiting.recv().unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(|| {
                    let (wall, cpu) = (Instant::now(), thread_cpu());
                    let v = *VALUE.get_or_init(|| 0);
                    (v, wall.elapsed(), thread_cpu() - cpu)
                })
            })
            .collect();
        assert_eq!(maker.join().unwrap(), 7);
        for w in waiters {
            let (v, wall, cpu) = w.join().unwrap();
            assert_eq!(v, 7, "a waiter made its own value");
            // A waiter that started after the making ended waited for nothing.
            if wall >= MAKING_FOR / 4 {
                // Asleep, a waiter uses well under a millisecond of CPU (wake-up and the
                // futex calls); yielding in a loop it used most of the wait.
                assert!(
                    cpu < wall / 10,
                    "waited {wall:?} and used {cpu:?} of CPU: it spun"
                );
            }
        }
    }
}
