//! Blocking calls in async code, and the tasks they keep waiting.
//!
//! A call that blocks its thread from async code (`std::thread::sleep`, a std lock,
//! a channel's `recv`, marked `.in_async()` by the macro) holds the executor's worker
//! thread: every other task woken on that thread meanwhile waits for it to return
//! before it is polled. Each thread remembers its last such calls (start and end
//! tick); an annotated async episode records when it was woken (its waker is wrapped)
//! and, when next polled, charges the part of its wake-to-poll time that those calls
//! covered to their lines (`base::blocked`).
//!
//! Only the outermost annotated future being polled on a thread measures: an inner
//! one's wake is the outer's. A future polled on another thread than the blocker's is
//! not charged to it: it did not wait for that thread.

use super::frame::on;
use crate::base::clock;
use crate::base::site::CallSite;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Blocking calls each thread remembers: a poll woken before more than this many
/// calls ran on its thread is charged to the last ones only.
const REMEMBERED: usize = 32;

/// A call shorter than this many ticks (≈0.3–1 µs) is not remembered: a free lock in
/// async code takes tens of ns, and a string of them must not push the call that held
/// the thread for milliseconds out of the memory.
const MIN_BLOCK_TICKS: u64 = 1_000;

/// Wake cells kept per thread for reuse, so an episode allocates none after warm-up.
const SPARE_CELLS: usize = 64;

#[derive(Clone, Copy)]
struct Block {
    site: Option<&'static CallSite>,
    start: u64,
    end: u64,
}

struct Blocks {
    at: [Block; REMEMBERED],
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Blocks> = const {
        RefCell::new(Blocks {
            at: [Block { site: None, start: 0, end: 0 }; REMEMBERED],
            next: 0,
        })
    };
    /// Whether an annotated future is being polled on this thread now.
    static POLLING: Cell<bool> = const { Cell::new(false) };
    static SPARE: RefCell<Vec<Arc<WakeCell>>> = const { RefCell::new(Vec::new()) };
}

/// A timed call at `site` that began at tick `start` and lasted `ticks` has closed:
/// one made from async code held its thread.
#[inline(always)]
pub(crate) fn held(site: &'static CallSite, start: u64, ticks: u64) {
    if site.in_async {
        held_here(site, start, ticks);
    }
}

#[inline(never)]
fn held_here(site: &'static CallSite, start: u64, ticks: u64) {
    site.blocked
        .held((site.file, site.line, site.column), ticks);
    if ticks < MIN_BLOCK_TICKS {
        return;
    }
    // A signal handler that interrupts this (its borrow taken) skips its own call.
    let _ = RECENT.try_with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            let i = r.next % REMEMBERED;
            r.at[i] = Block {
                site: Some(site),
                start,
                end: start + ticks,
            };
            r.next = i + 1;
        }
    });
}

/// A poll that began at tick `polled`, of a future woken at `from` and not running
/// since: the part of that wait each remembered call covered is charged to its line.
fn waited(from: u64, polled: u64) {
    let _ = RECENT.try_with(|r| {
        let Ok(r) = r.try_borrow() else { return };
        for b in &r.at {
            let Some(site) = b.site else { continue };
            let covered = b.end.min(polled).saturating_sub(b.start.max(from));
            if covered > 0 {
                site.blocked.delayed(covered);
            }
        }
    });
}

/// What an annotated future's waker shares with its clones: the executor's waker,
/// and the tick of the first wake since the future's last poll began (0: none).
struct WakeCell {
    woken: AtomicU64,
    waker: Option<Waker>,
}

impl Wake for WakeCell {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The first wake is the one the next poll answers: later ones find it set.
        let _ = self
            .woken
            .compare_exchange(0, clock::now(), Relaxed, Relaxed);
        if let Some(w) = &self.waker {
            w.wake_by_ref();
        }
    }
}

/// An annotated `async fn` body, or an async block of an annotated body, whose wakes
/// are timed (see the module docs).
#[doc(hidden)]
pub struct Woken<F> {
    inner: F,
    cell: Option<Arc<WakeCell>>,
    /// The tick its last measured poll ended, where it was woken during that poll.
    polled: u64,
}

impl<F> Woken<F> {
    pub(crate) fn new(inner: F) -> Self {
        Woken {
            inner,
            cell: None,
            polled: 0,
        }
    }

    /// A waker that times wakes and passes them on to `waker`: from the cell held,
    /// where it still wraps `waker` or no clone of it is left; else from a fresh one.
    fn waker_for(&mut self, waker: &Waker) -> Waker {
        let wraps = |c: &WakeCell| c.waker.as_ref().is_some_and(|w| w.will_wake(waker));
        let cell = match self.cell.take() {
            Some(c) if wraps(&c) => c,
            Some(mut c) => match Arc::get_mut(&mut c) {
                Some(mine) => {
                    mine.waker = Some(waker.clone());
                    c
                }
                // A clone of the old one is held somewhere (a timer's): its wake still
                // reaches the old executor waker, and is no longer timed.
                None => spare(waker.clone()),
            },
            None => spare(waker.clone()),
        };
        let timed = Waker::from(cell.clone());
        self.cell = Some(cell);
        timed
    }

    /// Gives its cell back for reuse when no waker clone holds it.
    fn release(&mut self) {
        let Some(mut cell) = self.cell.take() else {
            return;
        };
        if let Some(c) = Arc::get_mut(&mut cell) {
            c.waker = None;
            *c.woken.get_mut() = 0;
            let _ = SPARE.try_with(|s| {
                if let Ok(mut s) = s.try_borrow_mut() {
                    if s.len() < SPARE_CELLS {
                        s.push(cell);
                    }
                }
            });
        }
    }
}

/// A cell wrapping `waker`: a spare one of this thread's, else a new one.
fn spare(waker: Waker) -> Arc<WakeCell> {
    let kept = SPARE
        .try_with(|s| s.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten();
    // Kept cells are unique (see `release`): reused in place.
    if let Some(mut cell) = kept {
        if let Some(c) = Arc::get_mut(&mut cell) {
            c.waker = Some(waker);
            return cell;
        }
    }
    Arc::new(WakeCell {
        woken: AtomicU64::new(0),
        waker: Some(waker),
    })
}

/// Marks this thread as polling an annotated future until dropped (a panic too).
struct Outermost;

impl Outermost {
    fn enter() -> Option<Outermost> {
        let nested = POLLING.try_with(|p| p.replace(true)).unwrap_or(true);
        (!nested).then_some(Outermost)
    }
}

impl Drop for Outermost {
    fn drop(&mut self) {
        let _ = POLLING.try_with(|p| p.set(false));
    }
}

impl<F: Future> Future for Woken<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`; `Drop`
        // below touches only `cell`, which is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let outermost = if on() { Outermost::enter() } else { None };
        let Some(_outermost) = outermost else {
            // SAFETY: see above.
            return unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        };
        if let Some(cell) = &this.cell {
            let woken = cell.woken.swap(0, Relaxed);
            if woken != 0 {
                // Woken during its own last poll, it waited from that poll's end.
                waited(woken.max(this.polled), clock::now());
            }
        }
        let waker = this.waker_for(cx.waker());
        // SAFETY: see above.
        let out =
            unsafe { Pin::new_unchecked(&mut this.inner) }.poll(&mut Context::from_waker(&waker));
        drop(waker);
        // Only a wake during this poll is answered from its end: a later one is later.
        if this
            .cell
            .as_ref()
            .is_some_and(|c| c.woken.load(Relaxed) != 0)
        {
            this.polled = clock::now();
        }
        if out.is_ready() {
            this.release();
        }
        out
    }
}

impl<F> Drop for Woken<F> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell_of<F>(w: &Woken<F>) -> *const WakeCell {
        w.cell.as_ref().map_or(std::ptr::null(), Arc::as_ptr)
    }

    #[test]
    fn a_finished_episode_hands_its_wake_cell_to_the_next_one() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = Box::pin(Woken::new(std::future::ready(())));
        assert!(first.as_mut().poll(&mut cx).is_ready());
        let kept = SPARE.with(|s| s.borrow().last().map(Arc::as_ptr));
        assert!(kept.is_some(), "the finished episode's cell is kept");
        let mut second = Box::pin(Woken::new(std::future::pending::<()>()));
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert_eq!(Some(cell_of(&second)), kept, "reused, not allocated");
        // Pending with no clone of its waker held: dropped, it gives the cell back.
        drop(second);
        assert_eq!(SPARE.with(|s| s.borrow().last().map(Arc::as_ptr)), kept);
    }

    #[test]
    fn only_the_outermost_annotated_future_wraps_the_waker() {
        let mut cx = Context::from_waker(Waker::noop());
        let inner = Woken::new(std::future::pending::<()>());
        let mut outer = Box::pin(Woken::new(inner));
        assert!(outer.as_mut().poll(&mut cx).is_pending());
        assert!(!cell_of(&outer).is_null());
        assert!(
            cell_of(&outer.inner).is_null(),
            "the inner one measured nothing"
        );
    }
}
