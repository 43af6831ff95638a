//! Configuration, the layer every other one reads: each `YIELDPROF_*` variable parsed
//! once (`env`, documented on [`Options`](crate::Options)), the values settings take
//! (`values`), and the process-wide switches read on the hot path, each one relaxed
//! atomic load.

#[cfg(feature = "enabled")]
mod env;
#[cfg(all(test, feature = "enabled"))]
mod tests;
mod values;

#[cfg(feature = "enabled")]
pub(crate) use env::*;
pub use values::{CounterSampling, Metric};
pub(crate) use values::{
    DEFAULT_COUNTERS_AFTER, DEFAULT_FD_BUDGET, DEFAULT_KEEP_SNAPSHOTS, DEFAULT_MAX_NODES,
    DEFAULT_OUT_DIR, DEFAULT_REPORT_THREADS, DEFAULT_TIMELINE,
};

#[cfg(feature = "enabled")]
use crate::base::reentry;
#[cfg(feature = "enabled")]
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

#[cfg(feature = "enabled")]
const UNKNOWN: u8 = 0;
#[cfg(feature = "enabled")]
const ON: u8 = 1;
#[cfg(feature = "enabled")]
const OFF: u8 = 2;

#[cfg(feature = "enabled")]
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// 0 until set or read from the environment.
#[cfg(feature = "enabled")]
static MAX_NODES_NOW: AtomicU32 = AtomicU32::new(0);

/// `u32::MAX` until set or read from the environment (0 is a setting: no timeline).
#[cfg(feature = "enabled")]
static TIMELINE_NOW: AtomicU32 = AtomicU32::new(u32::MAX);

/// Whether probes record anything: `YIELDPROF=0` (or any off word) turns them off.
#[cfg(feature = "enabled")]
#[inline(always)]
pub(crate) fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => enabled_from_env(),
    }
}

/// Whether probes are known to record (set, or read from the environment already):
/// the hot path's entry checks this alone and leaves every other case out of line.
#[cfg(feature = "enabled")]
#[inline(always)]
pub(crate) fn enabled_known_on() -> bool {
    STATE.load(Ordering::Relaxed) == ON
}

#[cfg(feature = "enabled")]
#[cold]
fn enabled_from_env() -> bool {
    // Interrupting yieldprof (maybe this very first read) on its thread: skipped
    // rather than wait for it.
    if reentry::is_inside() {
        reentry::skip();
        return false;
    }
    let on = settings().enabled;
    // Not over a value `set_enabled` stored meanwhile.
    let _ = STATE.compare_exchange(
        UNKNOWN,
        if on { ON } else { OFF },
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    STATE.load(Ordering::Relaxed) == ON
}

/// Turns recording on or off at run time for every thread.
///
/// ```
/// yieldprof::set_enabled(false);
/// assert!(!yieldprof::is_enabled());
/// yieldprof::set_enabled(true);
/// ```
pub fn set_enabled(on: bool) {
    // Without the `enabled` feature there is nothing to turn on.
    #[cfg(not(feature = "enabled"))]
    let _ = on;
    #[cfg(feature = "enabled")]
    STATE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether recording is on (the `enabled` feature is compiled in and `YIELDPROF` is
/// not an off word).
pub fn is_enabled() -> bool {
    #[cfg(feature = "enabled")]
    return enabled();
    #[cfg(not(feature = "enabled"))]
    false
}

/// Node cap for threads that start recording from now on.
#[cfg(feature = "enabled")]
pub(crate) fn max_nodes() -> u32 {
    match MAX_NODES_NOW.load(Ordering::Relaxed) {
        0 => settings().max_nodes,
        n => n,
    }
}

/// Sets the node cap from code ([`Options::max_nodes`](crate::Options::max_nodes)),
/// within the same bounds as `YIELDPROF_MAX_NODES`; a value outside them is reported.
#[cfg(feature = "enabled")]
pub(crate) fn set_max_nodes(n: u32) {
    let n = clamp(n, MIN_NODES, MAX_NODES).unwrap_or_else(|(bound, side)| {
        eprintln!("yieldprof: max_nodes({n}) is {side} of {bound} nodes per thread; using {bound}");
        bound
    });
    MAX_NODES_NOW.store(n, Ordering::Relaxed);
}

/// Timeline length for threads that start recording from now on; 0: none.
#[cfg(feature = "enabled")]
pub(crate) fn timeline() -> u32 {
    match TIMELINE_NOW.load(Ordering::Relaxed) {
        u32::MAX => settings().timeline,
        n => n,
    }
}

/// Sets the timeline length from code ([`Options::timeline`](crate::Options::timeline)),
/// within the bounds of `YIELDPROF_TIMELINE`; a value above them is reported.
#[cfg(feature = "enabled")]
pub(crate) fn set_timeline(n: u32) {
    let n = clamp(n, 0, MAX_TIMELINE).unwrap_or_else(|(bound, side)| {
        eprintln!(
            "yieldprof: timeline({n}) is {side} of {bound} episodes per thread; using {bound}"
        );
        bound
    });
    TIMELINE_NOW.store(n, Ordering::Relaxed);
}
