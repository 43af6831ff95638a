//! False-sharing detection without a hardware PMU, on data the program points at.
//!
//! [`watch`](crate::watch) registers an address range and a name; each access through a
//! [`Watched`](crate::Watched) atomic on a registered 64-byte line is *tracked* (all of
//! them, or a sample). The rule follows Predator and Sheriff: software that mimics the
//! coherence protocol, so it works in VMs and containers where `perf c2c` has no PMU.
//!
//! ## The rule
//!
//! Each watched 64-B line keeps a two-entry history of the threads that touched it since
//! its last write, with the 8-B words each read or wrote. A tracked write by thread `T`
//! to word `w` is an **invalidation** when the history holds another thread `U`: on real
//! hardware that write takes the line away from `U`'s core. It is then classified:
//!
//! - **false** when no such `U` touched `w`: `U` loses a line for words that did not
//!   change, and the miss would not exist were `w` on its own line. A single writer and
//!   a reader spinning on a *different* word counts here: the spinning reader is the
//!   victim.
//! - **true** otherwise: `U` needs the new value of `w` (communication, which no layout
//!   removes). It is also **contended** when `U` *wrote* `w` itself (several writers of
//!   one word, like a shared `fetch_add` counter).
//!
//! Per word and per thread the line also counts tracked reads and writes, and per thread
//! the wait sites (`#[instrument_wait]` episodes) in which the line was read: the sites
//! that spin on it.
//!
//! A line's verdict, with `N` its invalidations:
//!
//! | verdict | when |
//! |---|---|
//! | quiet | `N` < 32 |
//! | FALSE | false ≥ 32 and false ≥ `N` / 4, not contended |
//! | MIXED | the FALSE condition, and contended ≥ both bounds too |
//! | TRUE | `N` ≥ 32, the false part below the bounds |
//!
//! The adjacent-line prefetcher of current x86 and aarch64 cores fetches 64-B lines in
//! aligned pairs, which makes 128 B the unit that ping-pongs. When both lines of a pair
//! `2i`/`2i+1` are watched, the pair keeps the same history with the line as the "word":
//! a block whose false part passes the same bounds, while neither line is FALSE or
//! MIXED itself, is **ADJACENT-RISK**.
//!
//! ## Costs and limits
//!
//! The history is one word per line, written with a plain store (a locked instruction
//! would stall the thread for the whole line transfer, which the program's own plain
//! accesses mostly hide) and only when it changes: a thread re-reading what it already
//! read only loads it, and a read of a word the thread itself writes is published with
//! its next access. So it ping-pongs about as often as the real line: tracking every
//! access roughly doubles the coherence traffic of a watched line. Two threads updating
//! it at the same instant may lose one update; the history models the order, it does
//! not serialize it.
//! Counters each thread writes sit in its own 128-B block of the line's slot, and slots
//! never share a block, so the profiler adds no false sharing of its own. The table is
//! fixed (256 lines, first 4 threads of a line with their own
//! counters, the rest pooled): no lock and no allocation on the hot path.
//! [`set_watch_sampling`] tracks one access in `n` on average
//! (random gaps, so loop shapes cannot alias) after each thread's first
//! 10 000 accesses; 64 is the default `n`. The bounds apply
//! to tracked events. Sampling shifts the split toward true sharing: a victim's tracked
//! words then span the window since the last *tracked* write, longer than the real one.
//!
//! Sub-word atomics sharing one 8-B word count as the same word. The history sees the
//! order in which tracked accesses reached it, close to but not exactly the order of
//! the accesses themselves. A thread's last read of a word it writes, if nothing of
//! that thread's follows it, is not published.

mod detector;
mod fields;
mod history;
mod ids;
pub(crate) mod layout;
mod lines;
mod report;
mod rows;
#[cfg(test)]
mod tests;
mod verdicts;
pub(crate) mod watch;

pub use detector::*;
pub use layout::SEPARATE_LINE_BYTES;
pub(crate) use lines::*;
pub use verdicts::*;
pub use watch::{WatchableAtomic, WatchableBits, WatchableInteger};

/// The coherence unit the history models.
pub(crate) const LINE: usize = 64;
/// Two lines: what the adjacent-line prefetcher moves together.
pub(crate) const BLOCK: usize = 2 * LINE;
/// The unit of the per-thread counts and of the history's packing (`history`).
pub(super) const GRANULE: usize = 4;
pub(super) const GRANULES: usize = LINE / GRANULE;
/// The widest access tracked: `u128`, or a 16-B compare-exchange.
pub(super) const MAX_ACCESS: usize = 16;
/// A thread's last access time on a line moves on every this many tracked accesses
/// to one granule (a power of two): often enough for an overlap in ms.
pub(super) const TIME_EVERY: u64 = 64;

/// Lines watched at once; a `watch` beyond it is refused with a message on stderr.
pub(crate) const MAX_LINES: usize = 256;
/// Threads per line with counters of their own; later threads share one pooled set.
pub(crate) const OWNED_THREADS: usize = 4;
/// Fewest tracked invalidations a line needs for a verdict other than quiet.
pub(crate) const MIN_INVALIDATIONS: u64 = 32;
/// The false (or contended) part must be at least `1 / SHARE_DIVISOR` of all
/// invalidations: a few stray ones are not worth padding for.
pub(crate) const SHARE_DIVISOR: u64 = 4;
/// The least time two threads of a line must both have been using it for a quiet line
/// to mean "not shared": a loaded machine's scheduler gives each runnable thread slices
/// of about 3 ms, so threads that overlapped less than a few slices may never have run
/// at the same time, and a quiet verdict then says nothing. Below it the line is
/// [`Verdict::Uncertain`].
pub(crate) const MIN_OVERLAP_NS: u64 = 10_000_000;
/// Accesses each thread has tracked in full before sampling starts.
pub(crate) const WARMUP_ACCESSES: u32 = 10_000;

pub(super) const BLOCKS: usize = OWNED_THREADS + 1;
pub(super) const FRAMES: usize = 4;
pub(super) const PROBES: usize = 16;
pub(super) const EMPTY_KEY: usize = 0;
// Never a line address: lines are 64-aligned.
pub(super) const TOMBSTONE: usize = 1;
pub(super) const RETIRED_CAP: usize = 4096;
