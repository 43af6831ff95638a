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
//! a budget of them (default 512, never more than a quarter of the
//! soft `RLIMIT_NOFILE`); a thread whose groups do not fit uses getrusage only. A
//! thread's fds close when it exits.

/// Number of [`CounterEvent`]s.
pub(crate) const N: usize = 10;

mod availability;
mod events;
mod exact;
mod fds;
mod local;
mod machine;
mod perf;
mod sampling;
mod snap;
#[cfg(test)]
mod tests;
mod userpage;
mod values;

pub use availability::*;
pub use events::*;
pub use exact::SplitMethod;
pub(crate) use exact::{parse_run_delay, Delta, Exact, Mark};
pub(crate) use fds::*;
pub(crate) use local::*;
pub use machine::*;
pub(crate) use perf::*;
pub use sampling::*;
pub(crate) use snap::*;
pub use values::*;
