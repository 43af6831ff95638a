//! False-sharing detection without a hardware PMU, on data the program points at.
//!
//! [`watch`](crate::watch) registers an address range and a name; each access through a
//! [`Watched`](crate::Watched) atomic on a registered 64-byte line is *tracked* (all of
//! them, or a sample). The rule follows Predator and Sheriff: software that mimics the
//! coherence protocol, so it works in VMs and containers where `perf c2c` has no PMU.
//!
//! ## The rule
//!
//! Each watched 64-B line keeps a two-entry history of the threads that touched it since
//! its last write, with the 8-B words each read or wrote. A tracked write by thread `T`
//! to word `w` is an **invalidation** when the history holds another thread `U`: on real
//! hardware that write takes the line away from `U`'s core. It is then classified:
//!
//! - **false** when no such `U` touched `w`: `U` loses a line for words that did not
//!   change, and the miss would not exist were `w` on its own line. A single writer and
//!   a reader spinning on a *different* word counts here: the spinning reader is the
//!   victim.
//! - **true** otherwise: `U` needs the new value of `w` (communication, which no layout
//!   removes). It is also **contended** when `U` *wrote* `w` itself (several writers of
//!   one word, like a shared `fetch_add` counter).
//!
//! Per word and per thread the line also counts tracked reads and writes, and per thread
//! the wait sites (`#[instrument_wait]` episodes) in which the line was read: the sites
//! that spin on it.
//!
//! A line's verdict, with `N` its invalidations:
//!
//! | verdict | when |
//! |---|---|
//! | quiet | `N` < [`MIN_INVALIDATIONS`] |
//! | FALSE | false ≥ `MIN_INVALIDATIONS` and false ≥ `N` / [`SHARE_DIVISOR`], not contended |
//! | MIXED | the FALSE condition, and contended ≥ both bounds too |
//! | TRUE | `N` ≥ `MIN_INVALIDATIONS`, the false part below the bounds |
//!
//! The adjacent-line prefetcher of current x86 and aarch64 cores fetches 64-B lines in
//! aligned pairs, which makes 128 B the unit that ping-pongs. When both lines of a pair
//! `2i`/`2i+1` are watched, the pair keeps the same history with the line as the "word":
//! a block whose false part passes the same bounds, while neither line is FALSE or
//! MIXED itself, is **ADJACENT-RISK**.
//!
//! ## Costs and limits
//!
//! The history is one word per line, written with a plain store (a locked instruction
//! would stall the thread for the whole line transfer, which the program's own plain
//! accesses mostly hide) and only when it changes: a thread re-reading what it already
//! read only loads it, and a read of a word the thread itself writes is published with
//! its next access. So it ping-pongs about as often as the real line: tracking every
//! access roughly doubles the coherence traffic of a watched line. Two threads updating
//! it at the same instant may lose one update; the history models the order, it does
//! not serialize it.
//! Counters each thread writes sit in its own 128-B block of the line's slot, and slots
//! never share a block, so the profiler adds no false sharing of its own. The table is
//! fixed ([`MAX_LINES`] lines, first [`OWNED_THREADS`] threads of a line with their own
//! counters, the rest pooled): no lock and no allocation on the hot path.
//! [`set_watch_sampling`](crate::set_watch_sampling) tracks one access in `n` on average
//! (random gaps, so loop shapes cannot alias) after each thread's first
//! [`WARMUP_ACCESSES`]; [`DEFAULT_WATCH_SAMPLING`] is the default `n`. The bounds apply
//! to tracked events. Sampling shifts the split toward true sharing: a victim's tracked
//! words then span the window since the last *tracked* write, longer than the real one.
//!
//! Sub-word atomics sharing one 8-B word count as the same word. The history sees the
//! order in which tracked accesses reached it, close to but not exactly the order of
//! the accesses themselves. A thread's last read of a word it writes, if nothing of
//! that thread's follows it, is not published.

pub(crate) mod layout;
pub(crate) mod watch;

use crate::base::site::{self, FrameKind, THREAD_FRAME};
use crate::base::text::{cut, percent, wrap, WIDTH};
use crate::config;
use crate::counters::Count;
use crate::model::profile::Profile;
use crate::record::thread;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Mutex, MutexGuard};

/// The coherence unit the history models.
pub(crate) const LINE: usize = 64;
/// Two lines: what the adjacent-line prefetcher moves together.
pub(crate) const BLOCK: usize = 2 * LINE;
const WORD: usize = 8;
const WORDS: usize = LINE / WORD;

/// Lines watched at once; a `watch` beyond it is refused with a message on stderr.
pub const MAX_LINES: usize = 256;
/// Threads per line with counters of their own; later threads share one pooled set.
pub const OWNED_THREADS: usize = 4;
/// Fewest tracked invalidations a line needs for a verdict other than quiet.
pub const MIN_INVALIDATIONS: u64 = 32;
/// The false (or contended) part must be at least `1 / SHARE_DIVISOR` of all
/// invalidations: a few stray ones are not worth padding for.
pub const SHARE_DIVISOR: u64 = 4;
/// Accesses each thread has tracked in full before sampling starts.
pub const WARMUP_ACCESSES: u32 = 10_000;
/// One access in this many is tracked (after the warm-up) unless
/// [`set_watch_sampling`] or `YIELDPROF_WATCH_SAMPLE` says otherwise: full tracking
/// doubles the coherence traffic of the watched lines (see the README's overhead table).
pub const DEFAULT_WATCH_SAMPLING: u32 = 64;

const BLOCKS: usize = OWNED_THREADS + 1;
const FRAMES: usize = 4;
const PROBES: usize = 16;
const EMPTY_KEY: usize = 0;
// Never a line address: lines are 64-aligned.
const TOMBSTONE: usize = 1;
const RETIRED_CAP: usize = 4096;

const fn zeros<const N: usize>() -> [AtomicU64; N] {
    [const { AtomicU64::new(0) }; N]
}

/// Invalidations counted, by kind and by the word (the line, for a block) whose write
/// caused them.
struct Tally {
    invalidations: AtomicU64,
    false_inv: AtomicU64,
    contended: AtomicU64,
    by_word: [AtomicU64; WORDS],
}

/// What an invalidation was: whether a victim needed the written word, and whether one
/// had written it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Invalidation {
    needed: bool,
    contended: bool,
}

/// One history: the threads that touched a line (or block) since its last write. Its
/// own tally serves blocks; a line's invalidations are tallied by each writer in its
/// own counters, so counting costs no shared read-modify-write.
#[repr(C, align(128))]
pub(crate) struct Hot {
    history: AtomicU64,
    tally: Tally,
}

/// Read-mostly: written when a line is registered and when a thread first touches it.
#[repr(C, align(128))]
struct Meta {
    owners: [AtomicU64; OWNED_THREADS],
    /// Slot + 1 of the other line of this 128-B block when it is watched too.
    partner: AtomicU32,
}

/// One thread's counters on one line: only that thread writes them (except the pooled
/// set), and no other thread's share their 128-B block.
#[repr(C, align(128))]
struct PerThread {
    rw: [[AtomicU64; 2]; WORDS],
    frames: [AtomicU32; FRAMES],
    frame_reads: [AtomicU64; FRAMES],
    /// Invalidations this thread's writes caused.
    tally: Tally,
}

#[repr(C)]
struct Slot {
    meta: Meta,
    hot: Hot,
    /// The 128-B block's history; used in the slot of the even line of a watched pair.
    pair: Hot,
    threads: [PerThread; BLOCKS],
}

impl Tally {
    const fn new() -> Tally {
        Tally {
            invalidations: AtomicU64::new(0),
            false_inv: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            by_word: zeros(),
        }
    }

    fn all(&self) -> impl Iterator<Item = &AtomicU64> {
        [&self.invalidations, &self.false_inv, &self.contended]
            .into_iter()
            .chain(&self.by_word)
    }

    fn count(&self, word: usize, i: Invalidation, owned: bool) {
        add(&self.invalidations, owned);
        add(&self.by_word[word], owned);
        if !i.needed {
            add(&self.false_inv, owned);
        }
        if i.contended {
            add(&self.contended, owned);
        }
    }

    fn record(&self) -> HotRecord {
        HotRecord {
            invalidations: self.invalidations.load(Relaxed),
            false_inv: self.false_inv.load(Relaxed),
            contended: self.contended.load(Relaxed),
            by_word: std::array::from_fn(|i| self.by_word[i].load(Relaxed)),
        }
    }
}

impl Hot {
    pub(crate) const fn new() -> Hot {
        Hot {
            history: AtomicU64::new(0),
            tally: Tally::new(),
        }
    }

    fn reset(&self) {
        self.history.store(0, Relaxed);
        for a in self.tally.all() {
            a.store(0, Relaxed);
        }
    }

    /// Applies one tracked access by thread `tid` (never 0) to `word` (0..8), counting
    /// an invalidation in this history's own tally.
    pub(crate) fn observe(&self, tid: u16, word: usize, write: bool) {
        if let Some(i) = self.observe_with(tid, 1 << word, write, 0) {
            self.tally.count(word, i, false);
        }
    }

    /// The history part of [`Hot::observe`], for the word(s) in `bits` (one bit for a
    /// write), with `pending`: reads this thread made earlier and has not published.
    fn observe_with(&self, tid: u16, bits: u8, write: bool, pending: u8) -> Option<Invalidation> {
        let entries = decode(self.history.load(Relaxed));
        let own = entries.iter().position(|e| e.tid == tid);
        let touched = |i: usize| entries[i].read | entries[i].write;
        let mut invalidation = None;
        let next = if write {
            let mut victim = false;
            let mut needed = false;
            let mut contended = false;
            for e in entries.iter().filter(|e| e.tid != 0 && e.tid != tid) {
                victim = true;
                needed |= (e.read | e.write) & bits != 0;
                contended |= e.write & bits != 0;
            }
            if victim {
                invalidation = Some(Invalidation { needed, contended });
                // Reads before this write no longer matter: the history restarts.
                [Entry::wrote(tid, bits), Entry::EMPTY]
            } else {
                let mine = own.map_or(Entry::wrote(tid, 0), |i| entries[i]);
                if mine.write & bits != 0 && (mine.read | mine.write) & pending == pending {
                    return None;
                }
                let mine = Entry {
                    read: mine.read | pending,
                    write: mine.write | bits,
                    ..mine
                };
                [mine, Entry::EMPTY]
            }
        } else {
            let bits = bits | pending;
            match own {
                Some(i) if touched(i) & bits == bits => return None,
                Some(i) => {
                    let mut next = entries;
                    next[i].read |= bits;
                    next
                }
                None => match entries.iter().position(|e| e.tid == 0) {
                    Some(i) => {
                        let mut next = entries;
                        next[i] = Entry {
                            tid,
                            read: bits,
                            write: 0,
                        };
                        next
                    }
                    // Two other threads are already in: the next write counts anyway.
                    None => return None,
                },
            }
        };
        // A plain store, not a compare-exchange: a locked instruction would stall this
        // thread for the whole transfer of the line, which the program's own plain
        // loads and stores mostly hide. Two threads updating at the same instant may
        // lose one update; the history is a model of the order, not a lock.
        self.history.store(encode(next), Relaxed);
        invalidation
    }
}

/// One history entry: a thread and the words it read and wrote (bit masks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    tid: u16,
    read: u8,
    write: u8,
}

impl Entry {
    const EMPTY: Entry = Entry {
        tid: 0,
        read: 0,
        write: 0,
    };

    fn wrote(tid: u16, bit: u8) -> Entry {
        Entry {
            tid,
            read: 0,
            write: bit,
        }
    }

    fn bits(self) -> u64 {
        (self.tid as u64) << 16 | (self.write as u64) << 8 | self.read as u64
    }

    fn from_bits(b: u64) -> Entry {
        Entry {
            tid: (b >> 16) as u16,
            write: (b >> 8) as u8,
            read: b as u8,
        }
    }
}

fn decode(h: u64) -> [Entry; 2] {
    [Entry::from_bits(h & 0xffff_ffff), Entry::from_bits(h >> 32)]
}

fn encode(e: [Entry; 2]) -> u64 {
    e[0].bits() | e[1].bits() << 32
}

/// A thread's 16-bit name in histories; never 0 (the empty entry).
fn tid16(serial: u64) -> u16 {
    (serial.wrapping_sub(1) % 0xffff + 1) as u16
}

impl Meta {
    const fn new() -> Meta {
        Meta {
            owners: zeros(),
            partner: AtomicU32::new(0),
        }
    }
}

impl PerThread {
    const fn new() -> PerThread {
        PerThread {
            rw: [const { zeros() }; WORDS],
            frames: [const { AtomicU32::new(0) }; FRAMES],
            frame_reads: zeros(),
            tally: Tally::new(),
        }
    }

    fn reset(&self) {
        let counts = self.rw.iter().flatten().chain(&self.frame_reads);
        for a in counts.chain(self.tally.all()) {
            a.store(0, Relaxed);
        }
        for f in &self.frames {
            f.store(0, Relaxed);
        }
    }

    /// One more read of the line inside wait frame `frame`.
    fn note_frame(&self, frame: u32, owned: bool) {
        let id = frame + 1;
        for (f, reads) in self.frames.iter().zip(&self.frame_reads) {
            let mine = match f.load(Relaxed) {
                seen if seen == id => true,
                0 if owned => {
                    f.store(id, Relaxed);
                    true
                }
                0 => match f.compare_exchange(0, id, Relaxed, Relaxed) {
                    Ok(_) => true,
                    Err(now) => now == id,
                },
                _ => false,
            };
            if mine {
                add(reads, owned);
                return;
            }
        }
    }
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            meta: Meta::new(),
            hot: Hot::new(),
            pair: Hot::new(),
            threads: [const { PerThread::new() }; BLOCKS],
        }
    }

    fn reset(&self) {
        for o in &self.meta.owners {
            o.store(0, Relaxed);
        }
        self.meta.partner.store(0, Relaxed);
        self.hot.reset();
        self.pair.reset();
        for t in &self.threads {
            t.reset();
        }
    }

    /// The counter set of thread `serial`, claimed on its first access.
    #[inline]
    fn block_of(&self, serial: u64) -> usize {
        for (i, o) in self.meta.owners.iter().enumerate() {
            let id = o.load(Relaxed);
            if id == serial {
                return i;
            }
            if id == 0 {
                match o.compare_exchange(0, serial, Relaxed, Relaxed) {
                    Ok(_) => return i,
                    Err(now) if now == serial => return i,
                    Err(_) => {}
                }
            }
        }
        OWNED_THREADS
    }
}

/// A single owner bumps with load+store (exact, no locked instruction); the pooled set
/// is shared, so it needs the read-modify-write.
#[inline(always)]
fn add(a: &AtomicU64, owned: bool) {
    if owned {
        a.store(a.load(Relaxed).wrapping_add(1), Relaxed);
    } else {
        a.fetch_add(1, Relaxed);
    }
}

// Both live in .bss: zeroed pages cost nothing until touched.
static KEYS: [AtomicUsize; MAX_LINES] = [const { AtomicUsize::new(EMPTY_KEY) }; MAX_LINES];
static TABLE: [Slot; MAX_LINES] = [const { Slot::new() }; MAX_LINES];
/// Set by the first `watch`: until then every access returns after one load.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// 0 until read from `YIELDPROF_WATCH_SAMPLE`; 1 tracks every access.
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(0);

fn home(line: usize) -> usize {
    ((line / LINE) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize >> 32 & (MAX_LINES - 1)
}

/// The slot watching `line`, if any: a few loads of a read-mostly array, no lock.
#[inline]
fn lookup(line: usize) -> Option<usize> {
    let h = home(line);
    for p in 0..PROBES {
        let i = (h + p) & (MAX_LINES - 1);
        match KEYS[i].load(Acquire) {
            k if k == line => return Some(i),
            EMPTY_KEY => return None,
            _ => {}
        }
    }
    None
}

struct Sampler {
    left: Cell<u32>,
    warm: Cell<u32>,
    rng: Cell<u32>,
}

thread_local! {
    static SAMPLER: Sampler = const {
        Sampler { left: Cell::new(0), warm: Cell::new(WARMUP_ACCESSES), rng: Cell::new(0) }
    };
    /// Own-word reads not yet in a history: slot + 1 (0 = none) and word bits.
    static PENDING: Cell<(u32, u8)> = const { Cell::new((0, 0)) };
    /// Which frame ids are wait sites, as far as this thread has needed to know.
    static WAIT_FRAMES: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
}

impl Sampler {
    /// Accesses until the next tracked one: 1 during warm-up, then uniform in
    /// 1..=2n-1 (mean n).
    fn gap(&self, every: u32) -> u32 {
        let warm = self.warm.get();
        if warm > 0 {
            self.warm.set(warm - 1);
            return 1;
        }
        let mut x = self.rng.get();
        if x == 0 {
            // Any non-zero per-thread seed will do: the address of this thread's state.
            x = (self as *const Sampler as usize as u32) | 1;
        }
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng.set(x);
        1 + x % (2 * every - 1)
    }
}

#[inline(always)]
fn sampled() -> bool {
    let every = SAMPLE_EVERY.load(Relaxed);
    if every <= 1 {
        return true;
    }
    SAMPLER
        .try_with(|s| {
            let left = s.left.get();
            if left > 1 {
                s.left.set(left - 1);
                false
            } else {
                s.left.set(s.gap(every));
                true
            }
        })
        .unwrap_or(false)
}

/// The hot path: one access through a `Watched` atomic at `addr`.
#[inline(always)]
pub(crate) fn record(addr: usize, write: bool) {
    if !cfg!(feature = "enabled") || !ACTIVE.load(Relaxed) || !config::enabled() {
        return;
    }
    if sampled() {
        track(addr, write);
    }
}

fn is_wait_frame(frame: u32) -> bool {
    WAIT_FRAMES
        .try_with(|known| {
            let mut known = known.borrow_mut();
            if frame as usize >= known.len() {
                // A frame id this thread has not met: refresh from the table (once per
                // new frame per thread).
                let (frames, _) = site::tables();
                *known = frames.iter().map(|f| f.kind == FrameKind::Wait).collect();
            }
            known.get(frame as usize).copied().unwrap_or(false)
        })
        .unwrap_or(false)
}

#[inline(never)]
fn track(addr: usize, write: bool) {
    let line = addr & !(LINE - 1);
    let Some(i) = lookup(line) else { return };
    let Some((serial, frame)) = thread::current_frame() else {
        return;
    };
    let slot = &TABLE[i];
    let word = (addr % LINE) / WORD;
    let b = slot.block_of(serial);
    let owned = b < OWNED_THREADS;
    let counts = &slot.threads[b];
    add(&counts.rw[word][write as usize], owned);
    if !write && frame != THREAD_FRAME && is_wait_frame(frame) {
        counts.note_frame(frame, owned);
    }
    let tid = tid16(serial);
    let (pending_slot, pending) = PENDING.get();
    let pending = if pending_slot == i as u32 + 1 {
        pending
    } else {
        if pending_slot != 0 {
            // A read never invalidates: nothing to count.
            TABLE[pending_slot as usize - 1]
                .hot
                .observe_with(tid, 0, false, pending);
        }
        0
    };
    // A read of a word this thread writes is typically followed by its write (a load
    // and store of its own index, a CAS loop): it waits, unpublished and without
    // touching the shared history, for the thread's next access, which then does one
    // shared write for both.
    if !write && owned && counts.rw[word][1].load(Relaxed) > 0 {
        PENDING.set((i as u32 + 1, pending | 1 << word));
    } else {
        if let Some(inv) = slot.hot.observe_with(tid, 1 << word, write, pending) {
            counts.tally.count(word, inv, owned);
        }
        PENDING.set((0, 0));
    }
    let partner = slot.meta.partner.load(Relaxed);
    if partner != 0 {
        let half = (line / LINE) & 1;
        let even = if half == 0 {
            slot
        } else {
            &TABLE[partner as usize - 1]
        };
        even.pair.observe(tid, half, write);
    }
}

/// Sets the sampling rate of watched accesses: `1` tracks every one, `n` one in `n` on
/// average after each thread's first [`WARMUP_ACCESSES`] (default
/// [`DEFAULT_WATCH_SAMPLING`], or `YIELDPROF_WATCH_SAMPLE=n`, read at the first
/// [`watch`](crate::watch)). Bounds of the rule apply to tracked events, so a lower
/// rate needs a longer run for a verdict.
///
/// ```
/// yieldprof::set_watch_sampling(16);
/// yieldprof::set_watch_sampling(1);
/// ```
pub fn set_watch_sampling(every: u32) {
    SAMPLE_EVERY.store(every.max(1), Relaxed);
}

/// The sampling rate in force: 1 = every access.
pub(crate) fn sample_every() -> u32 {
    SAMPLE_EVERY.load(Relaxed).max(1)
}

#[derive(Clone, Debug)]
struct Field {
    addr: usize,
    size: usize,
    name: String,
    /// Its value was dropped; the name stays while a line it was on is live.
    gone: bool,
}

impl Field {
    fn overlaps(&self, addr: usize, size: usize) -> bool {
        self.addr < addr + size && addr < self.addr + self.size
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct HotRecord {
    invalidations: u64,
    false_inv: u64,
    contended: u64,
    by_word: [u64; WORDS],
}

/// A line's counters copied out of its slot, live or retired.
#[derive(Clone, Debug)]
struct LineRecord {
    line: usize,
    since: u64,
    until: u64,
    fields: Vec<Field>,
    owners: [u64; OWNED_THREADS],
    rw: [[[u64; 2]; WORDS]; BLOCKS],
    frames: Vec<(u32, u64)>,
    hot: HotRecord,
    pair: HotRecord,
    sample_every: u32,
}

struct LiveLine {
    line: usize,
    slot: usize,
    since: u64,
}

struct Registry {
    fields: Vec<Field>,
    live: Vec<LiveLine>,
    retired: Vec<LineRecord>,
    seq: u64,
    warned_full: bool,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        fields: Vec::new(),
        live: Vec::new(),
        retired: Vec::new(),
        seq: 0,
        warned_full: false,
    });
    // Every update leaves the registry consistent, so a poisoned lock is still usable.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn lines_of(addr: usize, size: usize) -> impl Iterator<Item = usize> {
    let first = addr & !(LINE - 1);
    let last = (addr + size.max(1) - 1) & !(LINE - 1);
    (first..=last).step_by(LINE)
}

impl Registry {
    fn copy(&self, l: &LiveLine, until: u64) -> LineRecord {
        let s = &TABLE[l.slot];
        let mut frames: Vec<(u32, u64)> = Vec::new();
        for t in &s.threads {
            for (f, r) in t.frames.iter().zip(&t.frame_reads) {
                let f = f.load(Relaxed);
                if f != 0 {
                    frames.push((f - 1, r.load(Relaxed)));
                }
            }
        }
        LineRecord {
            line: l.line,
            since: l.since,
            until,
            fields: self
                .fields
                .iter()
                .filter(|f| f.overlaps(l.line, LINE))
                .cloned()
                .collect(),
            owners: std::array::from_fn(|i| s.meta.owners[i].load(Relaxed)),
            rw: std::array::from_fn(|b| {
                std::array::from_fn(|w| {
                    std::array::from_fn(|op| s.threads[b].rw[w][op].load(Relaxed))
                })
            }),
            frames,
            hot: s
                .threads
                .iter()
                .map(|t| t.tally.record())
                .fold(HotRecord::default(), |a, b| HotRecord {
                    invalidations: a.invalidations + b.invalidations,
                    false_inv: a.false_inv + b.false_inv,
                    contended: a.contended + b.contended,
                    by_word: std::array::from_fn(|w| a.by_word[w] + b.by_word[w]),
                }),
            pair: s.pair.tally.record(),
            sample_every: sample_every(),
        }
    }

    /// Moves `line` out of the table into `retired` (unless nothing touched it).
    fn retire_line(&mut self, line: usize) {
        let Some(pos) = self.live.iter().position(|l| l.line == line) else {
            return;
        };
        self.seq += 1;
        let rec = self.copy(&self.live[pos], self.seq);
        let gone = self.live.swap_remove(pos);
        KEYS[gone.slot].store(TOMBSTONE, Release);
        if let Some(p) = self.live.iter().find(|l| l.line == line ^ LINE) {
            TABLE[p.slot].meta.partner.store(0, Relaxed);
        }
        if rec.rw.iter().flatten().flatten().all(|&n| n == 0) {
            return;
        }
        if self.retired.len() >= RETIRED_CAP {
            let drop_at = self
                .retired
                .iter()
                .position(|r| r.hot.invalidations < MIN_INVALIDATIONS)
                .unwrap_or(0);
            self.retired.remove(drop_at);
        }
        self.retired.push(rec);
    }

    /// Drops fields whose value is gone once no live line needs their name.
    fn prune(&mut self) {
        let live = &self.live;
        self.fields.retain(|f| {
            !f.gone || lines_of(f.addr, f.size).any(|l| live.iter().any(|x| x.line == l))
        });
    }

    /// The value at `[addr, addr + size)` is going away: its lines retire once no
    /// live field covers them.
    fn forget(&mut self, addr: usize, size: usize) {
        let mut lines = Vec::new();
        for f in self.fields.iter_mut().filter(|f| f.overlaps(addr, size)) {
            f.gone = true;
            lines.extend(lines_of(f.addr, f.size));
        }
        for line in lines {
            if !self
                .fields
                .iter()
                .any(|f| !f.gone && f.overlaps(line, LINE))
            {
                self.retire_line(line);
            }
        }
        self.prune();
    }

    fn insert_line(&mut self, line: usize) -> bool {
        if self.live.iter().any(|l| l.line == line) {
            return true;
        }
        let h = home(line);
        let Some(slot) = (0..PROBES)
            .map(|p| (h + p) & (MAX_LINES - 1))
            .find(|&i| matches!(KEYS[i].load(Relaxed), EMPTY_KEY | TOMBSTONE))
        else {
            return false;
        };
        let s = &TABLE[slot];
        s.reset();
        if let Some(p) = self.live.iter().find(|l| l.line == line ^ LINE) {
            s.meta.partner.store(p.slot as u32 + 1, Relaxed);
            TABLE[p.slot].meta.partner.store(slot as u32 + 1, Relaxed);
            // The block's history starts afresh with both halves watched.
            let even = if line & LINE == 0 { s } else { &TABLE[p.slot] };
            even.pair.reset();
        }
        self.seq += 1;
        self.live.push(LiveLine {
            line,
            slot,
            since: self.seq,
        });
        // Release: a thread that finds the key sees the zeroed slot.
        KEYS[slot].store(line, Release);
        true
    }
}

/// Registers `[addr, addr + size)` under `name`. A range overlapping an earlier one
/// replaces it: that memory now holds a new object.
pub(crate) fn register(addr: usize, size: usize, name: &str) {
    if !cfg!(feature = "enabled") {
        return;
    }
    let size = size.max(1);
    let mut r = registry();
    if SAMPLE_EVERY.load(Relaxed) == 0 {
        let every = std::env::var("YIELDPROF_WATCH_SAMPLE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_WATCH_SAMPLING);
        set_watch_sampling(every);
    }
    // What was counted on these lines belongs to whatever was watched there before.
    let lines: Vec<usize> = lines_of(addr, size).collect();
    for &l in &lines {
        r.retire_line(l);
    }
    r.fields.retain(|f| !f.overlaps(addr, size));
    r.prune();
    r.fields.push(Field {
        addr,
        size,
        name: name.to_string(),
        gone: false,
    });
    let inserted = lines.iter().all(|&l| r.insert_line(l));
    if !inserted && !r.warned_full {
        r.warned_full = true;
        eprintln!(
            "yieldprof: watch({name:?}): the table of {MAX_LINES} watched lines is full; \
             accesses to it are not tracked"
        );
    }
    ACTIVE.store(true, Relaxed);
}

/// Ends the watch of `[addr, addr + size)` (its object is going away); the lines it
/// leaves uncovered keep their counts for the report.
pub(crate) fn forget(addr: usize, size: usize) {
    if !cfg!(feature = "enabled") || !ACTIVE.load(Relaxed) {
        return;
    }
    if lines_of(addr, size).all(|l| lookup(l).is_none()) {
        return;
    }
    registry().forget(addr, size);
}

fn records() -> Vec<LineRecord> {
    let r = registry();
    let mut out = r.retired.clone();
    out.extend(r.live.iter().map(|l| r.copy(l, u64::MAX)));
    out
}

/// How a watched line (or 128-B block) is shared.
///
/// Each watched 64-B line keeps a two-entry history of the threads that touched it since
/// its last write, with the 8-B words each read and wrote. A tracked write by thread `T`
/// to word `w` while the history holds another thread `U` is an *invalidation*: *false*
/// when no such `U` touched `w` (padding would remove it; a reader spinning on another
/// word is such a victim), else *true*, and also *contended* when a `U` wrote `w`. With
/// `N` invalidations, a line is [`Quiet`](Verdict::Quiet) below [`MIN_INVALIDATIONS`];
/// [`False`](Verdict::False) when the false ones reach both `MIN_INVALIDATIONS` and
/// `N /` [`SHARE_DIVISOR`]; [`Mixed`](Verdict::Mixed) when the contended ones do too;
/// [`True`](Verdict::True) otherwise. Two watched lines of one 128-B block keep the
/// same history with the line as the word: [`AdjacentRisk`](Verdict::AdjacentRisk)
/// when the block passes the FALSE bounds and neither line is FALSE or MIXED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Verdict {
    /// Threads invalidate each other's copies of the line while touching different
    /// words: padding the fields apart removes those misses.
    False,
    /// False sharing, and one word written by several threads as well.
    Mixed,
    /// The two 64-B lines of one 128-B block ping-pong through the adjacent-line
    /// prefetcher: each line alone is fine, the pair is not.
    AdjacentRisk,
    /// Invalidations between threads that use the same word: communication or
    /// contention, which no layout removes.
    True,
    /// Fewer than [`MIN_INVALIDATIONS`] invalidations.
    Quiet,
}

impl Verdict {
    /// Whether padding would help: FALSE, MIXED and ADJACENT-RISK.
    pub fn is_suspicious(self) -> bool {
        matches!(
            self,
            Verdict::False | Verdict::Mixed | Verdict::AdjacentRisk
        )
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::False => "FALSE",
            Verdict::Mixed => "MIXED",
            Verdict::AdjacentRisk => "ADJACENT-RISK",
            Verdict::True => "TRUE",
            Verdict::Quiet => "quiet",
        })
    }
}

/// One thread's tracked accesses to one word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadAccess {
    /// Thread name (`thread-<n>` if unnamed; `other threads` for the pooled set).
    pub thread: String,
    /// Tracked reads (loads, failed compare-exchanges).
    pub reads: u64,
    /// Tracked writes (stores, swaps, `fetch_*`, successful compare-exchanges).
    pub writes: u64,
}

/// One 8-B word of a line (or block) and who used it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordAccess {
    /// Offset from the start of the line (of the block for ADJACENT-RISK).
    pub offset: usize,
    /// The watched field(s) on the word, e.g. `tail`, or `counters+8` inside a larger
    /// watched value.
    pub name: String,
    /// Per-thread counts, most accesses first.
    pub threads: Vec<ThreadAccess>,
    /// Invalidations caused by writes to this word.
    pub invalidations: u64,
}

/// A wait site that read the line inside its episodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpinningSite {
    /// The wait site's frame name.
    pub name: String,
    /// Tracked reads of the line inside its episodes.
    pub reads: u64,
}

/// The detector's finding for one watched line, or for a 128-B block with
/// [`Verdict::AdjacentRisk`]. [`Verdict`] states the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineVerdict {
    /// What the counts say.
    pub verdict: Verdict,
    /// Start of the line (of the block for ADJACENT-RISK).
    pub address: usize,
    /// 64, or 128 for a block.
    pub size: usize,
    /// Words that are watched or were accessed, by offset.
    pub words: Vec<WordAccess>,
    /// Tracked writes that took the line from another thread.
    pub invalidations: u64,
    /// Those of them whose victims had touched only other words.
    pub false_invalidations: u64,
    /// Those whose victims had written the same word.
    pub contended_invalidations: u64,
    /// Wait sites that spin on the line, most reads first.
    pub wait_sites: Vec<SpinningSite>,
    /// What to do about it.
    pub fix: String,
    /// 1 when every access was tracked, else the sampling rate.
    pub sample_every: u32,
}

fn classify(h: &HotRecord) -> Verdict {
    let passes = |n: u64| n >= MIN_INVALIDATIONS && n * SHARE_DIVISOR >= h.invalidations;
    if h.invalidations < MIN_INVALIDATIONS {
        Verdict::Quiet
    } else if passes(h.false_inv) && passes(h.contended) {
        Verdict::Mixed
    } else if passes(h.false_inv) {
        Verdict::False
    } else {
        Verdict::True
    }
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
fn name_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => "the fields".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn fix_text(verdict: Verdict, words: &[WordAccess], contended: &[String]) -> String {
    let names: Vec<String> = words
        .iter()
        .filter(|w| !w.threads.is_empty())
        .map(|w| w.name.clone())
        .collect();
    let pad = format!(
        "pad {} to 128 B, e.g. `crossbeam_utils::CachePadded`",
        name_list(&names)
    );
    match verdict {
        Verdict::False => pad,
        Verdict::Mixed => format!(
            "{pad}; {} written by several threads: shard it per thread or batch updates",
            name_list(contended)
        ),
        Verdict::AdjacentRisk => {
            format!("the adjacent-line prefetcher pairs these 64-B lines: {pad} (128-B aligned)")
        }
        Verdict::True => {
            "same-word sharing: padding cannot help; write less often (batch, shard)".into()
        }
        Verdict::Quiet => "nothing to do".into(),
    }
}

struct Names<'a> {
    profile: &'a Profile,
    frames: Vec<crate::base::site::FrameInfo>,
}

impl Names<'_> {
    fn thread(&self, serial: u64) -> String {
        self.profile
            .threads
            .iter()
            .find(|t| t.serial == serial)
            .map(|t| t.name.clone())
            .unwrap_or_else(|| format!("thread-{serial}"))
    }

    fn frame(&self, id: u32) -> Option<&crate::base::site::FrameInfo> {
        self.profile
            .frames
            .get(id as usize)
            .or_else(|| self.frames.get(id as usize))
    }
}

fn word_name(fields: &[Field], addr: usize) -> String {
    let names: Vec<String> = fields
        .iter()
        .filter(|f| f.overlaps(addr, WORD))
        .map(|f| {
            if f.addr >= addr && f.addr + f.size <= addr + WORD {
                f.name.clone()
            } else {
                format!("{}+{}", f.name, addr.saturating_sub(f.addr))
            }
        })
        .collect();
    if names.is_empty() {
        "?".into()
    } else {
        names.join("/")
    }
}

fn words_of(rec: &LineRecord, base: usize, names: &Names) -> Vec<WordAccess> {
    (0..WORDS)
        .filter_map(|w| {
            let addr = rec.line + w * WORD;
            let mut threads: Vec<ThreadAccess> = (0..BLOCKS)
                .filter(|&b| rec.rw[b][w] != [0, 0])
                .map(|b| ThreadAccess {
                    thread: match rec.owners.get(b) {
                        Some(&s) => names.thread(s),
                        None => "other threads".into(),
                    },
                    reads: rec.rw[b][w][0],
                    writes: rec.rw[b][w][1],
                })
                .collect();
            let watched = rec.fields.iter().any(|f| f.overlaps(addr, WORD));
            if threads.is_empty() && !watched {
                return None;
            }
            threads.sort_by_key(|t| std::cmp::Reverse(t.reads + t.writes));
            Some(WordAccess {
                offset: addr - base,
                name: word_name(&rec.fields, addr),
                threads,
                invalidations: rec.hot.by_word[w],
            })
        })
        .collect()
}

fn wait_sites(recs: &[&LineRecord], names: &Names) -> Vec<SpinningSite> {
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for (frame, reads) in recs.iter().flat_map(|r| r.frames.iter()) {
        if let Some(f) = names.frame(*frame) {
            *by_name.entry(f.name.clone()).or_default() += reads;
        }
    }
    let mut sites: Vec<SpinningSite> = by_name
        .into_iter()
        .map(|(name, reads)| SpinningSite { name, reads })
        .collect();
    sites.sort_by_key(|s| std::cmp::Reverse(s.reads));
    sites
}

fn line_verdict(rec: &LineRecord, names: &Names) -> LineVerdict {
    let verdict = classify(&rec.hot);
    let words = words_of(rec, rec.line, names);
    let contended: Vec<String> = words
        .iter()
        .filter(|w| w.threads.iter().filter(|t| t.writes > 0).count() > 1)
        .map(|w| w.name.clone())
        .collect();
    LineVerdict {
        verdict,
        address: rec.line,
        size: LINE,
        fix: fix_text(verdict, &words, &contended),
        words,
        invalidations: rec.hot.invalidations,
        false_invalidations: rec.hot.false_inv,
        contended_invalidations: rec.hot.contended,
        wait_sites: wait_sites(&[rec], names),
        sample_every: rec.sample_every,
    }
}

fn block_verdict(even: &LineRecord, odd: &LineRecord, names: &Names) -> Option<LineVerdict> {
    let h = HotRecord {
        contended: 0,
        ..even.pair
    };
    if classify(&h) != Verdict::False {
        return None;
    }
    let mut words = words_of(even, even.line, names);
    words.extend(words_of(odd, even.line, names));
    for w in &mut words {
        // Per-word invalidations mean little across two lines: show the block's, by line.
        w.invalidations = even.pair.by_word[w.offset / LINE];
    }
    Some(LineVerdict {
        verdict: Verdict::AdjacentRisk,
        address: even.line,
        size: BLOCK,
        fix: fix_text(Verdict::AdjacentRisk, &words, &[]),
        words,
        invalidations: h.invalidations,
        false_invalidations: h.false_inv,
        contended_invalidations: 0,
        wait_sites: wait_sites(&[even, odd], names),
        sample_every: even.sample_every,
    })
}

impl Profile {
    /// Every watched line with its verdict, suspicious ones (FALSE, MIXED,
    /// ADJACENT-RISK) first, then by invalidations. The detector's counters are read
    /// live, without stopping any thread; lines whose `Watched` values were dropped keep
    /// their last counts. [`Verdict`] states the rule and its thresholds.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use yieldprof::{Verdict, Watched};
    ///
    /// let counter: Box<Watched<AtomicU64>> = Box::new(Watched::new(0));
    /// yieldprof::watch(&*counter, "counter");
    /// counter.fetch_add(1, Ordering::Relaxed);
    /// let lines = yieldprof::snapshot().sharing();
    /// let line = lines.iter().find(|l| l.words.iter().any(|w| w.name == "counter")).unwrap();
    /// assert_eq!(line.verdict, Verdict::Quiet); // one thread: nothing is shared
    /// assert_eq!(line.words[0].threads[0].writes, 1);
    /// ```
    pub fn sharing(&self) -> Vec<LineVerdict> {
        let recs = records();
        let names = Names {
            profile: self,
            frames: if recs.is_empty() {
                Vec::new()
            } else {
                site::tables().0
            },
        };
        let mut out: Vec<LineVerdict> = recs.iter().map(|r| line_verdict(r, &names)).collect();
        for even in recs.iter().filter(|r| r.line % BLOCK == 0) {
            let odd = recs.iter().find(|o| {
                o.line == even.line + LINE && o.since < even.until && even.since < o.until
            });
            let Some(odd) = odd else { continue };
            let flagged = |line: usize| {
                out.iter().any(|v| {
                    v.address == line && matches!(v.verdict, Verdict::False | Verdict::Mixed)
                })
            };
            if flagged(even.line) || flagged(odd.line) {
                continue;
            }
            if let Some(v) = block_verdict(even, odd, &names) {
                out.push(v);
            }
        }
        out.sort_by_key(|v| {
            (
                !v.verdict.is_suspicious(),
                std::cmp::Reverse(v.invalidations),
            )
        });
        out
    }

    /// Frame ids of wait sites that spin on a FALSE or MIXED line.
    pub(crate) fn false_sharing_frames(&self) -> Vec<u32> {
        let recs = records();
        let mut ids: Vec<u32> = recs
            .iter()
            .filter(|r| matches!(classify(&r.hot), Verdict::False | Verdict::Mixed))
            .flat_map(|r| r.frames.iter().map(|&(f, _)| f))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The "False sharing" section of the summary; empty when nothing is watched.
    pub(crate) fn write_sharing(&self, s: &mut String) {
        use std::fmt::Write;
        let lines = self.sharing();
        if lines.is_empty() {
            return;
        }
        let every = lines.iter().map(|l| l.sample_every).max().unwrap_or(1);
        let _ = writeln!(
            s,
            "\nFalse sharing ({} watched lines, {})",
            lines.iter().filter(|l| l.size == LINE).count(),
            if every <= 1 {
                "every access tracked".to_string()
            } else {
                format!("1 in {every} accesses tracked")
            }
        );
        let _ = writeln!(
            s,
            "  rule: FALSE when >= {MIN_INVALIDATIONS} invalidations and >= 1/{SHARE_DIVISOR} \
             of them between different words"
        );
        let sites = self.sites();
        for l in &lines {
            let pct = percent(l.false_invalidations, l.invalidations);
            let _ = writeln!(
                s,
                "  {:<13} {} B at {:#x}: {} invalidations, {:.0}% false, {} contended",
                l.verdict, l.size, l.address, l.invalidations, pct, l.contended_invalidations
            );
            if !l.verdict.is_suspicious() {
                let names: Vec<&str> = l.words.iter().map(|w| w.name.as_str()).collect();
                let _ = writeln!(
                    s,
                    "{}",
                    cut(&format!("    fields: {}", names.join(", ")), WIDTH)
                );
                continue;
            }
            let _ = writeln!(
                s,
                "    {:>6}  {:<24} {:<24} {:>12} {:>12}",
                "offset", "field", "thread", "reads", "writes"
            );
            for w in &l.words {
                for (i, t) in w.threads.iter().enumerate() {
                    let (off, name) = if i == 0 {
                        (format!("+{}", w.offset), cut(&w.name, 24))
                    } else {
                        (String::new(), String::new())
                    };
                    let _ = writeln!(
                        s,
                        "    {:>6}  {:<24} {:<24} {:>12} {:>12}",
                        off,
                        name,
                        cut(&t.thread, 24),
                        t.reads,
                        t.writes
                    );
                }
                if w.threads.is_empty() {
                    let _ = writeln!(
                        s,
                        "    {:>6}  {:<24} (no tracked accesses)",
                        format!("+{}", w.offset),
                        cut(&w.name, 24)
                    );
                }
            }
            if l.wait_sites.is_empty() {
                let _ = writeln!(s, "    no wait site spins on it");
            }
            for w in &l.wait_sites {
                let rest = format!(
                    " ({} reads); cache misses there: {}",
                    w.reads,
                    misses_text(site_cache_misses(&sites, &w.name))
                );
                let room = WIDTH.saturating_sub("    spun on by ".len() + rest.chars().count());
                let _ = writeln!(s, "    spun on by {}{rest}", cut(&w.name, room.max(8)));
            }
            let _ = writeln!(s, "{}", wrap(&l.fix, "    fix: ", "         "));
        }
    }
}

/// Hardware cache misses counted in the wait site's episodes; `None` without a PMU.
fn site_cache_misses(sites: &[crate::model::profile::SiteStats], name: &str) -> Option<Count> {
    sites
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.counters.cache_misses)
        .filter(|c| c.value().is_some())
}

/// A wait site's hardware cache misses as the report shows them (`~` when estimated).
fn misses_text(misses: Option<Count>) -> String {
    match misses {
        Some(n) => n.to_string(),
        None => "n/a (no PMU)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u16 = 1;
    const B: u16 = 2;
    const C: u16 = 3;

    fn counts(h: &Hot) -> (u64, u64, u64) {
        let r = h.tally.record();
        (r.invalidations, r.false_inv, r.contended)
    }

    #[test]
    fn writes_by_two_threads_to_two_words_are_false_invalidations() {
        let h = Hot::new();
        for _ in 0..10 {
            h.observe(A, 0, true);
            h.observe(B, 1, true);
        }
        // The very first write finds nobody to invalidate.
        assert_eq!(counts(&h), (19, 19, 0));
        assert_eq!(classify(&h.tally.record()), Verdict::Quiet);
    }

    #[test]
    fn a_reader_spinning_on_another_word_is_a_false_victim() {
        let h = Hot::new();
        for _ in 0..40 {
            h.observe(B, 3, false);
            h.observe(B, 3, false);
            h.observe(A, 0, true);
        }
        assert_eq!(counts(&h), (40, 40, 0));
        assert_eq!(classify(&h.tally.record()), Verdict::False);
    }

    #[test]
    fn a_reader_of_the_written_word_makes_a_true_invalidation() {
        let h = Hot::new();
        for _ in 0..40 {
            h.observe(A, 1, true);
            h.observe(B, 1, false);
        }
        assert_eq!(counts(&h), (39, 0, 0));
        assert_eq!(classify(&h.tally.record()), Verdict::True);
    }

    #[test]
    fn one_word_written_by_two_threads_is_contended_true_sharing() {
        let h = Hot::new();
        for _ in 0..40 {
            h.observe(A, 0, true);
            h.observe(B, 0, true);
        }
        assert_eq!(counts(&h), (79, 0, 79));
        assert_eq!(classify(&h.tally.record()), Verdict::True);
    }

    #[test]
    fn private_words_next_to_a_contended_word_are_mixed() {
        let h = Hot::new();
        for _ in 0..40 {
            h.observe(A, 0, true);
            h.observe(B, 0, true);
            h.observe(A, 1, true);
            h.observe(B, 2, true);
        }
        let (inv, false_inv, contended) = counts(&h);
        assert_eq!(inv, 159);
        assert_eq!(false_inv, 119);
        assert_eq!(contended, 40);
        assert_eq!(classify(&h.tally.record()), Verdict::Mixed);
    }

    #[test]
    fn a_seqlock_read_by_one_thread_and_written_by_another_is_true() {
        // Writer: seq (word 0), data (word 1); reader: seq, data, seq.
        let h = Hot::new();
        for _ in 0..40 {
            h.observe(A, 0, true);
            h.observe(A, 1, true);
            h.observe(A, 0, true);
            h.observe(B, 0, false);
            h.observe(B, 1, false);
            h.observe(B, 0, false);
        }
        assert_eq!(counts(&h), (39, 0, 0));
        assert_eq!(classify(&h.tally.record()), Verdict::True);
    }

    #[test]
    fn a_thread_rereading_what_it_read_leaves_the_history_unchanged() {
        let h = Hot::new();
        h.observe(A, 0, true);
        h.observe(B, 1, false);
        let before = h.history.load(Relaxed);
        h.observe(B, 1, false);
        h.observe(A, 0, false);
        h.observe(B, 1, false);
        assert_eq!(h.history.load(Relaxed), before);
    }

    #[test]
    fn a_third_reader_waits_for_the_next_write() {
        let h = Hot::new();
        h.observe(A, 0, true);
        h.observe(B, 1, false);
        h.observe(C, 2, false);
        h.observe(A, 0, true);
        assert_eq!(counts(&h), (1, 1, 0));
    }

    #[test]
    fn long_fix_texts_wrap_within_the_summary_width() {
        let names: Vec<String> = (0..12).map(|i| format!("counters_of_worker_{i}")).collect();
        let fix = fix_text(Verdict::False, &[], &[]).replace("the fields", &name_list(&names));
        let s = wrap(&fix, "    fix: ", "         ");
        assert!(s.lines().count() > 1);
        assert!(s.lines().all(|l| l.chars().count() <= WIDTH), "{s}");
        assert!(s.lines().skip(1).all(|l| l.starts_with("         ")), "{s}");
        let words: Vec<&str> = s.split_whitespace().skip(1).collect();
        assert_eq!(words, fix.split(' ').collect::<Vec<_>>());
    }

    #[test]
    fn history_entries_round_trip() {
        let e = [
            Entry {
                tid: 0xfffe,
                read: 0x81,
                write: 0x7e,
            },
            Entry::wrote(7, 4),
        ];
        assert_eq!(decode(encode(e)), e);
        assert_eq!(tid16(1), 1);
        assert_eq!(tid16(0x1_0000), 1);
        assert_ne!(tid16(0xffff), 0);
    }

    #[test]
    fn slots_do_not_share_128_byte_blocks() {
        assert_eq!(std::mem::align_of::<Slot>(), 128);
        assert_eq!(std::mem::size_of::<Slot>() % 128, 0);
        assert_eq!(std::mem::size_of::<PerThread>(), 384);
        assert_eq!(std::mem::size_of::<Hot>(), 128);
    }

    #[test]
    fn sampling_gaps_average_the_rate_after_warm_up() {
        let s = Sampler {
            left: Cell::new(0),
            warm: Cell::new(3),
            rng: Cell::new(0),
        };
        assert_eq!([s.gap(16), s.gap(16), s.gap(16)], [1, 1, 1]);
        let gaps: Vec<u32> = (0..10_000).map(|_| s.gap(16)).collect();
        assert!(gaps.iter().all(|&g| (1..=31).contains(&g)));
        let mean = gaps.iter().map(|&g| g as f64).sum::<f64>() / gaps.len() as f64;
        assert!((14.0..18.0).contains(&mean), "mean gap {mean}");
    }
}
