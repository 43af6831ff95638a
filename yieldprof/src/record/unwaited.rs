//! Counting the episodes that return without waiting: one bump through the thread's
//! direct-mapped cache (`Lazy::unwaited`) into its `ThreadData`.
//!
//! A thread that has not registered yet (its first episodes all returned without
//! waiting) keeps their counts in a small table of its own (`Lazy::early_counts`, which
//! the cache points at as it would at the `ThreadData`'s) instead of registering:
//! registering costs 5–15 µs (its counters' baseline, the timeline's mapping), and an
//! annotated lock's first uncontended acquire on a thread paid it inside the lock, at
//! its return. 1000 threads locking a `spin` mutex once each ran 200–1000× slower: the
//! holder, preempted in those µs, waited behind every spinner's time slice. The table
//! goes into the thread's `ThreadData` when it registers (its first wait, a report made
//! on it), or at its exit, whichever comes first (set up then with no timeline: a
//! thread that never waited has none to keep). (A child forked by a thread that held
//! early counts starts with them: its reports subtract only a registered thread's
//! counts at the fork.)

use crate::base::arena::bump;
use crate::record::open::{self, site_of, Lazy, UNWAITED_CACHE};
use crate::record::thread;
use std::sync::atomic::compiler_fence;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// The cache entry of the site at `key`, from its address (a multiplicative hash):
/// unlike the site's number, no first-use path inlined into every annotated fn.
#[inline(always)]
fn cache_index(key: usize) -> usize {
    const _: () = assert!(UNWAITED_CACHE.is_power_of_two());
    ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - UNWAITED_CACHE.trailing_zeros()))
        as usize
}

/// One more episode of the site at `key` returned without waiting.
#[inline(always)]
pub(crate) fn count(z: &Lazy, key: usize) {
    let i = cache_index(key);
    if z.unwaited[i].get() == key {
        let count = z.unwaited_counts[i].get();
        // SAFETY: the address of a count in this thread's `ThreadData`, which lives
        // until the thread's `Local` drops, and that clears the cache first; or in its
        // `Lazy` (early), which lives as long as the thread.
        bump(unsafe { &*(count as *const AtomicU64) }, 1);
    } else {
        count_slow(z, key);
    }
}

#[cold]
#[inline(never)]
fn count_slow(z: &Lazy, key: usize) {
    if !open::registered() {
        // Its exit must find the table: the destructor is registered first, since
        // that may allocate, and an allocator that calls an annotated fn back may set
        // the thread up (and empty the table) meanwhile. Not after the destructor ran
        // (another destructor's episode): nothing would find the table.
        let exit_ahead = z.holds_early() || EXIT.try_with(|_| ()).is_ok();
        if let Some(count) = (exit_ahead && !open::registered())
            .then(|| z.early_count(key))
            .flatten()
        {
            return cache(z, key, count);
        }
    }
    thread::enter(|l| match l.data.unwaited.entry(site_of(key)) {
        Some(u) => cache(z, key, &u.count),
        None => bump(&l.data.overflowed, 1),
    });
}

/// Counts one at `count` and makes it the cache's entry for `key`.
fn cache(z: &Lazy, key: usize, count: &AtomicU64) {
    bump(count, 1);
    // A signal handler's episode may read the entry between these stores: it never
    // sees a site with another's count.
    let i = cache_index(key);
    z.unwaited[i].set(0);
    compiler_fence(SeqCst);
    z.unwaited_counts[i].set(count as *const AtomicU64 as usize);
    compiler_fence(SeqCst);
    z.unwaited[i].set(key);
}

/// Keeps the early counts of a thread that exits holding them as an exited thread's.
struct Exit;

impl Drop for Exit {
    fn drop(&mut self) {
        if open::lazy().holds_early() && !open::registered() {
            thread::set_up_at_exit();
        }
    }
}

thread_local! {
    static EXIT: Exit = const { Exit };
}
