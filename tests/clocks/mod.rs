//! The calling thread's own CPU clock: the ground truth for on-CPU figures.

/// Nanoseconds of CPU the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
