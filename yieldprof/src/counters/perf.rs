//! Perf-event groups of a thread and one reading of every source.

use super::userpage::{tsc, UserPage};
use super::*;
use perf_event::hooks::sys::{self, bindings as b};
use perf_event::{Counter, Group};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(super) const GROUPS: usize = 2;
pub(super) const MAX_MEMBERS: usize = 5;

/// One perf-event group of this thread. Field order is drop order: the pages unmap,
/// then the fds close, then the reservation is given back.
pub(super) struct PerfGroup {
    /// Each member's user page, where every member's allows `rdpmc` (hardware
    /// counters on a machine with a PMU): reads then take no syscall.
    pages: Vec<UserPage>,
    _members: Vec<Counter>,
    group: Group,
    ids: [u64; MAX_MEMBERS],
    events: [CounterEvent; MAX_MEMBERS],
    len: usize,
    _fds: Reservation,
}

impl PerfGroup {
    pub(super) fn open(events: &[CounterEvent], fds: Reservation) -> std::io::Result<PerfGroup> {
        let mut group = new_group()?;
        let mut members = Vec::with_capacity(events.len());
        let mut ids = [0; MAX_MEMBERS];
        let mut evs = [CounterEvent::ContextSwitches; MAX_MEMBERS];
        for (i, &e) in events.iter().take(MAX_MEMBERS).enumerate() {
            let c = build(e, &mut group)?;
            ids[i] = c.id();
            evs[i] = e;
            members.push(c);
        }
        group.enable()?;
        // Only hardware counters can be read with rdpmc.
        let hardware = events
            .iter()
            .all(|e| e.source() == EventSource::PerfHardware);
        let pages: Vec<UserPage> = members
            .iter()
            .filter(|_| hardware)
            .filter_map(|c| UserPage::map(c.as_raw_fd()).ok())
            .filter(|p| p.read().cap_user_rdpmc())
            .collect();
        Ok(PerfGroup {
            pages: if pages.len() == members.len() {
                pages
            } else {
                Vec::new()
            },
            len: members.len(),
            _members: members,
            group,
            ids,
            events: evs,
            _fds: fds,
        })
    }

    pub(super) fn events(&self) -> &[CounterEvent] {
        &self.events[..self.len]
    }

    /// Reads the whole group into `out`: from the user pages with `rdpmc` where
    /// they allow it, else in one syscall; `(time_enabled, time_running)`.
    pub(super) fn read_into(&self, out: &mut [u64; N]) -> Option<(u64, u64)> {
        if !self.pages.is_empty() {
            let mut times = None;
            for (page, &e) in self.pages.iter().zip(self.events()) {
                let r = page.read();
                out[e.index()] = r.count();
                let now = tsc().and_then(|t| r.times_at(t, false));
                times = times.or(Some(now.unwrap_or((r.time_enabled, r.time_running))));
            }
            return times;
        }
        let mut buf = [0u64; 3 + 2 * (MAX_MEMBERS + 1)];
        // SAFETY: `buf` is valid for writes of its whole size; the fd is ours and open.
        let n = unsafe {
            libc::read(
                self.group.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                std::mem::size_of_val(&buf),
            )
        };
        let words = usize::try_from(n).ok()? / 8;
        parse_group(&buf[..words], &self.ids[..self.len], self.events(), out)
    }
}

/// Opens the calling thread's counter of the software event `e` alone, counting from
/// now with the kernel included: read through its user page, it needs no group, no id
/// and no enabling call (one syscall, where a group member takes three).
pub(super) fn open_alone(e: CounterEvent) -> std::io::Result<OwnedFd> {
    injected()?;
    let config = match e {
        CounterEvent::ContextSwitches => b::PERF_COUNT_SW_CONTEXT_SWITCHES,
        CounterEvent::CpuMigrations => b::PERF_COUNT_SW_CPU_MIGRATIONS,
        CounterEvent::PageFaults => b::PERF_COUNT_SW_PAGE_FAULTS,
        _ => return Err(std::io::ErrorKind::Unsupported.into()),
    };
    let mut attr = b::perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<b::perf_event_attr>() as u32,
        config: u64::from(config),
        ..Default::default()
    };
    attr.set_exclude_hv(1);
    // SAFETY: `attr` is a valid, fully initialised attribute block.
    let fd = unsafe { sys::perf_event_open(&mut attr, 0, -1, -1, b::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the fd was just returned to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Parses a `PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read:
/// `nr, time_enabled, time_running, {value, id} × nr`. Values go to `out` by event;
/// `None` when the buffer is short or a member is missing.
pub(crate) fn parse_group(
    buf: &[u64],
    ids: &[u64],
    events: &[CounterEvent],
    out: &mut [u64; N],
) -> Option<(u64, u64)> {
    let (&nr, rest) = buf.split_first()?;
    let nr = usize::try_from(nr).ok()?;
    let pairs = rest.get(2..2 + nr.checked_mul(2)?)?;
    let mut found = 0;
    for pair in pairs.chunks_exact(2) {
        if let Some(k) = ids.iter().position(|&id| id == pair[1]) {
            out[events[k].index()] = pair[0];
            found += 1;
        }
    }
    (found == ids.len()).then_some((rest[0], rest[1]))
}

/// `count` over a window in which the counter was enabled `enabled` ns and running
/// `running` ns: the estimate for the whole window and whether it is scaled. `None`
/// when it never ran (nothing to scale from).
pub(crate) fn scale(count: u64, enabled: u64, running: u64) -> Option<(u64, bool)> {
    if running >= enabled {
        Some((count, false))
    } else if running == 0 {
        None
    } else {
        let v = count as u128 * enabled as u128 / running as u128;
        Some((u64::try_from(v).unwrap_or(u64::MAX), true))
    }
}

pub(super) fn zeroed_rusage() -> libc::rusage {
    // SAFETY: rusage is plain integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Every source, read once.
#[derive(Clone, Copy)]
pub(crate) struct Reading {
    pub(super) values: [u64; N],
    /// `(time_enabled, time_running)` per perf group; `None` when not read.
    pub(super) times: [Option<(u64, u64)>; GROUPS],
    /// The off-CPU clock (see `exact::Mark`), read with getrusage where switches are
    /// not seen on every episode.
    pub(super) off_ns: Option<u64>,
    /// The thread's CPU clock, read with it.
    pub(super) cpu_ns: u64,
}

/// The reading taken when a sampled episode opened, and when it was started.
#[derive(Clone, Copy)]
pub(crate) struct Begin {
    pub(super) t0: u64,
    /// How long the reading took, ticks: the sample's cost at this end, where it came
    /// after the episode's start (which then does not bound it).
    pub(super) read_ticks: u64,
    pub(super) reading: Reading,
    /// Whether the thread's rseq bit was armed before the reading (`counters/rseq`).
    pub(super) watched: bool,
}
