//! The hot-line table: which thread read and wrote which word of a watched line, recorded without a lock on every tracked access.

use super::*;
use crate::base::site::{self, FrameKind, THREAD_FRAME};
use crate::config;
use crate::record::thread;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed},
};

pub(super) const fn zeros<const N: usize>() -> [AtomicU64; N] {
    [const { AtomicU64::new(0) }; N]
}

/// Invalidations counted, by kind and by the word (the line, for a block) whose write
/// caused them.
pub(super) struct Tally {
    pub(super) invalidations: AtomicU64,
    pub(super) false_inv: AtomicU64,
    pub(super) contended: AtomicU64,
    pub(super) by_word: [AtomicU64; WORDS],
}

/// What an invalidation was: whether a victim needed the written word, and whether one
/// had written it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Invalidation {
    pub(super) needed: bool,
    pub(super) contended: bool,
}

/// One history: the threads that touched a line (or block) since its last write. Its
/// own tally serves blocks; a line's invalidations are tallied by each writer in its
/// own counters, so counting costs no shared read-modify-write.
#[repr(C, align(128))]
pub(crate) struct Hot {
    pub(super) history: AtomicU64,
    pub(super) tally: Tally,
}

/// Read-mostly: written when a line is registered and when a thread first touches it.
#[repr(C, align(128))]
pub(super) struct Meta {
    pub(super) owners: [AtomicU64; OWNED_THREADS],
    /// Table index + 1 of the other line of this 128-B block when it is watched too.
    pub(super) partner: AtomicU32,
}

/// One thread's counters on one line: only that thread writes them (except the pooled
/// set), and no other thread's share their 128-B block.
#[repr(C, align(128))]
pub(super) struct PerThread {
    pub(super) rw: [[AtomicU64; 2]; WORDS],
    pub(super) frames: [AtomicU32; FRAMES],
    pub(super) frame_reads: [AtomicU64; FRAMES],
    /// Invalidations this thread's writes caused.
    pub(super) tally: Tally,
}

#[repr(C)]
pub(super) struct LineSlot {
    pub(super) meta: Meta,
    pub(super) hot: Hot,
    /// The 128-B block's history; used in the slot of the even line of a watched pair.
    pub(super) pair: Hot,
    pub(super) threads: [PerThread; BLOCKS],
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

    pub(super) fn record(&self) -> HotRecord {
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

    pub(super) fn reset(&self) {
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
pub(super) struct Entry {
    pub(super) tid: u16,
    pub(super) read: u8,
    pub(super) write: u8,
}

impl Entry {
    const EMPTY: Entry = Entry {
        tid: 0,
        read: 0,
        write: 0,
    };

    pub(super) fn wrote(tid: u16, bit: u8) -> Entry {
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

pub(super) fn decode(h: u64) -> [Entry; 2] {
    [Entry::from_bits(h & 0xffff_ffff), Entry::from_bits(h >> 32)]
}

pub(super) fn encode(e: [Entry; 2]) -> u64 {
    e[0].bits() | e[1].bits() << 32
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

impl LineSlot {
    const fn new() -> LineSlot {
        LineSlot {
            meta: Meta::new(),
            hot: Hot::new(),
            pair: Hot::new(),
            threads: [const { PerThread::new() }; BLOCKS],
        }
    }

    pub(super) fn reset(&self) {
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
pub(super) fn add(a: &AtomicU64, owned: bool) {
    if owned {
        a.store(a.load(Relaxed).wrapping_add(1), Relaxed);
    } else {
        a.fetch_add(1, Relaxed);
    }
}

// Both live in .bss: zeroed pages cost nothing until touched.
pub(super) static KEYS: [AtomicUsize; MAX_LINES] =
    [const { AtomicUsize::new(EMPTY_KEY) }; MAX_LINES];
pub(super) static TABLE: [LineSlot; MAX_LINES] = [const { LineSlot::new() }; MAX_LINES];
/// Set by the first `watch`: until then every access returns after one load.
pub(super) static ACTIVE: AtomicBool = AtomicBool::new(false);
/// 0 until read from `YIELDPROF_WATCH_SAMPLE`; 1 tracks every access.
pub(super) static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(0);

pub(super) fn home(line: usize) -> usize {
    ((line / LINE) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize >> 32 & (MAX_LINES - 1)
}

/// The slot watching `line`, if any: a few loads of a read-mostly array, no lock.
#[inline]
pub(super) fn lookup(line: usize) -> Option<usize> {
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

pub(super) struct Sampler {
    pub(super) left: Cell<u32>,
    pub(super) warm: Cell<u32>,
    pub(super) rng: Cell<u32>,
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
    pub(super) fn gap(&self, every: u32) -> u32 {
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
pub(super) fn sampled() -> bool {
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

pub(super) fn is_wait_frame(frame: u32) -> bool {
    WAIT_FRAMES
        .try_with(|known| {
            // Borrowed already: this access interrupted the refresh below (a signal
            // handler); it does not count as a wait-site read.
            let Ok(mut known) = known.try_borrow_mut() else {
                return false;
            };
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

/// Where one tracked access landed: its line's slot, word, and the counter set of the
/// thread that made it, with the access already counted there.
struct Access {
    slot: &'static LineSlot,
    line: usize,
    word: usize,
    counts: &'static PerThread,
    owned: bool,
}

impl Access {
    /// `i`: the slot `lookup` found for `addr`'s line.
    fn count(i: usize, addr: usize, serial: u64, write: bool) -> Access {
        let line = addr & !(LINE - 1);
        let slot = &TABLE[i];
        let word = (addr % LINE) / WORD;
        let b = slot.block_of(serial);
        let owned = b < OWNED_THREADS;
        let counts = &slot.threads[b];
        add(&counts.rw[word][write as usize], owned);
        Access {
            slot,
            line,
            word,
            counts,
            owned,
        }
    }

    /// The 128-B block's history, when both of its lines are watched.
    fn observe_pair(&self, tid: u16, write: bool) {
        let partner = self.slot.meta.partner.load(Relaxed);
        if partner != 0 {
            let half = (self.line / LINE) & 1;
            let even = if half == 0 {
                self.slot
            } else {
                &TABLE[partner as usize - 1]
            };
            even.pair.observe(tid, half, write);
        }
    }
}

#[inline(never)]
pub(super) fn track(addr: usize, write: bool) {
    let Some(i) = lookup(addr & !(LINE - 1)) else {
        return;
    };
    let Some((serial, frame)) = thread::current_frame() else {
        return;
    };
    let a = Access::count(i, addr, serial, write);
    let (word, counts, owned) = (a.word, a.counts, a.owned);
    if !write && frame != THREAD_FRAME && is_wait_frame(frame) {
        counts.note_frame(frame, owned);
    }
    let tid = ids::mine();
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
        if let Some(inv) = a.slot.hot.observe_with(tid, 1 << word, write, pending) {
            counts.tally.count(word, inv, owned);
        }
        PENDING.set((0, 0));
    }
    a.observe_pair(tid, write);
}

/// A write to `addr` made by another thread, seen by a hardware watchpoint
/// (`sharing::plain`): that thread's serial and history id are given, since the
/// calling thread is not the one that wrote.
pub(super) fn track_write_of(addr: usize, serial: u64, tid: u16) {
    if !cfg!(feature = "enabled") || !config::enabled() {
        return;
    }
    let Some(i) = lookup(addr & !(LINE - 1)) else {
        return;
    };
    let a = Access::count(i, addr, serial, true);
    if let Some(inv) = a.slot.hot.observe_with(tid, 1 << a.word, true, 0) {
        a.counts.tally.count(a.word, inv, a.owned);
    }
    a.observe_pair(tid, true);
}

/// Sets the sampling rate of watched accesses: `1` tracks every one, `n` one in `n` on
/// average after each thread's first 10 000 (default
/// 64, or `YIELDPROF_WATCH_SAMPLE=n`, read at the first
/// [`watch`](crate::watch)). Bounds of the rule apply to tracked events, so a lower
/// rate needs a longer run for a verdict.
///
/// ```
/// yieldprof::sharing::set_watch_sampling(16);
/// yieldprof::sharing::set_watch_sampling(1);
/// ```
pub fn set_watch_sampling(every: u32) {
    SAMPLE_EVERY.store(every.max(1), Relaxed);
}

/// The sampling rate in force: 1 = every access.
pub(crate) fn sample_every() -> u32 {
    SAMPLE_EVERY.load(Relaxed).max(1)
}
