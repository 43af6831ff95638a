//! The hot-line table: which thread read and wrote which bytes of a watched line, recorded without a lock on every tracked access.

use super::history::{access, has_whole, with_access, Entry};
use super::*;
use crate::base::clock;
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

/// Invalidations counted, by kind and by the 4-B granule (the line, for a block) where
/// the write that caused them starts.
pub(super) struct Tally {
    pub(super) invalidations: AtomicU64,
    pub(super) false_inv: AtomicU64,
    pub(super) contended: AtomicU64,
    pub(super) by_granule: [AtomicU64; GRANULES],
}

/// What an invalidation was: whether a victim needed the written bytes, and whether one
/// had written them too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Invalidation {
    pub(super) needed: bool,
    pub(super) contended: bool,
}

/// One history: the threads that touched a line (or block) since its last write, one
/// packed [`Entry`] a word. Its own tally serves blocks; a line's invalidations are
/// tallied by each writer in its own counters, so counting costs no shared
/// read-modify-write.
#[repr(C, align(128))]
pub(crate) struct Hot {
    pub(super) history: [AtomicU64; 2],
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
    /// Tracked reads and writes, by the granule where each access starts.
    pub(super) rw: [[AtomicU64; 2]; GRANULES],
    /// Ticks of this thread's first and (to within `TIME_EVERY` accesses) last tracked
    /// access to the line: how long it overlapped the others.
    pub(super) first: AtomicU64,
    pub(super) last: AtomicU64,
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
            by_granule: zeros(),
        }
    }

    fn all(&self) -> impl Iterator<Item = &AtomicU64> {
        [&self.invalidations, &self.false_inv, &self.contended]
            .into_iter()
            .chain(&self.by_granule)
    }

    pub(super) fn count(&self, granule: usize, i: Invalidation, owned: bool) {
        add(&self.invalidations, owned);
        add(&self.by_granule[granule], owned);
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
            by_granule: std::array::from_fn(|i| self.by_granule[i].load(Relaxed)),
        }
    }
}

impl Hot {
    pub(crate) const fn new() -> Hot {
        Hot {
            history: zeros(),
            tally: Tally::new(),
        }
    }

    pub(super) fn reset(&self) {
        for h in &self.history {
            h.store(0, Relaxed);
        }
        for a in self.tally.all() {
            a.store(0, Relaxed);
        }
    }

    /// Applies one tracked access by thread `tid` (never 0) to "byte" `bit` (below
    /// `GRANULES`), counting an invalidation in this history's own tally under `bit`. A
    /// block's history passes its line (0 or 1).
    pub(crate) fn observe(&self, tid: u16, bit: usize, write: bool) {
        if let Some(i) = self.observe_with(tid, (1 << bit, 0), write, 0) {
            self.tally.count(bit, i, false);
        }
    }

    /// Whether [`Hot::observe_with`] would leave the history as it is, in the common
    /// case, read off the packed words: this thread again, on whole granules it already
    /// has (with any pending read inside them), and nobody else in. `false` means "maybe
    /// not".
    #[inline(always)]
    fn unchanged(&self, tid: u16, (mask, whole): (u64, u16), write: bool, pending: u64) -> bool {
        if whole == 0 || pending & !mask != 0 {
            return false;
        }
        let (w0, w1) = (self.history[0].load(Relaxed), self.history[1].load(Relaxed));
        let (t0, t1) = (w0 as u16, w1 as u16);
        let own = if t0 == tid && t1 == 0 {
            w0
        } else if t1 == tid && t0 == 0 {
            w1
        } else {
            return false;
        };
        has_whole(own, whole, write)
    }

    /// One tracked access (`access` from [`access`]): the packed check inline, the full
    /// one in a call when that says "maybe".
    #[inline(always)]
    pub(super) fn apply(
        &self,
        tid: u16,
        access: (u64, u16),
        write: bool,
        pending: u64,
    ) -> Option<Invalidation> {
        if self.unchanged(tid, access, write, pending) {
            return None;
        }
        self.observe_with(tid, access, write, pending)
    }

    /// The history part of [`Hot::observe`], for `access` (bytes, whole granules), with
    /// `pending`: bytes this thread read earlier and has not published. Only the entries
    /// it needs are unpacked: other threads' on an invalidation, the thread's own when
    /// the access is not made of whole granules.
    pub(super) fn observe_with(
        &self,
        tid: u16,
        access: (u64, u16),
        write: bool,
        pending: u64,
    ) -> Option<Invalidation> {
        // Scalars, not arrays and iterators: those went through the stack and stalled
        // on store forwarding, a third of this function's time.
        let (w0, w1) = (self.history[0].load(Relaxed), self.history[1].load(Relaxed));
        let (t0, t1) = (w0 as u16, w1 as u16);
        let other = |t: u16| t != 0 && t != tid;
        let own = if t0 == tid {
            w0
        } else if t1 == tid {
            w1
        } else {
            0
        };
        let mut invalidation = None;
        let (n0, n1) = if write {
            if other(t0) || other(t1) {
                let mut needed = false;
                let mut contended = false;
                for w in [w0, w1] {
                    if other(w as u16) {
                        let e = Entry::unpack(w);
                        needed |= e.touched() & access.0 != 0;
                        contended |= e.write & access.0 != 0;
                    }
                }
                invalidation = Some(Invalidation { needed, contended });
                // Reads before this write no longer matter: the history restarts.
                (with_access(0, tid, access, true, 0), 0)
            } else {
                (with_access(own, tid, access, true, pending), 0)
            }
        } else if own != 0 {
            let mine = with_access(own, tid, access, false, pending);
            if t0 == tid {
                (mine, w1)
            } else {
                (w0, mine)
            }
        } else if t0 == 0 {
            (with_access(0, tid, access, false, pending), w1)
        } else if t1 == 0 {
            (w0, with_access(0, tid, access, false, pending))
        } else {
            // Two other threads are already in: the next write counts anyway.
            return None;
        };
        // Plain stores, not a compare-exchange: a locked instruction would stall this
        // thread for the whole transfer of the line, which the program's own plain
        // loads and stores mostly hide. Two threads updating at the same instant may
        // lose one update, or leave the two entries of different updates; each entry is
        // one word, so it is always one thread's own accesses. The history is a model
        // of the order, not a lock.
        if n0 != w0 {
            self.history[0].store(n0, Relaxed);
        }
        if n1 != w1 {
            self.history[1].store(n1, Relaxed);
        }
        invalidation
    }
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
            rw: [const { zeros() }; GRANULES],
            first: AtomicU64::new(0),
            last: AtomicU64::new(0),
            frames: [const { AtomicU32::new(0) }; FRAMES],
            frame_reads: zeros(),
            tally: Tally::new(),
        }
    }

    fn reset(&self) {
        let times = [&self.first, &self.last];
        let counts = self.rw.iter().flatten().chain(&self.frame_reads);
        for a in counts.chain(self.tally.all()).chain(times) {
            a.store(0, Relaxed);
        }
        for f in &self.frames {
            f.store(0, Relaxed);
        }
    }

    /// Moves this thread's first and last access times on, at its `n`th tracked access
    /// to a granule: reading the clock on every access would cost more than the rest.
    #[inline]
    fn note_time(&self, n: u64, owned: bool) {
        if n % TIME_EVERY != 1 {
            return;
        }
        let now = clock::now();
        if owned {
            if self.first.load(Relaxed) == 0 {
                self.first.store(now, Relaxed);
            }
            self.last.store(now, Relaxed);
        } else {
            let _ = self.first.compare_exchange(0, now, Relaxed, Relaxed);
            self.last.fetch_max(now, Relaxed);
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
/// is shared, so it needs the read-modify-write. Returns the new count.
#[inline(always)]
pub(super) fn add(a: &AtomicU64, owned: bool) -> u64 {
    if owned {
        let n = a.load(Relaxed).wrapping_add(1);
        a.store(n, Relaxed);
        n
    } else {
        a.fetch_add(1, Relaxed).wrapping_add(1)
    }
}

// Both live in .bss: zeroed pages cost nothing until touched.
pub(super) static KEYS: [AtomicUsize; MAX_LINES] =
    [const { AtomicUsize::new(EMPTY_KEY) }; MAX_LINES];
pub(super) static TABLE: [LineSlot; MAX_LINES] = [const { LineSlot::new() }; MAX_LINES];
/// Set by the first `watch`: until then every access returns after one load.
pub(super) static ACTIVE: AtomicBool = AtomicBool::new(false);
pub(super) fn home(line: usize) -> usize {
    ((line / LINE) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize >> 32 & (MAX_LINES - 1)
}

/// The slot watching `line`, if any: a few loads of a read-mostly array, no lock.
#[inline(always)]
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

thread_local! {
    /// Reads of granules this thread writes, not yet in a history: slot + 1 (0 = none)
    /// and the bytes read.
    static PENDING: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
    /// Which frame ids are wait sites, as far as this thread has needed to know.
    static WAIT_FRAMES: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
}

/// The hot path: one access of `size` bytes at `addr`, a write or a read. Accesses
/// through `Watched` atomics come here, and any other source of accesses (hardware
/// watchpoints) can: sizes are clamped to 1..=16 B, an access that straddles two lines
/// counts on both.
#[inline(always)]
pub(crate) fn record_access(addr: usize, size: usize, write: bool) {
    if !ACTIVE.load(Relaxed) || !config::enabled() {
        return;
    }
    if sampled() {
        track(addr, size, write);
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

#[inline(never)]
pub(super) fn track(addr: usize, size: usize, write: bool) {
    let size = size.clamp(1, MAX_ACCESS);
    let offset = addr % LINE;
    if offset + size <= LINE {
        track_line(addr - offset, offset, size, write);
    } else {
        track_straddling(addr - offset, offset, size, write);
    }
}

/// An access that starts on `line` and ends on the next (plain data, unaligned).
#[cold]
#[inline(never)]
fn track_straddling(line: usize, offset: usize, size: usize, write: bool) {
    track_line(line, offset, LINE - offset, write);
    track_line(line + LINE, 0, offset + size - LINE, write);
}

/// One access to bytes `[offset, offset + len)` of `line`.
#[inline(always)]
fn track_line(line: usize, offset: usize, len: usize, write: bool) {
    let Some(i) = lookup(line) else { return };
    let Some((serial, frame)) = thread::current_frame() else {
        return;
    };
    let slot = &TABLE[i];
    let granule = offset / GRANULE;
    let b = slot.block_of(serial);
    let owned = b < OWNED_THREADS;
    let counts = &slot.threads[b];
    let n = add(&counts.rw[granule][write as usize], owned);
    counts.note_time(n, owned);
    if !write && frame != THREAD_FRAME && is_wait_frame(frame) {
        counts.note_frame(frame, owned);
    }
    let tid = ids::mine();
    let (mask, whole) = access(offset, len);
    let (pending_slot, pending) = PENDING.get();
    let pending = if pending_slot == i as u32 + 1 {
        pending
    } else {
        if pending_slot != 0 {
            // A read never invalidates: nothing to count.
            TABLE[pending_slot as usize - 1]
                .hot
                .observe_with(tid, (0, 0), false, pending);
        }
        0
    };
    // A read of a granule this thread writes is typically followed by its write (a
    // load and store of its own index, a CAS loop): it waits, unpublished and without
    // touching the shared history, for the thread's next access, which then does one
    // shared write for both.
    if !write && owned && counts.rw[granule][1].load(Relaxed) > 0 {
        PENDING.set((i as u32 + 1, pending | mask));
    } else {
        if let Some(inv) = slot.hot.apply(tid, (mask, whole), write, pending) {
            counts.tally.count(granule, inv, owned);
        }
        PENDING.set((0, 0));
    }
    observe_pair(slot, line, tid, write);
}

/// The 128-B block's history, when both of its lines are watched.
#[inline(always)]
fn observe_pair(slot: &LineSlot, line: usize, tid: u16, write: bool) {
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

/// A write of `len` bytes at `addr` made by another thread, seen by a hardware
/// watchpoint (`sharing::plain`): that thread's serial and history id are given, since
/// the calling thread is not the one that wrote. Its counters are updated with atomic
/// adds: the writer may track `Watched` accesses of its own at the same time.
pub(super) fn track_write_of(addr: usize, len: usize, serial: u64, tid: u16) {
    if !config::enabled() {
        return;
    }
    let offset = addr % LINE;
    let line = addr - offset;
    let Some(i) = lookup(line) else { return };
    let slot = &TABLE[i];
    let granule = offset / GRANULE;
    let counts = &slot.threads[slot.block_of(serial)];
    add(&counts.rw[granule][1], false);
    // Hits are few (a few hundred a second): each moves the times, so the time two
    // threads wrote together, which the verdict's rate divides by, is not cut short.
    counts.note_time(1, false);
    let len = len.clamp(1, LINE - offset);
    if let Some(inv) = slot.hot.apply(tid, access(offset, len), true, 0) {
        counts.tally.count(granule, inv, false);
    }
    observe_pair(slot, line, tid, true);
}
