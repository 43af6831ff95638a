//! Process-wide switches read on the hot path: each is one relaxed atomic load.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Default cap on calling-context-tree nodes per thread.
pub(crate) const DEFAULT_MAX_NODES: u32 = 4096;
static MAX_NODES: AtomicU32 = AtomicU32::new(DEFAULT_MAX_NODES);

/// Whether probes record anything: `YIELDPROF=0` (or `off`/`false`) turns them off.
#[inline(always)]
pub(crate) fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => enabled_from_env(),
    }
}

#[cold]
fn enabled_from_env() -> bool {
    let on = !matches!(
        std::env::var("YIELDPROF").as_deref(),
        Ok("0" | "off" | "false" | "no")
    );
    set_enabled(on);
    on
}

/// Turns recording on or off at run time for every thread.
///
/// ```
/// yieldprof::set_enabled(false);
/// assert!(!yieldprof::is_enabled());
/// yieldprof::set_enabled(true);
/// ```
pub fn set_enabled(on: bool) {
    STATE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether recording is on (the `enabled` feature is compiled in and `YIELDPROF` is
/// not `0`).
pub fn is_enabled() -> bool {
    cfg!(feature = "enabled") && enabled()
}

/// Node cap for threads that start recording from now on.
pub(crate) fn max_nodes() -> u32 {
    MAX_NODES.load(Ordering::Relaxed)
}

pub(crate) fn set_max_nodes(n: u32) {
    MAX_NODES.store(n.max(2), Ordering::Relaxed);
}
