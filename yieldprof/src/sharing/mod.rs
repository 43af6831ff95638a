//! False-sharing detection without a hardware PMU, on data the program points at.
//!
//! [`watch`](crate::watch) registers an address range and a name; each access through a
//! [`Watched`](crate::Watched) atomic on a registered 64-byte line is *tracked* (all of
//! them, or a sample). The rule follows Predator and Sheriff: software that mimics the
//! coherence protocol, so it works in VMs and containers where `perf c2c` has no PMU.
//! Plain data, which no `Watched` wraps, is watched by [`watch_plain`]: sampled hardware
//! watchpoints see its writes and feed them into the same histories.
//!
//! ## The rule
//!
//! Each watched 64-B line keeps a two-entry history of the threads that touched it since
//! its last write, with the bytes each read or wrote (an access keeps its offset and
//! size, 1 to 16 B: a `Watched<AtomicU32>` is 4 B, a `Watched<AtomicU8>` 1 B). A tracked
//! write by thread `T` to bytes `w` is an **invalidation** when the history holds
//! another thread `U`: on real hardware that write takes the line away from `U`'s core.
//! It is then classified:
//!
//! - **false** when no such `U` touched a byte of `w`: `U` loses a line for bytes that
//!   did not change, and the miss would not exist were `w` on its own line. Two 4-byte
//!   locks in one 8-byte word, each taken by its own thread, count here; so does a single
//!   writer with a reader spinning on *other* bytes: the spinning reader is the victim.
//! - **true** otherwise: `U` needs the new value (communication, which no layout
//!   removes). It is also **contended** when `U` *wrote* some of those bytes itself
//!   (several writers of one value, like a shared `fetch_add` counter).
//!
//! Per 4-B granule and per thread the line also counts tracked reads and writes (the
//! report's rows: each watched field or array element, named), per thread the time of
//! its first and last tracked access, and the wait sites (`#[instrument_wait]` episodes)
//! in which the line was read: the sites that spin on it.
//!
//! A line's verdict, with `N` its invalidations and `p` the share of false ones. The
//! counts are a sample (sampled accesses, watchpoint hits), so the verdict is judged
//! with confidence bounds (`evidence`, and `docs/false-sharing.md`), and states how sure
//! it is:
//!
//! | verdict | when |
//! |---|---|
//! | untracked | no access to the line was tracked |
//! | uncertain | `N` < 6 and two writers (or a writer and a reader at the same time) used the line together for less than 10 ms; or `N` ≥ 6 and neither `p` ≥ 1/4 nor `p` < 1/4 holds at 95 % |
//! | quiet | `N` < 6 otherwise (6: what hand-offs between phases reach under 5 % of the time); a line one thread uses is quiet |
//! | FALSE | `N` ≥ 6, `p` ≥ 1/4 at 95 % confidence, the contended share not |
//! | MIXED | the FALSE condition, and ≥ 6 contended invalidations whose share is not below 1/4 at 95 % |
//! | TRUE | `N` ≥ 6, `p` < 1/4 at 95 % confidence |
//!
//! Untracked and uncertain lines carry a note that says why ("nothing tracked: 0
//! accesses through Watched on this range", "verdict uncertain: the two writers
//! overlapped 3.00 ms"), in the summary and the JSON: a quiet line then means that the
//! threads did run together and did not share it.
//!
//! The adjacent-line prefetcher of current x86 and aarch64 cores fetches 64-B lines in
//! aligned pairs, which makes 128 B the unit that ping-pongs. When both lines of a pair
//! `2i`/`2i+1` are watched, the pair keeps the same history with the line as the "byte":
//! a block whose false part passes the same bounds, while neither line is FALSE or
//! MIXED itself, is **ADJACENT-RISK**. The fix a report gives names the fields or array
//! elements, their type and stride, and the padding (`CachePadded` or
//! `#[repr(align(128))]`, 128 B for that prefetcher).
//!
//! ## Costs and limits
//!
//! The history is two words per line, one per entry: the thread id, one bit per 4-B
//! granule read and written, and the bytes of one partly used granule (`history`). Each
//! is written with a plain store (a locked instruction would stall the thread for the
//! whole line transfer, which the program's own plain accesses mostly hide) and only
//! when it changes: a thread re-reading what it already read only loads it, checked on
//! the packed words, and a read of a granule the thread itself writes is published with
//! its next access. So it ping-pongs about as often as the real line: tracking every
//! access roughly doubles the coherence traffic of a watched line. Two threads updating
//! it at the same instant may lose one update, or leave entries of two updates; each
//! entry is one word, so it always holds one thread's own accesses. The history models
//! the order, it does not serialize it.
//! Counters each thread writes sit in its own 128-B block of the line's slot, and slots
//! never share a block, so the profiler adds no false sharing of its own. The table is
//! fixed (256 lines, first 4 threads of a line with their own
//! counters, the rest pooled): no lock and no allocation on the hot path.
//! [`set_watch_sampling`] tracks one access in `n` on average
//! (random gaps, so loop shapes cannot alias) after each thread's first
//! 10 000 accesses; 64 is the default `n`. The bounds apply
//! to tracked events. Sampling shifts the split toward true sharing: a victim's tracked
//! bytes then span the window since the last *tracked* write, longer than the real one.
//!
//! Bytes are exact where each thread uses whole 4-B granules and at most one granule in
//! part; a thread's second partly used granule counts as all its 4 bytes (which can turn
//! a false invalidation into a true one, never the reverse). The report's per-thread
//! counts are per granule: two `u8` flags in one granule share a row. The history sees
//! the order in which tracked accesses reached it, close to but not exactly the order
//! of the accesses themselves. A thread's last read of a granule it writes, if nothing
//! of that thread's follows it, is not published.

#[cfg(feature = "enabled")]
mod detector;
#[cfg(feature = "enabled")]
mod evidence;
#[cfg(feature = "enabled")]
mod fields;
#[cfg(feature = "enabled")]
mod history;
#[cfg(feature = "enabled")]
mod ids;
pub(crate) mod layout;
#[cfg(feature = "enabled")]
mod lines;
#[cfg(feature = "enabled")]
mod plain;
#[cfg(feature = "enabled")]
mod report;
#[cfg(feature = "enabled")]
mod rotation;
#[cfg(feature = "enabled")]
mod rows;
#[cfg(feature = "enabled")]
mod sampling;
#[cfg(all(test, feature = "enabled"))]
mod tests;
#[cfg(feature = "enabled")]
mod verdicts;
pub(crate) mod watch;

#[cfg(feature = "enabled")]
pub(crate) use detector::*;
pub use layout::SEPARATE_LINE_BYTES;
#[cfg(feature = "enabled")]
pub(crate) use lines::*;
#[cfg(feature = "enabled")]
pub use plain::{watch_plain, watchpoints, PlainWatch, WatchpointState, WatchpointStatus};
#[cfg(feature = "enabled")]
pub use sampling::*;
#[cfg(feature = "enabled")]
pub use verdicts::*;
pub use watch::{WatchableAtomic, WatchableBits, WatchableInteger};

/// The coherence unit the history models.
#[cfg(feature = "enabled")]
pub(crate) const LINE: usize = 64;
/// Two lines: what the adjacent-line prefetcher moves together.
#[cfg(feature = "enabled")]
pub(crate) const BLOCK: usize = 2 * LINE;
/// The unit of the per-thread counts and of the history's packing (`history`).
#[cfg(feature = "enabled")]
pub(super) const GRANULE: usize = 4;
#[cfg(feature = "enabled")]
pub(super) const GRANULES: usize = LINE / GRANULE;
/// The widest access tracked: `u128`, or a 16-B compare-exchange.
#[cfg(feature = "enabled")]
pub(super) const MAX_ACCESS: usize = 16;
/// A thread's last access time on a line moves on every this many tracked accesses
/// to one granule (a power of two): often enough for an overlap in ms.
#[cfg(feature = "enabled")]
pub(super) const TIME_EVERY: u64 = 64;

/// Lines watched at once; a `watch` beyond it is refused with a message on stderr.
#[cfg(feature = "enabled")]
pub(crate) const MAX_LINES: usize = 256;
/// Threads per line with counters of their own; later threads share one pooled set.
#[cfg(feature = "enabled")]
pub(crate) const OWNED_THREADS: usize = 4;
/// Fewest tracked invalidations a line needs for a verdict other than quiet: the
/// fewest that [`evidence::STRAY`] hand-offs between phases reach less than 5 % of the
/// time (`evidence` checks the derivation).
#[cfg(feature = "enabled")]
pub(crate) const MIN_INVALIDATIONS: u64 = 6;
/// The false (or contended) part must be at least `1 / SHARE_DIVISOR` of all
/// invalidations: a few stray ones are not worth padding for.
#[cfg(feature = "enabled")]
pub(crate) const SHARE_DIVISOR: u64 = 4;
/// The least time two threads of a line must both have been using it for a quiet line
/// to mean "not shared": a loaded machine's scheduler gives each runnable thread slices
/// of about 3 ms, so threads that overlapped less than a few slices may never have run
/// at the same time, and a quiet verdict then says nothing. Below it the line is
/// [`Verdict::Uncertain`].
#[cfg(feature = "enabled")]
pub(crate) const MIN_OVERLAP_NS: u64 = 10_000_000;
/// Accesses each thread has tracked in full before sampling starts.
#[cfg(feature = "enabled")]
pub(crate) const WARMUP_ACCESSES: u32 = 10_000;

#[cfg(feature = "enabled")]
pub(super) const BLOCKS: usize = OWNED_THREADS + 1;
#[cfg(feature = "enabled")]
pub(super) const FRAMES: usize = 4;
#[cfg(feature = "enabled")]
pub(super) const PROBES: usize = 16;
#[cfg(feature = "enabled")]
pub(super) const EMPTY_KEY: usize = 0;
// Never a line address: lines are 64-aligned.
#[cfg(feature = "enabled")]
pub(super) const TOMBSTONE: usize = 1;
#[cfg(feature = "enabled")]
pub(super) const RETIRED_CAP: usize = 4096;
