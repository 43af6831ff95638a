//! Whether each backoff call spun or yielded (`base::snoozed`).
//!
//! yieldprof defines the C symbol `sched_yield`, which the linker binds this program's
//! calls to (std's `thread::yield_now`, crossbeam's `Backoff::snooze`, C code linked in)
//! ahead of the C library's: it counts the call on the calling thread and makes the
//! same system call. A backoff call reads the count when it starts and when it ends:
//! the difference is how many yields it made, exactly, whatever they cost and whether
//! they switched. Defining a C library symbol is opt-in (feature `count-yields`): a
//! program that defines `sched_yield` itself, or links two versions of yieldprof with
//! it on, fails to link. Without it backoff calls are timed but not split.

use crate::base::site::{CallSite, Kind};
use crate::base::snoozed::{self, ThreadSnoozes};
use std::cell::Cell;
use std::sync::Arc;

thread_local! {
    /// `sched_yield` calls this thread has made.
    static YIELDS: Cell<u64> = const { Cell::new(0) };
    /// `YIELDS` when the thread's current backoff call began (backoff calls do not nest).
    static AT_START: Cell<u64> = const { Cell::new(0) };
    static MINE: Mine = Mine(snoozed::listed());
}

/// This thread's table; its figures join the exited totals when the thread ends.
struct Mine(Arc<ThreadSnoozes>);

impl Drop for Mine {
    fn drop(&mut self) {
        snoozed::retire(&self.0);
    }
}

/// The C library's `sched_yield`, counted: see the module docs.
#[cfg(feature = "count-yields")]
#[no_mangle]
pub extern "C" fn sched_yield() -> libc::c_int {
    // A thread being torn down still yields; it just is not counted.
    let _ = YIELDS.try_with(|y| y.set(y.get() + 1));
    // SAFETY: `sched_yield` takes no arguments and has no preconditions.
    unsafe { libc::syscall(libc::SYS_sched_yield) as libc::c_int }
}

/// A wrapped call at `site` is about to run.
#[inline(always)]
pub(crate) fn began(site: &'static CallSite) {
    if splits(site) {
        let _ = AT_START.try_with(|a| a.set(YIELDS.try_with(Cell::get).unwrap_or(0)));
    }
}

/// Whether calls at `site` are split into spun and yielded.
#[inline(always)]
pub(crate) fn splits(site: &'static CallSite) -> bool {
    cfg!(feature = "count-yields") && site.kind == Kind::Backoff
}

/// A timed call at `site` has closed, `ticks` its own time (as its slot gets it).
#[inline(always)]
pub(crate) fn closed(site: &'static CallSite, ticks: u64) {
    if splits(site) {
        closed_backoff(site, ticks);
    }
}

#[inline(never)]
fn closed_backoff(site: &'static CallSite, ticks: u64) {
    let now = YIELDS.try_with(Cell::get).unwrap_or(0);
    let yielded = AT_START.try_with(|a| now > a.get()).unwrap_or(false);
    let _ = MINE.try_with(|m| m.0.add(site, yielded, ticks));
}
