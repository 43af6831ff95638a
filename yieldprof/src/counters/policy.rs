//! The sampling policy: which wait episodes have their counters read.

use super::*;

/// The sampling policy as credit arithmetic: each closed wait episode earns
/// `elapsed × per_ns + per_episode`, each sample costs `cost × debit_per_ns +
/// debit_per_sample`, and an episode is sampled when the credit is not negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Policy {
    per_ns: i64,
    per_episode: i64,
    debit_per_ns: i64,
    debit_per_sample: i64,
    cap: i64,
}

/// Credit is kept in ns × 100 × 100: percent with two decimals, no division.
pub(super) const AUTO_UNIT: i64 = 10_000;
/// Auto saves up at most this much counter time (ns): a long sleep does not buy a
/// burst of reads on the short episodes after it.
pub(super) const AUTO_CAP_NS: i64 = 100_000;

impl Policy {
    pub(super) fn of(s: CounterSampling) -> Policy {
        match s.normal() {
            CounterSampling::Off => Policy {
                per_ns: 0,
                per_episode: 0,
                debit_per_ns: 0,
                debit_per_sample: 0,
                cap: -1,
            },
            CounterSampling::Every(n) => Policy {
                per_ns: 0,
                per_episode: 1,
                debit_per_ns: 0,
                debit_per_sample: i64::from(n),
                cap: 0,
            },
            CounterSampling::Auto => Policy {
                per_ns: i64::from(AUTO_BUDGET_PERCENT) * 100,
                per_episode: 0,
                debit_per_ns: AUTO_UNIT,
                debit_per_sample: 0,
                cap: AUTO_CAP_NS * AUTO_UNIT,
            },
        }
    }

    pub(super) fn start(self) -> i64 {
        // Off never samples; the others sample the thread's first episode.
        self.cap.min(0)
    }

    pub(super) fn earn(self, credit: i64, elapsed_ns: u64) -> i64 {
        // 2^40 ns is 18 minutes: no overflow, and the cap is far below anyway.
        let elapsed = elapsed_ns.min(1 << 40) as i64;
        credit
            .saturating_add(elapsed * self.per_ns + self.per_episode)
            .min(self.cap)
    }

    pub(super) fn spend(self, credit: i64, cost_ns: u64) -> i64 {
        let cost = cost_ns.min(1 << 40) as i64;
        credit.saturating_sub(cost * self.debit_per_ns + self.debit_per_sample)
    }
}
