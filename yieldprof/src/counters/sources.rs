//! The sources of a [`super::Mark`] read by path or fd: the thread clocks and the
//! schedstat file; and what one read of each source costs.

use super::{fd_budget, group_fds, plan, probed, zeroed_rusage, EventSource, PerfGroup, FDS, N};
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

/// What one read of each source costs on the calling thread, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReadCost {
    pub(crate) getrusage_ns: f64,
    /// One read of this thread's software group; `None` where perf is unavailable.
    pub(crate) perf_software_ns: Option<f64>,
}

/// Times `reads` reads of getrusage and of a software group opened for the purpose
/// (within the fd budget, closed again).
pub(crate) fn read_cost(reads: u32) -> ReadCost {
    let reads = reads.max(1);
    let mut ru = zeroed_rusage();
    let t = std::time::Instant::now();
    for _ in 0..reads {
        // SAFETY: `ru` is a valid, writable rusage.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    }
    let getrusage_ns = t.elapsed().as_nanos() as f64 / f64::from(reads);
    let events = plan(&probed().status, EventSource::PerfSoftware);
    let perf_software_ns = FDS
        .reserve(group_fds(events.len()), fd_budget())
        .filter(|_| !events.is_empty())
        .and_then(|fds| PerfGroup::open(&events, fds).ok())
        .map(|g| {
            let mut out = [0; N];
            let t = std::time::Instant::now();
            for _ in 0..reads {
                std::hint::black_box(g.read_into(&mut out));
            }
            t.elapsed().as_nanos() as f64 / f64::from(reads)
        });
    ReadCost {
        getrusage_ns,
        perf_software_ns,
    }
}
