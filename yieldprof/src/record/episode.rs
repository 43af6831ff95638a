//! The hot path: entering and leaving frames, and counting the calls made inside them.
//!
//! Every entry point returns at once when recording is off: one relaxed load at run
//! time (`YIELDPROF=0`), nothing at all when the `enabled` feature is off.

use crate::base::arena::bump;
use crate::base::clock;
use crate::base::site::{CallInfo, CallSite, EpisodeSite, FrameInfo, Kind, WorkSite};
use crate::counters::Mark;
use crate::record::frame::{self, on, Closed};
use crate::record::lazy;
pub use crate::record::lazy::WaitGuard;
use crate::record::open::{Claimed, EndedOf};
use crate::record::thread;
use crate::record::woken::Woken;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};

const NO_NODE: u32 = u32::MAX;

/// Closes a frame opened at entry when dropped: on return, on `?` and during a panic.
/// Business frames, and the polls of `async fn` episodes; a sync wait episode is a
/// [`WaitGuard`].
#[doc(hidden)]
#[must_use = "the frame closes when this guard drops"]
pub struct EpisodeGuard {
    node: u32,
    // Its state in the thread's open frames (`record::open`), kept off this guard.
    slot: u32,
    // The frame belongs to this thread's tree.
    _not_send: PhantomData<*const ()>,
}

impl EpisodeGuard {
    const INACTIVE: EpisodeGuard = EpisodeGuard {
        node: NO_NODE,
        slot: 0,
        _not_send: PhantomData,
    };

    #[inline(always)]
    fn open(
        key: usize,
        wait: bool,
        count: bool,
        nested: bool,
        info: impl FnOnce() -> FrameInfo,
    ) -> EpisodeGuard {
        if !on() {
            return EpisodeGuard::INACTIVE;
        }
        EpisodeGuard::open_here(key, wait, count, nested, info)
    }

    /// Out of line: the caller's own stack frame holds only the guard, not this path's
    /// locals. `count`: the frame counts an episode when it closes. `nested`: an
    /// async block of the site's body, run wherever: it opens the site's frame unless
    /// the thread is in that frame now.
    #[inline(never)]
    fn open_here(
        key: usize,
        wait: bool,
        count: bool,
        nested: bool,
        info: impl FnOnce() -> FrameInfo,
    ) -> EpisodeGuard {
        // A match, not `unwrap_or`: that would build and drop a second guard.
        let opened = thread::enter(|l| {
            // The pending episodes around it open first, so it opens below them.
            lazy::materialise(l);
            if nested && l.data.node_key(l.current.get()) == key {
                return EpisodeGuard::INACTIVE;
            }
            let (slot, node, _) = frame::open(l, key, wait, count, info, None);
            EpisodeGuard {
                node,
                slot,
                _not_send: PhantomData,
            }
        });
        match opened {
            Some(guard) => guard,
            None => EpisodeGuard::INACTIVE,
        }
    }
}

impl Drop for EpisodeGuard {
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline(never))]
    fn drop(&mut self) {
        // Only the check is inlined at every call site, so an inactive guard (recording
        // off) costs a compare and nothing else.
        if self.node != NO_NODE {
            self.close();
        }
    }
}

impl EpisodeGuard {
    /// Closes the frame.
    #[inline(never)]
    fn close(&mut self) -> Option<Closed> {
        let end = clock::now();
        self.node = NO_NODE;
        thread::with(|l| frame::close(l, self.slot, end)).flatten()
    }
}

/// Enters a wait episode for an `#[instrument_wait]` function: a mark on the thread;
/// its frame opens at its first wait call (`record::lazy`).
#[doc(hidden)]
#[inline(always)]
pub fn enter(site: &'static EpisodeSite) -> WaitGuard {
    lazy::enter(site, false)
}

/// Enters the frame of the site whose body wrote a closure, when the closure runs
/// outside it (on another thread, or later): its waits are charged to the site. It
/// counts no episode, and opens the site's frame at its first wait, unless the thread
/// is in that frame then.
#[doc(hidden)]
#[inline(always)]
pub fn enter_nested(site: &'static EpisodeSite) -> WaitGuard {
    lazy::enter(site, true)
}

/// Opens a business frame for `frame!`.
#[doc(hidden)]
#[inline(always)]
pub fn enter_work(site: &'static WorkSite) -> EpisodeGuard {
    EpisodeGuard::open(site as *const WorkSite as usize, false, true, false, || {
        site.info()
    })
}

/// Opens a business frame for a `tracing` span; `key` is its callsite's address.
#[cfg(feature = "tracing")]
pub(crate) fn open_frame(key: usize, info: impl FnOnce() -> FrameInfo) -> EpisodeGuard {
    EpisodeGuard::open(key, false, true, false, info)
}

/// Times one wait call (yield, sleep, park, lock, ...) when dropped; adds it to the
/// current frame.
#[doc(hidden)]
#[must_use = "the call is timed until this guard drops"]
pub struct CallGuard {
    key: usize,
    start: u64,
    // `None` once counted, or when recording is off.
    site: Option<Site>,
    // The thread it opened on (a guard held across `.await` may drop on another),
    // its switch figures then, and what closed guards had claimed.
    serial: u64,
    mark: Mark,
    claimed: Claimed,
    // The thread's profiler ticks when it opened: those spent inside it (a read of
    // the switch figures, a node made) are the profiler's, not the call's own.
    profiled: u64,
    // A lock taken inside pending episodes: the live count then (`lazy::pending`);
    // `NOT_DEFERRED` otherwise.
    deferred: u32,
    // Its place, when it opened on the fast path (`lazy::open_call`); `NOT_FAST` else.
    fast: u32,
}

const NOT_DEFERRED: u32 = u32::MAX;
const NOT_FAST: u32 = u32::MAX;

/// A lock acquired in fewer ticks than this (≈0.3–1 µs on a TSC of 1–3 GHz, 1 µs on
/// the monotonic clock) did not wait: taking a free lock costs tens of ns, while a
/// contended one spins and then sleeps in the kernel for µs.
const FREE_LOCK_TICKS: u64 = 1_000;

#[derive(Clone, Copy)]
enum Site {
    Static(&'static CallSite),
    Caller(Kind, &'static Location<'static>),
}

impl Site {
    #[inline(always)]
    fn kind(self) -> Kind {
        match self {
            Site::Static(s) => s.kind,
            Site::Caller(kind, _) => kind,
        }
    }

    fn info(self) -> CallInfo {
        match self {
            Site::Static(s) => s.info(),
            Site::Caller(kind, loc) => CallInfo {
                kind,
                file: loc.file(),
                line: loc.line(),
                column: loc.column(),
                in_async: false,
            },
        }
    }
}

/// Counts a call that is not timed.
#[inline(always)]
fn record_count(key: usize, site: Site) {
    thread::enter(|l| {
        // A wait: the pending episodes around it open now.
        lazy::materialise(l);
        l.add_call(key, site.kind(), || site.info(), 0, None);
        // A spin, or an awaited call: no stretch of work runs on from here.
        l.spun_here();
    });
}

impl CallGuard {
    /// A guard that times nothing.
    #[inline(always)]
    fn idle(key: usize) -> CallGuard {
        CallGuard {
            key,
            start: 0,
            site: None,
            serial: 0,
            mark: Mark::ZERO,
            claimed: Claimed::ZERO,
            profiled: 0,
            deferred: NOT_DEFERRED,
            fast: NOT_FAST,
        }
    }

    #[inline(always)]
    fn open(kind: Kind, key: usize, site: Site) -> CallGuard {
        let idle = CallGuard::idle(key);
        if !on() {
            return idle;
        }
        if !kind.timed() {
            record_count(key, site);
            return idle;
        }
        if let Some((at, start)) = CallGuard::open_fast(site) {
            // What a close it cannot keep needs is kept for it (`lazy::call_began`).
            return CallGuard {
                start,
                site: Some(site),
                fast: at,
                ..idle
            };
        }
        CallGuard::open_slow(kind, key, site)
    }

    /// Out of line: the fast open above writes its guard where the caller wants it, which
    /// one more way to build the guard made a copy of for every call.
    #[inline(never)]
    fn open_slow(kind: Kind, key: usize, site: Site) -> CallGuard {
        let idle = CallGuard::idle(key);
        let opened = thread::enter(|l| {
            // A lock is a wait only if it does not succeed at once: the pending
            // episodes around it stay pending until it is known to have blocked.
            let deferred = match kind {
                Kind::Lock => lazy::pending(),
                _ => None,
            };
            if deferred.is_some() && l.counters.still_deferred() {
                // Its episode would begin after the block: read on the page, not late.
                // Charged where the thread ran throughout (an open can block).
                let ((), ticks) =
                    frame::timed_read(l, || l.counters.open_deferred(&l.data.counters));
                l.charge(ticks);
            }
            // Else this is the first wait of the pending episodes around it, if any:
            // they start with it.
            let begun = match deferred {
                Some(_) => None,
                // The pending frames' opening is the profiler's (`Local::timed_open`).
                None => l.timed_open(|| lazy::materialise(l)),
            };
            // Its clock starts first, as the caller's around it: a read of the switch
            // figures here is inside, the profiler's time (`profiled`, taken after the
            // start: what opening the pending frames cost came before it).
            let (start, profiled, mark) = match begun {
                Some((start, mark)) => (start, l.data.profiler_ticks.load(Relaxed), mark),
                None => {
                    let start = clock::now();
                    let profiled = l.data.profiler_ticks.load(Relaxed);
                    // Only a call that has a slot can continue one of its episodes.
                    let slot = || l.data.find_slot(l.current.get(), key).map(EndedOf::Call);
                    (start, profiled, l.mark(slot, kind == Kind::Lock))
                }
            };
            l.in_call();
            CallGuard {
                key,
                site: Some(site),
                serial: l.data.serial(),
                mark,
                claimed: l.claimed.get(),
                profiled,
                start,
                deferred: deferred.unwrap_or(NOT_DEFERRED),
                fast: NOT_FAST,
            }
        });
        opened.unwrap_or(idle)
    }

    /// Opens on the fast path (`lazy::open_call`) where it can: a call of an annotated
    /// body whose close is nothing but its time (not a lock, nor async code's, nor a
    /// backoff split into spun and yielded). Its place and start tick.
    #[inline(always)]
    fn open_fast(site: Site) -> Option<(u32, u64)> {
        let Site::Static(s) = site else {
            return None;
        };
        if s.kind == Kind::Lock || s.in_async || super::snooze::splits(s) {
            return None;
        }
        // Not counted as skipped if it cannot reach the thread: the open below is.
        thread::with_hot(|l| lazy::open_call(l, s)).flatten()
    }
}

impl Drop for CallGuard {
    // Out of line, as `call`: inlined twice per wrapped call (return and unwind).
    #[inline(never)]
    fn drop(&mut self) {
        if let Some(site) = self.site {
            self.close(site);
        }
    }
}

impl CallGuard {
    #[inline(never)]
    fn close(&self, site: Site) {
        let elapsed = clock::now().saturating_sub(self.start);
        if self.fast != NOT_FAST && lazy::close_call(self.fast, self.start, elapsed) {
            return;
        }
        let deferred = self.deferred != NOT_DEFERRED && lazy::still_pending(self.deferred);
        if deferred && elapsed < FREE_LOCK_TICKS {
            // A free lock: no wait, nothing recorded.
            return;
        }
        // A backoff call's spun or yielded part: the time its slot gets.
        let snoozed = |ticks| {
            if let Site::Static(s) = site {
                super::snooze::closed(s, ticks);
            }
        };
        if let Site::Static(s) = site {
            super::woken::held(s, self.start, elapsed);
        }
        thread::with(|l| {
            let (serial, mark, claimed, profiled) = match self.fast {
                NOT_FAST => (self.serial, self.mark, self.claimed, self.profiled),
                // Opened on the fast path: the same thread.
                at => {
                    let (mark, claimed, profiled) = lazy::call_began(l, at, self.start)
                        .unwrap_or_else(|| {
                            let mark = l.counters.last().unwrap_or(Mark::ZERO);
                            (mark, l.claimed.get(), l.data.profiler_ticks.load(Relaxed))
                        });
                    (l.data.serial(), mark, claimed, profiled)
                }
            };
            if deferred {
                // It blocked: the pending episodes started when it began.
                lazy::materialise_at(l, (self.start, mark));
            }
            if l.data.serial() != serial {
                // Resumed on another thread: this one's figures say nothing of it.
                l.add_call(
                    self.key,
                    site.kind(),
                    || site.info(),
                    elapsed,
                    Some(elapsed),
                );
                snoozed(elapsed);
                return;
            }
            // Before its close's own reads: those are the profiler's in the next stretch.
            let charged = l.data.profiler_ticks.load(Relaxed);
            let profiler = charged.saturating_sub(profiled);
            let mine = elapsed.saturating_sub(profiler);
            let own = l.claim_ticks(claimed.ticks, mine);
            let slot = l.add_call(self.key, site.kind(), || site.info(), own, Some(elapsed));
            snoozed(own);
            // Its off-CPU time, when it switched, is read later (`record::deferred`),
            // within its length less the profiler's time in it.
            let to = EndedOf::Call(slot);
            let at = l.ended(&mark, to, claimed.off_ns, mine, self.start + elapsed);
            // The stretch before it, then the next one begins.
            l.gap_to(l.current.get(), self.start, mark.page_count());
            l.gap_from(self.start + elapsed, at, charged);
        });
    }
}

/// Counts (spin) or times (every other kind) one rewritten call.
///
/// Inlined into its one caller, `outlined::open_call`, which is out of line (inlined,
/// its thread-local path was compiled again into every wrapped call of every annotated
/// function): the guard is written straight into that call's return slot, where one
/// returned from here into a copy cost a store-forwarding stall on every call.
#[inline(always)]
pub(crate) fn call(site: &'static CallSite) -> CallGuard {
    super::snooze::began(site);
    CallGuard::open(
        site.kind,
        site as *const CallSite as usize,
        Site::Static(site),
    )
}

/// Counts a call without timing it (an awaited one). Out of line, as `outlined::open_call`.
#[doc(hidden)]
#[inline(never)]
pub fn count(site: &'static CallSite) {
    if on() {
        record_count(site as *const CallSite as usize, Site::Static(site));
    }
}

/// Where a wake call (`notify_one`, `notify_all`, `unpark`) in an annotated body
/// begins: the tick, or 0 while recording is off. Not a wait: nothing is recorded.
#[doc(hidden)]
#[inline(always)]
pub fn wake_start() -> u64 {
    if on() {
        clock::now()
    } else {
        0
    }
}

/// The value of a wake call that began at `start` ([`wake_start`]): its time is the
/// handoff's (a futex wake; on a VM, an interrupt to another CPU, 10 µs and more),
/// not a job's, so the stretch before it ends there and the next begins after it
/// (`record::gaps`).
#[doc(hidden)]
#[inline(always)]
pub fn woke<T>(start: u64, value: T) -> T {
    if start != 0 {
        thread::with(|l| l.woke(start));
    }
    value
}

/// The public wrappers' way in: the caller's `Location` is the call site.
#[inline(always)]
pub(crate) fn call_at(kind: Kind, loc: &'static Location<'static>) -> CallGuard {
    CallGuard::open(
        kind,
        loc as *const Location<'static> as usize,
        Site::Caller(kind, loc),
    )
}

/// An `async fn` wait episode, or a business frame over a future. The episode spans
/// first poll to completion: its duration (the histogram's sample) is that whole span.
/// Only the polls are its wall time, since time between polls belongs to whoever runs
/// then; the rest is its suspended time. The frame is open only while polled, so other
/// tasks the thread runs meanwhile are not inside it.
#[doc(hidden)]
pub struct Instrumented<F> {
    frame: Frame,
    /// Tick at which the first recorded poll began; 0 before it.
    first: u64,
    /// Ticks spent in recorded polls so far.
    busy: u64,
    inner: F,
}

#[derive(Clone, Copy)]
enum Frame {
    Wait(&'static EpisodeSite),
    Work(&'static WorkSite),
    /// An async block of a site's body: the site's frame, no episode of its own.
    Nested(&'static EpisodeSite),
}

impl<F> Instrumented<F> {
    fn new(frame: Frame, inner: F) -> Self {
        Instrumented {
            frame,
            first: 0,
            busy: 0,
            inner,
        }
    }
}

/// Wraps the body of an `async fn` annotated with `#[instrument_wait]`.
#[doc(hidden)]
pub fn instrument<F: Future>(site: &'static EpisodeSite, inner: F) -> Instrumented<Woken<F>> {
    Instrumented::new(Frame::Wait(site), Woken::new(inner))
}

/// Wraps the future of `frame!(name, future)`.
#[doc(hidden)]
pub fn framed<F: Future>(site: &'static WorkSite, inner: F) -> Instrumented<F> {
    Instrumented::new(Frame::Work(site), inner)
}

/// Wraps an async block written in an annotated function's body.
#[doc(hidden)]
pub fn nested<F: Future>(site: &'static EpisodeSite, inner: F) -> Instrumented<Woken<F>> {
    Instrumented::new(Frame::Nested(site), Woken::new(inner))
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`, and
        // `Instrumented` has no Drop or Unpin impl of its own that could move it.
        let this = unsafe { self.get_unchecked_mut() };
        // Timed from each poll's start: a poll may wait where no call shows it (an
        // executor blocking inside), and whether it did is known only after it. The
        // episode is counted below, once, with its whole span.
        let mut guard = match this.frame {
            Frame::Wait(site) => EpisodeGuard::open(key(site), true, false, false, || site.info()),
            Frame::Work(site) => EpisodeGuard::open(
                site as *const WorkSite as usize,
                false,
                false,
                false,
                || site.info(),
            ),
            Frame::Nested(site) => EpisodeGuard::open(key(site), true, false, true, || site.info()),
        };
        // SAFETY: see above.
        let out = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        if guard.node == NO_NODE {
            return out;
        }
        let Some(Closed {
            node,
            start,
            elapsed: polled,
        }) = guard.close()
        else {
            return out;
        };
        if this.first == 0 {
            this.first = start;
        }
        this.busy += polled;
        if out.is_ready() && !matches!(this.frame, Frame::Nested(_)) {
            // Polls may run on several threads; the TSC is one clock for all of them.
            let whole = (start + polled).saturating_sub(this.first);
            let suspended = whole.saturating_sub(this.busy);
            thread::with(|l| {
                let n = l.data.node(node);
                bump(&n.episodes, 1);
                bump(&n.suspended_ns, suspended);
                l.data.record_duration(node, whole);
            });
        }
        out
    }
}

fn key(site: &'static EpisodeSite) -> usize {
    site as *const EpisodeSite as usize
}
