//! Tests of `model::histogram` (apart, for the 600-line bound).

use super::*;

/// A site's histogram as a report assembles it: a node's coarse part and the
/// thread's fine part for the same episodes.
fn hist(durations: &[u64]) -> Histogram {
    let (coarse, fine) = (AtomicHistogram::default(), AtomicDurations::default());
    for &d in durations {
        coarse.record(d);
        fine.record(d);
    }
    let mut h = coarse.load();
    h.add(&fine.load());
    h
}

#[test]
fn one_episode_added_to_a_copy_is_what_the_live_histogram_would_have_recorded() {
    let durations = [0, 1, 31, 32, 33, 1000, 1 << 20, 5_000_000_007, u64::MAX / 3];
    let (before, after) = durations.split_at(4);
    let (coarse, fine) = (AtomicHistogram::default(), AtomicDurations::default());
    for &d in before {
        coarse.record(d);
        fine.record(d);
    }
    let (mut c, mut f) = (coarse.load(), fine.load());
    for &d in after {
        c.add_one(d, false);
        f.add_one(d, true);
    }
    for &d in after {
        coarse.record(d);
        fine.record(d);
    }
    assert_eq!(c, coarse.load());
    assert_eq!(f, fine.load());
}

#[test]
fn a_batch_records_what_one_record_per_duration_would() {
    let runs: [&[u64]; 3] = [&[1000, 7, 1 << 20], &[3, 5_000_000_007], &[40, 40]];
    let (each, batched) = (AtomicDurations::default(), AtomicDurations::default());
    for run in runs {
        let mut b = batched.batch();
        for &d in run {
            each.record(d);
            b.record(d);
            assert_eq!(batched.load(), each.load());
        }
    }
    assert_eq!((batched.load().min, batched.load().max), (3, 5_000_000_007));
}

/// The sample of rank ⌈q·n⌉, the definition `quantile` estimates.
fn exact(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

/// A small xorshift generator: the samples are the same on every run.
fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn fine_buckets_tile_the_durations_without_gaps() {
    let mut next = 0;
    for i in 0..FINE - 1 {
        let (low, high) = fine_range(i);
        assert_eq!(low, next, "bucket {i}");
        assert_eq!((fine(low), fine(high - 1)), (i, i), "bucket {i}");
        // The midpoint is within 1/64 of every duration in the bucket.
        assert!(
            (high - low) as f64 / 2.0 <= low.max(1) as f64 / 64.0 + 0.5,
            "{i}"
        );
        next = high;
    }
    assert_eq!(fine(u64::MAX), FINE - 1);
    assert_eq!(
        (octave(0), octave(1), octave(2), octave(1024)),
        (0, 0, 1, 10)
    );
}

#[test]
fn quantiles_are_within_3_percent_of_exact_ones_and_extremes_are_exact() {
    let mut uniform = rng(1);
    let mut pick = rng(2);
    let mut tail = rng(3);
    let cases: [(&str, Vec<u64>); 3] = [
        (
            "uniform",
            (0..100_000)
                .map(|_| 1_000 + (uniform() * 99_000.0) as u64)
                .collect(),
        ),
        (
            "bimodal",
            (0..100_000)
                .map(|i| {
                    if pick() < 0.9 {
                        300 + i % 50
                    } else {
                        2_000_000 + i % 40_000
                    }
                })
                .collect(),
        ),
        (
            // Pareto, shape 1.2: most episodes short, a few up to seconds.
            "heavy-tailed",
            (0..100_000)
                .map(|_| (500.0 / (1.0 - tail()).powf(1.0 / 1.2)) as u64)
                .collect(),
        ),
    ];
    for (name, samples) in cases {
        let h = hist(&samples);
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let (got, want) = (h.quantile(q).unwrap(), exact(&sorted, q));
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(
                err <= 0.03,
                "{name} p{q}: {got} vs exact {want} ({:.2} %)",
                err * 100.0
            );
        }
        assert_eq!(h.min(), Some(sorted[0]), "{name}");
        assert_eq!(h.max(), Some(*sorted.last().unwrap()), "{name}");
        assert_eq!(h.total_ns(), samples.iter().sum::<u64>(), "{name}");
    }
}

#[test]
fn time_below_a_threshold_counts_whole_powers_of_two_only() {
    let h = hist(&[100, 100, 5_000, 70_000]);
    // 100 is in [64, 128), 5000 in [4096, 8192): both end below 10 000.
    assert_eq!(h.ns_below(10_000), 5_200);
    assert_eq!(h.ns_below(100), 0);
    assert_eq!(h.ns_below(u64::MAX), 75_200);
}

#[test]
fn a_delta_keeps_only_the_new_episodes_and_their_moved_extremes() {
    let before = hist(&[100, 5_000]);
    let after = hist(&[100, 5_000, 100, 70_000]);
    let d = after.minus(&before);
    assert_eq!((d.count(), d.total_ns()), (2, 70_100));
    // The max moved (exact); the min did not, so it is its bucket's midpoint.
    assert_eq!(d.max(), Some(70_000));
    assert!(d.min().unwrap().abs_diff(100) <= 2, "{:?}", d.min());
    assert_eq!(Histogram::default().minus(&before).count(), 0);
}

#[test]
fn merged_histograms_keep_both_extremes() {
    let mut a = hist(&[300, 400]);
    a.add(&hist(&[7, 9_000_000]));
    assert_eq!((a.min(), a.max(), a.count()), (Some(7), Some(9_000_000), 4));
}
