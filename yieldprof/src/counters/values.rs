//! Values as reports show them: counts, per-frame counters, the source a thread used.

use super::*;
use std::fmt;

/// A counter's figure: counted, estimated, or not available (never a made-up 0).
///
/// ```
/// use yieldprof::counters::Count;
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

    /// The same figure, marked estimated (unless not available).
    pub(crate) fn estimated(self) -> Count {
        match self {
            Count::Exact(v) => Count::Scaled(v),
            c => c,
        }
    }

    /// The figure changed by `f`, still exact or estimated as it was.
    pub(crate) fn map(self, f: impl FnOnce(u64) -> u64) -> Count {
        match self {
            Count::NotAvailable => Count::NotAvailable,
            Count::Exact(v) => Count::Exact(f(v)),
            Count::Scaled(v) => Count::Scaled(f(v)),
        }
    }
}

/// Where the wall time of some wait episodes went, by what the kernel counted:
/// on the CPU, or off it, either runnable and waiting for a CPU (queued: preempted,
/// or woken and not yet running) or not runnable (blocked: asleep until an event).
/// [`SplitMethod`] says how it was measured; `NotAvailable` where it was not.
///
/// ```
/// use yieldprof::counters::{Count, TimeSplit};
/// let split = TimeSplit::default();
/// assert_eq!(split.off_cpu_ns, Count::NotAvailable);
/// assert_eq!(split.off_cpu_share(), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TimeSplit {
    /// Running on a CPU.
    pub on_cpu_ns: Count,
    /// Not running: `queued_ns + blocked_ns`.
    pub off_cpu_ns: Count,
    /// Off the CPU but runnable, waiting in a run queue (schedstat's run-queue wait).
    pub queued_ns: Count,
    /// Off the CPU and not runnable: blocked in a lock, a condvar, a channel, a sleep.
    pub blocked_ns: Count,
    /// Episodes whose voluntary/involuntary split and on/off-CPU split are
    /// apportioned, not read: the thread was switched again after the episode ended
    /// and before its figures were read (they are read when the thread next waits,
    /// off the woken thread's critical path). Their switch counts stay exact, and so
    /// do the thread's totals.
    pub estimated_episodes: u64,
}

impl TimeSplit {
    /// Off-CPU time as a share (0..=1) of on- plus off-CPU time; `None` when not
    /// measured.
    pub fn off_cpu_share(&self) -> Option<f64> {
        let off = self.off_cpu_ns.value()? as f64;
        let on = self.on_cpu_ns.value()? as f64;
        Some(off / (on + off).max(1.0))
    }

    /// On-CPU time as a share (0..=1), as [`TimeSplit::off_cpu_share`].
    pub fn on_cpu_share(&self) -> Option<f64> {
        self.off_cpu_share().map(|s| 1.0 - s)
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
    /// use yieldprof::counters::{Count, CounterEvent, Counters};
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
