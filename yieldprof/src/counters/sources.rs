//! The sources of a [`super::Mark`] read by path or fd: the thread clocks and the
//! schedstat file.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};

/// The off-CPU clock of thread `tid` of this process, read from any of its threads
/// (its CPU clock is the one `pthread_getcpuclockid` names: `CPUCLOCK_SCHED` of the
/// thread); `None` once it is gone.
pub(crate) fn off_clock_of(tid: i32) -> Option<u64> {
    let id = (!(tid as libc::clockid_t) << 3) | 6;
    let cpu = try_clock_ns(id)?;
    Some(clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(cpu))
}

/// `clock` now, ns.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    try_clock_ns(clock).unwrap_or(0)
}

/// `clock` now, ns; `None` where it cannot be read.
pub(crate) fn try_clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The calling thread's schedstat file, kept open for [`read_sources`], where it reads.
pub(crate) fn open_schedstat() -> Option<File> {
    let f = open_schedstat_unread()?;
    run_delay_of(f.as_raw_fd()).map(|_| f)
}

/// As [`open_schedstat`], without the trial read, for a machine whose schedstat
/// reads (the probe checked): the first mark reads it anyway.
pub(crate) fn open_schedstat_unread() -> Option<File> {
    File::open("/proc/thread-self/schedstat").ok()
}

/// The calling thread's run-queue wait now, from its schedstat file.
pub(crate) fn run_delay_now() -> Option<u64> {
    open_schedstat().and_then(|f| run_delay_of(f.as_raw_fd()))
}

/// `run_delay` read from an open schedstat file, from its start.
pub(crate) fn run_delay_of(fd: RawFd) -> Option<u64> {
    let mut buf = [0u8; 96];
    // SAFETY: `buf` is valid for writes of its length; the fd is open.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    let text = std::str::from_utf8(buf.get(..usize::try_from(n).ok()?)?).ok()?;
    parse_run_delay(text)
}

/// The second field of a schedstat line: ns runnable but waiting for a CPU.
pub(crate) fn parse_run_delay(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}
