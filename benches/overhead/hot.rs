//! The hot path's rows of `benches/overhead.rs` (`-- hot`), and the unwaited episode as
//! real code meets it.

use super::{
    best, clock_pair, clock_read, counted_yields, empty_episode, episodes, one_spin_episode, pair,
    paired_one_spin, raw_empty, raw_one_spin, raw_yields, ROUNDS,
};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{channel, Receiver, Sender};
use yieldprof::counters::CounterSampling;

/// An annotated fn that returns without waiting as real code meets it (a channel's
/// `start_send` that finds room): not inlined, arguments, a load and a store, a result.
#[inline(never)]
fn raw_claim(slot: &AtomicU64, v: u64) -> bool {
    let seen = slot.load(Relaxed);
    slot.store(seen ^ v, Relaxed);
    seen != v
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn claim(slot: &AtomicU64, v: u64) -> bool {
    let seen = slot.load(Relaxed);
    slot.store(seen ^ v, Relaxed);
    seen != v
}

/// `n` calls of `f` (a direct call: one copy of this loop per fn), each result used.
#[inline(never)]
fn claims(n: u64, f: impl Fn(&AtomicU64, u64) -> bool) {
    let slot = AtomicU64::new(0);
    let mut room = 0u64;
    for i in 0..n {
        room += f(black_box(&slot), i | 1) as u64;
    }
    black_box(room);
}

/// The unwaited episode's ns per call, raw and annotated, interleaved round by round.
pub(crate) fn unwaited_pair(n: u64) -> (f64, f64) {
    pair(n, |n| claims(n, raw_claim), |n| claims(n, claim))
}

/// `n` unwaited episodes and as many raw calls, for `valgrind --tool=callgrind`.
pub(crate) fn unwaited_calls(n: u64) {
    claims(n, raw_claim);
    claims(n, claim);
}

/// A record as issue 25's model names it (Tracy's client): the site, the start, the
/// duration, the switch count at the start and the spins.
type Rec = (usize, u64, u64, u64, u32);

/// A thread's ring of records, as small as the model allows: no fold, no reader.
struct Ring {
    next: Cell<u32>,
    recs: [Cell<Rec>; 256],
    /// Stands in for the perf page's switch count: one load.
    switches: AtomicU64,
}

thread_local! {
    static RING: Ring = const {
        Ring {
            next: Cell::new(0),
            recs: [const { Cell::new((0, 0, 0, 0, 0)) }; 256],
            switches: AtomicU64::new(0),
        }
    };
}

static RECORDED_SITE: u8 = 0;

/// The same body timed by the model's least: a clock pair, one switch count and one
/// record written to a thread-local ring. What no design of that model gets under.
#[inline(never)]
fn recorded_one_spin() {
    RING.with(|r| {
        let t0 = clock_read();
        let switches = r.switches.load(Relaxed);
        std::hint::spin_loop();
        let d = clock_read().wrapping_sub(t0);
        let i = r.next.get();
        r.recs[i as usize % 256].set((&RECORDED_SITE as *const u8 as usize, t0, d, switches, 1));
        r.next.set(i.wrapping_add(1));
    });
}

thread_local! {
    /// Holds a message whenever `recv` is called on it: a wait call that returns at
    /// once, as a consumer's that finds its queue non-empty.
    static READY: (Sender<u64>, Receiver<u64>) = channel();
}

#[inline(never)]
fn raw_recv(r: &Receiver<u64>) -> u64 {
    r.recv().unwrap_or(0)
}

/// The same call timed by a bare clock pair, its duration kept.
#[inline(never)]
fn paired_recv(r: &Receiver<u64>) -> u64 {
    let t0 = clock_read();
    let v = r.recv().unwrap_or(0);
    black_box(clock_read().wrapping_sub(t0));
    v
}

/// An episode whose one wait is a wrapped call that does not block.
#[yieldprof::instrument_wait]
#[inline(never)]
fn recv_episode(r: &Receiver<u64>) -> u64 {
    r.recv().unwrap_or(0)
}

/// `n` sends, each followed by `f`'s receive.
fn receives(n: u64, f: fn(&Receiver<u64>) -> u64) {
    READY.with(|(tx, rx)| {
        for i in 0..n {
            let _ = tx.send(i);
            black_box(f(rx));
        }
    });
}

/// The raw case, the same with a bare clock pair and annotated, interleaved round by
/// round, `n` each: what the pair and the annotation add, ns per call.
fn against_pair(
    n: u64,
    raw: impl Fn(u64),
    paired: impl Fn(u64),
    annotated: impl Fn(u64),
) -> (f64, f64) {
    let (mut r, mut p, mut a) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for _ in 0..ROUNDS {
        r = r.min(best(n, &raw));
        p = p.min(best(n, &paired));
        a = a.min(best(n, &annotated));
    }
    (p - r, a - r)
}

/// Runs a case on a thread of its own with the given counter settings.
pub(crate) type OnThread<'a> =
    dyn Fn(CounterSampling, usize, &(dyn Fn() -> (f64, f64) + Sync)) -> (f64, f64) + 'a;

/// The `hot` rows: counters off for the unwaited episode (it reads none), exact page
/// counters for the waited ones, each interleaved with its baseline.
pub(crate) fn hot_rows(on_thread: &OnThread) {
    let n = 2_000_000;
    let (b, i) = on_thread(CounterSampling::Off, 512, &|| unwaited_pair(n));
    println!(
        "episode that returns without waiting (a non-inlined fn, arguments, a result): {b:.2} → {i:.2} ns: {:.2}×, +{:.2} ns",
        i / b,
        i - b
    );
    // An empty fn in a loop of its own, as this row read it before 2026-12-05.
    let (b, i) = on_thread(CounterSampling::Off, 512, &|| {
        pair(
            n,
            |n| episodes(n, raw_empty),
            |n| episodes(n, empty_episode),
        )
    });
    println!(
        "   the same, an empty fn without arguments or result: {b:.2} → {i:.2} ns, +{:.2} ns",
        i - b
    );
    let (b, i) = on_thread(CounterSampling::Every(u32::MAX), 512, &|| {
        pair(1, |_| raw_yields(20_000), |_| counted_yields(20_000))
    });
    println!(
        "yield_now, counted and timed, exact page counters: {:.2} → {:.2} ns: {:.2}×",
        b / 2e4,
        i / 2e4,
        i / b
    );
    // A clock pair in a loop of its own, as the rows before 2026-12-04 20:00 read it.
    let (b, i) = on_thread(CounterSampling::Every(u32::MAX), 512, &|| {
        pair(
            n,
            |n| (0..n).for_each(|_| black_box(())),
            |n| {
                (0..n).for_each(|_| {
                    black_box(clock_pair());
                })
            },
        )
    });
    let floor = i - b;
    // The same fn with a bare clock pair around its body, interleaved with the raw fn
    // and the episode: the floor as issue 25 states it.
    let waits = || {
        against_pair(
            n,
            |n| episodes(n, raw_one_spin),
            |n| episodes(n, paired_one_spin),
            |n| episodes(n, one_spin_episode),
        )
    };
    let (same_fn, cost) = on_thread(CounterSampling::Every(u32::MAX), 512, &waits);
    println!(
        "waited one-spin episode, exact page counters: +{cost:.2} ns vs a bare clock pair around the same body +{same_fn:.2} ns: {:.2}× (vs a clock pair in a loop +{floor:.2} ns: {:.2}×)",
        cost / same_fn,
        cost / floor
    );
    // Issue 25's model at its least, against the same pair: how near 1.3× any
    // design of it comes on this machine.
    let least = || {
        against_pair(
            n,
            |n| episodes(n, raw_one_spin),
            |n| episodes(n, paired_one_spin),
            |n| episodes(n, recorded_one_spin),
        )
    };
    let (same_fn, least) = on_thread(CounterSampling::Every(u32::MAX), 512, &least);
    println!(
        "   the model's least (the pair, a switch count, one record to a thread-local ring): +{least:.2} ns vs the pair +{same_fn:.2} ns: {:.2}×",
        least / same_fn
    );
    // The same with a wrapped call as the one wait, as most wait sites are (a
    // receive, a park, a sleep): three clock reads, the call's and the episode's.
    let calls = || {
        against_pair(
            n / 2,
            |n| receives(n, raw_recv),
            |n| receives(n, paired_recv),
            |n| receives(n, recv_episode),
        )
    };
    let (same_fn, cost) = on_thread(CounterSampling::Every(u32::MAX), 512, &calls);
    println!(
        "waited one-call episode (a `recv` that finds a message), exact page counters: +{cost:.2} ns vs a bare clock pair around the call +{same_fn:.2} ns: {:.2}×",
        cost / same_fn
    );
}
