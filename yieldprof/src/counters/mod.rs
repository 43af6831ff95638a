//! Counters per wait episode: context switches, migrations, page faults and, where the
//! hardware has a PMU, cache and instruction counts, attributed to the episode's frame;
//! and where each episode's time went (on the CPU, queued for one, blocked).
//!
//! Sources, cheapest first:
//! - the perf **user page** of the thread's context-switch counter (`userpage`,
//!   `exact`), opened alone with the cpu-migration counter on the thread's first
//!   episode: read at both ends of every wait episode and timed call, ~1 ns and no
//!   syscall. Switches and migrations happen only while the thread is off
//!   the CPU, so the page's count is current, and the figures that change only then
//!   (getrusage's voluntary/involuntary split, the thread's CPU clock, schedstat's
//!   run-queue wait) are read again only when the count moved, and then when the
//!   thread next waits rather than when it wakes (`record::deferred`): exact counts for
//!   every episode, and its [`TimeSplit`], at a syscall cost paid only after a switch
//!   and off the woken thread's critical path;
//! - `getrusage(RUSAGE_THREAD)`: voluntary and involuntary context switches. Always
//!   there, and what is left when perf-event is denied or the fd budget is spent: then
//!   switches and the time split are read on sampled episodes and scaled up. A thread's
//!   switch totals are its whole life's, read whole (`kernel`): getrusage on the thread
//!   at its exit or its own report, its status file from another thread;
//! - perf-event software counters (context-switches, cpu-migrations, page-faults): one
//!   group per thread, counted in kernel mode too (`include_kernel`: switches happen
//!   there, so a user-only counter reads 0). Page faults happen while the thread runs,
//!   so they are read with the group on sampled episodes. The groups open at the
//!   thread's second sampled episode, so that its first pays only for the page; their
//!   thread totals then start late and show as estimates;
//! - perf-event hardware counters (cache-misses, cache-references, L1D read misses,
//!   instructions, cycles): a second group, user mode only, read with `rdpmc` through
//!   the user pages where the kernel allows it (`cap_user_rdpmc`), else with a syscall.
//!   The kernel may multiplex a hardware group; deltas are then scaled by
//!   `time_enabled / time_running` and marked as estimates.
//!
//! Cost: a sampled read is one or two syscalls, ~0.5 µs on the build VM and up to ~1.3
//! µs elsewhere, at each end of a sampled episode. So the events the page does not
//! give are read on a sample of wait episodes, chosen when the episode opens (see
//! [`CounterSampling`]); per frame their counts are scaled by wall time: estimate =
//! counted × wall of all episodes / wall of the sampled ones.
//!
//! File descriptors: each counter is one fd per thread, so the process holds at most
//! a budget of them (default 512, never more than a quarter of the
//! soft `RLIMIT_NOFILE`); a thread whose groups do not fit uses getrusage only. A
//! thread keeps one more for its schedstat file when the budget allows. A thread's fds
//! close when it exits. The probe's software counters stay open for the life of the
//! process (`machine`): the kernel switches a software event type's hooks on and off
//! with its first and last event, which costs ~40–60 µs per type each way.

/// Number of [`CounterEvent`]s.
pub(crate) const N: usize = 10;

mod availability;
mod breakpoint;
mod calibrate;
mod events;
mod exact;
mod fds;
mod kernel;
mod lifetime;
mod local;
mod machine;
mod mark;
mod method;
mod opening;
mod perf;
mod policy;
mod rseq;
mod sampling;
mod snap;
mod sources;
#[cfg(test)]
mod tests;
mod userpage;
mod values;

pub use availability::*;
pub(crate) use breakpoint::{breakpoint_reason, force_open_error, Hit, Target, Watchpoints, SLOTS};
pub(crate) use calibrate::{kernel_ns_per_switch, pin, rseq_ns_per_switch, Calibrated};
pub use events::*;
pub(crate) use exact::{off_clock_of, parse_run_delay, try_clock_ns, Exact};
pub(crate) use fds::*;
pub(crate) use kernel::Switches;
pub(crate) use lifetime::thread_cpu_now;
pub(crate) use local::*;
pub use machine::*;
pub(crate) use mark::{Delta, Mark, Split};
pub use method::SplitMethod;
pub(crate) use opening::*;
pub(crate) use perf::*;
use policy::*;
pub(crate) use rseq::want as want_rseq;
pub use sampling::*;
pub(crate) use snap::*;
pub(crate) use sources::read_cost;
pub(crate) use userpage::forget_pages_after_fork;
pub use values::*;
