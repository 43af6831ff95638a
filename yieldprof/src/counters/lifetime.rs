//! A thread's figures over its recorded life, from its start to its exit or a report:
//! its CPU time and its run-queue wait, both the kernel's.

use super::snap::ThreadCounters;
use super::*;
use std::sync::OnceLock;

impl ThreadCounters {
    /// The run-queue wait of thread `tid` since its counters opened (to its exit, once
    /// it stored it); `None` with counters off or where the kernel does not say, or
    /// where the thread `exited` without storing it (its file is gone: no path read).
    pub(crate) fn run_queue_since_open(&self, tid: i32, exited: bool) -> Option<u64> {
        since(&self.run_queue_start, &self.run_queue_end, exited, || {
            run_queue_ns(tid)
        })
    }

    /// Owner only: its CPU time `ns` ([`thread_cpu_now`]) where its registration began,
    /// or (`exit`) at its exit.
    pub(crate) fn store_cpu(&self, exit: bool, ns: Option<u64>) {
        if let Some(ns) = ns {
            let _ = [&self.cpu_start, &self.cpu_end][usize::from(exit)].set(ns);
        }
    }

    /// The CPU time of thread `tid` since it registered (to its exit, once it stored
    /// it), read on its clock by id while it lives (~0.5 µs, no file opened).
    pub(crate) fn cpu_since_start(&self, tid: i32, exited: bool) -> Option<u64> {
        since(&self.cpu_start, &self.cpu_end, exited, || {
            try_clock_ns(thread_cpu_clock(tid))
        })
    }
}

/// The calling thread's CPU time now.
pub(crate) fn thread_cpu_now() -> Option<u64> {
    try_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// A thread's figure from `start` to `end`, or to `now()` while it lives; `None` where
/// `start` is unset, or the thread exited without storing `end` (its tid is gone).
fn since(
    start: &OnceLock<u64>,
    end: &OnceLock<u64>,
    exited: bool,
    now: impl FnOnce() -> Option<u64>,
) -> Option<u64> {
    let start = *start.get()?;
    let now = match end.get() {
        Some(&end) => Some(end),
        None if exited => None,
        None => now(),
    };
    now.map(|now| now.saturating_sub(start))
}

/// The CPU-time clock of thread `tid` of this process, as glibc's
/// `pthread_getcpuclockid` makes it: `~tid << 3`, per thread (4), its run time (2).
fn thread_cpu_clock(tid: i32) -> libc::clockid_t {
    (!tid << 3) | 6
}

/// Nanoseconds thread `tid` of this process has spent runnable but waiting for a
/// CPU: the second field of `/proc/self/task/<tid>/schedstat`.
fn run_queue_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    parse_run_delay(&text)
}
