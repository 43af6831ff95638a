//! Wait episodes that are timed from their first wait.
//!
//! Entering an `#[instrument_wait]` function only marks it on this thread (`Lazy` in
//! `record::open`): its site on a small stack, a few ns. The first wait call made in it,
//! or in anything it calls (a nested annotated function, a closure), opens the frames
//! of every episode still pending on this thread, outermost first, all starting at that
//! call: an episode that waits is timed from its first wait to its return. One that
//! returns without having waited opens no frame and reads no clock; it adds one to this
//! thread's count of its site's episodes that "returned without waiting". A frame
//! opened at entry (a business frame, an async poll's) opens the pending episodes
//! below it first, so the tree keeps its parent-to-child order.
//!
//! This file is the hot path, in the order an episode runs: `enter`, its first wait
//! (`began_waiting`: the fast open), its spins (`spun`), its return (`leave`: the fast
//! close, one `Record`), and its timed calls at one site (`open_call`, `close_call`: a
//! receive, a park, a sleep, which opens the episode if it is its first wait; each
//! but the last goes into the tree as the next opens). An episode on
//! the fast path touches no tree, histogram or timeline: `record::fold` adds its
//! record to those in batches, and turns it into an ordinary open frame if anything
//! else needs the thread's state while it is open. The slow paths follow each fast
//! one; a call the fast path cannot keep (the thread was switched in it: its switch
//! figures are read as any call's) closes on the slow path.

use crate::base::clock;
use crate::base::site::{CallSite, EpisodeSite};
use crate::config;
use crate::counters::Mark;
use crate::record::fold::site_at;
use crate::record::frame;
use crate::record::gaps;
use crate::record::open::{
    lazy, site_of, Claimed, Lazy, IN_CALL, LAZY, LAZY_DEPTH, NESTED, NODE_CACHE, NO_FAST,
};
use crate::record::records::{Record, MAX_CALLS, MAX_CALL_TICKS};
use crate::record::thread::{self, Local, OVERFLOW};
use crate::record::unwaited;
use std::marker::PhantomData;
use std::sync::atomic::compiler_fence;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::Ordering::SeqCst;

/// A guard that records nothing (recording off, or the thread's state unusable).
const INACTIVE: u32 = u32::MAX;
/// The slot of a live entry that opened no frame: a closure of a site that ran inside
/// that site's own frame.
const NO_SLOT: u32 = u32::MAX;
/// Leaves a wait episode when dropped: on return, on `?` and during a panic.
#[doc(hidden)]
#[must_use = "the episode ends when this guard drops"]
pub struct WaitGuard {
    /// Its place on the thread's stack of entered episodes.
    at: u32,
    /// Its slot in the open frames when entered past `LAZY_DEPTH` (opened at entry).
    slot: u32,
    // The entry belongs to this thread's stack.
    _not_send: PhantomData<*const ()>,
}

impl WaitGuard {
    const INACTIVE: WaitGuard = WaitGuard {
        at: INACTIVE,
        slot: NO_SLOT,
        _not_send: PhantomData,
    };
}

/// Enters a wait episode (`nested`: a closure of the site's body) at `site`. Every
/// way out that calls is a tail call, so the out-of-line entry saves one register, not
/// three and a stack slot.
#[inline(always)]
pub(crate) fn enter(site: &'static EpisodeSite, nested: bool) -> WaitGuard {
    if config::enabled_known_on() {
        enter_on(site, nested)
    } else {
        enter_off(site, nested)
    }
}

/// An entry with recording off, or before the switch was read from the environment.
#[cold]
#[inline(never)]
fn enter_off(site: &'static EpisodeSite, nested: bool) -> WaitGuard {
    if !frame::on() {
        return WaitGuard::INACTIVE;
    }
    enter_on(site, nested)
}

#[inline(always)]
fn enter_on(site: &'static EpisodeSite, nested: bool) -> WaitGuard {
    let key = site as *const EpisodeSite as usize | if nested { NESTED } else { 0 };
    let z = lazy();
    let d = z.depth.get();
    if d as usize >= LAZY_DEPTH {
        return enter_deep(key, d, z);
    }
    if nested && d > z.live.get() && z.sites[d as usize - 1].get() & !NESTED == key & !NESTED {
        // A closure run inside its own site's pending episode: it is that episode.
        return WaitGuard::INACTIVE;
    }
    let s = &z.sites[d as usize];
    s.set(key);
    // A signal handler that enters an episode between these stores takes this place
    // too and leaves it before returning; the second store puts ours back.
    compiler_fence(SeqCst);
    z.depth.set(d + 1);
    compiler_fence(SeqCst);
    s.set(key);
    WaitGuard {
        at: d,
        slot: NO_SLOT,
        _not_send: PhantomData,
    }
}

/// An entry past `LAZY_DEPTH`: its frame (and every pending one) opens now.
#[cold]
#[inline(never)]
fn enter_deep(key: usize, d: u32, z: &Lazy) -> WaitGuard {
    let opened = thread::enter(|l| {
        open_pending(l, z, None);
        let slot = open_entry(l, key, None).0;
        z.depth.set(d + 1);
        z.live.set(d + 1);
        WaitGuard {
            at: d,
            slot,
            _not_send: PhantomData,
        }
    });
    opened.unwrap_or(WaitGuard::INACTIVE)
}

/// The first wait of the innermost pending episode: a spin written directly in its
/// body (`SpinCounts`). In the common case (one pending episode, not sampled, no
/// switch figures to read, its node known) it opens on the fast path: a start tick and
/// the page's switch count kept in `Lazy`, its node made current. Anything else opens
/// every pending episode as frames (`materialise`). `extern "C"` (no unwinding): no
/// landing pad for it in a spinning fn, whose count then stays in a register.
#[inline(never)]
pub(crate) extern "C" fn began_waiting() {
    let z = lazy();
    let entry = entry_tick(z);
    let opened = thread::enter_hot(|l| {
        if !open_fast(l, z) {
            open_slow(l);
        } else if entry != 0 {
            z.hot_entry.set((entry, z.fast_start.get()));
        }
    });
    if opened.is_none() {
        // Counted as skipped (or after the thread's exit): not again when it is left.
        let d = z.depth.get();
        if d > z.live.get() && d as usize <= LAZY_DEPTH {
            let s = &z.sites[d as usize - 1];
            s.set(s.get() | NESTED);
        }
    }
}

/// Every pending episode opens as a frame, the tree brought up to date first.
#[cold]
#[inline(never)]
fn open_slow(l: &Local) {
    let _ = l.timed_open(|| {
        l.catch_up();
        materialise(l)
    });
}

/// Opens the one pending episode on the fast path, if it can: whether it did.
#[inline(always)]
fn open_fast(l: &Local, z: &Lazy) -> bool {
    let at = z.live.get();
    if z.depth.get() != at + 1 || at as usize >= LAZY_DEPTH {
        return false;
    }
    let key = z.sites[at as usize].get();
    let c = &l.counters;
    // Also no fast entry open: one nested in another would claim its time twice.
    if key & NESTED != 0
        || z.fast.get() != NO_FAST
        || c.wants_sample()
        || c.moved()
        || !l.unread.ended.borrow().is_empty()
    {
        return false;
    }
    let Some(node) = cached_child(l, z, l.current.get(), key) else {
        return false;
    };
    let start = clock::now();
    // Not moved: the page's count is the last mark's, and the thread was not off the
    // CPU since, so the mark's off-CPU clock is the one at the start too.
    let mark = c.last().unwrap_or(Mark::ZERO);
    // Not its node's open count: a report counts it open from here.
    l.data
        .records
        .opened(node, start, mark.off_clock().unwrap_or(0));
    z.fast_switches.set(mark.switches);
    z.fast_start.set(start);
    z.fast_node.set(node);
    z.fast.set(at);
    z.behind.set(true);
    z.live.set(at + 1);
    true
}

/// The child of `prev` for the site at `key` from the thread's node cache, or found
/// in the tree on a miss; `None` where it has none yet (the slow path adds it, or
/// counts the entry as past the node cap) or `prev` is `[overflow]`.
#[inline(always)]
fn cached_child(l: &Local, z: &Lazy, prev: u32, key: usize) -> Option<u32> {
    let site = site_of(key);
    let cell = &z.nodes[site.number() as usize % NODE_CACHE];
    let (p, k, node) = cell.get();
    if p == prev && k == key {
        return Some(node);
    }
    if prev == OVERFLOW {
        return None;
    }
    let node = l.data.find_child(prev, key)?;
    cell.set((prev, key, node));
    Some(node)
}

/// The spins of a direct spin site counted in the live episode at `at`, kept with it
/// until it closes (in its record, or added to its frame): whether they were.
#[inline(always)]
pub(crate) fn spun(at: u32, site: &'static CallSite, n: u64) -> bool {
    let z = lazy();
    let kept = at < z.live.get() && (at as usize) < LAZY_DEPTH;
    if kept {
        z.spins[at as usize].set((site as *const CallSite as usize, n));
    }
    kept
}

impl Drop for WaitGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.at != INACTIVE {
            leave(self.at, self.slot);
        }
    }
}

#[inline(always)]
fn leave(at: u32, slot: u32) {
    let z = lazy();
    if at < z.live.get() {
        return close_live(z, at, slot);
    }
    z.depth.set(at);
    // `at < LAZY_DEPTH`: an entry past it opened its frame at entry, so is live. A
    // mask, not an index check: no branch to a panic.
    let key = z.sites[at as usize % LAZY_DEPTH].get();
    if key & NESTED == 0 {
        unwaited::count(z, key);
    }
}

/// Closes the frame of a live entry and pops it.
#[inline(never)]
fn close_live(z: &Lazy, at: u32, deep_slot: u32) {
    let end = clock::now();
    if z.fast.get() != at || !close_fast(z, at, end) {
        close_frame(z, at, deep_slot, end);
    }
    z.live.set(at);
    z.depth.set(at);
}

/// Closes the frame of a live entry at tick `end`.
#[cold]
#[inline(never)]
fn close_frame(z: &Lazy, at: u32, deep_slot: u32, end: u64) {
    let (site, spins) = z
        .spins
        .get(at as usize)
        .map_or((0, 0), |s| s.replace((0, 0)));
    // `with` first makes a fast entry an open frame, in its slot (`record::fold`).
    thread::with(|l| {
        let slot = match z.slots.get(at as usize) {
            Some(s) => s.get(),
            None => deep_slot,
        };
        let Some(node) = l.open.node(slot) else {
            return;
        };
        if let Some(site) = site_at(site) {
            // Before its close: its timeline entry counts them.
            l.add_spins(node, site, spins);
        }
        frame::close(l, slot, end);
    });
    if z.fast.get() == at {
        // The thread's state was gone.
        z.fast.set(NO_FAST);
    }
}

/// Closes the fast entry at tick `end` with one record, unless it needs more than a
/// record holds (the thread was switched in it: its switch figures; spins past 32
/// bits; a stretch of work after its call, `record::gaps`): whether it did.
#[inline(always)]
fn close_fast(z: &Lazy, at: u32, end: u64) -> bool {
    let closed = thread::with_hot(|l| {
        // A signal handler's entry may have made it a frame since the check outside.
        if z.fast.get() != at {
            return false;
        }
        let (spin_site, spins) = z.spins[at as usize].get();
        let Ok(spins) = u32::try_from(spins) else {
            return false;
        };
        if l.counters.switches().unwrap_or(0) != z.fast_switches.get() {
            return false;
        }
        let (mut call_site, mut call_ticks, mut calls) = (z.call.get(), 0, 0);
        if call_site != 0 {
            if z.call_at.get() != at {
                // A call of an entry around it, running.
                call_site = 0;
            } else {
                call_ticks = z.call_ticks.get();
                let after = end.saturating_sub(z.call_start.get().wrapping_add(call_ticks));
                // A call still running (`IN_CALL`) is longer than any a record holds.
                if call_ticks > MAX_CALL_TICKS || after >= gaps::gap_ticks() {
                    return false;
                }
                calls = z.flushed.get() + 1;
            }
        }
        let d = &l.data;
        let folded = if d.records.full() { l.fold_timed() } else { 0 };
        // Closed before its record is out: a report that counts the record never
        // counts it open too (`record::copy`).
        d.records.closed();
        let duration = end.saturating_sub(z.fast_start.get());
        d.records.push(&Record {
            start: z.fast_start.get(),
            duration,
            node: z.fast_node.get(),
            spins,
            spin_site,
            call_site,
            call_ticks,
            calls,
        });
        l.counters.earn(duration);
        z.spins[at as usize].set((0, 0));
        if call_site != 0 {
            z.call.set(0);
            z.flushed.set(0);
            // The stretch after it ended with the episode.
            d.stretch.store(0, Relaxed);
        }
        z.fast.set(NO_FAST);
        match z.hot_countdown.get() {
            0 => hot_sample(l, z, end, folded),
            n => z.hot_countdown.set(n - 1),
        }
        true
    });
    closed == Some(true)
}

/// Fast entries per one whose hot path is timed.
const HOT_SAMPLE: u32 = 256;

/// A tick at the entry of the fast entry whose hot path is timed (`hot_sample`), else 0.
#[inline(always)]
fn entry_tick(z: &Lazy) -> u64 {
    (z.hot_countdown.get() == 0).then(clock::now).unwrap_or(0)
}

/// The hot path's own time around a fast entry's two clock reads (from its first wait's
/// entry to its `start`, from its `end` to here: the checks, the record), timed
/// on one entry in `HOT_SAMPLE` and charged for all to the frame around it, whose own
/// time it is in: a lock's `relax` loop of 73 ns episodes hid ~30 ns each there
/// (spin 0.10, 2026-12-06); one a call opened, from the call's open. Not where it cannot
/// be told: one switched, or one past an eighth of `gaps::gap_ticks` (~1.2 µs:
/// interrupted), which one sample would multiply. Less a fold (`folded` ticks), charged
/// on its own.
#[cold]
#[inline(never)]
fn hot_sample(l: &Local, z: &Lazy, end: u64, folded: u64) {
    z.hot_countdown.set(HOT_SAMPLE - 1);
    let start = z.fast_start.get();
    let (entry, at) = z.hot_entry.replace((0, 0));
    let own =
        (start.saturating_sub(entry) + clock::now().saturating_sub(end)).saturating_sub(folded);
    let unswitched = l.counters.switches().unwrap_or(0) == z.fast_switches.get();
    if at == start && unswitched && own < gaps::gap_ticks() / 8 {
        l.charge(own * u64::from(HOT_SAMPLE));
    }
}

/// A timed call at `site` opens on the fast path if it is the first wait of the one
/// pending episode (which opens on the fast path, at the call's start), or a call of
/// the fast entry open around it that made no other call or only calls at `site` (a
/// back-off loop's): its place and start tick, else `None`.
#[inline(always)]
pub(crate) fn open_call(l: &Local, site: &'static CallSite) -> Option<(u32, u64)> {
    let z = lazy();
    let key = site as *const CallSite as usize;
    let (at, start) = match z.fast.get() {
        NO_FAST => {
            let entry = entry_tick(z);
            // A call of an entry around that became a frame, running.
            if z.call.get() != 0 || !open_fast(l, z) {
                return None;
            }
            let start = z.fast_start.get();
            if entry != 0 {
                z.hot_entry.set((entry, start));
            }
            // The stretch of the frame around it ends here, as at a frame's open.
            l.gap_to(l.current.get(), start, Some(z.fast_switches.get()));
            (z.fast.get(), start)
        }
        at if at + 1 == z.live.get() && z.depth.get() == at + 1 && !l.counters.moved() => {
            let start = clock::now();
            if z.call.get() != 0 && !next_call(l, z, at, site, start) {
                return None;
            }
            (at, start)
        }
        _ => return None,
    };
    z.call.set(key);
    z.call_at.set(at);
    z.call_start.set(start);
    z.call_ticks.set(IN_CALL);
    l.in_call();
    Some((at, start))
}

/// A call at `site` opening at `start` in the fast entry at `at`, whose last call is
/// in `Lazy`: if that one closed at the same site, no stretch of work between them
/// and the record has room, it goes into the tree now (its slot, its duration; the
/// tally counts it at the entry's close) and this one takes its place. Whether it did.
#[inline(always)]
fn next_call(l: &Local, z: &Lazy, at: u32, site: &'static CallSite, start: u64) -> bool {
    let key = site as *const CallSite as usize;
    let ticks = z.call_ticks.get();
    let ended = z.call_start.get().wrapping_add(ticks);
    if z.call.get() != key
        || z.call_at.get() != at
        || ticks == IN_CALL
        || z.flushed.get() + 1 >= MAX_CALLS
        || start.saturating_sub(ended) >= gaps::gap_ticks()
    {
        return false;
    }
    l.add_to_slot(z.fast_node.get(), key, || site.info(), ticks, Some(ticks));
    z.flushed.set(z.flushed.get() + 1);
    true
}

/// The call [`open_call`] opened at place `at` and tick `start` closed after `ticks`:
/// kept with its entry, if that is still open on the fast path and the thread was not
/// switched since it opened. Whether it was; else it closes as any call
/// ([`call_began`]).
#[inline(always)]
pub(crate) fn close_call(at: u32, start: u64, ticks: u64) -> bool {
    let z = lazy();
    let kept = thread::with_hot(|l| {
        if z.fast.get() != at
            || z.call_at.get() != at
            || z.call_start.get() != start
            || z.call_ticks.get() != IN_CALL
            || l.counters.switches().unwrap_or(0) != z.fast_switches.get()
        {
            return false;
        }
        z.call_ticks.set(ticks);
        // A copy made while the stretch after it runs sees it (`record::gaps`).
        l.data.stretch_node.store(z.fast_node.get(), Relaxed);
        l.data.stretch.store(start + ticks, Relaxed);
        true
    });
    kept == Some(true)
}

/// For the close of a call [`open_call`] opened at place `at` and tick `start` that
/// its entry could not keep, inside `thread::with` (its entry a frame by then): the
/// thread's mark, claims and profiler ticks when it opened, from `Local::promote`;
/// `None` if that is not this call.
pub(crate) fn call_began(l: &Local, at: u32, start: u64) -> Option<(Mark, Claimed, u64)> {
    let z = lazy();
    let ours = z.call.get() != 0
        && z.call_at.get() == at
        && z.call_start.get() == start
        && z.call_ticks.get() == IN_CALL;
    if !ours {
        return None;
    }
    z.call.set(0);
    l.open.take_call()
}

/// Opens the frames of the thread's pending episodes, outermost first, all starting
/// at one clock read and switch mark: those, or `None` when none was pending. Called
/// on the way into every wait call and every frame opened at entry.
#[inline(always)]
pub(crate) fn materialise(l: &Local) -> Option<(u64, Mark)> {
    LAZY.with(|z| {
        if z.live.get() == z.depth.get() {
            return None;
        }
        open_pending(l, z, None)
    })
}

/// As [`materialise`], with the start and mark of a wait call that began before
/// (a lock that turned out to block).
pub(crate) fn materialise_at(l: &Local, begin: (u64, Mark)) {
    LAZY.with(|z| open_pending(l, z, Some(begin)));
}

/// Without `begin`, the outermost takes the thread's mark and then its start tick, and
/// the others start with it: a read of the switch figures that the mark needs
/// (`record::deferred`) is before them all, the profiler's time in the frame around.
#[inline(never)]
fn open_pending(l: &Local, z: &Lazy, mut begin: Option<(u64, Mark)>) -> Option<(u64, Mark)> {
    for at in z.live.get()..z.depth.get().min(LAZY_DEPTH as u32) {
        let (slot, began) = open_entry(l, z.sites[at as usize].get(), begin);
        begin = begin.or(began);
        z.slots[at as usize].set(slot);
        z.live.set(at + 1);
    }
    begin
}

/// Opens the frame of one entry (from `begin`, else now); its slot, start and mark.
/// A closure of the site whose frame is current opens none.
#[inline(always)]
fn open_entry(l: &Local, key: usize, begin: Option<(u64, Mark)>) -> (u32, Option<(u64, Mark)>) {
    let site = site_of(key);
    let nested = key & NESTED != 0;
    let key = key & !NESTED;
    if nested && l.data.node_key(l.current.get()) == key {
        return (NO_SLOT, None);
    }
    let (slot, _, began) = frame::open(l, key, true, !nested, || site.info(), begin);
    (slot, Some(began))
}

/// The live count of this thread's entries while some are pending; `None` when none
/// is.
#[inline(always)]
pub(crate) fn pending() -> Option<u32> {
    LAZY.with(|z| (z.live.get() < z.depth.get()).then(|| z.live.get()))
}

/// Whether no entry has opened its frame since [`pending`] returned `live`.
#[inline(always)]
pub(crate) fn still_pending(live: u32) -> bool {
    LAZY.with(|z| z.live.get() == live && live < z.depth.get())
}

/// The node of the live entry at `at` (`slot` past `LAZY_DEPTH`); `None` while it is
/// pending or records nothing.
pub(crate) fn node_of(l: &Local, at: u32, deep_slot: u32) -> Option<u32> {
    LAZY.with(|z| {
        if at == INACTIVE || at >= z.live.get() {
            return None;
        }
        let slot = match z.slots.get(at as usize) {
            Some(s) => s.get(),
            None => deep_slot,
        };
        l.open.node(slot)
    })
}

impl WaitGuard {
    /// Its place and deep slot, for `node_of`.
    #[inline(always)]
    pub(crate) fn place(&self) -> (u32, u32) {
        (self.at, self.slot)
    }

    /// Whether it records anything.
    #[inline(always)]
    pub(crate) fn active(&self) -> bool {
        WaitGuard::active_at(self.place())
    }

    /// Whether the guard at `place` records anything.
    #[inline(always)]
    pub(crate) fn active_at(place: (u32, u32)) -> bool {
        place.0 != INACTIVE
    }
}
