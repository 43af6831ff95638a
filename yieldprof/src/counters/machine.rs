//! What the machine allows, probed once: the paranoid level, the events that open, the group plan.

use super::*;
use crate::base::fork::ForkOnce;
use perf_event::{Builder, Counter, Group};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

/// Parses `/proc/sys/kernel/perf_event_paranoid`.
pub(crate) fn parse_paranoid(text: &str) -> Option<i32> {
    text.trim().parse().ok()
}

/// The paranoid level, if readable.
pub(crate) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| parse_paranoid(&t))
}

pub(super) struct Probed {
    pub(super) paranoid: Option<i32>,
    pub(super) status: [Availability; N],
    /// Whether a thread can read its schedstat file (the run-queue wait).
    pub(super) schedstat: bool,
    _anchor: Option<Anchor>,
}

/// The software events the probe opened, kept open for the life of the process. The
/// kernel turns a software event type's hooks on when the first event of that type
/// opens anywhere and off when the last one closes, rewriting its code each time
/// (~40–60 µs per type on the build VM, at open and again at close; 16–20 ms for the
/// first open after no perf event was open on the machine for a second): while these
/// live, a thread opens and closes its own counters at ~5 µs each, so a thread's
/// first episode and its exit stay cheap. A few fds, counted in the pool.
struct Anchor {
    _members: Vec<Counter>,
    _group: Group,
    _fds: Option<Reservation>,
}

/// Runs the one-time probe now, if it has not run: `init` calls it, so that the
/// first threads a program starts (a pool's workers) do not wait for it.
pub(crate) fn probe_now() {
    probed();
}

pub(super) fn probed() -> &'static Probed {
    static PROBED: ForkOnce<Probed> = ForkOnce::new();
    PROBED.get_or_init(|| {
        let paranoid = paranoid();
        let mut status = [Availability::Available; N];
        let mut anchor = None;
        for source in [EventSource::PerfSoftware, EventSource::PerfHardware] {
            let (errors, kept) = open_errors(source, paranoid);
            for (e, r) in errors {
                status[e.index()] = Availability::Unavailable(r);
            }
            // Hardware events stay closed: they would hold counters of the PMU.
            if source == EventSource::PerfSoftware {
                anchor = kept;
            }
        }
        // A hardware group that opens may still never get on the PMU (more events than
        // counters): keep the longest prefix that runs.
        let (_, dropped) = fit_group(plan(&status, EventSource::PerfHardware), runs);
        for e in dropped {
            status[e.index()] = Availability::Unavailable(Reason::PmuFull);
        }
        let mut ru = zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            for e in events_of(EventSource::Getrusage, |_| true) {
                status[e.index()] = Availability::Unavailable(Reason::NotSupported { errno });
            }
        }
        Probed {
            paranoid,
            status,
            schedstat: exact::open_schedstat().is_some(),
            _anchor: anchor,
        }
    })
}

/// The events of `source` that cannot join a group, and why; and the group with the
/// events that opened (see [`Anchor`]).
fn open_errors(
    source: EventSource,
    paranoid: Option<i32>,
) -> (Vec<(CounterEvent, Reason)>, Option<Anchor>) {
    let events = events_of(source, |_| true);
    // The probe's fds are counted, not limited: a few, once.
    let fds = FDS.reserve(1 + events.len(), usize::MAX);
    let mut group = match new_group() {
        Ok(g) => g,
        Err(err) => {
            let r = reason_of(&err, paranoid, source);
            return (events.into_iter().map(|e| (e, r)).collect(), None);
        }
    };
    // Members stay open while the next ones join: they must fit in one group.
    let mut members = Vec::new();
    let mut errors = Vec::new();
    for e in events {
        match build(e, &mut group) {
            Ok(c) => members.push(c),
            Err(err) => errors.push((e, reason_of(&err, paranoid, source))),
        }
    }
    // Kept for the life of the process, but not by the programs it executes.
    for fd in members
        .iter()
        .map(|c| c.as_raw_fd())
        .chain([group.as_raw_fd()])
    {
        // SAFETY: fcntl on an fd this process owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let anchor = Anchor {
        _members: members,
        _group: group,
        _fds: fds,
    };
    (errors, Some(anchor))
}

/// Whether a group of `events` gets scheduled on the PMU within ~50 µs of running.
pub(super) fn runs(events: &[CounterEvent]) -> bool {
    let Some(fds) = FDS.reserve(group_fds(events.len()), usize::MAX) else {
        return false;
    };
    let Ok(g) = PerfGroup::open(events, fds) else {
        return false;
    };
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_micros(50) {
        std::hint::spin_loop();
    }
    let mut out = [0; N];
    matches!(g.read_into(&mut out), Some((_, running)) if running > 0)
}

/// Drops events from the end of `events` until `runs` accepts the rest: the kept
/// ones, and the dropped ones in their original order.
pub(crate) fn fit_group(
    mut events: Vec<CounterEvent>,
    mut runs: impl FnMut(&[CounterEvent]) -> bool,
) -> (Vec<CounterEvent>, Vec<CounterEvent>) {
    let mut dropped = Vec::new();
    while !events.is_empty() && !runs(&events) {
        dropped.extend(events.pop());
    }
    dropped.reverse();
    (events, dropped)
}

/// 0, or the errno every perf group fails with: a hook for the tests of refusals a
/// test cannot cause for real (`EACCES` from `perf_event_paranoid` when the tests run
/// as root, for one). Set only by `__private::fail_perf_groups`, never from the
/// environment, so a deployed program cannot be made to lose its counters by it.
static INJECTED_ERRNO: AtomicI32 = AtomicI32::new(0);

/// Makes every perf group opened from now on fail with `errno` (0: not any more).
pub(crate) fn fail_perf_groups(errno: i32) {
    INJECTED_ERRNO.store(errno, Relaxed);
}

/// Every perf group starts here.
pub(super) fn new_group() -> std::io::Result<Group> {
    injected()?;
    Group::new()
}

/// The error a test injected for every perf open, if any.
pub(super) fn injected() -> std::io::Result<()> {
    match INJECTED_ERRNO.load(Relaxed) {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

pub(super) fn reason_of(
    err: &std::io::Error,
    paranoid: Option<i32>,
    source: EventSource,
) -> Reason {
    Reason::from_errno(err.raw_os_error().unwrap_or(0), paranoid, source)
}

/// The events of `source` that `keep` accepts, in report order.
pub(super) fn events_of(
    source: EventSource,
    keep: impl Fn(CounterEvent) -> bool,
) -> Vec<CounterEvent> {
    CounterEvent::ALL
        .into_iter()
        .filter(|e| e.source() == source && keep(*e))
        .collect()
}

/// What one thread opens: the available events of each perf group. A group of one
/// dummy leader and no member is not worth its fd.
pub(crate) fn plan(status: &[Availability; N], source: EventSource) -> Vec<CounterEvent> {
    events_of(source, |e| status[e.index()].is_available())
}

/// What one thread opens of `source` under `sampling`. The default (`Auto`) opens the
/// context-switch counter alone of the software events, its page read on every
/// episode: each perf event a thread holds costs the kernel time at every switch of
/// it, read or not (docs/cost.md), so migrations and page faults are counted only
/// where sampling is asked for (`Every`).
pub(crate) fn thread_plan(
    status: &[Availability; N],
    source: EventSource,
    sampling: CounterSampling,
) -> Vec<CounterEvent> {
    let mut events = plan(status, source);
    if source == EventSource::PerfSoftware && sampling == CounterSampling::Auto {
        events.retain(|e| *e == CounterEvent::ContextSwitches);
    }
    events
}

/// Fds a thread takes for its software `events`: the switch counter alone holds its fd
/// and the schedstat file (a group of it, where its page does not map, two fds);
/// switches seen through rseq (`counters/rseq`) need only the schedstat file.
pub(super) fn thread_software_fds(events: &[CounterEvent], schedstat: bool) -> usize {
    match events {
        [CounterEvent::ContextSwitches] if super::rseq::usable() => usize::from(schedstat),
        [CounterEvent::ContextSwitches] => (1 + usize::from(schedstat)).max(group_fds(1)),
        _ => software_fds(events.len(), schedstat),
    }
}

/// Fds for a group of `members` (plus its leader); 0 for none.
pub(super) fn group_fds(members: usize) -> usize {
    if members == 0 {
        0
    } else {
        members + 1
    }
}

/// Fds a thread's software group of `members` takes, with its schedstat file where
/// the machine has one (kept open to split episodes' time off the CPU).
pub(super) fn software_fds(members: usize, schedstat: bool) -> usize {
    group_fds(members) + usize::from(members > 0 && schedstat)
}

pub(super) fn build(e: CounterEvent, group: &mut Group) -> std::io::Result<Counter> {
    let kind = e.perf().expect("only perf events are built");
    let mut b = Builder::new().kind(kind).group(group);
    if e.source() == EventSource::PerfSoftware {
        b.include_kernel();
    }
    b.build()
}

/// What this process can count, probed once (a few `perf_event_open` calls), plus the
/// fd budget and how threads are using it now.
///
/// ```
/// use yieldprof::counters::{capabilities, Availability, CounterEvent};
/// let caps = capabilities();
/// match caps.get(CounterEvent::CacheMisses) {
///     Availability::Available => println!("this machine has a PMU"),
///     Availability::Unavailable(why) => println!("cache-misses: n/a ({why})"),
/// }
/// ```
pub fn capabilities() -> Capabilities {
    let p = probed();
    let sampling = sampling();
    let budget = fd_budget();
    let sw = thread_software_fds(
        &thread_plan(&p.status, EventSource::PerfSoftware, sampling),
        p.schedstat,
    );
    let hw = plan(&p.status, EventSource::PerfHardware).len();
    let events = CounterEvent::ALL
        .into_iter()
        .map(|event| {
            let need = match event.source() {
                EventSource::Getrusage => 0,
                EventSource::PerfSoftware => sw,
                EventSource::PerfHardware => group_fds(hw),
            };
            let availability = match p.status[event.index()] {
                Availability::Available if sampling == CounterSampling::Off => {
                    Availability::Unavailable(Reason::Off)
                }
                Availability::Available if need > budget => {
                    Availability::Unavailable(Reason::FdBudget { budget })
                }
                a => a,
            };
            EventStatus {
                event,
                availability,
            }
        })
        .collect();
    Capabilities {
        paranoid: p.paranoid,
        events,
        sampling,
        fd_budget: budget,
        fds_in_use: FDS.in_use(),
        fds_per_thread: sw + group_fds(hw),
        threads_on_perf: THREADS_ON_PERF.load(Relaxed),
        threads_on_getrusage: THREADS_ON_GETRUSAGE.load(Relaxed),
    }
}
