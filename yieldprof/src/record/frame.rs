//! Opening and closing one frame of this thread's tree: what a business frame does at
//! entry, and a wait episode at its first wait call (`record::lazy`).

use crate::base::arena::bump;
use crate::base::clock;
use crate::base::ring::Episode;
use crate::base::site::FrameInfo;
use crate::config;
use crate::counters::{Mark, Switches};
use crate::record::open::{EndedOf, Opened, Tally};
use crate::record::thread::Local;
use std::sync::atomic::Ordering::Relaxed;

/// The `sample` of an open frame whose counters are not sampled.
pub(crate) const NO_SAMPLE: u32 = u32::MAX;

/// Whether recording is on: one relaxed load at run time (`YIELDPROF=0`), nothing at
/// all when the `enabled` feature is off.
#[inline(always)]
pub(crate) fn on() -> bool {
    config::enabled()
}

/// Opens the frame of the site at `key` under the thread's current node and makes it
/// current: its slot in the open frames, its node, and its start tick and switch mark
/// (`begin`, else the clock read after the frame's counter reads, so its wall time
/// excludes them). `count`: it counts an episode when it closes.
#[inline]
pub(crate) fn open(
    l: &Local,
    key: usize,
    wait: bool,
    count: bool,
    info: impl FnOnce() -> FrameInfo,
    begin: Option<(u64, Mark)>,
) -> (u32, u32, (u64, Mark)) {
    let prev = l.current.get();
    let node = l.data.child(prev, key, info);
    // A business frame inside a wait: a job a pool worker runs while it waits. Its
    // off-CPU time is the pool's scheduling, not business, so it takes a switch mark
    // too (~2 ns while the thread was not switched since the last read).
    let job = !wait && l.open.in_wait();
    // Without a page to mark (counters deferred, perf denied, the fd budget spent) a
    // job is read on getrusage at both ends, as a sampled episode is (~2 µs a job),
    // and does not count down to the counters' opening. Unread, a preempted job was
    // its worker's business: rayon's workers with no perf showed 3-13 % waiting
    // against 67 % (2026-12-06).
    let rusage_job = job && l.counters.on_rusage();
    // Before the frame is current: a read here is outside its time (its clock starts
    // after), so the profiler's time it takes is the parent's.
    let mark = match begin {
        Some((_, mark)) if wait => mark,
        None if wait => l.mark(|| Some(EndedOf::Frame(node)), false),
        // Never continued unread: open frames that continue one are wait frames
        // (`OpenFrames::continues`), so a job that opens after a switch reads.
        _ if job && !rusage_job => l.mark_read(),
        _ => Mark::ZERO,
    };
    l.current.set(node);
    let sample = if (wait && l.counters.wants_sample()) || rusage_job {
        let (sample, ticks) = timed_read(l, || l.counters.begin(&l.data.counters, begin.is_some()));
        // The profiler's time: inside this frame where it started before (pending
        // episodes opened at a wait), else before it, in the parent's.
        l.charge_to(if begin.is_some() { node } else { prev }, ticks);
        sample
    } else {
        NO_SAMPLE
    };
    let start = match begin {
        Some((start, _)) => start,
        None => clock::now(),
    };
    // What the parent did since its last wait, then this frame's own stretch begins.
    // A business frame outside a wait has no mark: no stretch of a wait frame ends
    // there, so it reads no count either.
    let at = mark.page_count();
    l.gap_to(prev, start, at);
    l.gap_from(start, at, l.data.profiler_ticks.load(Relaxed));
    // Deferred counters take no page mark: the sampled start's off-CPU clock serves,
    // so a frame open at a report (a pool's job) still gets its off-CPU time so far.
    let off = match mark.off_clock() {
        None if sample != NO_SAMPLE => l.counters.begun_off_clock(sample),
        None if !mark.is_pageless() => l.unread_off_clock(start),
        off => off,
    };
    l.data.node(node).opened_at(start, off);
    // A wait frame tallies its own calls; a business frame's count in the wait frame
    // around it.
    let tally = if wait {
        l.tally.replace(Tally::ZERO)
    } else {
        Tally::ZERO
    };
    let slot = l.open.push(Opened {
        node,
        prev,
        start,
        wait,
        count,
        job,
        mark,
        claimed: l.claimed.get(),
        sample,
        tally,
    });
    (slot, node, (start, mark))
}

/// A frame that closed.
pub(crate) struct Closed {
    pub(crate) node: u32,
    pub(crate) start: u64,
    /// Its length in ticks.
    pub(crate) elapsed: u64,
}

/// Closes the frame in `slot` at tick `end`. A frame closes once and its slot is its
/// own until then; were the slot ever gone, only that frame would go unrecorded.
#[inline]
pub(crate) fn close(l: &Local, slot: u32, end: u64) -> Option<Closed> {
    let o = l.open.pop(slot)?;
    let elapsed = end.saturating_sub(o.start);
    // The profiler's reads from here on are in the stretch that resumes at `end`.
    let charged = l.data.profiler_ticks.load(Relaxed);
    let n = l.data.node(o.node);
    let mut read = 0;
    // Its switches where read on getrusage (deferred counters): the page's count may
    // start inside it, or not at all.
    let mut sampled_switches = None;
    if o.sample != NO_SAMPLE {
        (sampled_switches, read) = timed_read(l, || {
            l.counters
                .finish(&l.data.counters, &n.counts, o.sample, o.start, end)
        });
    } else if o.wait {
        l.counters.earn(elapsed);
    }
    if o.job {
        l.data.timeline.push(&Episode {
            start: o.start,
            duration: elapsed,
            frame: n.frame.load(Relaxed),
            ..Episode::default()
        });
    } else if o.wait {
        let switches = match sampled_switches {
            Some(s) => u32::try_from(s).unwrap_or(u32::MAX),
            None => l
                .counters
                .switches()
                .unwrap_or(o.mark.switches)
                .wrapping_sub(o.mark.switches),
        };
        // Every poll of an `async fn` episode is one stretch of the timeline.
        let mine = l.tally.get();
        l.tally.set(o.tally.plus(mine));
        l.data.timeline.push(&Episode {
            start: o.start,
            duration: elapsed,
            frame: n.frame.load(Relaxed),
            kinds: mine.kinds,
            calls: mine.calls,
            switches,
        });
    }
    l.claim_ticks(o.claimed.ticks, elapsed);
    if o.count {
        bump(&n.episodes, 1);
        l.data.record_duration_of(n, elapsed);
    }
    l.data.closing.begin(o.node, &n.wall_ns, elapsed);
    bump(&n.wall_ns, elapsed);
    l.current
        .set(l.data.closed(n, o.node, o.prev, l.current.get()));
    l.data.closing.end();
    if read > 0 {
        // After the frame's end: the parent's time.
        l.charge(read);
    }
    let at = if o.wait || o.job {
        // Its switch figures, when it switched, are read later (`record::deferred`),
        // or now, in the parent's time, if it is long; a job's give it its off-CPU time.
        l.ended(
            &o.mark,
            EndedOf::Frame(o.node),
            o.claimed.off_ns,
            elapsed,
            end,
        )
    } else {
        None
    };
    // Its last stretch, then the parent's resumes.
    l.gap_to(o.node, end, at);
    l.gap_from(end, at, charged);
    if o.job && l.counters.moved() {
        // A job that was switched is read now: deferred, a preemption before the next
        // read (the worker runs on between jobs) would share its off-CPU time with it
        // by switch counts. One read (~2 µs) per switched job, none otherwise.
        l.settle(false);
    }
    Some(Closed {
        node: o.node,
        start: o.start,
        elapsed,
    })
}

/// A sampled episode's counter reading (`read`, or a lock's opening of the deferred
/// counters), and its time in ticks where the thread ran throughout, else 0: switched
/// out in it (preempted, or blocked opening perf counters), its wall is no measure of
/// its cost (8 ms once, a spin lock's worker under 4 busy loops, 2026-12-06). Whether
/// it ran is the page's switch count, where the thread had one when the read began
/// (~2 ns); else two getrusage calls around it (~0.4 µs each on the build VM, 1.6 µs on
/// a slower one: they were half a sampled episode's cost there, 2026-12-06), the time
/// ending before the second, whose own switch (a signal handled as it returns) comes
/// after its count.
pub(super) fn timed_read<R>(l: &Local, read: impl FnOnce() -> R) -> (R, u64) {
    let t0 = clock::now();
    // The same source at both ends: counters opened by `read` count from there.
    let paged = l.counters.switches().is_some();
    let count = || match paged {
        true => (l.counters.switches(), None),
        false => (None, Some(Switches::own())),
    };
    let before = count();
    let r = read();
    let end = clock::now();
    let ran = count() == before;
    (r, end.saturating_sub(t0) * u64::from(ran))
}
