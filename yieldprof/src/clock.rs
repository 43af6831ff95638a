//! The monotonic clock every duration is measured with.

/// Nanoseconds on `CLOCK_MONOTONIC` (a vDSO call, ~30 ns here, no syscall).
#[inline(always)]
pub(crate) fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
