//! The hot path: entering and leaving frames, and counting the calls made inside them.
//!
//! Every entry point returns at once when recording is off: one relaxed load at run
//! time (`YIELDPROF=0`), nothing at all when the `enabled` feature is off.

use crate::base::arena::bump;
use crate::base::clock;
use crate::base::ring::Episode;
use crate::base::site::{CallInfo, CallSite, EpisodeSite, FrameInfo, Kind, WorkSite};
use crate::config;
use crate::counters::Mark;
use crate::record::open::{Claimed, Opened, Tally};
use crate::record::thread;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};

#[inline(always)]
fn on() -> bool {
    cfg!(feature = "enabled") && config::enabled()
}

const NO_NODE: u32 = u32::MAX;
const NO_SAMPLE: u32 = u32::MAX;

/// Closes a frame when dropped: on return, on `?` and during a panic.
#[doc(hidden)]
#[must_use = "the frame closes when this guard drops"]
pub struct EpisodeGuard {
    prev: u32,
    node: u32,
    start: u64,
    count: bool,
    // Wait episodes read counters (on a sample); business frames do not.
    wait: bool,
    // Its state in the thread's open frames (`record::open`), kept off this guard.
    slot: u32,
    // The frame belongs to this thread's tree.
    _not_send: PhantomData<*const ()>,
}

impl EpisodeGuard {
    const INACTIVE: EpisodeGuard = EpisodeGuard {
        prev: NO_NODE,
        node: NO_NODE,
        start: 0,
        count: false,
        wait: false,
        slot: 0,
        _not_send: PhantomData,
    };

    #[inline(always)]
    fn open(key: usize, wait: bool, info: impl FnOnce() -> FrameInfo) -> EpisodeGuard {
        if !on() {
            return EpisodeGuard::INACTIVE;
        }
        EpisodeGuard::open_here(key, wait, false, info)
    }

    /// Out of line: the annotated function's own stack frame holds only the guard,
    /// not this path's locals, which a deep recursion would pay for at every level.
    /// `nested`: a closure or async block of the site's body, run wherever: it opens
    /// the site's frame (counting no episode) unless the thread is in that frame now.
    #[inline(never)]
    fn open_here(
        key: usize,
        wait: bool,
        nested: bool,
        info: impl FnOnce() -> FrameInfo,
    ) -> EpisodeGuard {
        // A match, not `unwrap_or`: that would build and drop a second guard.
        let opened = thread::enter(|l| {
            let prev = l.current.get();
            if nested && l.data.node_key(prev) == key {
                return EpisodeGuard::INACTIVE;
            }
            let node = l.data.child(prev, key, info);
            l.data.opened(node);
            l.current.set(node);
            // Read before the clock starts, so the episode's wall excludes the read.
            let sample = if wait && l.counters.wants_sample() {
                l.counters.begin()
            } else {
                NO_SAMPLE
            };
            let mark = if wait {
                l.counters.mark(&l.data.counters)
            } else {
                Mark::ZERO
            };
            // A wait frame tallies its own calls; a business frame's count in the
            // wait frame around it.
            let tally = if wait {
                l.tally.replace(Tally::ZERO)
            } else {
                Tally::ZERO
            };
            let slot = l.open.push(Opened {
                mark,
                claimed: l.claimed.get(),
                sample,
                tally,
            });
            EpisodeGuard {
                prev,
                node,
                start: clock::now(),
                count: !nested,
                wait,
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

impl EpisodeGuard {
    /// The node this guard closes; `None` when it records nothing.
    #[cfg(feature = "enabled")]
    #[inline(always)]
    pub(crate) fn node(&self) -> Option<u32> {
        (self.node != NO_NODE).then_some(self.node)
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
    /// Closes the frame; its length in ticks.
    #[inline(never)]
    fn close(&mut self) -> u64 {
        let end = clock::now();
        let elapsed = end.saturating_sub(self.start);
        thread::with(|l| {
            let n = l.data.node(self.node);
            // A guard closes once and its slot is its own until then, so this is its
            // state; were it ever gone, the guard would miscount only itself.
            let opened = l.open.pop(self.slot).unwrap_or(Opened {
                mark: Mark::ZERO,
                claimed: l.claimed.get(),
                sample: NO_SAMPLE,
                tally: Tally::ZERO,
            });
            let mut off_ns = 0;
            if self.wait {
                let m = l.counters.mark(&l.data.counters);
                if m.switches != opened.mark.switches {
                    let d = opened.mark.until(&m);
                    l.counters.add(&n.counts, &d);
                    off_ns = d.off_ns;
                }
                // Every poll of an `async fn` episode is one stretch of the timeline.
                let mine = l.tally.get();
                l.tally.set(opened.tally.plus(mine));
                l.data.timeline.push(&Episode {
                    start: self.start,
                    duration: elapsed,
                    frame: n.frame.load(Relaxed),
                    kinds: mine.kinds,
                    calls: mine.calls,
                    switches: m.switches.wrapping_sub(opened.mark.switches),
                });
            }
            l.claim(opened.claimed, elapsed, off_ns);
            if self.count {
                bump(&n.episodes, 1);
                l.data.record_duration(self.node, elapsed);
            }
            bump(&n.wall_ns, elapsed);
            if opened.sample != NO_SAMPLE {
                l.counters
                    .finish(&l.data.counters, &n.counts, opened.sample, self.start, end);
            } else if self.wait {
                l.counters.earn(elapsed);
            }
            l.current
                .set(l.data.closed(self.node, self.prev, l.current.get()));
        });
        elapsed
    }
}

/// Opens a wait episode for an `#[instrument_wait]` function.
#[doc(hidden)]
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline(never))]
pub fn enter(site: &'static EpisodeSite) -> EpisodeGuard {
    if !on() {
        return EpisodeGuard::INACTIVE;
    }
    open_site(site, false)
}

/// Opens `site`'s frame through one non-generic function: the generic path below it
/// (inlined, with its closure) was compiled again in every crate that annotates a fn.
#[inline(never)]
fn open_site(site: &'static EpisodeSite, nested: bool) -> EpisodeGuard {
    EpisodeGuard::open_here(site as *const EpisodeSite as usize, true, nested, || {
        site.info()
    })
}

/// Opens the frame of the site whose body wrote a closure, when the closure runs
/// outside it (on another thread, or later): its waits are charged to the site.
#[doc(hidden)]
#[inline(always)]
pub fn enter_nested(site: &'static EpisodeSite) -> EpisodeGuard {
    if !on() {
        return EpisodeGuard::INACTIVE;
    }
    open_site(site, true)
}

/// Opens a business frame for `frame!`.
#[doc(hidden)]
#[inline(always)]
pub fn enter_work(site: &'static WorkSite) -> EpisodeGuard {
    EpisodeGuard::open(site as *const WorkSite as usize, false, || site.info())
}

/// Opens a business frame for a `tracing` span; `key` is its callsite's address.
#[cfg(feature = "tracing")]
pub(crate) fn open_frame(key: usize, info: impl FnOnce() -> FrameInfo) -> EpisodeGuard {
    EpisodeGuard::open(key, false, info)
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
}

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

/// Adds one call to the current frame: `ns` of its own time (`off_ns` of them off the
/// CPU), and its whole length `ticks` to its kind's durations when it was timed.
#[inline(always)]
fn record(l: &thread::Local, key: usize, site: Site, ns: u64, off_ns: u64, ticks: Option<u64>) {
    let t = l.tally.get();
    l.tally.set(Tally {
        calls: t.calls.saturating_add(1),
        kinds: t.kinds | site.kind().bit(),
    });
    let d = &l.data;
    let s = d.slot_of(l.current.get(), key, || site.info());
    bump(&s.calls, 1);
    bump(&s.ns, ns);
    if off_ns > 0 {
        bump(&s.off_ns, off_ns);
    }
    if let Some(t) = ticks {
        d.record_call_duration(s, t);
    }
}

/// Counts a call that is not timed.
#[inline(always)]
fn record_count(key: usize, site: Site) {
    thread::enter(|l| record(l, key, site, 0, 0, None));
}

impl CallGuard {
    #[inline(always)]
    fn open(kind: Kind, key: usize, site: Site) -> CallGuard {
        let idle = CallGuard {
            key,
            start: 0,
            site: None,
            serial: 0,
            mark: Mark::ZERO,
            claimed: Claimed::ZERO,
        };
        if !on() {
            return idle;
        }
        if !kind.timed() {
            record_count(key, site);
            return idle;
        }
        let opened = thread::enter(|l| CallGuard {
            key,
            site: Some(site),
            serial: l.data.serial(),
            mark: l.counters.mark(&l.data.counters),
            claimed: l.claimed.get(),
            start: clock::now(),
        });
        opened.unwrap_or(idle)
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
        thread::with(|l| {
            if l.data.serial() != self.serial {
                // Resumed on another thread: this one's figures say nothing of it.
                return record(l, self.key, site, elapsed, 0, Some(elapsed));
            }
            let m = l.counters.mark(&l.data.counters);
            let off_ns = if m.switches != self.mark.switches {
                self.mark.until(&m).off_ns
            } else {
                0
            };
            let own = l.claim(self.claimed, elapsed, off_ns);
            record(l, self.key, site, own.ticks, own.off_ns, Some(elapsed));
        });
    }
}

/// The value of a wrapped wait call: `guard` was opened before `value` was computed
/// and closes now that it is.
#[doc(hidden)]
#[inline(always)]
pub fn timed<T>(guard: CallGuard, value: T) -> T {
    drop(guard);
    value
}

/// Counts (spin) or times (every other kind) one rewritten call.
///
/// Out of line: inlined, its thread-local path was compiled again into every wrapped
/// call of every annotated function (the generated crate of `scripts/compile_time.sh`
/// built 3.1× slower in release), for about a nanosecond saved on a call that waits.
#[doc(hidden)]
#[inline(never)]
pub fn call(site: &'static CallSite) -> CallGuard {
    CallGuard::open(
        site.kind,
        site as *const CallSite as usize,
        Site::Static(site),
    )
}

/// Counts a call without timing it (an awaited one). Out of line, as [`call`].
#[doc(hidden)]
#[inline(never)]
pub fn count(site: &'static CallSite) {
    if on() {
        record_count(site as *const CallSite as usize, Site::Static(site));
    }
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
pub fn instrument<F: Future>(site: &'static EpisodeSite, inner: F) -> Instrumented<F> {
    Instrumented::new(Frame::Wait(site), inner)
}

/// Wraps the future of `frame!(name, future)`.
#[doc(hidden)]
pub fn framed<F: Future>(site: &'static WorkSite, inner: F) -> Instrumented<F> {
    Instrumented::new(Frame::Work(site), inner)
}

/// Wraps an async block written in an annotated function's body.
#[doc(hidden)]
pub fn nested<F: Future>(site: &'static EpisodeSite, inner: F) -> Instrumented<F> {
    Instrumented::new(Frame::Nested(site), inner)
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`, and
        // `Instrumented` has no Drop or Unpin impl of its own that could move it.
        let this = unsafe { self.get_unchecked_mut() };
        let mut guard = match this.frame {
            Frame::Wait(site) => enter(site),
            Frame::Work(site) => enter_work(site),
            Frame::Nested(site) => enter_nested(site),
        };
        // The episode is counted below, once, with its whole span.
        guard.count = false;
        // SAFETY: see above.
        let out = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        if guard.node == NO_NODE {
            return out;
        }
        let (node, start) = (guard.node, guard.start);
        let polled = guard.close();
        guard.node = NO_NODE;
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
