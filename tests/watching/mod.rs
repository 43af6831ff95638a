//! Helpers of the false-sharing tests.

use std::sync::{Mutex, MutexGuard};
use yieldprof::sharing::WordAccess;

/// One test at a time, every access tracked: the workloads spin, and two of them at
/// once would share the two cores.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    yieldprof::sharing::set_watch_sampling(1);
    guard
}

/// The threads that wrote the word.
pub fn writers(w: &WordAccess) -> Vec<&str> {
    w.threads
        .iter()
        .filter(|t| t.writes > 0)
        .map(|t| t.thread.as_str())
        .collect()
}
