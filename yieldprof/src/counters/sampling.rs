//! Which wait episodes have their counters read, and the fd budget setting.

use crate::config;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

pub use crate::config::CounterSampling;

/// The share of wait time [`CounterSampling::Auto`] lets counter reads cost.
pub(crate) const AUTO_BUDGET_PERCENT: u32 = 2;

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
            let s = config::settings().counters;
            set_sampling(s);
            s
        }
        v => CounterSampling::decode(v),
    }
}

pub(crate) fn set_sampling(s: CounterSampling) {
    SAMPLING.store(s.encode(), Relaxed);
}

pub(crate) fn set_fd_budget(n: usize) {
    FD_BUDGET.store(n.min(usize::MAX - 1), Relaxed);
}

pub(super) fn configured_fd_budget() -> usize {
    match FD_BUDGET.load(Relaxed) {
        usize::MAX => {
            let n = config::settings().fd_budget;
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
