//! Episode durations: exact time per power of two, and log-linear buckets with a bounded
//! relative error plus the exact shortest and longest episode.
//!
//! Coarse buckets, per calling-context node (640 B inline): a count and the sum of the
//! durations per power of two, so the time spent in short episodes (`ns_below`) is exact.
//!
//! Fine buckets, per thread and wait site (not per node: a site reached through a
//! thousand stacks keeps one table): durations below 32 ticks each have their own; above,
//! every power of two `[2^k, 2^(k+1))` is cut into 32 equal buckets, so a bucket's
//! midpoint is within 1/64 (1.6 %) of any duration in it. A quantile is the midpoint of
//! the bucket its rank falls in, kept within the exact min and max. The table (~10 KiB)
//! is allocated at the site's first episode on the thread; copies keep only the non-empty
//! buckets.

use crate::base::arena::bump;
use crate::base::clock::Scale;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Powers of two with a coarse bucket; the last also holds everything longer.
const OCTAVES: usize = 40;
/// Fine buckets per power of two, as a shift.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Fine buckets: one per tick below `SUB`, then `SUB` per power of two up to
/// `2^(OCTAVES + SUB_BITS)` ticks (~10 h at 1 ns per tick); longer ones share the last.
const FINE: usize = (SUB as usize) * (OCTAVES + 1);

fn octave(ticks: u64) -> usize {
    (63 - (ticks | 1).leading_zeros() as usize).min(OCTAVES - 1)
}

fn fine(ticks: u64) -> usize {
    if ticks < SUB {
        return ticks as usize;
    }
    let k = 63 - ticks.leading_zeros();
    let sub = (ticks >> (k - SUB_BITS)) - SUB;
    ((k - SUB_BITS + 1) as usize * SUB as usize + sub as usize).min(FINE - 1)
}

/// The durations fine bucket `i` holds, `[low, high)` in ticks.
fn fine_range(i: usize) -> (u64, u64) {
    let (block, sub) = ((i as u64) / SUB, (i as u64) % SUB);
    if block == 0 {
        return (sub, sub + 1);
    }
    let width = 1u64 << (block - 1);
    let low = (SUB + sub) * width;
    (low, low + width)
}

/// A node's live coarse histogram; only the owner thread writes it.
pub(crate) struct AtomicHistogram {
    counts: [AtomicU64; OCTAVES],
    sums: [AtomicU64; OCTAVES],
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sums: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl AtomicHistogram {
    #[inline(always)]
    pub(crate) fn record(&self, ticks: u64) {
        let b = octave(ticks);
        bump(&self.counts[b], 1);
        bump(&self.sums[b], ticks);
    }

    pub(crate) fn load(&self) -> Histogram {
        let coarse = (0..OCTAVES)
            .filter_map(|b| {
                let n = self.counts[b].load(Relaxed);
                (n > 0).then(|| Bucket {
                    index: b as u16,
                    count: n,
                    sum: self.sums[b].load(Relaxed),
                })
            })
            .collect();
        Histogram {
            coarse,
            ..Histogram::default()
        }
    }
}

/// A fine array of zeros from `alloc_zeroed`, which takes memory the system gave
/// zeroed without clearing it again: a `collect` of zeros wrote all 10.5 KiB (page
/// faults and `memset` at a thread's first episode of a site, seen in `perf record`
/// of a pool's start, 2026-12-04); now only the pages its buckets use are touched.
fn zeroed_fine() -> Box<[AtomicU64]> {
    let layout = std::alloc::Layout::array::<AtomicU64>(FINE).expect("a fixed, small size");
    // SAFETY: the layout is not zero-sized; all-zero bytes are a valid `AtomicU64` (0);
    // the pointer is checked, and a `Box<[AtomicU64]>` of `FINE` elements frees it with
    // this same layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<AtomicU64>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, FINE))
    }
}

/// A site's live fine histogram on one thread; only the owner thread writes it.
pub(crate) struct AtomicDurations {
    fine: OnceLock<Box<[AtomicU64]>>,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for AtomicDurations {
    fn default() -> Self {
        AtomicDurations {
            fine: OnceLock::new(),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }
}

impl AtomicDurations {
    /// Allocates its buckets now: where a node or call slot is made, as its frame or
    /// call opens, not at its first close (the end of a wait is the user's critical
    /// path: a spin lock's first acquire on a thread held the lock ~1 µs longer).
    pub(crate) fn ready(&self) {
        self.fine.get_or_init(zeroed_fine);
    }

    #[inline(always)]
    pub(crate) fn record(&self, ticks: u64) {
        self.batch().record(ticks);
    }

    /// Owner only: a run of durations to record (`record::fold`), its buckets and
    /// range found once.
    #[inline(always)]
    pub(crate) fn batch(&self) -> Batch<'_> {
        Batch {
            fine: self.fine.get_or_init(zeroed_fine),
            min: self.min.load(Relaxed),
            max: self.max.load(Relaxed),
            of: self,
        }
    }

    pub(crate) fn load(&self) -> Histogram {
        let fine = self.fine.get().map_or_else(Vec::new, |f| {
            f.iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let n = c.load(Relaxed);
                    (n > 0).then_some((i as u16, n))
                })
                .collect()
        });
        Histogram {
            fine,
            min: self.min.load(Relaxed),
            max: self.max.load(Relaxed),
            ..Histogram::default()
        }
    }
}

/// Durations added to an [`AtomicDurations`] in one go, each stored as `record` would.
pub(crate) struct Batch<'a> {
    fine: &'a [AtomicU64],
    /// The range as stored: only the owner writes it.
    min: u64,
    max: u64,
    of: &'a AtomicDurations,
}

impl Batch<'_> {
    #[inline(always)]
    pub(crate) fn record(&mut self, ticks: u64) {
        bump(&self.fine[fine(ticks)], 1);
        // Right after the count, as a report expects the range to hold it.
        if ticks < self.min {
            self.min = ticks;
            self.of.min.store(ticks, Relaxed);
        }
        if ticks > self.max {
            self.max = ticks;
            self.of.max.store(ticks, Relaxed);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Bucket {
    index: u16,
    count: u64,
    sum: u64,
}

/// A copy of a site's episode durations: only the non-empty buckets, in nanoseconds once
/// a report has scaled it. Quantiles are within 1.6 % of the exact ones; `min` and `max` are exact,
/// except in a difference of two copies (a [`Session`](crate::Session)) whose extreme did
/// not change, where they are the midpoint of the extreme bucket, kept within the range
/// and, for a site's, within the time its episodes took together.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    coarse: Vec<Bucket>,
    fine: Vec<(u16, u64)>,
    /// Ticks until a report scales them, then ns; `u64::MAX` and 0 when empty.
    min: u64,
    max: u64,
    /// Turns fine bucket bounds (in ticks) into ns; 1 until a report scales it.
    ns_per_tick: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            coarse: Vec::new(),
            fine: Vec::new(),
            min: u64::MAX,
            max: 0,
            ns_per_tick: 1.0,
        }
    }
}

/// Adds `other` into `mine`, two lists sorted by index.
fn merge<T: Copy>(mine: &mut Vec<T>, other: &[T], key: fn(&T) -> u16, add: fn(&mut T, &T)) {
    for o in other {
        match mine.binary_search_by_key(&key(o), key) {
            Ok(i) => add(&mut mine[i], o),
            Err(i) => mine.insert(i, *o),
        }
    }
}

impl Histogram {
    pub(crate) fn scale_to_ns(&mut self, scale: Scale) {
        for b in &mut self.coarse {
            b.sum = scale.ns(b.sum);
        }
        if !self.fine.is_empty() {
            self.min = scale.ns(self.min);
            self.max = scale.ns(self.max);
        }
        self.ns_per_tick = scale.ns_per_tick();
    }

    /// Adds one episode of `ticks` to a copy, as the live histogram it was copied
    /// from would have: to the coarse buckets (a node's), or to the fine buckets and
    /// the extremes (a site's).
    pub(crate) fn add_one(&mut self, ticks: u64, fine_buckets: bool) {
        if fine_buckets {
            let one = [(fine(ticks) as u16, 1)];
            merge(&mut self.fine, &one, |f| f.0, |m, o| m.1 += o.1);
            self.min = self.min.min(ticks);
            self.max = self.max.max(ticks);
        } else {
            let one = [Bucket {
                index: octave(ticks) as u16,
                count: 1,
                sum: ticks,
            }];
            merge(
                &mut self.coarse,
                &one,
                |b| b.index,
                |m, o| {
                    m.count += o.count;
                    m.sum += o.sum;
                },
            );
        }
    }

    /// Adds `other`'s episodes.
    pub(crate) fn add(&mut self, other: &Histogram) {
        if self.coarse.is_empty() && self.fine.is_empty() {
            self.ns_per_tick = other.ns_per_tick;
        }
        merge(
            &mut self.coarse,
            &other.coarse,
            |b| b.index,
            |m, o| {
                m.count += o.count;
                m.sum += o.sum;
            },
        );
        merge(&mut self.fine, &other.fine, |f| f.0, |m, o| m.1 += o.1);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The episodes recorded since `earlier`, a copy of the same histogram.
    pub(crate) fn minus(&self, earlier: &Histogram) -> Histogram {
        let coarse = self
            .coarse
            .iter()
            .map(
                |b| match earlier.coarse.iter().find(|e| e.index == b.index) {
                    Some(e) => Bucket {
                        index: b.index,
                        count: b.count.saturating_sub(e.count),
                        sum: b.sum.saturating_sub(e.sum),
                    },
                    None => *b,
                },
            )
            .filter(|b| b.count > 0)
            .collect();
        let fine: Vec<(u16, u64)> = self
            .fine
            .iter()
            .map(|&(i, n)| {
                let before = earlier.fine.iter().find(|e| e.0 == i).map_or(0, |e| e.1);
                (i, n.saturating_sub(before))
            })
            .filter(|f| f.1 > 0)
            .collect();
        let mut d = Histogram {
            coarse,
            fine,
            min: u64::MAX,
            max: 0,
            ns_per_tick: self.ns_per_tick,
        };
        if let (Some(&(lo, _)), Some(&(hi, _))) = (d.fine.first(), d.fine.last()) {
            // An extreme that moved since `earlier` belongs to the new episodes: exact.
            d.min = if self.min < earlier.min {
                self.min
            } else {
                self.midpoint(lo).clamp(self.min, self.max)
            };
            d.max = if self.max > earlier.max {
                self.max
            } else {
                self.midpoint(hi).clamp(self.min, self.max)
            };
        }
        d
    }

    /// Fine bucket `i`'s midpoint, in the histogram's unit.
    fn midpoint(&self, i: u16) -> u64 {
        let (low, high) = fine_range(i as usize);
        ((low + high) as f64 / 2.0 * self.ns_per_tick) as u64
    }

    /// Keeps a midpoint extreme (of a difference, see `minus`) within `span`, the time
    /// all the episodes took together: no episode is longer than that.
    pub(crate) fn cap_extremes(&mut self, span: u64) {
        if !self.fine.is_empty() {
            self.max = self.max.min(span);
            self.min = self.min.min(self.max);
        }
    }

    /// Episodes (or calls) recorded.
    pub fn count(&self) -> u64 {
        // A call kind's histogram is fine only; a site's has both, with the same count
        // unless its thread's fine tables ran out.
        let coarse: u64 = self.coarse.iter().map(|b| b.count).sum();
        coarse.max(self.fine.iter().map(|f| f.1).sum())
    }

    /// The duration below which a share `q` (0..=1) of episodes fall (the episode of
    /// rank ⌈q·n⌉), within 1.6 %; `q` = 0 and 1 give [`min`](Histogram::min) and
    /// [`max`](Histogram::max). `None` when empty.
    ///
    /// ```
    /// let h = yieldprof::report::Histogram::default();
    /// assert_eq!(h.quantile(0.5), None);
    /// ```
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n: u64 = self.fine.iter().map(|f| f.1).sum();
        if n == 0 {
            return None;
        }
        let q = q.clamp(0.0, 1.0);
        if q == 0.0 {
            return Some(self.min);
        }
        if q == 1.0 {
            return Some(self.max);
        }
        let rank = ((q * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        let bucket = self.fine.iter().find(|f| {
            seen += f.1;
            seen >= rank
        });
        Some(bucket.map_or(self.max, |f| self.midpoint(f.0).clamp(self.min, self.max)))
    }

    /// The quantile `q` from the coarse buckets alone (a node's, which has no fine
    /// ones): the mean of the power of two the episode of rank ⌈q·n⌉ falls in, so within
    /// a factor of two. `None` when empty.
    pub(crate) fn coarse_quantile(&self, q: f64) -> Option<u64> {
        let n: u64 = self.coarse.iter().map(|b| b.count).sum();
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        let b = self.coarse.iter().find(|b| {
            seen += b.count;
            seen >= rank
        })?;
        Some(b.sum / b.count.max(1))
    }

    /// The shortest episode.
    pub fn min(&self) -> Option<u64> {
        self.quantile(0.0)
    }

    /// The longest episode.
    pub fn max(&self) -> Option<u64> {
        self.quantile(1.0)
    }

    /// Total duration of episodes in powers of two that end below `ns`: the episodes
    /// that are surely shorter than `ns`.
    pub fn ns_below(&self, ns: u64) -> u64 {
        self.coarse
            .iter()
            .filter(|b| (b.index as usize) < OCTAVES - 1)
            .take_while(|b| (((2u64 << b.index) - 1) as f64 * self.ns_per_tick) < ns as f64)
            .map(|b| b.sum)
            .sum()
    }

    /// Total duration of every episode.
    pub fn total_ns(&self) -> u64 {
        self.coarse.iter().map(|b| b.sum).sum()
    }
}

#[cfg(test)]
#[path = "histogram_tests.rs"]
mod tests;
