//! Episode durations in power-of-two buckets: fixed size, no per-episode storage.
//!
//! Bucket `b` holds durations in `[2^b, 2^(b+1))` clock ticks (bucket 0 also holds 0),
//! the last bucket everything longer. Each bucket keeps a count and the sum of its
//! durations, so the time spent in short episodes is exact, and a quantile is the
//! mean duration of the bucket it falls in.

use crate::clock::Scale;
use crate::thread::bump;
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
        Histogram {
            counts: std::array::from_fn(|b| self.counts[b].load(Relaxed)),
            sums: std::array::from_fn(|b| self.sums[b].load(Relaxed)),
            upper: std::array::from_fn(upper_ticks),
        }
    }
}

fn upper_ticks(b: usize) -> u64 {
    if b == BUCKETS - 1 {
        u64::MAX
    } else {
        (2u64 << b) - 1
    }
}

/// A copy of a histogram, in nanoseconds once a report has scaled it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: [u64; BUCKETS],
    sums: [u64; BUCKETS],
    /// Longest duration each bucket can hold.
    upper: [u64; BUCKETS],
}

impl Default for Histogram {
    fn default() -> Self {
        AtomicHistogram::default().load()
    }
}

impl Histogram {
    pub(crate) fn scale_to_ns(&mut self, scale: Scale) {
        for b in 0..BUCKETS {
            self.sums[b] = scale.ns(self.sums[b]);
            if b < BUCKETS - 1 {
                self.upper[b] = scale.ns(self.upper[b]);
            }
        }
    }

    pub(crate) fn add(&mut self, other: &Histogram) {
        for b in 0..BUCKETS {
            self.counts[b] += other.counts[b];
            self.sums[b] += other.sums[b];
        }
    }

    pub(crate) fn minus(&self, earlier: &Histogram) -> Histogram {
        let mut h = self.clone();
        for b in 0..BUCKETS {
            h.counts[b] = h.counts[b].saturating_sub(earlier.counts[b]);
            h.sums[b] = h.sums[b].saturating_sub(earlier.sums[b]);
        }
        h
    }

    /// Episodes recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The duration below which a share `q` (0..=1) of episodes fall, as the mean of
    /// the bucket it lands in; `None` when empty.
    ///
    /// ```
    /// let h = yieldprof::Histogram::default();
    /// assert_eq!(h.quantile(0.5), None);
    /// ```
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for b in 0..BUCKETS {
            seen += self.counts[b];
            if seen >= rank {
                return Some(self.sums[b] / self.counts[b]);
            }
        }
        None
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
        (0..BUCKETS)
            .take_while(|&b| self.upper[b] < ns)
            .map(|b| self.sums[b])
            .sum()
    }

    /// Total duration of every episode.
    pub fn total_ns(&self) -> u64 {
        self.sums.iter().sum()
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
