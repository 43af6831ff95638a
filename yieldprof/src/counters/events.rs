//! What a counter counts, and where each event is read from.

use super::*;
use perf_event::events::{Cache, CacheOp, CacheResult, Event as PerfEvent, Hardware, Software};

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

    pub(super) const fn index(self) -> usize {
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
    /// assert_eq!(yieldprof::counters::CounterEvent::CacheMisses.name(), "cache-misses");
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

    pub(super) const fn index(self) -> usize {
        self as usize
    }

    pub(super) const fn bit(self) -> u16 {
        1 << self as u16
    }

    pub(super) fn perf(self) -> Option<PerfEvent> {
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
