//! Why an event can or cannot be counted, per event and for the machine.

use super::*;
use std::fmt;

/// Why a counter is not available.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The hardware event does not exist here: no (virtual) PMU, as in most VMs.
    NoPmu {
        /// `ENOENT`, `ENODEV` or `EOPNOTSUPP`.
        errno: i32,
    },
    /// `/proc/sys/kernel/perf_event_paranoid` forbids it for this user.
    Paranoid {
        /// The paranoid level read.
        level: i32,
        /// What `perf_event_open` said.
        errno: i32,
    },
    /// Refused by seccomp, a security module or missing `CAP_PERFMON`.
    Denied {
        /// `EPERM` or `EACCES`.
        errno: i32,
    },
    /// The kernel (or a sandbox) has no `perf_event_open`.
    NoSyscall,
    /// The kernel or CPU does not support this event.
    NotSupported {
        /// What `perf_event_open` said.
        errno: i32,
    },
    /// The process ran out of file descriptors.
    FdLimit {
        /// `EMFILE` or `ENFILE`.
        errno: i32,
    },
    /// The profiler's own fd budget is spent (or too small for one thread's group).
    FdBudget {
        /// The budget in force.
        budget: usize,
    },
    /// Another tool holds the PMU exclusively.
    Busy,
    /// The hardware group never got on the PMU with this event in it: the CPU has
    /// fewer counters than the group needs.
    PmuFull,
    /// The thread's perf counters open after its first wait episodes (read on
    /// getrusage, exact switches): it had fewer.
    Deferred {
        /// Episodes read on getrusage before the counters open.
        episodes: u32,
    },
    /// Counters are turned off.
    Off,
    /// Every debug register of the thread is taken (a debugger or another tool holds
    /// them): no hardware watchpoint fits.
    NoDebugRegister,
    /// Anything else `perf_event_open` said.
    Other {
        /// The errno.
        errno: i32,
    },
}

impl Reason {
    /// The errno behind the reason, if one.
    ///
    /// ```
    /// assert_eq!(yieldprof::counters::Reason::NoPmu { errno: libc::ENOENT }.errno(), Some(libc::ENOENT));
    /// ```
    pub fn errno(self) -> Option<i32> {
        match self {
            Reason::NoPmu { errno }
            | Reason::Paranoid { errno, .. }
            | Reason::Denied { errno }
            | Reason::NotSupported { errno }
            | Reason::FdLimit { errno }
            | Reason::Other { errno } => Some(errno),
            Reason::NoSyscall => Some(libc::ENOSYS),
            Reason::Busy => Some(libc::EBUSY),
            Reason::NoDebugRegister => Some(libc::ENOSPC),
            Reason::FdBudget { .. } | Reason::Deferred { .. } | Reason::Off | Reason::PmuFull => {
                None
            }
        }
    }

    /// What a failed `perf_event_open` means, given the paranoid level and the kind of
    /// event (software counters here count kernel mode, hardware ones user mode).
    pub(crate) fn from_errno(errno: i32, paranoid: Option<i32>, source: EventSource) -> Reason {
        let level = paranoid.unwrap_or(-1);
        let hardware = source == EventSource::PerfHardware;
        match errno {
            libc::EACCES | libc::EPERM if level >= 3 => Reason::Paranoid { level, errno },
            // At level 2 unprivileged users may count user mode only, which is what the
            // hardware group asks for; the software group needs kernel mode.
            libc::EACCES if level == 2 && !hardware => Reason::Paranoid { level, errno },
            libc::EACCES | libc::EPERM => Reason::Denied { errno },
            libc::ENOSYS => Reason::NoSyscall,
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP if hardware => Reason::NoPmu { errno },
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL | libc::E2BIG => {
                Reason::NotSupported { errno }
            }
            libc::EMFILE | libc::ENFILE => Reason::FdLimit { errno },
            libc::EBUSY => Reason::Busy,
            _ => Reason::Other { errno },
        }
    }
}

/// `ENOENT` for 2, and so on; `errno N` for the rest.
pub(super) fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::E2BIG => "E2BIG",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSPC => "ENOSPC",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

impl fmt::Display for Reason {
    /// A plain hint, at most ~60 characters so tables stay within 100 columns.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = |errno: &i32| errno_name(*errno);
        let s = match self {
            Reason::NoPmu { errno } => format!("no hardware PMU ({}) — typical in VMs", e(errno)),
            Reason::Paranoid { level, errno } if *level >= 3 => {
                format!(
                    "perf_event_paranoid={level}: perf off for non-root ({})",
                    e(errno)
                )
            }
            Reason::Paranoid { level, errno } => {
                format!(
                    "perf_event_paranoid={level}: needs ≤1 or CAP_PERFMON ({})",
                    e(errno)
                )
            }
            Reason::Denied { errno } if *errno == libc::EPERM => {
                "blocked by seccomp or a security module (EPERM)".to_string()
            }
            Reason::Denied { errno } => {
                format!("permission denied ({}): needs CAP_PERFMON", e(errno))
            }
            Reason::NoSyscall => "no perf_event_open in this kernel or sandbox (ENOSYS)".into(),
            Reason::NotSupported { errno } => {
                format!("not supported by this kernel or CPU ({})", e(errno))
            }
            Reason::FdLimit { errno } => format!("file descriptor limit reached ({})", e(errno)),
            Reason::FdBudget { budget } => format!("fd budget reached ({budget} fds)"),
            Reason::Busy => "PMU in exclusive use by another tool (EBUSY)".into(),
            Reason::PmuFull => "too few PMU counters for the whole group".into(),
            Reason::Deferred { episodes } => {
                format!("short thread: perf opens after {episodes} waits")
            }
            Reason::Off => "counters turned off (YIELDPROF_COUNTERS_EVERY=off)".into(),
            Reason::NoDebugRegister => {
                "no free debug register (ENOSPC): a debugger holds them".into()
            }
            Reason::Other { errno } => format!("perf_event_open failed ({})", e(errno)),
        };
        f.pad(&s)
    }
}

/// Whether an event can be counted in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Availability {
    /// It is counted.
    Available,
    /// It is not, for this reason.
    Unavailable(Reason),
}

impl Availability {
    /// Whether the event is counted.
    pub fn is_available(self) -> bool {
        self == Availability::Available
    }

    /// Why not, if not.
    pub fn reason(self) -> Option<Reason> {
        match self {
            Availability::Available => None,
            Availability::Unavailable(r) => Some(r),
        }
    }
}

/// One row of [`Capabilities`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventStatus {
    /// The event.
    pub event: CounterEvent,
    /// Whether it is counted, and why not.
    pub availability: Availability,
}

/// What this process can count, and how the counters are being used.
///
/// ```
/// let caps = yieldprof::counters::capabilities();
/// // getrusage always works: voluntary/involuntary switches are always there.
/// assert!(caps.get(yieldprof::counters::CounterEvent::VoluntarySwitches).is_available());
/// assert!(caps.fds_in_use <= caps.fd_budget.max(caps.fds_in_use));
/// println!("{caps}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// One row per [`CounterEvent`], in [`CounterEvent::ALL`] order.
    pub events: Vec<EventStatus>,
    /// The sampling policy in force.
    pub sampling: CounterSampling,
    /// The fd budget in force: the configured one, capped at a quarter of the soft
    /// `RLIMIT_NOFILE`.
    pub fd_budget: usize,
    /// Counter fds open now.
    pub fds_in_use: usize,
    /// Fds one thread's counter groups take (with its schedstat file, kept open).
    pub fds_per_thread: usize,
    /// Threads that opened perf counters so far.
    pub threads_on_perf: u64,
    /// Threads that fell back to getrusage so far (fd budget, or an open that failed).
    pub threads_on_getrusage: u64,
}

impl Capabilities {
    /// Whether `event` is counted, and why not.
    pub fn get(&self, event: CounterEvent) -> Availability {
        self.events[event.index()].availability
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paranoid = match self.paranoid {
            Some(p) => p.to_string(),
            None => "unknown".into(),
        };
        writeln!(
            f,
            "Counters: sampling {}, perf_event_paranoid {paranoid}",
            self.sampling
        )?;
        writeln!(
            f,
            "  fd budget {} ({} in use, {} per thread); threads: {} on perf, {} on getrusage",
            self.fd_budget,
            self.fds_in_use,
            self.fds_per_thread,
            self.threads_on_perf,
            self.threads_on_getrusage
        )?;
        writeln!(f, "  {:<22} {:<10} status", "event", "source")?;
        for s in &self.events {
            let status = match s.availability {
                Availability::Available => "available".to_string(),
                Availability::Unavailable(r) => format!("n/a: {r}"),
            };
            writeln!(
                f,
                "  {:<22} {:<10} {status}",
                s.event.name(),
                s.event.source().name()
            )?;
        }
        Ok(())
    }
}
