//! Each thread's lock figures: acquisitions, contended ones and their waits, and
//! sampled hold times per acquisition site (a table only its thread writes, read by
//! reports), and the stack of locks it holds now, for the lock-order graph. No lock
//! and no allocation after the thread's first acquisition.

use crate::base::arena::bump;
use crate::base::clock;
use crate::base::fork::ForkMutex;
use crate::model::histogram::AtomicDurations;
use crate::sync::contention;
use crate::sync::order::{self, Held};
use crate::sync::state::{key_of, LockState};
use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Hold times are timed for the first acquisition at a site on a thread, then for one
/// in this many: two clock reads on every hold would cost more than the lock. A power
/// of two, so the slot's acquisition count picks the samples with a mask.
pub const HOLD_SAMPLE_EVERY: u32 = 16;

/// Acquisition sites a thread's table keeps; acquisitions at more are only counted.
const SLOTS: usize = 64;
/// Locks a thread holds at once that the lock-order graph sees.
const HELD: usize = 8;
/// Lock-order pairs a thread remembers having reported.
const SEEN: usize = 64;

/// One acquisition site's figures on one thread.
#[derive(Default)]
pub(crate) struct Slot {
    /// The site's key (0: free slot).
    pub(crate) site: AtomicUsize,
    pub(crate) acquisitions: AtomicU64,
    pub(crate) contended: AtomicU64,
    /// Ticks the contended acquisitions waited.
    pub(crate) waited: AtomicU64,
    /// Sampled hold times, ticks, and their sum (the histogram keeps no sums).
    pub(crate) holds: AtomicDurations,
    pub(crate) held: AtomicU64,
}

/// A thread's slots. Tables are never freed: a thread that exits leaves its table to
/// the next new thread, and counts keep adding up in it.
pub(crate) struct Table {
    pub(crate) slots: [Slot; SLOTS],
    /// Acquisitions at sites the table had no room for.
    pub(crate) unplaced: AtomicU64,
}

impl Table {
    /// The slot of `site`, claimed if new; `SLOTS` when the table is full.
    #[inline(always)]
    fn find(&self, site: usize) -> usize {
        let start = (site >> 3) ^ (site >> 11);
        for i in 0..SLOTS {
            let at = (start + i) % SLOTS;
            let s = self.slots[at].site.load(Relaxed);
            if s == site {
                return at;
            }
            if s == 0 {
                self.slots[at].site.store(site, Relaxed);
                return at;
            }
        }
        SLOTS
    }
}

struct Tables {
    all: Vec<&'static Table>,
    free: Vec<&'static Table>,
}

static TABLES: ForkMutex<Tables> = ForkMutex::new(
    Tables {
        all: Vec::new(),
        free: Vec::new(),
    },
    |_| {},
);

/// Every thread's table, live or left by an exited thread.
pub(crate) fn tables() -> Vec<&'static Table> {
    TABLES.lock().all.clone()
}

/// How an acquisition went.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum How {
    /// A blocking acquisition that found the lock free.
    Free,
    /// A `try_lock` that succeeded: it cannot deadlock, so it adds no lock-order edge.
    Tried,
    /// A blocking acquisition that waited this many ticks.
    Waited(u64),
}

/// What a guard keeps to release its lock's bookkeeping.
#[derive(Clone, Copy)]
pub(crate) struct Token {
    /// The acquisition site's key; 0: nothing recorded (recording off).
    site: usize,
    class: usize,
    slot: u16,
    /// The tick the hold began, when it is sampled; 0 otherwise.
    start: u64,
}

impl Token {
    pub(crate) const OFF: Token = Token {
        site: 0,
        class: 0,
        slot: 0,
        start: 0,
    };
}

struct Local {
    table: Cell<Option<&'static Table>>,
    /// The last site acquired and its slot: a loop takes one lock at one line.
    last: Cell<(usize, usize)>,
    held: [Cell<Held>; HELD],
    /// Locks held now; those past `HELD` are counted, not kept.
    depth: Cell<usize>,
    seen: [Cell<u64>; SEEN],
}

thread_local! {
    // No `Drop`: a const thread-local without one is a plain TLS access, with no
    // state to check. The table goes back with `GIVE_BACK`, touched once per thread.
    static LOCAL: Local = const {
        Local {
            table: Cell::new(None),
            last: Cell::new((0, 0)),
            held: [const { Cell::new(Held::NONE) }; HELD],
            depth: Cell::new(0),
            seen: [const { Cell::new(0) }; SEEN],
        }
    };
    static GIVE_BACK: GiveBack = const { GiveBack(Cell::new(None)) };
}

/// Returns the thread's table to the free list when the thread exits.
struct GiveBack(Cell<Option<&'static Table>>);

impl Drop for GiveBack {
    fn drop(&mut self) {
        if let Some(t) = self.0.get() {
            TABLES.lock().free.push(t);
        }
    }
}

/// Records an acquisition of `lock` at `site` and makes the site its holder.
#[inline(always)]
pub(crate) fn acquired(lock: &LockState, site: &'static Location<'static>, how: How) -> Token {
    let key = key_of(site);
    lock.set_holder(key);
    local().acquired(lock.class_key(), key, how)
}

/// Records the release of a hold recorded as `t`. Call it before the lock is released.
#[inline(always)]
pub(crate) fn released(lock: &LockState, t: Token) {
    if t.site == 0 {
        return;
    }
    if let Some(c) = lock.contention() {
        if c.has_waiters() {
            contention::release_to_waiters(lock, c, t.site);
        }
    }
    local().released(t);
}

/// The thread's `Local`. `LocalKey::with` around the whole bookkeeping was kept out of
/// line by the compiler (a call and a closure per acquisition and per release); with
/// a closure that only takes the address it is a plain TLS access.
#[inline(always)]
fn local() -> &'static Local {
    let l: *const Local = LOCAL.with(|l| l as *const Local);
    // SAFETY: `LOCAL` is a const thread-local without `Drop`: its storage is the
    // thread's TLS block, valid while the thread runs, and only this thread reads it
    // (the reference never leaves this module's callers on this thread).
    unsafe { &*l }
}

impl Local {
    #[inline(always)]
    fn acquired(&self, class: usize, site: usize, how: How) -> Token {
        let table = match self.table.get() {
            Some(t) => t,
            None => self.adopt(),
        };
        let slot = match self.last.get() {
            (last, slot) if last == site => slot,
            _ => {
                let slot = table.find(site);
                self.last.set((site, slot));
                slot
            }
        };
        let mut start = 0;
        match table.slots.get(slot) {
            Some(s) => {
                // The count before this acquisition picks the sampled holds: the
                // first, then one in `HOLD_SAMPLE_EVERY`.
                let before = s.acquisitions.load(Relaxed);
                s.acquisitions.store(before.wrapping_add(1), Relaxed);
                if let How::Waited(ticks) = how {
                    bump(&s.contended, 1);
                    bump(&s.waited, ticks);
                }
                if before % u64::from(HOLD_SAMPLE_EVERY) == 0 {
                    start = clock::now();
                }
            }
            None => bump(&table.unplaced, 1),
        }
        let depth = self.depth.get();
        if depth > 0 && how != How::Tried {
            self.order(Held { class, site }, depth);
        }
        if let Some(h) = self.held.get(depth) {
            h.set(Held { class, site });
        }
        self.depth.set(depth + 1);
        Token {
            site,
            class,
            slot: slot as u16,
            start,
        }
    }

    #[inline(always)]
    fn released(&self, t: Token) {
        if t.start != 0 {
            self.record_hold(t);
        }
        let depth = self.depth.get();
        let top = depth.wrapping_sub(1);
        let this = Held {
            class: t.class,
            site: t.site,
        };
        // Guards usually drop in the reverse order of their locks.
        if top < HELD && self.held[top].get() == this {
            self.depth.set(top);
        } else {
            self.release_out_of_order(this, depth);
        }
    }

    /// A sampled hold ends: out of line, so that the other 15 in 16 releases inline
    /// into the guard's drop.
    #[cold]
    #[inline(never)]
    fn record_hold(&self, t: Token) {
        if let Some(table) = self.table.get() {
            let held = clock::now().saturating_sub(t.start);
            let slot = &table.slots[usize::from(t.slot)];
            slot.holds.record(held);
            bump(&slot.held, held);
        }
    }

    /// A guard dropped before a guard taken after it: removed where it is.
    #[cold]
    #[inline(never)]
    fn release_out_of_order(&self, this: Held, depth: usize) {
        let kept = depth.min(HELD);
        if let Some(i) = (0..kept).rev().find(|&i| self.held[i].get() == this) {
            for j in i..kept - 1 {
                self.held[j].set(self.held[j + 1].get());
            }
        }
        self.depth.set(depth.saturating_sub(1));
    }

    /// The thread's first acquisition: a table of its own, or one an exited thread left.
    #[cold]
    #[inline(never)]
    fn adopt(&self) -> &'static Table {
        let mut tables = TABLES.lock();
        let t = tables.free.pop().unwrap_or_else(|| {
            let t: &'static Table = Box::leak(Box::new(Table {
                slots: std::array::from_fn(|_| Slot::default()),
                unplaced: AtomicU64::new(0),
            }));
            tables.all.push(t);
            t
        });
        self.table.set(Some(t));
        // A thread already past its thread-locals' destructors keeps the table.
        let _ = GIVE_BACK.try_with(|g| g.0.set(Some(t)));
        t
    }

    /// `taken` is acquired while the thread holds `depth` locks: each pair of classes
    /// not seen on this thread yet goes to the graph.
    #[cold]
    #[inline(never)]
    fn order(&self, taken: Held, depth: usize) {
        for h in self.held[..depth.min(HELD)].iter().map(Cell::get) {
            if h.class == taken.class {
                continue;
            }
            let pair =
                ((h.class as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ taken.class as u64) | 1;
            let seen = &self.seen[(pair as usize >> 3) % SEEN];
            if seen.get() != pair {
                seen.set(pair);
                order::add_edge(h, taken);
            }
        }
    }
}
