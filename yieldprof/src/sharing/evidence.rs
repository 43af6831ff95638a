//! How sure a verdict is. Tracked invalidations are a sample of the real ones (a
//! sampled `Watched` access, a hardware watchpoint's hit), so a line is judged from
//! its counts with confidence bounds, not against a fixed count:
//!
//! - **rate**: a line handed from one thread to the next between phases (filled by
//!   one, then updated by another) is invalidated a few times without being shared.
//!   Invalidations show sharing when a Poisson count of [`STRAY`] such hand-offs would
//!   reach them less than 5 % of the time: [`MIN_INVALIDATIONS`] or more.
//! - **share**: the false part `k` of `n` invalidations estimates the share `p` of
//!   false ones. With a uniform prior, `P(p ≥ 1/4 | k of n)` is `P(Bin(n + 1, 1/4) ≤ k)`
//!   (exact below [`EXACT_MAX`] invalidations, a normal approximation above, where the
//!   two agree to well under 0.1 %). FALSE at 95 % or more, TRUE when the same holds for
//!   `p < 1/4`, else undecided. MIXED is a FALSE line whose contended invalidations
//!   show sharing by the rate test and whose contended share is not below 1/4 at 95 %.
//!
//! The report states the confidence, the 95 % Wilson interval of the share, and how
//! much longer a run needs, at the rate the line was invalidated, to reach [`FIRM`].

use super::*;

/// The confidence a verdict other than quiet needs.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// A verdict this sure needs no longer run.
pub(crate) const FIRM: f64 = 0.99;
/// Expected invalidations of a line that is only handed over between phases: one as
/// the second thread takes it, one as the first takes it back.
pub(crate) const STRAY: f64 = 2.0;
/// Above this many invalidations the share's confidence uses the normal approximation.
const EXACT_MAX: u64 = 10_000;
/// The 97.5 % quantile of the normal distribution: a two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// What a line's counts say, and how sure that is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Judgement {
    pub(super) verdict: Verdict,
    /// For FALSE, MIXED and TRUE: the probability that it holds; for an undecided
    /// line ([`Verdict::Uncertain`]), that of the likelier of FALSE and TRUE.
    pub(super) confidence: Option<f64>,
}

/// Judges `n` invalidations of which `false_inv` were false and `contended` contended.
pub(super) fn judge(n: u64, false_inv: u64, contended: u64) -> Judgement {
    if !shows_sharing(n) {
        return Judgement {
            verdict: Verdict::Quiet,
            confidence: None,
        };
    }
    let f = share_at_least(false_inv, n);
    // A word several threads write: enough contended invalidations to show it, and a
    // share not shown to be below the bound.
    let contended_too =
        shows_sharing(contended) && share_at_least(contended, n) >= 1.0 - CONFIDENCE;
    let (verdict, confidence) = if f >= CONFIDENCE && contended_too {
        (Verdict::Mixed, f)
    } else if f >= CONFIDENCE {
        (Verdict::False, f)
    } else if 1.0 - f >= CONFIDENCE {
        (Verdict::True, 1.0 - f)
    } else {
        (Verdict::Uncertain, f.max(1.0 - f))
    };
    Judgement {
        verdict,
        confidence: Some(confidence),
    }
}

/// Whether `n` invalidations are more than hand-offs between phases explain.
pub(super) fn shows_sharing(n: u64) -> bool {
    poisson_at_least(STRAY, n) < 1.0 - CONFIDENCE
}

/// `P(X ≥ n)` for `X` Poisson with mean `mean`.
fn poisson_at_least(mean: f64, n: u64) -> f64 {
    let mut term = (-mean).exp();
    let mut below = 0.0;
    for i in 0..n {
        below += term;
        term *= mean / (i + 1) as f64;
        if term < 1e-300 {
            break;
        }
    }
    (1.0 - below).max(0.0)
}

/// `P(p ≥ 1/4 | k of n)`, uniform prior: `P(Bin(n + 1, 1/4) ≤ k)`.
pub(super) fn share_at_least(k: u64, n: u64) -> f64 {
    let m = n + 1;
    let p = 1.0 / SHARE_DIVISOR as f64;
    if m > EXACT_MAX {
        let mean = m as f64 * p;
        let sd = (m as f64 * p * (1.0 - p)).sqrt();
        return normal_cdf((k as f64 + 0.5 - mean) / sd);
    }
    // Terms in logs: (3/4)^m underflows past m ≈ 2600.
    let ratio = (p / (1.0 - p)).ln();
    let mut log_term = m as f64 * (1.0 - p).ln();
    let mut sum = 0.0;
    for i in 0..=k.min(m) {
        sum += log_term.exp();
        log_term += ((m - i) as f64 / (i + 1) as f64).ln() + ratio;
    }
    sum.min(1.0)
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26: error below 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

/// The 95 % Wilson score interval of a share of `k` in `n` (`n` > 0).
pub(super) fn wilson(k: u64, n: u64) -> (f64, f64) {
    let (n, p) = (n as f64, k as f64 / n as f64);
    let z2 = Z95 * Z95;
    let centre = p + z2 / (2.0 * n);
    let spread = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let scale = 1.0 + z2 / n;
    (
        ((centre - spread) / scale).max(0.0),
        ((centre + spread) / scale).min(1.0),
    )
}

/// How sure a line with `n` invalidations, a false share of `share`, would be.
fn confidence_at(n: u64, share: f64) -> f64 {
    let k = (share * n as f64).round() as u64;
    let f = share_at_least(k, n);
    f.max(1.0 - f)
}

/// The invalidations a line with a false share of `false_inv / n` needs for a verdict
/// `target` sure (or for [`MIN_INVALIDATIONS`]); `None` when no count reaches it (a
/// share at the bound) within 1 000 times the evidence.
pub(super) fn needed(n: u64, false_inv: u64, target: f64) -> Option<u64> {
    let share = if n == 0 {
        return Some(MIN_INVALIDATIONS);
    } else {
        false_inv as f64 / n as f64
    };
    let enough = |m: u64| m >= MIN_INVALIDATIONS && confidence_at(m, share) >= target;
    let mut hi = n.max(MIN_INVALIDATIONS);
    while !enough(hi) {
        if hi > n.max(1) * 1000 {
            return None;
        }
        hi *= 2;
    }
    let mut lo = n;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_invalidations_are_the_fewest_two_hand_offs_explain_under_5_percent() {
        assert_eq!(MIN_INVALIDATIONS, 6);
        assert!(poisson_at_least(STRAY, 5) > 0.05);
        assert!(poisson_at_least(STRAY, 6) < 0.05);
        // P(X >= 6) for Poisson(2) = 1 - 0.98344 (tables).
        assert!((poisson_at_least(2.0, 6) - 0.016_56).abs() < 1e-4);
        assert!(!shows_sharing(5) && shows_sharing(6));
    }

    #[test]
    fn the_share_tail_matches_the_binomial_and_its_normal_limit() {
        // All 26 of 26 false: P = 1 - (1/4)^27.
        assert!(1.0 - share_at_least(26, 26) < 1e-15);
        // 0 of 5: P(Bin(6, 1/4) = 0) = 0.75^6.
        assert!((share_at_least(0, 5) - 0.75f64.powi(6)).abs() < 1e-12);
        // 2 of 7: P(Bin(8, 1/4) <= 2) = 0.678_5 (tables).
        assert!((share_at_least(2, 7) - 0.678_5).abs() < 1e-3);
        // The exact sum and the approximation meet at EXACT_MAX.
        let exact = share_at_least(2_540, EXACT_MAX - 1);
        let approx = share_at_least(2_540, EXACT_MAX);
        assert!((exact - approx).abs() < 5e-3, "{exact} vs {approx}");
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn verdicts_follow_the_confidence_not_a_count() {
        assert_eq!(judge(5, 5, 0).verdict, Verdict::Quiet);
        let all_false = judge(26, 26, 0);
        assert_eq!(all_false.verdict, Verdict::False);
        assert!(all_false.confidence.unwrap() > 0.999);
        assert_eq!(judge(40, 0, 40).verdict, Verdict::True);
        assert_eq!(judge(60, 30, 30).verdict, Verdict::Mixed);
        // A contended part at the bound is no evidence against a shared word.
        assert_eq!(judge(159, 119, 40).verdict, Verdict::Mixed);
        assert_eq!(judge(159, 157, 2).verdict, Verdict::False);
        // 3 of 10 false: the share may be above or below a quarter.
        let unsure = judge(10, 3, 0);
        assert_eq!(unsure.verdict, Verdict::Uncertain);
        assert!(unsure.confidence.unwrap() < CONFIDENCE);
    }

    #[test]
    fn the_wilson_interval_brackets_the_share() {
        let (lo, hi) = wilson(26, 26);
        assert!((lo - 0.871).abs() < 1e-3 && hi == 1.0, "{lo} {hi}");
        let (lo, hi) = wilson(5, 10);
        assert!((lo - 0.237).abs() < 1e-3 && (hi - 0.763).abs() < 1e-3);
    }

    #[test]
    fn a_firmer_verdict_needs_more_invalidations_unless_the_share_sits_at_the_bound() {
        // 4 of 8 false: P(Bin(9, 1/4) <= 4) = 0.951, FALSE; 99 % needs more at that share.
        assert_eq!(judge(8, 4, 0).verdict, Verdict::False);
        assert!(confidence_at(8, 0.5) < FIRM);
        let more = needed(8, 4, FIRM).unwrap();
        assert!(more > 8 && confidence_at(more, 0.5) >= FIRM, "{more}");
        assert!(more < 40, "{more}");
        assert_eq!(needed(100, 25, FIRM), None);
        assert_eq!(needed(0, 0, CONFIDENCE), Some(MIN_INVALIDATIONS));
    }
}
