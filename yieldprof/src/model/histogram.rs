//! Episode durations in power-of-two buckets: fixed size, no per-episode storage.
//!
//! Bucket `b` holds durations in `[2^b, 2^(b+1))` clock ticks (bucket 0 also holds 0),
//! the last bucket everything longer. Each bucket keeps a count and the sum of its
//! durations, so the time spent in short episodes is exact, and a quantile is the
//! mean duration of the bucket it falls in.

use crate::base::arena::bump;
use crate::base::clock::Scale;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub(crate) const BUCKETS: usize = 40;

fn bucket(ticks: u64) -> usize {
    (63 - (ticks | 1).leading_zeros() as usize).min(BUCKETS - 1)
}

/// The owner thread's live histogram.
pub(crate) struct AtomicHistogram {
    counts: [AtomicU64; BUCKETS],
    sums: [AtomicU64; BUCKETS],
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
        let b = bucket(ticks);
        bump(&self.counts[b], 1);
        bump(&self.sums[b], ticks);
    }

    pub(crate) fn load(&self) -> Histogram {
        let buckets = (0..BUCKETS)
            .filter_map(|b| {
                let n = self.counts[b].load(Relaxed);
                (n > 0).then(|| Bucket {
                    index: b as u8,
                    count: n,
                    sum: self.sums[b].load(Relaxed),
                })
            })
            .collect();
        Histogram {
            buckets,
            ns_per_tick: 1.0,
        }
    }
}

/// Longest duration bucket `b` holds (the last one holds the rest).
fn upper_ticks(b: usize) -> u64 {
    (2u64 << b) - 1
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Bucket {
    index: u8,
    count: u64,
    sum: u64,
}

/// A copy of a histogram: only its non-empty buckets (a node rarely fills more than a
/// few), in nanoseconds once a report has scaled it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    buckets: Vec<Bucket>,
    /// Turns bucket bounds (in ticks) into ns; 1 until a report scales it; 0 (a default) counts as 1.
    ns_per_tick: f64,
}

impl Histogram {
    pub(crate) fn scale_to_ns(&mut self, scale: Scale) {
        for b in &mut self.buckets {
            b.sum = scale.ns(b.sum);
        }
        self.ns_per_tick = scale.ns_per_tick();
    }

    /// Adds `other`'s episodes, bucket by bucket.
    pub(crate) fn add(&mut self, other: &Histogram) {
        if self.buckets.is_empty() {
            self.ns_per_tick = other.ns_per_tick;
        }
        for o in &other.buckets {
            match self.buckets.binary_search_by_key(&o.index, |b| b.index) {
                Ok(i) => {
                    self.buckets[i].count += o.count;
                    self.buckets[i].sum += o.sum;
                }
                Err(i) => self.buckets.insert(i, *o),
            }
        }
    }

    pub(crate) fn minus(&self, earlier: &Histogram) -> Histogram {
        let buckets = self
            .buckets
            .iter()
            .map(
                |b| match earlier.buckets.iter().find(|e| e.index == b.index) {
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
        Histogram {
            buckets,
            ns_per_tick: self.ns_per_tick,
        }
    }

    /// Episodes recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The duration below which a share `q` (0..=1) of episodes fall, as the mean of
    /// the bucket it lands in; `None` when empty.
    ///
    /// ```
    /// let h = yieldprof::report::Histogram::default();
    /// assert_eq!(h.quantile(0.5), None);
    /// ```
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let rank = ((q.clamp(0.0, 1.0) * self.count() as f64).ceil() as u64).max(1);
        let mut seen = 0;
        self.buckets.iter().find_map(|b| {
            seen += b.count;
            (seen >= rank).then(|| b.sum / b.count)
        })
    }

    /// The shortest episode's bucket mean.
    pub fn min(&self) -> Option<u64> {
        self.quantile(0.0)
    }

    /// The longest episode's bucket mean.
    pub fn max(&self) -> Option<u64> {
        self.quantile(1.0)
    }

    /// Total duration of episodes in buckets that end below `ns`: the episodes that
    /// are surely shorter than `ns`.
    pub fn ns_below(&self, ns: u64) -> u64 {
        let per_tick = if self.ns_per_tick > 0.0 {
            self.ns_per_tick
        } else {
            1.0
        };
        self.buckets
            .iter()
            .filter(|b| (b.index as usize) < BUCKETS - 1)
            .take_while(|b| (upper_ticks(b.index as usize) as f64 * per_tick) < ns as f64)
            .map(|b| b.sum)
            .sum()
    }

    /// Total duration of every episode.
    pub fn total_ns(&self) -> u64 {
        self.buckets.iter().map(|b| b.sum).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(durations: &[u64]) -> Histogram {
        let h = AtomicHistogram::default();
        durations.iter().for_each(|&d| h.record(d));
        h.load()
    }

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(
            (bucket(0), bucket(1), bucket(2), bucket(3), bucket(4)),
            (0, 0, 1, 1, 2)
        );
        assert_eq!(bucket(1023), 9);
        assert_eq!(bucket(1024), 10);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_bucket_means() {
        // 98 episodes of 100 ticks, one of 10 000, one of 1 000 000.
        let mut d = vec![100; 98];
        d.extend([10_000, 1_000_000]);
        let h = hist(&d);
        assert_eq!(h.count(), 100);
        assert_eq!(h.min(), Some(100));
        assert_eq!(h.quantile(0.5), Some(100));
        assert_eq!(h.quantile(0.99), Some(10_000));
        assert_eq!(h.max(), Some(1_000_000));
        assert_eq!(h.total_ns(), 98 * 100 + 10_000 + 1_000_000);
    }

    #[test]
    fn time_below_a_threshold_counts_whole_buckets_only() {
        let h = hist(&[100, 100, 5_000, 70_000]);
        // 100 is in [64, 128), 5000 in [4096, 8192): both end below 10 000.
        assert_eq!(h.ns_below(10_000), 5_200);
        assert_eq!(h.ns_below(100), 0);
        assert_eq!(h.ns_below(u64::MAX), 75_200);
    }

    #[test]
    fn a_delta_subtracts_bucket_by_bucket() {
        let before = hist(&[100, 5_000]);
        let after = hist(&[100, 5_000, 100, 70_000]);
        let d = after.minus(&before);
        assert_eq!(d.count(), 2);
        assert_eq!(d.total_ns(), 70_100);
    }
}
