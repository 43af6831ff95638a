//! The clock every duration is measured with.
//!
//! On x86_64 with an invariant TSC (`constant_tsc` and `nonstop_tsc` in
//! /proc/cpuinfo) it reads the time-stamp counter: ~8 ns here against ~19 ns for
//! `clock_gettime`, which is most of an episode's cost. Durations are kept in ticks
//! and turned into nanoseconds when a report is taken, by the ratio of TSC ticks to
//! `CLOCK_MONOTONIC` nanoseconds since the first reading. Elsewhere a tick is a
//! `CLOCK_MONOTONIC` nanosecond.

use crate::base::fork::ForkOnce;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

const UNKNOWN: u8 = 0;
const TSC: u8 = 1;
const MONO: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// `(ticks, monotonic ns)` at the first reading.
static ORIGIN: ForkOnce<(u64, u64)> = ForkOnce::new();

/// ns per tick, measured at the first report (see `Scale::current`).
static RATIO: ForkOnce<f64> = ForkOnce::new();

/// The reference for the ratio must span at least this long to be accurate to ~1e-5.
const MIN_CALIBRATION_NS: u64 = 10_000_000;

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc() -> u64 {
    mono_ns()
}

/// Whether `cpuinfo` (the text of /proc/cpuinfo) promises a TSC that ticks at one
/// rate on every core, in every power state.
fn invariant_tsc(cpuinfo: &str) -> bool {
    cfg!(target_arch = "x86_64")
        && cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|flags| {
                let has = |f: &str| flags.split_whitespace().any(|w| w == f);
                has("constant_tsc") && has("nonstop_tsc")
            })
}

#[cold]
fn choose() -> u64 {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mode = if invariant_tsc(&cpuinfo) { TSC } else { MONO };
    // Every thread that races here picks the same mode; the first origin wins.
    MODE.store(mode, Relaxed);
    ORIGIN.get_or_init(pair);
    now()
}

/// A `(ticks, monotonic ns)` pair read at one instant, as far as can be told: ticks
/// read on both sides of the clock read, the tightest of a few tries. A thread
/// preempted between two plain reads would skew the ratio by a whole time slice.
fn pair() -> (u64, u64) {
    tightest(|| {
        let before = now();
        let m = mono_ns();
        (before, m, now())
    })
}

/// Of five `(ticks before, ns, ticks after)` reads, the midpoint of the tightest.
fn tightest(mut read: impl FnMut() -> (u64, u64, u64)) -> (u64, u64) {
    (0..5)
        .map(|_| read())
        .min_by_key(|&(before, _, after)| after.saturating_sub(before))
        .map(|(before, m, after)| (before + after.saturating_sub(before) / 2, m))
        .expect("five reads")
}

/// Ticks (TSC or monotonic ns, see the module docs).
#[inline(always)]
pub(crate) fn now() -> u64 {
    match MODE.load(Relaxed) {
        TSC => tsc(),
        MONO => mono_ns(),
        _ => choose(),
    }
}

/// Converts tick counts to nanoseconds; made once per report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale(f64);

impl Scale {
    /// The ticks→ns ratio, measured once per process. In TSC mode it needs 10 ms
    /// since the first reading, and waits out the rest if a report comes sooner (cold
    /// path). Kept from then on: two snapshots scaled alike subtract exactly (a frame
    /// that did nothing in between shows 0 ns, not the drift of a re-measured ratio);
    /// the ratio is within ~1e-5 of the truth after 10 ms.
    pub(crate) fn current() -> Scale {
        if MODE.load(Relaxed) != TSC {
            return Scale(1.0);
        }
        Scale(*RATIO.get_or_init(|| {
            let &(t0, m0) = ORIGIN.get_or_init(pair);
            loop {
                let (t, m) = pair();
                if m - m0 >= MIN_CALIBRATION_NS && t > t0 {
                    return (m - m0) as f64 / (t - t0) as f64;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }))
    }

    /// The ratio where it is measured already, without waiting for it: for a figure
    /// the hot path bounds (ticks are ns in monotonic mode).
    pub(crate) fn known() -> Option<Scale> {
        if MODE.load(Relaxed) != TSC {
            return Some(Scale(1.0));
        }
        RATIO.get().map(|&r| Scale(r))
    }

    /// As [`Scale::known`], else the ratio since the clock's origin (within a few %
    /// once 100 µs have passed): for bounds, never for reported figures. `None` only
    /// before that.
    pub(crate) fn rough() -> Option<Scale> {
        Scale::known().or_else(|| {
            let &(t0, m0) = ORIGIN.get()?;
            let m = mono_ns();
            let t = now();
            (m.saturating_sub(m0) >= 100_000 && t > t0)
                .then(|| Scale((m - m0) as f64 / (t - t0) as f64))
        })
    }

    pub(crate) fn ns_per_tick(self) -> f64 {
        self.0
    }

    pub(crate) fn ns(self, ticks: u64) -> u64 {
        (ticks as f64 * self.0) as u64
    }

    /// The `CLOCK_MONOTONIC` time, ns, of the instant the clock read `ticks`:
    /// comparable across threads and with other tools' timestamps. Monotone in `ticks`.
    pub(crate) fn monotonic_ns(self, ticks: u64) -> u64 {
        if MODE.load(Relaxed) != TSC {
            return ticks;
        }
        let &(t0, m0) = ORIGIN.get_or_init(pair);
        if ticks >= t0 {
            m0.saturating_add(self.ns(ticks - t0))
        } else {
            m0.saturating_sub(self.ns(t0 - ticks))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_invariant_tsc_is_used() {
        let both = "processor : 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n";
        let constant_only = "flags\t\t: fpu tsc constant_tsc rdtscp\n";
        assert_eq!(invariant_tsc(both), cfg!(target_arch = "x86_64"));
        assert!(!invariant_tsc(constant_only));
        assert!(!invariant_tsc(""));
    }

    #[test]
    fn a_pair_is_taken_from_the_tightest_read() {
        // The second try was preempted between its reads; the fourth was tightest.
        let mut reads = [
            (0, 10, 4),
            (100, 5_000, 3_100),
            (200, 300, 210),
            (400, 500, 402),
            (600, 700, 650),
        ]
        .into_iter();
        assert_eq!(tightest(|| reads.next().unwrap()), (401, 500));
    }

    #[test]
    fn a_tick_reading_converts_to_the_monotonic_time_it_was_read_at() {
        let (m0, t, m1) = (mono_ns(), now(), mono_ns());
        let at = Scale::current().monotonic_ns(t);
        // The TSC-to-ns line drifts ~1e-5 of the time since the origin: well under 1 ms.
        assert!(
            at + 1_000_000 >= m0 && at <= m1 + 1_000_000,
            "{m0} ≤ {at} ≤ {m1}"
        );
    }

    #[test]
    fn ticks_convert_to_the_monotonic_clock_within_a_percent() {
        let (t0, m0) = (now(), mono_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, m1) = (now(), mono_ns());
        let scale = Scale::current();
        let measured = scale.ns(t1 - t0) as f64;
        let truth = (m1 - m0) as f64;
        assert!(
            (measured / truth - 1.0).abs() < 0.01,
            "{measured} vs {truth}"
        );
    }
}
