//! Which watched accesses are tracked: all of them, or one in `n` on average after each
//! thread's warm-up, at random gaps so loop shapes cannot alias.

use super::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// 0 until read from `YIELDPROF_WATCH_SAMPLE`; 1 tracks every access.
pub(super) static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(0);

pub(super) struct Sampler {
    pub(super) left: Cell<u32>,
    pub(super) warm: Cell<u32>,
    pub(super) rng: Cell<u32>,
}

thread_local! {
    static SAMPLER: Sampler = const {
        Sampler { left: Cell::new(0), warm: Cell::new(WARMUP_ACCESSES), rng: Cell::new(0) }
    };
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
