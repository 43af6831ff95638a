//! The ids threads go by in line histories: 16 bits there, so they are lent to live
//! threads and given back when a thread exits. Up to 65 534 threads that access watched
//! lines may be alive at once without two sharing an id, however many came before.
//!
//! An id given back may be lent again while a history still holds it for the thread
//! that exited: the new thread then stands in for that entry. An exited thread holds no
//! copy of the line any more, so no invalidation of it is missed.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Shared by every thread past the 65 534 alive at once (which then cannot be told
/// apart from each other); 0 is the empty history entry.
const SHARED: u16 = u16::MAX;
const WORDS: usize = (1 << 16) / 64;

/// Bit `i` set: id `i` is lent. Ids 0 and `SHARED` are never lent.
static LENT: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
/// Where the next search starts: ids go round, so one given back is not reused at once.
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's id, 0 before its first tracked access. A `const` cell: read on
    /// every tracked access, from signal handlers too.
    static MINE: Cell<u16> = const { Cell::new(0) };
    /// Gives the id back when the thread exits.
    static LEASE: Lease = const { Lease };
}

struct Lease;

impl Drop for Lease {
    fn drop(&mut self) {
        give_back(MINE.replace(0));
    }
}

/// This thread's id in histories.
#[inline(always)]
pub(super) fn mine() -> u16 {
    match MINE.get() {
        0 => borrow(),
        id => id,
    }
}

#[cold]
fn borrow() -> u16 {
    let id = lend();
    MINE.set(id);
    // Registers the destructor; a thread already exiting keeps its id for good.
    let _ = LEASE.try_with(|_| ());
    id
}

/// An id for a thread other than the caller (one that hardware watchpoints see);
/// [`give_back`] it when that thread is gone.
pub(super) fn lend() -> u16 {
    take().unwrap_or(SHARED)
}

/// A free id, marked lent.
fn take() -> Option<u16> {
    let start = NEXT.fetch_add(1, Relaxed);
    for k in 0..WORDS {
        let w = (start + k) % WORDS;
        let mut bits = LENT[w].load(Relaxed);
        loop {
            let free = !(bits | reserved(w));
            if free == 0 {
                break;
            }
            let bit = free.trailing_zeros();
            match LENT[w].compare_exchange_weak(bits, bits | 1 << bit, Relaxed, Relaxed) {
                Ok(_) => return Some((w * 64) as u16 + bit as u16),
                Err(now) => bits = now,
            }
        }
    }
    None
}

/// The ids of word `w` that are never lent: 0 and `SHARED`.
fn reserved(w: usize) -> u64 {
    u64::from(w == 0) | u64::from(w == WORDS - 1) << 63
}

/// Ends the loan of `id` (a no-op for the reserved ones).
pub(super) fn give_back(id: u16) {
    if id != 0 && id != SHARED {
        LENT[id as usize / 64].fetch_and(!(1 << (id % 64)), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_lent_at_once_are_distinct_and_exclude_the_reserved_ones() {
        let ids: Vec<u16> = (0..1000).map(|_| take().unwrap()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000);
        assert!(ids.iter().all(|&id| id != 0 && id != SHARED));
        for id in ids {
            give_back(id);
        }
    }

    #[test]
    fn a_thread_keeps_one_id_while_it_lives() {
        assert_ne!(mine(), 0);
        assert_eq!(mine(), mine());
    }
}
