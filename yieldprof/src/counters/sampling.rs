//! Which wait episodes have their counters read, and the fd budget setting.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

/// Which wait episodes have their sampled counters read (page faults, hardware
/// counters; switches and the time split too where perf is denied). Set with
/// [`Options::counters`](crate::Options::counters) or `YIELDPROF_COUNTERS_EVERY`.
/// Switches and migrations are counted on every episode through the perf user page
/// wherever perf works, whatever this says, unless it is `Off`.
///
/// Reading every sampled source costs a syscall or two at each end of an episode
/// (measured here: ~1.1 µs per episode; up to ~2.7 µs on slower kernels, ~4.5 µs with
/// a PMU). The figures of the episodes that were not read are estimated from those
/// that were, in proportion to wall time, and shown as `~N`.
///
/// ```
/// use yieldprof::counters::CounterSampling;
/// assert_eq!(CounterSampling::parse("auto"), Some(CounterSampling::Auto));
/// assert_eq!(CounterSampling::parse("8"), Some(CounterSampling::Every(8)));
/// assert_eq!(CounterSampling::parse("off"), Some(CounterSampling::Off));
/// assert_eq!(CounterSampling::parse("sometimes"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterSampling {
    /// No counters: no fds, no syscalls; every figure is n/a.
    Off,
    /// Read 1 of N wait episodes per thread (`Every(1)`: all of them).
    Every(u32),
    /// The default: read an episode whenever the thread's counter reads so far cost
    /// less than 2 % of its wait time. With ~1.1 µs per sampled
    /// episode, every episode of 60 µs or more (any real sleep or park) is read, a
    /// 1 µs spin episode about 1 in 60. A thread's first episode is always read.
    #[default]
    Auto,
}

/// The share of wait time [`CounterSampling::Auto`] lets counter reads cost.
pub(crate) const AUTO_BUDGET_PERCENT: u32 = 2;

/// Default for [`Options::fd_budget`](crate::Options::fd_budget).
pub(crate) const DEFAULT_FD_BUDGET: usize = 512;

impl CounterSampling {
    /// Parses `auto`, `off` (or `0`) and `N` (read 1 of N episodes).
    pub fn parse(s: &str) -> Option<CounterSampling> {
        match s.trim() {
            "auto" => Some(CounterSampling::Auto),
            "off" | "0" => Some(CounterSampling::Off),
            n => n.parse::<u32>().ok().map(CounterSampling::Every),
        }
    }

    pub(super) fn normal(self) -> CounterSampling {
        match self {
            CounterSampling::Every(0) => CounterSampling::Off,
            s => s,
        }
    }

    pub(super) fn encode(self) -> u32 {
        match self.normal() {
            CounterSampling::Off => 1,
            CounterSampling::Auto => 2,
            CounterSampling::Every(n) => n.saturating_add(2),
        }
    }

    pub(super) fn decode(v: u32) -> CounterSampling {
        match v {
            1 => CounterSampling::Off,
            2 => CounterSampling::Auto,
            n => CounterSampling::Every(n - 2),
        }
    }

    /// From `YIELDPROF_COUNTERS_EVERY`; a bad value is reported on stderr and `Auto`
    /// kept.
    pub(crate) fn from_env() -> CounterSampling {
        match std::env::var("YIELDPROF_COUNTERS_EVERY") {
            Err(_) => CounterSampling::Auto,
            Ok(v) => CounterSampling::parse(&v).unwrap_or_else(|| {
                eprintln!(
                    "yieldprof: YIELDPROF_COUNTERS_EVERY={v:?} is not auto, off or a number; \
                     using auto"
                );
                CounterSampling::Auto
            }),
        }
    }
}

impl fmt::Display for CounterSampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.normal() {
            CounterSampling::Off => f.write_str("off"),
            CounterSampling::Every(1) => f.write_str("every episode"),
            CounterSampling::Every(n) => write!(f, "1 of {n} episodes"),
            CounterSampling::Auto => write!(f, "auto (≤ {AUTO_BUDGET_PERCENT}% of wait time)"),
        }
    }
}

pub(super) const UNSET: u32 = 0;
pub(super) static SAMPLING: AtomicU32 = AtomicU32::new(UNSET);
pub(super) static FD_BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The policy for threads that start recording from now on.
pub(crate) fn sampling() -> CounterSampling {
    match SAMPLING.load(Relaxed) {
        UNSET => {
            let s = CounterSampling::from_env();
            set_sampling(s);
            s
        }
        v => CounterSampling::decode(v),
    }
}

pub(crate) fn set_sampling(s: CounterSampling) {
    SAMPLING.store(s.encode(), Relaxed);
}

/// From `YIELDPROF_FD_BUDGET`; a bad value is reported and the default kept.
pub(crate) fn fd_budget_from_env() -> usize {
    match std::env::var("YIELDPROF_FD_BUDGET") {
        Err(_) => DEFAULT_FD_BUDGET,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!(
                "yieldprof: YIELDPROF_FD_BUDGET={v:?} is not a number; using {DEFAULT_FD_BUDGET}"
            );
            DEFAULT_FD_BUDGET
        }),
    }
}

pub(crate) fn set_fd_budget(n: usize) {
    FD_BUDGET.store(n.min(usize::MAX - 1), Relaxed);
}

pub(super) fn configured_fd_budget() -> usize {
    match FD_BUDGET.load(Relaxed) {
        usize::MAX => {
            let n = fd_budget_from_env();
            set_fd_budget(n);
            n
        }
        n => n,
    }
}

/// The budget in force: never more than a quarter of the soft fd limit, so the host
/// keeps three quarters of its descriptors whatever the profiler does.
pub(super) fn fd_budget() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    configured_fd_budget().min(soft / 4)
}
