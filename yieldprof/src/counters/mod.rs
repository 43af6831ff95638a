//! Counters per wait episode: context switches, migrations, page faults and, where the
//! hardware has a PMU, cache and instruction counts, attributed to the episode's frame.
//!
//! Sources, cheapest first:
//! - `getrusage(RUSAGE_THREAD)`: voluntary and involuntary context switches. Always
//!   there, and what is left when perf-event is denied or the fd budget is spent.
//! - perf-event software counters (context-switches, cpu-migrations, page-faults): one
//!   group per thread, counted in kernel mode too (`include_kernel`: switches happen
//!   there, so a user-only counter reads 0).
//! - perf-event hardware counters (cache-misses, cache-references, L1D read misses,
//!   instructions, cycles): a second group, user mode only. The kernel may multiplex a
//!   hardware group; deltas are then scaled by `time_enabled / time_running` and
//!   marked as estimates.
//!
//! Cost: reading every source is two syscalls, ~0.5 µs on the build VM (getrusage
//! ~0.14 µs, one perf group read ~0.39 µs) and up to ~1.3 µs elsewhere; a sampled
//! episode reads twice. So counters are read on a sample of wait episodes, chosen when
//! the episode opens (see [`CounterSampling`]); an episode that is not sampled costs a
//! compare and an add. Per frame the counts are scaled by wall time:
//! estimate = counted × wall of all episodes / wall of the sampled ones.
//!
//! File descriptors: each counter is one fd per thread, so the process holds at most
//! a budget of them (default [`DEFAULT_FD_BUDGET`], never more than a quarter of the
//! soft `RLIMIT_NOFILE`); a thread whose groups do not fit uses getrusage only. A
//! thread's fds close when it exits.

use crate::base::arena::bump;
use crate::base::clock;
use perf_event::events::{Cache, CacheOp, CacheResult, Event as PerfEvent, Hardware, Software};
use perf_event::{Builder, Counter, Group};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// Number of [`CounterEvent`]s.
pub(crate) const N: usize = 10;

/// One thing a counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CounterEvent {
    /// The thread gave up the CPU (blocked, slept): `getrusage` `ru_nvcsw`.
    VoluntarySwitches,
    /// The thread was taken off the CPU while runnable (preempted, or a `sched_yield`
    /// that handed the core over): `getrusage` `ru_nivcsw`.
    InvoluntarySwitches,
    /// perf software event `context-switches` (both kinds).
    ContextSwitches,
    /// perf software event `cpu-migrations`.
    CpuMigrations,
    /// perf software event `page-faults`.
    PageFaults,
    /// Hardware `cache-misses` (last-level cache).
    CacheMisses,
    /// Hardware `cache-references`.
    CacheReferences,
    /// Hardware `L1-dcache-load-misses`.
    L1dReadMisses,
    /// Hardware `instructions` (retired, user mode).
    Instructions,
    /// Hardware `cycles` (user mode).
    Cycles,
}

/// Where a [`CounterEvent`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventSource {
    /// `getrusage(RUSAGE_THREAD)`.
    Getrusage,
    /// A perf-event software counter.
    PerfSoftware,
    /// A perf-event hardware counter (needs a PMU).
    PerfHardware,
}

impl EventSource {
    /// Short name, as in the capability table.
    pub const fn name(self) -> &'static str {
        match self {
            EventSource::Getrusage => "getrusage",
            EventSource::PerfSoftware => "perf sw",
            EventSource::PerfHardware => "perf hw",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl CounterEvent {
    /// Every event, in report order.
    pub const ALL: [CounterEvent; N] = [
        CounterEvent::VoluntarySwitches,
        CounterEvent::InvoluntarySwitches,
        CounterEvent::ContextSwitches,
        CounterEvent::CpuMigrations,
        CounterEvent::PageFaults,
        CounterEvent::CacheMisses,
        CounterEvent::CacheReferences,
        CounterEvent::L1dReadMisses,
        CounterEvent::Instructions,
        CounterEvent::Cycles,
    ];

    /// The name `perf list` uses (or the `getrusage` field's meaning).
    ///
    /// ```
    /// assert_eq!(yieldprof::CounterEvent::CacheMisses.name(), "cache-misses");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            CounterEvent::VoluntarySwitches => "voluntary-switches",
            CounterEvent::InvoluntarySwitches => "involuntary-switches",
            CounterEvent::ContextSwitches => "context-switches",
            CounterEvent::CpuMigrations => "cpu-migrations",
            CounterEvent::PageFaults => "page-faults",
            CounterEvent::CacheMisses => "cache-misses",
            CounterEvent::CacheReferences => "cache-references",
            CounterEvent::L1dReadMisses => "L1-dcache-load-misses",
            CounterEvent::Instructions => "instructions",
            CounterEvent::Cycles => "cycles",
        }
    }

    /// Where it is read from.
    pub const fn source(self) -> EventSource {
        match self {
            CounterEvent::VoluntarySwitches | CounterEvent::InvoluntarySwitches => {
                EventSource::Getrusage
            }
            CounterEvent::ContextSwitches
            | CounterEvent::CpuMigrations
            | CounterEvent::PageFaults => EventSource::PerfSoftware,
            _ => EventSource::PerfHardware,
        }
    }

    const fn index(self) -> usize {
        self as usize
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }

    fn perf(self) -> Option<PerfEvent> {
        const L1D_READ_MISS: Cache = Cache {
            which: perf_event::events::WhichCache::L1D,
            operation: CacheOp::READ,
            result: CacheResult::MISS,
        };
        Some(match self {
            CounterEvent::VoluntarySwitches | CounterEvent::InvoluntarySwitches => return None,
            CounterEvent::ContextSwitches => Software::CONTEXT_SWITCHES.into(),
            CounterEvent::CpuMigrations => Software::CPU_MIGRATIONS.into(),
            CounterEvent::PageFaults => Software::PAGE_FAULTS.into(),
            CounterEvent::CacheMisses => Hardware::CACHE_MISSES.into(),
            CounterEvent::CacheReferences => Hardware::CACHE_REFERENCES.into(),
            CounterEvent::L1dReadMisses => L1D_READ_MISS.into(),
            CounterEvent::Instructions => Hardware::INSTRUCTIONS.into(),
            CounterEvent::Cycles => Hardware::CPU_CYCLES.into(),
        })
    }
}

// ---------------------------------------------------------------------------------
// Values as the report shows them
// ---------------------------------------------------------------------------------

/// A counter's figure: counted, estimated, or not available (never a made-up 0).
///
/// ```
/// use yieldprof::Count;
/// assert_eq!(Count::Exact(512).to_string(), "512");
/// assert_eq!(Count::Scaled(512).to_string(), "~512");
/// assert_eq!(Count::NotAvailable.to_string(), "n/a");
/// assert_eq!(Count::NotAvailable.value(), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Count {
    /// Could not be counted: [`capabilities`] says why.
    #[default]
    NotAvailable,
    /// Counted over every episode.
    Exact(u64),
    /// Estimated: counted on a sample of the episodes (or while the kernel multiplexed
    /// the hardware counters) and scaled up.
    Scaled(u64),
}

impl Count {
    /// The figure, exact or estimated; `None` when not available.
    pub fn value(self) -> Option<u64> {
        match self {
            Count::NotAvailable => None,
            Count::Exact(v) | Count::Scaled(v) => Some(v),
        }
    }

    /// Whether the figure is an estimate.
    pub fn is_scaled(self) -> bool {
        matches!(self, Count::Scaled(_))
    }

    /// The figure divided by `n` (e.g. per episode), `None` when not available.
    pub fn per(self, n: u64) -> Option<f64> {
        self.value().map(|v| v as f64 / n.max(1) as f64)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Count::NotAvailable => "n/a".to_string(),
            Count::Exact(v) => v.to_string(),
            Count::Scaled(v) => format!("~{v}"),
        };
        f.pad(&s)
    }
}

/// The counters of a wait site or a thread. Sites count nested frames too, like their
/// wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Counters {
    /// Voluntary context switches (getrusage).
    pub voluntary_switches: Count,
    /// Involuntary context switches (getrusage).
    pub involuntary_switches: Count,
    /// perf `context-switches`.
    pub context_switches: Count,
    /// perf `cpu-migrations`.
    pub cpu_migrations: Count,
    /// perf `page-faults`.
    pub page_faults: Count,
    /// Hardware `cache-misses`.
    pub cache_misses: Count,
    /// Hardware `cache-references`.
    pub cache_references: Count,
    /// Hardware L1D read misses.
    pub l1d_read_misses: Count,
    /// Hardware `instructions`.
    pub instructions: Count,
    /// Hardware `cycles`.
    pub cycles: Count,
    /// Episodes (polls, for `async fn`) whose counters were read; the rest are
    /// estimated from them.
    pub sampled: u64,
}

impl Counters {
    /// The figure for `event`.
    ///
    /// ```
    /// use yieldprof::{CounterEvent, Counters, Count};
    /// assert_eq!(Counters::default().get(CounterEvent::Cycles), Count::NotAvailable);
    /// ```
    pub fn get(&self, event: CounterEvent) -> Count {
        match event {
            CounterEvent::VoluntarySwitches => self.voluntary_switches,
            CounterEvent::InvoluntarySwitches => self.involuntary_switches,
            CounterEvent::ContextSwitches => self.context_switches,
            CounterEvent::CpuMigrations => self.cpu_migrations,
            CounterEvent::PageFaults => self.page_faults,
            CounterEvent::CacheMisses => self.cache_misses,
            CounterEvent::CacheReferences => self.cache_references,
            CounterEvent::L1dReadMisses => self.l1d_read_misses,
            CounterEvent::Instructions => self.instructions,
            CounterEvent::Cycles => self.cycles,
        }
    }

    pub(crate) fn slot(&mut self, event: CounterEvent) -> &mut Count {
        match event {
            CounterEvent::VoluntarySwitches => &mut self.voluntary_switches,
            CounterEvent::InvoluntarySwitches => &mut self.involuntary_switches,
            CounterEvent::ContextSwitches => &mut self.context_switches,
            CounterEvent::CpuMigrations => &mut self.cpu_migrations,
            CounterEvent::PageFaults => &mut self.page_faults,
            CounterEvent::CacheMisses => &mut self.cache_misses,
            CounterEvent::CacheReferences => &mut self.cache_references,
            CounterEvent::L1dReadMisses => &mut self.l1d_read_misses,
            CounterEvent::Instructions => &mut self.instructions,
            CounterEvent::Cycles => &mut self.cycles,
        }
    }

    /// Voluntary plus involuntary switches (getrusage).
    pub fn switches(&self) -> Count {
        match (self.voluntary_switches, self.involuntary_switches) {
            (Count::Exact(a), Count::Exact(b)) => Count::Exact(a + b),
            (a, b) => match (a.value(), b.value()) {
                (Some(a), Some(b)) => Count::Scaled(a + b),
                _ => Count::NotAvailable,
            },
        }
    }
}

/// How a thread's counters are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterSource {
    /// perf-event groups (and getrusage for voluntary/involuntary switches).
    Perf,
    /// getrusage only, for this reason.
    Getrusage(Reason),
    /// Counters are turned off ([`CounterSampling::Off`]).
    Off,
}

impl fmt::Display for CounterSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            CounterSource::Perf => "perf",
            CounterSource::Getrusage(_) => "getrusage",
            CounterSource::Off => "off",
        })
    }
}

// ---------------------------------------------------------------------------------
// Availability
// ---------------------------------------------------------------------------------

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
    /// Counters are turned off.
    Off,
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
    /// assert_eq!(yieldprof::Reason::NoPmu { errno: libc::ENOENT }.errno(), Some(libc::ENOENT));
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
            Reason::FdBudget { .. } | Reason::Off | Reason::PmuFull => None,
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
fn errno_name(errno: i32) -> String {
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
            Reason::Off => "counters turned off (YIELDPROF_COUNTERS_EVERY=off)".into(),
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
/// let caps = yieldprof::capabilities();
/// // getrusage always works: voluntary/involuntary switches are always there.
/// assert!(caps.get(yieldprof::CounterEvent::VoluntarySwitches).is_available());
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
    /// Fds one thread's counter groups take.
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

// ---------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------

/// Which wait episodes have their counters read. Set with
/// [`Options::counters`](crate::Options::counters) or `YIELDPROF_COUNTERS_EVERY`.
///
/// Reading every source costs two syscalls at each end of an episode (measured here:
/// ~1.1 µs per episode; up to ~2.7 µs on slower kernels, ~4.5 µs with a PMU). The figures
/// of the episodes that were not read are estimated from those that were, in
/// proportion to wall time, and shown as `~N`.
///
/// ```
/// use yieldprof::CounterSampling;
/// assert_eq!(CounterSampling::parse("auto"), Some(CounterSampling::Auto));
/// assert_eq!(CounterSampling::parse("8"), Some(CounterSampling::Every(8)));
/// assert_eq!(CounterSampling::parse("off"), Some(CounterSampling::Off));
/// assert_eq!(CounterSampling::parse("sometimes"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterSampling {
    /// No counters: no fds, no syscalls; every figure is n/a.
    Off,
    /// Read 1 of N wait episodes per thread (`Every(1)`: all of them).
    Every(u32),
    /// The default: read an episode whenever the thread's counter reads so far cost
    /// less than [`AUTO_BUDGET_PERCENT`] % of its wait time. With ~1.1 µs per sampled
    /// episode, every episode of 60 µs or more (any real sleep or park) is read, a
    /// 1 µs spin episode about 1 in 60. A thread's first episode is always read.
    #[default]
    Auto,
}

/// The share of wait time [`CounterSampling::Auto`] lets counter reads cost.
pub const AUTO_BUDGET_PERCENT: u32 = 2;

/// Default for [`Options::fd_budget`](crate::Options::fd_budget).
pub const DEFAULT_FD_BUDGET: usize = 512;

impl CounterSampling {
    /// Parses `auto`, `off` (or `0`) and `N` (read 1 of N episodes).
    pub fn parse(s: &str) -> Option<CounterSampling> {
        match s.trim() {
            "auto" => Some(CounterSampling::Auto),
            "off" | "0" => Some(CounterSampling::Off),
            n => n.parse::<u32>().ok().map(CounterSampling::Every),
        }
    }

    fn normal(self) -> CounterSampling {
        match self {
            CounterSampling::Every(0) => CounterSampling::Off,
            s => s,
        }
    }

    fn encode(self) -> u32 {
        match self.normal() {
            CounterSampling::Off => 1,
            CounterSampling::Auto => 2,
            CounterSampling::Every(n) => n.saturating_add(2),
        }
    }

    fn decode(v: u32) -> CounterSampling {
        match v {
            1 => CounterSampling::Off,
            2 => CounterSampling::Auto,
            n => CounterSampling::Every(n - 2),
        }
    }

    /// From `YIELDPROF_COUNTERS_EVERY`; a bad value is reported on stderr and `Auto`
    /// kept.
    pub(crate) fn from_env() -> CounterSampling {
        match std::env::var("YIELDPROF_COUNTERS_EVERY") {
            Err(_) => CounterSampling::Auto,
            Ok(v) => CounterSampling::parse(&v).unwrap_or_else(|| {
                eprintln!(
                    "yieldprof: YIELDPROF_COUNTERS_EVERY={v:?} is not auto, off or a number; \
                     using auto"
                );
                CounterSampling::Auto
            }),
        }
    }
}

impl fmt::Display for CounterSampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.normal() {
            CounterSampling::Off => f.write_str("off"),
            CounterSampling::Every(1) => f.write_str("every episode"),
            CounterSampling::Every(n) => write!(f, "1 of {n} episodes"),
            CounterSampling::Auto => write!(f, "auto (≤ {AUTO_BUDGET_PERCENT}% of wait time)"),
        }
    }
}

const UNSET: u32 = 0;
static SAMPLING: AtomicU32 = AtomicU32::new(UNSET);
static FD_BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The policy for threads that start recording from now on.
pub(crate) fn sampling() -> CounterSampling {
    match SAMPLING.load(Relaxed) {
        UNSET => {
            let s = CounterSampling::from_env();
            set_sampling(s);
            s
        }
        v => CounterSampling::decode(v),
    }
}

pub(crate) fn set_sampling(s: CounterSampling) {
    SAMPLING.store(s.encode(), Relaxed);
}

/// From `YIELDPROF_FD_BUDGET`; a bad value is reported and the default kept.
pub(crate) fn fd_budget_from_env() -> usize {
    match std::env::var("YIELDPROF_FD_BUDGET") {
        Err(_) => DEFAULT_FD_BUDGET,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!(
                "yieldprof: YIELDPROF_FD_BUDGET={v:?} is not a number; using {DEFAULT_FD_BUDGET}"
            );
            DEFAULT_FD_BUDGET
        }),
    }
}

pub(crate) fn set_fd_budget(n: usize) {
    FD_BUDGET.store(n.min(usize::MAX - 1), Relaxed);
}

fn configured_fd_budget() -> usize {
    match FD_BUDGET.load(Relaxed) {
        usize::MAX => {
            let n = fd_budget_from_env();
            set_fd_budget(n);
            n
        }
        n => n,
    }
}

/// The budget in force: never more than a quarter of the soft fd limit, so the host
/// keeps three quarters of its descriptors whatever the profiler does.
fn fd_budget() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    configured_fd_budget().min(soft / 4)
}

// ---------------------------------------------------------------------------------
// File descriptor budget
// ---------------------------------------------------------------------------------

/// Fds held by counters, process-wide.
pub(crate) struct FdPool {
    used: AtomicUsize,
}

static FDS: FdPool = FdPool::new();
static THREADS_ON_PERF: AtomicU64 = AtomicU64::new(0);
static THREADS_ON_GETRUSAGE: AtomicU64 = AtomicU64::new(0);

impl FdPool {
    pub(crate) const fn new() -> FdPool {
        FdPool {
            used: AtomicUsize::new(0),
        }
    }

    /// Takes `n` fds if that keeps the pool within `limit`.
    pub(crate) fn reserve(&'static self, n: usize, limit: usize) -> Option<Reservation> {
        let mut used = self.used.load(Relaxed);
        loop {
            let next = used.checked_add(n).filter(|&t| t <= limit)?;
            match self
                .used
                .compare_exchange_weak(used, next, Relaxed, Relaxed)
            {
                Ok(_) => return Some(Reservation { pool: self, n }),
                Err(now) => used = now,
            }
        }
    }

    pub(crate) fn in_use(&self) -> usize {
        self.used.load(Relaxed)
    }
}

/// Fds taken from a pool; given back when dropped (after the fds it covers are
/// closed: it is the last field of its owner).
pub(crate) struct Reservation {
    pool: &'static FdPool,
    n: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.n, Relaxed);
    }
}

// ---------------------------------------------------------------------------------
// What the machine allows (probed once)
// ---------------------------------------------------------------------------------

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

struct Probed {
    paranoid: Option<i32>,
    status: [Availability; N],
}

fn probed() -> &'static Probed {
    static PROBED: OnceLock<Probed> = OnceLock::new();
    PROBED.get_or_init(|| {
        let paranoid = paranoid();
        let mut status = [Availability::Available; N];
        for source in [EventSource::PerfSoftware, EventSource::PerfHardware] {
            for (e, r) in open_errors(source, paranoid) {
                status[e.index()] = Availability::Unavailable(r);
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
        Probed { paranoid, status }
    })
}

/// The events of `source` that cannot join a group, and why.
fn open_errors(source: EventSource, paranoid: Option<i32>) -> Vec<(CounterEvent, Reason)> {
    let events = events_of(source, |_| true);
    // The probe's fds are counted, not limited: a few, for microseconds, once.
    let _fds = FDS.reserve(1 + events.len(), usize::MAX);
    let mut group = match new_group() {
        Ok(g) => g,
        Err(err) => {
            let r = reason_of(&err, paranoid, source);
            return events.into_iter().map(|e| (e, r)).collect();
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
    drop(members);
    errors
}

/// Whether a group of `events` gets scheduled on the PMU within ~50 µs of running.
fn runs(events: &[CounterEvent]) -> bool {
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

/// Every perf group starts here. For tests only: `YIELDPROF_TEST_PERF_ERRNO=N` (read
/// once) makes it fail with errno N, for the refusals a test cannot cause for real
/// (`EACCES` from `perf_event_paranoid` when the tests run as root, for one).
fn new_group() -> std::io::Result<Group> {
    static INJECTED: OnceLock<Option<i32>> = OnceLock::new();
    let injected = INJECTED.get_or_init(|| {
        std::env::var("YIELDPROF_TEST_PERF_ERRNO")
            .ok()
            .and_then(|v| v.trim().parse().ok())
    });
    match *injected {
        Some(errno) => Err(std::io::Error::from_raw_os_error(errno)),
        None => Group::new(),
    }
}

fn reason_of(err: &std::io::Error, paranoid: Option<i32>, source: EventSource) -> Reason {
    Reason::from_errno(err.raw_os_error().unwrap_or(0), paranoid, source)
}

/// The events of `source` that `keep` accepts, in report order.
fn events_of(source: EventSource, keep: impl Fn(CounterEvent) -> bool) -> Vec<CounterEvent> {
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

/// Fds for a group of `members` (plus its leader); 0 for none.
fn group_fds(members: usize) -> usize {
    if members == 0 {
        0
    } else {
        members + 1
    }
}

fn build(e: CounterEvent, group: &mut Group) -> std::io::Result<Counter> {
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
/// use yieldprof::{capabilities, Availability, CounterEvent};
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
    let sw = plan(&p.status, EventSource::PerfSoftware).len();
    let hw = plan(&p.status, EventSource::PerfHardware).len();
    let events = CounterEvent::ALL
        .into_iter()
        .map(|event| {
            let need = match event.source() {
                EventSource::Getrusage => 0,
                EventSource::PerfSoftware => group_fds(sw),
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
        fds_per_thread: group_fds(sw) + group_fds(hw),
        threads_on_perf: THREADS_ON_PERF.load(Relaxed),
        threads_on_getrusage: THREADS_ON_GETRUSAGE.load(Relaxed),
    }
}

// ---------------------------------------------------------------------------------
// Per-thread state
// ---------------------------------------------------------------------------------

const GROUPS: usize = 2;
const MAX_MEMBERS: usize = 5;

/// One perf-event group of this thread. Field order is drop order: the fds close
/// before the reservation is given back.
struct PerfGroup {
    _members: Vec<Counter>,
    group: Group,
    ids: [u64; MAX_MEMBERS],
    events: [CounterEvent; MAX_MEMBERS],
    len: usize,
    _fds: Reservation,
}

impl PerfGroup {
    fn open(events: &[CounterEvent], fds: Reservation) -> std::io::Result<PerfGroup> {
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
        Ok(PerfGroup {
            len: members.len(),
            _members: members,
            group,
            ids,
            events: evs,
            _fds: fds,
        })
    }

    fn events(&self) -> &[CounterEvent] {
        &self.events[..self.len]
    }

    /// Reads the whole group in one syscall into `out`; `(time_enabled, time_running)`.
    fn read_into(&self, out: &mut [u64; N]) -> Option<(u64, u64)> {
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

fn zeroed_rusage() -> libc::rusage {
    // SAFETY: rusage is plain integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Every source, read once.
#[derive(Clone, Copy)]
pub(crate) struct Reading {
    values: [u64; N],
    /// `(time_enabled, time_running)` per perf group; `None` when not read.
    times: [Option<(u64, u64)>; GROUPS],
}

/// The reading taken when a sampled episode opened, and when it was started.
#[derive(Clone, Copy)]
pub(crate) struct Begin {
    t0: u64,
    reading: Reading,
}

/// The sampling policy as credit arithmetic: each closed wait episode earns
/// `elapsed × per_ns + per_episode`, each sample costs `cost × debit_per_ns +
/// debit_per_sample`, and an episode is sampled when the credit is not negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Policy {
    per_ns: i64,
    per_episode: i64,
    debit_per_ns: i64,
    debit_per_sample: i64,
    cap: i64,
}

/// Credit is kept in ns × 100 × 100: percent with two decimals, no division.
const AUTO_UNIT: i64 = 10_000;
/// Auto saves up at most this much counter time (ns): a long sleep does not buy a
/// burst of reads on the short episodes after it.
const AUTO_CAP_NS: i64 = 100_000;

impl Policy {
    fn of(s: CounterSampling) -> Policy {
        match s.normal() {
            CounterSampling::Off => Policy {
                per_ns: 0,
                per_episode: 0,
                debit_per_ns: 0,
                debit_per_sample: 0,
                cap: -1,
            },
            CounterSampling::Every(n) => Policy {
                per_ns: 0,
                per_episode: 1,
                debit_per_ns: 0,
                debit_per_sample: i64::from(n),
                cap: 0,
            },
            CounterSampling::Auto => Policy {
                per_ns: i64::from(AUTO_BUDGET_PERCENT) * 100,
                per_episode: 0,
                debit_per_ns: AUTO_UNIT,
                debit_per_sample: 0,
                cap: AUTO_CAP_NS * AUTO_UNIT,
            },
        }
    }

    fn start(self) -> i64 {
        // Off never samples; the others sample the thread's first episode.
        self.cap.min(0)
    }

    fn earn(self, credit: i64, elapsed_ns: u64) -> i64 {
        // 2^40 ns is 18 minutes: no overflow, and the cap is far below anyway.
        let elapsed = elapsed_ns.min(1 << 40) as i64;
        credit
            .saturating_add(elapsed * self.per_ns + self.per_episode)
            .min(self.cap)
    }

    fn spend(self, credit: i64, cost_ns: u64) -> i64 {
        let cost = cost_ns.min(1 << 40) as i64;
        credit.saturating_sub(cost * self.debit_per_ns + self.debit_per_sample)
    }
}

thread_local! {
    /// Marks threads whose counters are open, so a report can refresh the calling
    /// thread's totals without registering it.
    static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread has counters to refresh.
pub(crate) fn open_here() -> bool {
    OPEN.with(Cell::get)
}

/// A thread's own counter state: only the owner touches it.
pub(crate) struct LocalCounters {
    credit: Cell<i64>,
    // Readings of the sampled episodes still open, innermost last. Kept here rather
    // than in each guard so that a guard stays a few words: every episode moves one.
    open_samples: RefCell<Vec<Begin>>,
    policy: Policy,
    on: bool,
    base: [u64; 2],
    groups: [Option<PerfGroup>; GROUPS],
}

impl LocalCounters {
    /// Opens this thread's counters, within the fd budget.
    pub(crate) fn open(shared: &ThreadCounters) -> LocalCounters {
        let sampling = sampling();
        let policy = Policy::of(sampling);
        let mut local = LocalCounters {
            credit: Cell::new(policy.start()),
            open_samples: RefCell::new(Vec::new()),
            policy,
            on: sampling != CounterSampling::Off,
            base: [0; 2],
            groups: [None, None],
        };
        if !local.on {
            let _ = shared.setup.set(Setup {
                source: CounterSource::Off,
                mask: 0,
            });
            return local;
        }
        let mut r = local.read();
        local.base = [r.values[0], r.values[1]];
        let p = probed();
        let budget = fd_budget();
        let mut why = None;
        let mut mask = 0u16;
        for e in events_of(EventSource::Getrusage, |e| {
            p.status[e.index()].is_available()
        }) {
            mask |= e.bit();
        }
        for (k, source) in [EventSource::PerfSoftware, EventSource::PerfHardware]
            .into_iter()
            .enumerate()
        {
            let events = plan(&p.status, source);
            if events.is_empty() {
                if source == EventSource::PerfSoftware {
                    why = p.status[CounterEvent::ContextSwitches.index()].reason();
                }
                continue;
            }
            let Some(fds) = FDS.reserve(group_fds(events.len()), budget) else {
                why = why.or(Some(Reason::FdBudget { budget }));
                continue;
            };
            match PerfGroup::open(&events, fds) {
                Ok(g) => {
                    for e in g.events() {
                        mask |= e.bit();
                    }
                    local.groups[k] = Some(g);
                }
                Err(err) => why = why.or(Some(reason_of(&err, p.paranoid, source))),
            }
        }
        let source = if local.groups[0].is_some() {
            THREADS_ON_PERF.fetch_add(1, Relaxed);
            CounterSource::Perf
        } else {
            THREADS_ON_GETRUSAGE.fetch_add(1, Relaxed);
            CounterSource::Getrusage(why.unwrap_or(Reason::Off))
        };
        let _ = shared.setup.set(Setup { source, mask });
        // Perf counters start at 0 now; the getrusage base was taken above.
        r = local.read();
        local.publish(shared, &r);
        OPEN.with(|o| o.set(true));
        local
    }

    /// Whether the episode opening now has its counters read: one load and compare.
    #[inline(always)]
    pub(crate) fn wants_sample(&self) -> bool {
        self.credit.get() >= 0
    }

    /// Reads every source at a sampled episode's start; the returned index goes
    /// back to [`LocalCounters::finish`].
    #[inline(never)]
    pub(crate) fn begin(&self) -> u32 {
        let begin = Begin {
            t0: clock::now(),
            reading: self.read(),
        };
        let mut open = self.open_samples.borrow_mut();
        open.push(begin);
        open.len() as u32 - 1
    }

    /// A wait episode that was not sampled closed after `elapsed` ns.
    #[inline(always)]
    pub(crate) fn earn(&self, elapsed: u64) {
        self.credit
            .set(self.policy.earn(self.credit.get(), elapsed));
    }

    /// A sampled episode on `node` ran from `start` to `end`: adds its deltas to the
    /// node, refreshes the thread totals and pays for the reads.
    #[inline(never)]
    pub(crate) fn finish(
        &self,
        shared: &ThreadCounters,
        node: &NodeCounts,
        sample: u32,
        start: u64,
        end: u64,
    ) {
        let r = self.read();
        let begin = {
            let mut open = self.open_samples.borrow_mut();
            let Some(&begin) = open.get(sample as usize) else {
                return;
            };
            // Also drops readings of inner episodes whose guards were leaked.
            open.truncate(sample as usize);
            begin
        };
        let begin = &begin;
        // At least 1 ns, so a sampled episode always shows as counted time.
        let wall = end.saturating_sub(start).max(1);
        let b = &begin.reading;
        for e in [
            CounterEvent::VoluntarySwitches,
            CounterEvent::InvoluntarySwitches,
        ] {
            let i = e.index();
            bump(&node.values[i], r.values[i].saturating_sub(b.values[i]));
        }
        bump(&node.src_ns[EventSource::Getrusage.index()], wall);
        for (k, g) in self.groups.iter().enumerate() {
            let (Some(g), Some(t0), Some(t1)) = (g, b.times[k], r.times[k]) else {
                continue;
            };
            let enabled = t1.0.saturating_sub(t0.0);
            let running = t1.1.saturating_sub(t0.1);
            // Not scheduled at all in this window: nothing to scale from.
            let Some((_, scaled)) = scale(1, enabled, running) else {
                continue;
            };
            for &e in g.events() {
                let i = e.index();
                let delta = r.values[i].saturating_sub(b.values[i]);
                if let Some((v, _)) = scale(delta, enabled, running) {
                    bump(&node.values[i], v);
                }
            }
            bump(&node.src_ns[k + 1], wall);
            if scaled {
                bump(&node.scaled, 1);
            }
        }
        bump(&node.sampled, 1);
        self.publish(shared, &r);
        let cost = start.saturating_sub(begin.t0) + clock::now().saturating_sub(end);
        bump(&shared.overhead_ns, cost);
        bump(&shared.sampled, 1);
        let credit = self.policy.spend(self.credit.get(), cost);
        self.credit
            .set(self.policy.earn(credit, end.saturating_sub(start)));
    }

    /// Brings the thread totals up to now (a report on this thread, thread exit).
    pub(crate) fn refresh(&self, shared: &ThreadCounters) {
        if self.on {
            self.publish(shared, &self.read());
        }
    }

    fn read(&self) -> Reading {
        let mut r = Reading {
            values: [0; N],
            times: [None; GROUPS],
        };
        let mut ru = zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0 {
            r.values[CounterEvent::VoluntarySwitches.index()] = ru.ru_nvcsw as u64;
            r.values[CounterEvent::InvoluntarySwitches.index()] = ru.ru_nivcsw as u64;
        }
        for (k, g) in self.groups.iter().enumerate() {
            if let Some(g) = g {
                r.times[k] = g.read_into(&mut r.values);
            }
        }
        r
    }

    /// Stores the thread totals: getrusage since the thread registered, perf since its
    /// groups opened (scaled like `perf stat` when multiplexed).
    fn publish(&self, shared: &ThreadCounters, r: &Reading) {
        for (i, e) in [
            CounterEvent::VoluntarySwitches,
            CounterEvent::InvoluntarySwitches,
        ]
        .into_iter()
        .enumerate()
        {
            let v = r.values[e.index()].saturating_sub(self.base[i]);
            shared.totals[e.index()].store(v, Relaxed);
        }
        for (k, g) in self.groups.iter().enumerate() {
            let (Some(g), Some((enabled, running))) = (g, r.times[k]) else {
                continue;
            };
            for &e in g.events() {
                if let Some((v, scaled)) = scale(r.values[e.index()], enabled, running) {
                    shared.totals[e.index()].store(v, Relaxed);
                    if scaled {
                        shared.scaled.store(true, Relaxed);
                    }
                }
            }
        }
    }
}

impl Drop for LocalCounters {
    fn drop(&mut self) {
        OPEN.with(|o| o.set(false));
    }
}

/// How a thread was set up; written once by the owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    source: CounterSource,
    /// Bit per [`CounterEvent`] this thread counts.
    mask: u16,
}

/// A thread's counters as a report reads them.
#[derive(Default)]
pub(crate) struct ThreadCounters {
    setup: OnceLock<Setup>,
    totals: [AtomicU64; N],
    overhead_ns: AtomicU64,
    sampled: AtomicU64,
    scaled: AtomicBool,
}

impl ThreadCounters {
    fn mask(&self) -> u16 {
        self.setup.get().map_or(0, |s| s.mask)
    }

    /// The root node's counts: the thread totals over its whole `wall`.
    pub(crate) fn root(&self, wall: u64) -> NodeSnap {
        let mask = self.mask();
        let mut n = NodeSnap::default();
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                n.values[e.index()] = self.totals[e.index()].load(Relaxed);
                n.ns[e.index()] = wall.max(1);
            }
        }
        n.sampled = self.sampled.load(Relaxed);
        n.scaled = u64::from(self.scaled.load(Relaxed));
        n
    }

    /// A copy of what the thread-level view needs.
    pub(crate) fn snapshot(&self) -> ThreadSnap {
        ThreadSnap {
            source: self.setup.get().map_or(CounterSource::Off, |s| s.source),
            overhead_ns: self.overhead_ns.load(Relaxed),
            run_queue_ns: None,
        }
    }

    /// Per-node counts, masked by what this thread counts.
    pub(crate) fn node(&self, c: &NodeCounts) -> NodeSnap {
        let mask = self.mask();
        let mut n = NodeSnap {
            sampled: c.sampled.load(Relaxed),
            scaled: c.scaled.load(Relaxed),
            ..NodeSnap::default()
        };
        for e in CounterEvent::ALL {
            if mask & e.bit() != 0 {
                n.values[e.index()] = c.values[e.index()].load(Relaxed);
                n.ns[e.index()] = c.src_ns[e.source().index()].load(Relaxed);
            }
        }
        n
    }
}

/// Counter sums of one calling-context node; the owner writes them with `bump`.
#[derive(Default)]
pub(crate) struct NodeCounts {
    values: [AtomicU64; N],
    /// Wall time of the sampled episodes, per source.
    src_ns: [AtomicU64; 3],
    sampled: AtomicU64,
    /// Sampled episodes whose perf deltas were scaled for multiplexing.
    scaled: AtomicU64,
}

/// A copy of a node's counts: values and, per event, the wall time they cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeSnap {
    values: [u64; N],
    ns: [u64; N],
    sampled: u64,
    scaled: u64,
}

impl NodeSnap {
    /// Threads record clock ticks; reports speak nanoseconds.
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        for ns in &mut self.ns {
            // A sampled episode keeps at least 1 ns of counted time.
            *ns = scale.ns(*ns).max(u64::from(*ns > 0));
        }
    }

    /// The counts of two nodes together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &NodeSnap) -> NodeSnap {
        let mut n = *self;
        for i in 0..N {
            n.values[i] += other.values[i];
            n.ns[i] += other.ns[i];
        }
        n.sampled += other.sampled;
        n.scaled += other.scaled;
        n
    }

    /// This copy minus an earlier copy of the same node.
    pub(crate) fn minus(&self, earlier: &NodeSnap) -> NodeSnap {
        let mut n = *self;
        for i in 0..N {
            n.values[i] = self.values[i].saturating_sub(earlier.values[i]);
            n.ns[i] = self.ns[i].saturating_sub(earlier.ns[i]);
        }
        n.sampled = self.sampled.saturating_sub(earlier.sampled);
        n.scaled = self.scaled.saturating_sub(earlier.scaled);
        n
    }
}

/// The thread-level part of a thread's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadSnap {
    pub(crate) source: CounterSource,
    pub(crate) overhead_ns: u64,
    /// Time runnable but waiting for a CPU since the thread first recorded
    /// (`/proc/.../schedstat`); `None` where the kernel does not say.
    pub(crate) run_queue_ns: Option<u64>,
}

impl Default for ThreadSnap {
    fn default() -> Self {
        ThreadSnap {
            source: CounterSource::Off,
            overhead_ns: 0,
            run_queue_ns: None,
        }
    }
}

impl ThreadSnap {
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        self.overhead_ns = scale.ns(self.overhead_ns);
    }

    pub(crate) fn minus(&self, earlier: &ThreadSnap) -> ThreadSnap {
        ThreadSnap {
            overhead_ns: self.overhead_ns.saturating_sub(earlier.overhead_ns),
            run_queue_ns: match (self.run_queue_ns, earlier.run_queue_ns) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                (now, _) => now,
            },
            ..*self
        }
    }

    /// Two threads' figures together (threads merged after they exited).
    pub(crate) fn plus(&self, other: &ThreadSnap) -> ThreadSnap {
        ThreadSnap {
            overhead_ns: self.overhead_ns + other.overhead_ns,
            run_queue_ns: match (self.run_queue_ns, other.run_queue_ns) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            },
            source: other.source,
        }
    }
}

/// Nanoseconds thread `tid` of this process has spent runnable but waiting for a
/// CPU: the second field of `/proc/self/task/<tid>/schedstat`.
pub(crate) fn run_queue_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Sums of nodes, turned into [`Counters`] by scaling each event's count from the wall
/// time it covers to the wall time of all the episodes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    values: [u128; N],
    ns: [u128; N],
    wall: u128,
    sampled: u64,
    scaled: u64,
}

impl Acc {
    /// Nothing added: no wall time and no sampled episode.
    pub(crate) fn is_empty(&self) -> bool {
        self.wall == 0 && self.sampled == 0
    }

    pub(crate) fn add(&mut self, n: &NodeSnap, wall_ns: u64) {
        for i in 0..N {
            self.values[i] += u128::from(n.values[i]);
            self.ns[i] += u128::from(n.ns[i]);
        }
        self.wall += u128::from(wall_ns);
        self.sampled += n.sampled;
        self.scaled += n.scaled;
    }

    pub(crate) fn counters(&self) -> Counters {
        let mut c = Counters {
            sampled: self.sampled,
            ..Counters::default()
        };
        for e in CounterEvent::ALL {
            let (v, ns) = (self.values[e.index()], self.ns[e.index()]);
            if ns == 0 {
                continue;
            }
            let multiplexed = self.scaled > 0 && e.source() != EventSource::Getrusage;
            *c.slot(e) = if ns >= self.wall && !multiplexed {
                Count::Exact(u64::try_from(v).unwrap_or(u64::MAX))
            } else {
                let est = v * self.wall.max(ns) / ns;
                Count::Scaled(u64::try_from(est).unwrap_or(u64::MAX))
            };
        }
        c
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enoent_on_a_hardware_event_means_no_pmu() {
        let r = Reason::from_errno(libc::ENOENT, Some(2), EventSource::PerfHardware);
        assert_eq!(
            r,
            Reason::NoPmu {
                errno: libc::ENOENT
            }
        );
        assert_eq!(r.to_string(), "no hardware PMU (ENOENT) — typical in VMs");
        assert_eq!(r.errno(), Some(2));
    }

    #[test]
    fn enoent_on_a_software_event_is_unsupported_not_a_missing_pmu() {
        let r = Reason::from_errno(libc::ENOENT, Some(2), EventSource::PerfSoftware);
        assert_eq!(
            r,
            Reason::NotSupported {
                errno: libc::ENOENT
            }
        );
    }

    #[test]
    fn paranoid_three_explains_both_eacces_and_eperm() {
        for errno in [libc::EACCES, libc::EPERM] {
            let r = Reason::from_errno(errno, Some(3), EventSource::PerfSoftware);
            assert_eq!(r, Reason::Paranoid { level: 3, errno });
            assert!(r.to_string().starts_with("perf_event_paranoid=3"), "{r}");
        }
    }

    #[test]
    fn paranoid_two_blocks_kernel_mode_software_counters_only() {
        let sw = Reason::from_errno(libc::EACCES, Some(2), EventSource::PerfSoftware);
        assert_eq!(
            sw,
            Reason::Paranoid {
                level: 2,
                errno: libc::EACCES
            }
        );
        assert!(sw.to_string().contains("CAP_PERFMON"));
        // Hardware counters are user-mode only, which level 2 allows: something else.
        let hw = Reason::from_errno(libc::EACCES, Some(2), EventSource::PerfHardware);
        assert_eq!(
            hw,
            Reason::Denied {
                errno: libc::EACCES
            }
        );
    }

    #[test]
    fn eperm_below_paranoid_three_points_at_seccomp() {
        let r = Reason::from_errno(libc::EPERM, Some(1), EventSource::PerfSoftware);
        assert_eq!(r, Reason::Denied { errno: libc::EPERM });
        assert_eq!(
            r.to_string(),
            "blocked by seccomp or a security module (EPERM)"
        );
    }

    #[test]
    fn the_other_errnos_map_to_their_own_hints() {
        let hw = EventSource::PerfHardware;
        assert_eq!(
            Reason::from_errno(libc::ENOSYS, None, hw),
            Reason::NoSyscall
        );
        assert_eq!(
            Reason::from_errno(libc::EMFILE, None, hw),
            Reason::FdLimit {
                errno: libc::EMFILE
            }
        );
        assert_eq!(Reason::from_errno(libc::EBUSY, None, hw), Reason::Busy);
        assert_eq!(
            Reason::from_errno(libc::EINVAL, None, hw),
            Reason::NotSupported {
                errno: libc::EINVAL
            }
        );
        assert_eq!(
            Reason::from_errno(libc::EOPNOTSUPP, None, hw),
            Reason::NoPmu {
                errno: libc::EOPNOTSUPP
            }
        );
        assert_eq!(
            Reason::from_errno(9999, None, hw).to_string(),
            "perf_event_open failed (errno 9999)"
        );
        assert_eq!(
            Reason::FdBudget { budget: 512 }.to_string(),
            "fd budget reached (512 fds)"
        );
    }

    #[test]
    fn every_hint_fits_a_100_column_table_row() {
        let reasons = [
            Reason::NoPmu {
                errno: libc::EOPNOTSUPP,
            },
            Reason::Paranoid {
                level: 3,
                errno: libc::EACCES,
            },
            Reason::Paranoid {
                level: 2,
                errno: libc::EACCES,
            },
            Reason::Denied { errno: libc::EPERM },
            Reason::Denied {
                errno: libc::EACCES,
            },
            Reason::NoSyscall,
            Reason::NotSupported {
                errno: libc::EOPNOTSUPP,
            },
            Reason::FdLimit {
                errno: libc::EMFILE,
            },
            Reason::FdBudget { budget: usize::MAX },
            Reason::Busy,
            Reason::PmuFull,
            Reason::Off,
            Reason::Other { errno: 9999 },
        ];
        for r in reasons {
            // The capability row is 2 + 22 + 1 + 10 + 1 + "n/a: " before the hint.
            let width = 41 + r.to_string().chars().count();
            assert!(width <= 100, "{r}: {width} columns");
        }
    }

    #[test]
    fn paranoid_is_parsed_with_its_newline_and_rejects_garbage() {
        assert_eq!(parse_paranoid("2\n"), Some(2));
        assert_eq!(parse_paranoid("-1\n"), Some(-1));
        assert_eq!(parse_paranoid("  4 "), Some(4));
        assert_eq!(parse_paranoid(""), None);
        assert_eq!(parse_paranoid("two"), None);
    }

    #[test]
    fn the_hardware_plan_keeps_only_available_hardware_events_in_order() {
        let no_pmu = Availability::Unavailable(Reason::NoPmu {
            errno: libc::ENOENT,
        });
        let mut status = [Availability::Available; N];
        assert_eq!(
            plan(&status, EventSource::PerfHardware),
            vec![
                CounterEvent::CacheMisses,
                CounterEvent::CacheReferences,
                CounterEvent::L1dReadMisses,
                CounterEvent::Instructions,
                CounterEvent::Cycles
            ]
        );
        assert_eq!(group_fds(5), 6);
        // A CPU without an L1D read-miss event: the rest still form a group.
        status[CounterEvent::L1dReadMisses.index()] = no_pmu;
        assert_eq!(plan(&status, EventSource::PerfHardware).len(), 4);
        // No PMU at all: no group, no fd.
        for e in events_of(EventSource::PerfHardware, |_| true) {
            status[e.index()] = no_pmu;
        }
        assert!(plan(&status, EventSource::PerfHardware).is_empty());
        assert_eq!(group_fds(0), 0);
        assert_eq!(
            plan(&status, EventSource::PerfSoftware),
            vec![
                CounterEvent::ContextSwitches,
                CounterEvent::CpuMigrations,
                CounterEvent::PageFaults
            ]
        );
    }

    #[test]
    fn a_hardware_group_too_big_for_the_pmu_loses_its_last_events() {
        let all = vec![
            CounterEvent::CacheMisses,
            CounterEvent::CacheReferences,
            CounterEvent::L1dReadMisses,
            CounterEvent::Instructions,
            CounterEvent::Cycles,
        ];
        // A PMU with room for three of them.
        let mut tries = Vec::new();
        let (kept, dropped) = fit_group(all.clone(), |g| {
            tries.push(g.len());
            g.len() <= 3
        });
        assert_eq!(kept, all[..3]);
        assert_eq!(dropped, all[3..]);
        assert_eq!(tries, vec![5, 4, 3]);
        // One that runs everything is asked once; one that runs nothing keeps nothing.
        assert_eq!(fit_group(all.clone(), |_| true), (all.clone(), vec![]));
        assert_eq!(fit_group(all.clone(), |_| false), (vec![], all.clone()));
        // No hardware events (no PMU): nothing is tried.
        assert_eq!(
            fit_group(vec![], |_| panic!("tried an empty group")),
            (vec![], vec![])
        );
    }

    #[test]
    fn a_group_read_is_parsed_by_id_whatever_the_order() {
        let ids = [41, 42, 43];
        let events = [
            CounterEvent::CacheMisses,
            CounterEvent::Instructions,
            CounterEvent::Cycles,
        ];
        // nr, enabled, running, then {value, id}: the dummy leader (id 40) first, the
        // members in another order than they were opened.
        let buf = [4, 1000, 250, 0, 40, 900, 43, 7, 41, 300, 42];
        let mut out = [0; N];
        assert_eq!(
            parse_group(&buf, &ids, &events, &mut out),
            Some((1000, 250))
        );
        assert_eq!(out[CounterEvent::CacheMisses.index()], 7);
        assert_eq!(out[CounterEvent::Instructions.index()], 300);
        assert_eq!(out[CounterEvent::Cycles.index()], 900);
    }

    #[test]
    fn a_short_or_incomplete_group_read_is_rejected() {
        let ids = [41, 42];
        let events = [CounterEvent::CacheMisses, CounterEvent::Cycles];
        let mut out = [0; N];
        assert_eq!(parse_group(&[], &ids, &events, &mut out), None);
        assert_eq!(
            parse_group(&[3, 10, 10, 0, 40, 5], &ids, &events, &mut out),
            None
        );
        // Complete buffer, but member 42 is gone (its counter was closed).
        assert_eq!(
            parse_group(&[2, 10, 10, 0, 40, 5, 41], &ids, &events, &mut out),
            None
        );
        assert_eq!(
            parse_group(&[u64::MAX, 10, 10], &ids, &events, &mut out),
            None
        );
    }

    #[test]
    fn multiplexed_counts_scale_by_enabled_over_running() {
        assert_eq!(scale(100, 1000, 1000), Some((100, false)));
        assert_eq!(scale(100, 1000, 250), Some((400, true)));
        assert_eq!(scale(0, 0, 0), Some((0, false)));
        // Never on the PMU in this window: no estimate, rather than a fake 0.
        assert_eq!(scale(0, 1000, 0), None);
        assert_eq!(scale(u64::MAX, 2, 1), Some((u64::MAX, true)));
    }

    #[test]
    fn the_pool_never_hands_out_more_than_the_limit() {
        let pool: &'static FdPool = Box::leak(Box::new(FdPool::new()));
        let held: Vec<Reservation> = (0..200).filter_map(|_| pool.reserve(4, 512)).collect();
        assert_eq!(held.len(), 128);
        assert_eq!(pool.in_use(), 512);
        assert!(pool.reserve(1, 512).is_none());
        drop(held);
        assert_eq!(pool.in_use(), 0);
        assert!(pool.reserve(usize::MAX, usize::MAX).is_some());
    }

    #[test]
    fn every_n_samples_one_episode_in_n() {
        let p = Policy::of(CounterSampling::Every(4));
        let mut credit = p.start();
        let mut sampled = Vec::new();
        for episode in 0..12 {
            if credit >= 0 {
                sampled.push(episode);
                credit = p.spend(credit, 5_000);
            }
            credit = p.earn(credit, 1_000);
        }
        assert_eq!(sampled, vec![0, 4, 8]);
    }

    #[test]
    fn auto_spends_at_most_its_share_of_wait_time_on_reads() {
        let p = Policy::of(CounterSampling::Auto);
        // 1 µs episodes, 2 µs of reads each time one is sampled.
        let (episode, cost) = (1_000u64, 2_000u64);
        let mut credit = p.start();
        let (mut reads, n) = (0u64, 100_000u64);
        for _ in 0..n {
            if credit >= 0 {
                reads += 1;
                credit = p.spend(credit, cost);
            }
            credit = p.earn(credit, episode);
        }
        let spent = reads * cost;
        let waited = n * episode;
        assert!(
            spent * 100 <= waited * u64::from(AUTO_BUDGET_PERCENT) + cost * 100,
            "{reads} reads"
        );
        // ... and it does read: about 1 in (cost / 2% of the episode) = 1 in 100.
        assert!((900..=1_100).contains(&reads), "{reads} reads");
    }

    #[test]
    fn auto_reads_every_episode_that_is_long_enough_to_pay_for_it() {
        let p = Policy::of(CounterSampling::Auto);
        let mut credit = p.start();
        for _ in 0..1000 {
            assert!(credit >= 0);
            credit = p.spend(credit, 1_000);
            // A 60 µs sleep earns 1.2 µs of reads.
            credit = p.earn(credit, 60_000);
        }
    }

    #[test]
    fn off_never_samples() {
        let p = Policy::of(CounterSampling::Off);
        let mut credit = p.start();
        for _ in 0..1000 {
            assert!(credit < 0);
            credit = p.earn(credit, 1 << 50);
        }
        assert_eq!(Policy::of(CounterSampling::Every(0)), p);
    }

    #[test]
    fn sampling_round_trips_through_its_encoding() {
        for s in [
            CounterSampling::Off,
            CounterSampling::Auto,
            CounterSampling::Every(1),
            CounterSampling::Every(64),
        ] {
            assert_eq!(CounterSampling::decode(s.encode()), s);
        }
        assert_eq!(
            CounterSampling::decode(CounterSampling::Every(0).encode()),
            CounterSampling::Off
        );
        assert_eq!(CounterSampling::Every(8).to_string(), "1 of 8 episodes");
    }

    fn snap(values: &[(CounterEvent, u64)], ns: u64, sampled: u64) -> NodeSnap {
        let mut n = NodeSnap {
            sampled,
            ..NodeSnap::default()
        };
        for &(e, v) in values {
            n.values[e.index()] = v;
            n.ns[e.index()] = ns;
        }
        n
    }

    #[test]
    fn fully_sampled_sites_are_exact_and_missing_events_are_not_zero() {
        let mut acc = Acc::default();
        acc.add(
            &snap(&[(CounterEvent::VoluntarySwitches, 500)], 1000, 1),
            1000,
        );
        let c = acc.counters();
        assert_eq!(c.voluntary_switches, Count::Exact(500));
        assert_eq!(c.involuntary_switches, Count::NotAvailable);
        assert_eq!(c.cache_misses, Count::NotAvailable);
        assert_eq!(c.sampled, 1);
    }

    #[test]
    fn sampled_sites_scale_by_the_wall_time_they_cover() {
        let mut acc = Acc::default();
        // One thread read a quarter of its episodes' time, another none at all.
        acc.add(
            &snap(&[(CounterEvent::VoluntarySwitches, 10)], 250, 3),
            1000,
        );
        acc.add(&NodeSnap::default(), 1000);
        assert_eq!(acc.counters().voluntary_switches, Count::Scaled(80));
    }

    #[test]
    fn multiplexing_marks_perf_figures_only() {
        let mut n = snap(
            &[
                (CounterEvent::VoluntarySwitches, 3),
                (CounterEvent::Cycles, 1000),
            ],
            100,
            1,
        );
        n.scaled = 1;
        let mut acc = Acc::default();
        acc.add(&n, 100);
        let c = acc.counters();
        assert_eq!(c.voluntary_switches, Count::Exact(3));
        assert_eq!(c.cycles, Count::Scaled(1000));
        assert_eq!(c.switches(), Count::NotAvailable);
    }

    #[test]
    fn a_delta_of_two_copies_subtracts_every_figure() {
        let later = snap(&[(CounterEvent::PageFaults, 9)], 900, 4);
        let earlier = snap(&[(CounterEvent::PageFaults, 4)], 400, 1);
        let d = later.minus(&earlier);
        assert_eq!(d, snap(&[(CounterEvent::PageFaults, 5)], 500, 3));
    }
}
