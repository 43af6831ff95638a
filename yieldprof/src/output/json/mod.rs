//! `<name>.json`: the summary's figures for tools, as typed structs.
//!
//! [`Profile::json`](crate::Profile::json) builds a [`Document`]; the exit flush and
//! [`Profile::write`](crate::Profile::write) write it as JSON text, and a tool reads
//! it back into the same types:
//!
//! ```
//! let written = yieldprof::snapshot().json(&yieldprof::report::Costs::current());
//! let text = serde_json::to_string(&written).unwrap();
//! let read: yieldprof::report::json::Document = serde_json::from_str(&text).unwrap();
//! assert_eq!(read.schema, yieldprof::report::json::SCHEMA);
//! assert_eq!(read, written);
//! ```
//!
//! These types are the schema, kept apart from the in-memory ones ([`crate::report::SiteStats`],
//! [`crate::counters::Counters`], …) so that reshaping those does not change the file. Enums are
//! written as the names the text summary uses (`"spin"`, `"perf sw"`, `"FALSE"`), so a
//! tool needs no table to show them.
//!
//! # Schema `yieldprof/3`
//!
//! Times are in ns, shares in 0..=1. A counter is `null` where it could not be counted
//! (`capabilities` says why), else `{"value": n, "estimated": bool}`. A `run` figure the
//! system does not give is `null`.
//!
//! ```text
//! {
//!   "schema": "yieldprof/3",
//!   "run": { "version", "command_line": [ arg, ... ],
//!            "start": { "secs_since_epoch", "nanos_since_epoch" }, "duration_ns",
//!            "host": { "cpu_model", "cores", "kernel" } },
//!   "costs": { "spin_ns", "yield_ns", "switch_ns", "timer_slack_ns", "cores", "source",
//!              "switch_measured" },
//!   "totals": { "threads", "thread_ns", "wait_ns", "wait_share" },
//!   "findings": [ { "rule", "subject", "location", "evidence", "fix" } ],
//!   "threads": [ { "name", "tid", "exited", "wall_ns", "wait_ns", "work_ns",
//!                  "jobs_off_cpu_ns", "unmarked_work_ns", "wait_share", "overflowed",
//!                  "reentries_skipped", "entries_after_exit", "returned_without_waiting",
//!                  "run_queue_ns", "cpu_ns", "counter_source",
//!                  "counters": { <event>: counter, ..., "sampled": n },
//!                  "counters_in_wait": { <event>: counter, ..., "sampled": n },
//!                  "counters_before_recording": { <event>: counter, ... },
//!                  "time_in_wait": <time>, "split_method",
//!                  "fragmentation": { "episodes_per_s", "short_share" } } ],
//!   "sites": [ { "name", "path", "file", "line", "episodes", "returned_without_waiting",
//!                "wall_ns", "self_ns",
//!                "suspended_ns", "open_ns", "spin_ns", "in_calls_ns", "time": <time>,
//!                "own": { "spin_ns", "on_cpu_ns", "off_cpu_ns", "unexplained_ns", "unmarked_work_ns" },
//!                "durations": { "min_ns", "median_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns" },
//!                "fragmentation": { "episodes_per_s", "short_share" },
//!                "counters": { <event>: counter, ..., "sampled": n },
//!                "calls": [ { "kind", "file", "line", "column", "calls", "ns",
//!                             "per_episode", "in_async",
//!                             "asked": { "calls", "min_ns", "max_ns", "mean_ns" },
//!                             "held": { "max_ns", "delayed_polls", "delayed_ns",
//!                                       "delayed_max_ns" },
//!                             "backoff": { "spun", "spun_ns", "yielded", "yielded_ns" } } ],
//!                "call_durations": [ { "kind", "calls", "durations": { ... } } ],
//!                "false_sharing" } ],
//!   "sharing": [ { "verdict", "address", "size", "invalidations",
//!                  "false_invalidations", "contended_invalidations", "sample_every",
//!                  "words": [ { "offset", "size", "name", "invalidations",
//!                               "threads": [ { "thread", "reads", "writes" } ] } ],
//!                  "wait_sites": [ { "name", "reads" } ], "fix", "note", "confidence",
//!                  "evidence" } ],
//!   "watchpoints": { "state", "reason", "threads", "over_cap", "refused", "hits",
//!                    "lost", "rate", "note" },
//!   "capabilities": { "paranoid", "fd_budget", "fds_in_use",
//!                     "events": [ { "event", "source", "available", "reason" } ] },
//!   "locks": { "hold_sample_every",
//!              "sites": [ { "site", "acquisitions", "contended", "contended_share",
//!                           "waited_ns", "held_by": [ { "holder", "waited_ns" } ],
//!                           "holds": { "sampled", "mean_ns", "p50_ns", "p99_ns",
//!                                      "max_ns" } } ],
//!              "cycles": [ [ { "held", "held_at", "taken", "taken_at", "thread" } ] ],
//!              "wakes": [ { "waiter", "notifier", "wakes", "latency_mean_ns",
//!                           "latency_max_ns", "spurious", "late", "timed_out" } ] }
//! }
//! ```
//!
//! `<event>` is a `perf list` style name ([`crate::counters::CounterEvent::name`]) such as
//! `voluntary-switches` or `cache-misses`; every event has its key. `<time>` is
//! `{ "on_cpu_ns", "off_cpu_ns", "queued_ns", "blocked_ns" }`, each a counter as above
//! (`null` where not measured). Sites are sorted by wall time, costliest first, as in
//! the text. Each field is described on its type below.
//!
//! From `yieldprof/2`: a site's `spin_ns` is only the `[spin]` part of its own time
//! (on the CPU, in episodes that counted spin calls), no longer all of its own time
//! outside timed calls; `blocked_ns` is gone (`in_calls_ns` is the own time inside
//! timed calls, `time.blocked_ns` the time blocked off the CPU); `time`, `own`,
//! `time_in_wait` and `split_method` are new. From `yieldprof/1`: `run` is new. Added
//! within `yieldprof/3`: `locks` (optional; `null` or absent without `yieldprof::sync`).
//! Fields may be added within `yieldprof/3` (readers ignore unknown keys); a removal or a
//! change of meaning gets a new schema string.

mod build;
mod check;
mod figures;
mod locks;
mod run;
mod sharing;

pub use locks::{HeldBy, Holds, Lock, Locks, OrderEdge, Wake};
use serde::{Deserialize, Serialize};
pub use sharing::{Line, SpinningSite, ThreadAccess, Word};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The value of [`Document::schema`] for the layout these types describe.
pub const SCHEMA: &str = "yieldprof/3";

/// The whole `<name>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Document {
    /// [`SCHEMA`] when written by this version; check it before trusting the rest.
    pub schema: String,
    /// What ran, where, and for how long.
    pub run: Run,
    /// The machine costs the findings were judged with.
    pub costs: Costs,
    /// Time summed over every thread.
    pub totals: Totals,
    /// What the rules found, in the summary's order.
    pub findings: Vec<Finding>,
    /// Every thread that recorded, exited ones included.
    pub threads: Vec<Thread>,
    /// Wait sites, costliest (wall time) first.
    pub sites: Vec<Site>,
    /// The false-sharing detector's lines (empty without `yieldprof::watch`).
    pub sharing: Vec<Line>,
    /// The hardware watchpoints of `sharing::watch_plain`; `null` when none was asked
    /// for.
    #[serde(default)]
    pub watchpoints: Option<Watchpoints>,
    /// Which counters this process can read, and why not.
    pub capabilities: Capabilities,
    /// What the `yieldprof::sync` locks recorded: holders, hold times, lock-order
    /// cycles, condvar wakes; `null` when none was used (and in older files).
    #[serde(default)]
    pub locks: Option<Locks>,
}

/// What the hardware watchpoints on plain data did ([`crate::sharing::WatchpointStatus`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Watchpoints {
    /// `off` (`YIELDPROF_WATCHPOINTS=off`), `armed` or `unavailable`.
    pub state: String,
    /// Why they are unavailable, or why the first refused thread was refused.
    pub reason: Option<String>,
    /// Threads given breakpoints.
    pub threads: usize,
    /// Threads past the first 32, not watched.
    pub over_cap: usize,
    /// Threads whose breakpoints could not be opened.
    pub refused: usize,
    /// Writes seen, all threads.
    pub hits: u64,
    /// Hits the kernel dropped (a full ring).
    pub lost: u64,
    /// Most hits per thread and second.
    pub rate: u32,
    /// The summary's line.
    pub note: String,
}

/// The run the report describes: this process, up to the moment the report was taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Run {
    /// The `yieldprof` crate's version.
    pub version: String,
    /// The process's arguments, program first; bytes that are not UTF-8 become U+FFFD.
    pub command_line: Vec<String>,
    /// When the process started (not when yieldprof was first used), wall clock, to
    /// the kernel's clock tick (1/USER_HZ, 10 ms): the start in `/proc/self/stat` is
    /// the only one that includes the time before the first probe. `null` without
    /// `/proc`.
    pub start: Option<SystemTime>,
    /// From `start` to the report, on `CLOCK_BOOTTIME` (the clock the kernel keeps the
    /// start on, so a wall-clock step does not skew it); `null` with `start`.
    pub duration_ns: Option<u64>,
    /// The machine.
    pub host: Host,
}

/// The machine the run was on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Host {
    /// `model name` in `/proc/cpuinfo`, e.g. `AMD EPYC 7B13`; `null` where the kernel
    /// does not name the CPU (many ARM machines).
    pub cpu_model: Option<String>,
    /// CPUs this process may run on (`std::thread::available_parallelism`: affinity and
    /// cgroup quota applied).
    pub cores: Option<u64>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
}

/// The machine costs of [`crate::report::Costs`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Costs {
    /// One `spin_loop()` (PAUSE).
    pub spin_ns: f64,
    /// One `sched_yield()` with nothing else runnable.
    pub yield_ns: f64,
    /// One context switch.
    pub switch_ns: f64,
    /// The timer slack every sleep is rounded up by.
    pub timer_slack_ns: u64,
    /// Cores the findings assumed.
    pub cores: u64,
    /// Where the figures come from: `"probe"`, `"probe saved <date> (<path>)"` or
    /// `"quick estimate"`.
    pub source: String,
    /// Whether `switch_ns` was measured; else it is the 1 µs default.
    #[serde(default)]
    pub switch_measured: bool,
}

/// Time summed over every thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Totals {
    /// Threads that recorded: the sum of the entries' `threads`.
    pub threads: u64,
    /// Their wall time, summed.
    pub thread_ns: u64,
    /// Their time in wait episodes and wait calls, summed.
    pub wait_ns: u64,
    /// `wait_ns / thread_ns`.
    pub wait_share: f64,
}

/// One finding of [`crate::report::Finding`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Finding {
    /// [`crate::report::Rule::name`], e.g. `sleep-zero-is-no-op`.
    pub rule: String,
    /// The site (`module::fn`) or thread concerned.
    pub subject: String,
    /// `file:line`, where there is one.
    pub location: Option<String>,
    /// The figures behind it.
    pub evidence: String,
    /// What to do.
    pub fix: String,
}

/// One thread, as in [`crate::report::ThreadStats`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thread {
    /// The thread's name, else `thread-<n>`; `[N other threads]` for the threads past
    /// the report's count, merged (`Options::report_threads`).
    pub name: String,
    /// How many threads the entry holds: 1, or N for `[N other threads]` and a row of
    /// threads that exited past the first 10 000 (merged by name): their sums, `tid` 0.
    /// 1 when read from a file written before it was added.
    #[serde(default = "one")]
    pub threads: u64,
    /// Kernel thread id.
    pub tid: i32,
    /// Whether the thread had exited.
    pub exited: bool,
    /// From its first recorded event to its exit (or the report).
    pub wall_ns: u64,
    /// Time in wait episodes and wait calls.
    pub wait_ns: u64,
    /// The rest: `[work]`.
    pub work_ns: u64,
    /// Of `wait_ns`, its jobs' own time off the CPU (business frames inside a wait,
    /// preempted or queued: the pool's scheduling, their `[off-cpu]`). 0 when read
    /// from a file written before it was added.
    #[serde(default)]
    pub jobs_off_cpu_ns: u64,
    /// Of `work_ns`, its wait sites' `[unmarked work]`. 0 in older files.
    #[serde(default)]
    pub unmarked_work_ns: u64,
    /// `wait_ns / wall_ns`.
    pub wait_share: f64,
    /// Frame entries folded into `[overflow]` because the node cap was reached.
    pub overflowed: u64,
    /// Entries skipped because they interrupted yieldprof on this thread (a signal
    /// handler); 0 in older files.
    #[serde(default)]
    pub reentries_skipped: u64,
    /// Entries made after the thread's recording ended, not recorded; 0 in older files.
    #[serde(default)]
    pub entries_after_exit: u64,
    /// Its wait episodes, at every site, that returned without waiting: the sum of
    /// the sites' `returned_without_waiting` over threads; 0 in older files.
    #[serde(default)]
    pub returned_without_waiting: u64,
    /// Time runnable but waiting for a CPU (schedstat); `null` where the kernel is silent.
    pub run_queue_ns: Option<u64>,
    /// Its CPU time since it first recorded; `null` where unread (or in older files).
    #[serde(default)]
    pub cpu_ns: Option<u64>,
    /// How its counters were read: `perf`, `getrusage` or `off`.
    pub counter_source: String,
    /// Counter totals over the thread's life.
    pub counters: Counters,
    /// The part of `counters` spent in wait episodes; the rest is `[work]`'s.
    pub counters_in_wait: Counters,
    /// The part of `counters` from before the thread first recorded (its switches
    /// then; `null` per event not counted over the thread's whole life); absent in
    /// reports written before this field.
    #[serde(default)]
    pub counters_before_recording: Option<Counters>,
    /// Where its wait episodes' time went.
    pub time_in_wait: TimeSplit,
    /// How that was measured ([`crate::counters::SplitMethod`] as the summary writes
    /// it); `null` with counters off.
    pub split_method: Option<String>,
    /// Its wait episodes' fragmentation.
    pub fragmentation: Fragmentation,
    /// yieldprof's own time on the thread (`[profiler]`): set-up, nodes created,
    /// switch figures read; 0 in reports written before this field.
    #[serde(default)]
    pub profiler_ns: u64,
}

/// What `Thread::threads` is in files written before it: one thread an entry.
fn one() -> u64 {
    1
}

/// Where wait episodes' time went, as in [`crate::counters::TimeSplit`]: each `null`
/// where not measured, estimated where scaled from sampled episodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TimeSplit {
    /// Running on a CPU.
    pub on_cpu_ns: Option<Count>,
    /// Not running.
    pub off_cpu_ns: Option<Count>,
    /// Off the CPU but runnable, waiting in a run queue.
    pub queued_ns: Option<Count>,
    /// Off the CPU and not runnable.
    pub blocked_ns: Option<Count>,
    /// Episodes whose split was apportioned, not read at their end (the thread was
    /// switched again before it was read); 0 in reports written before this field.
    #[serde(default)]
    pub estimated_episodes: u64,
}

/// A wait site's own time outside timed calls, as in [`crate::report::OwnTime`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OwnTime {
    /// `[spin]`: on the CPU, in episodes that counted spin calls.
    pub spin_ns: u64,
    /// `[on-cpu]`: on the CPU, no spin call counted.
    pub on_cpu_ns: u64,
    /// `[off-cpu]`: off the CPU outside any recognised call.
    pub off_cpu_ns: u64,
    /// `[unexplained]`: not measured, no spin call counted.
    pub unexplained_ns: u64,
    /// `[unmarked work]`: work done between waits, no frame around it. 0 in older files.
    #[serde(default)]
    pub unmarked_work_ns: u64,
}

/// Counters keyed by event, as in [`crate::counters::Counters`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Counters {
    /// One entry per [`crate::counters::CounterEvent`], keyed by its `perf list` name: a map rather
    /// than fields, so a new event is a new key and older readers still parse.
    #[serde(flatten)]
    pub events: BTreeMap<String, Option<Count>>,
    /// Episodes whose counters were read; the rest are estimated from them.
    pub sampled: u64,
}

/// One counted figure ([`crate::counters::Count`] other than `NotAvailable`, which is `null`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    /// The figure.
    pub value: u64,
    /// Whether it was scaled up from sampled episodes or multiplexed counters.
    pub estimated: bool,
}

/// [`crate::report::Fragmentation`]: how much of the waiting came in episodes shorter than a
/// context switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Fragmentation {
    /// Timed episodes per second of the wall time of the threads that ran them; 0 when
    /// those threads ran under 1 ms in all ([`crate::report::RATE_FLOOR_NS`]: too little
    /// time for a rate) or no episode waited.
    pub episodes_per_s: f64,
    /// Share of episode time in episodes shorter than one context switch; 0 when no
    /// episode was timed.
    pub short_share: f64,
}

/// A wait site (an `#[instrument_wait]` function), as in [`crate::report::SiteStats`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Site {
    /// The frame name: `name = "..."`, else `module::function`.
    pub name: String,
    /// The function's full path, `crate::module::function`.
    pub path: String,
    /// Source file of the function.
    pub file: String,
    /// Line of the function.
    pub line: u32,
    /// Calls of the function: `returned_without_waiting` of them, and the timed ones
    /// that `durations` describes.
    pub episodes: u64,
    /// Calls that returned without making a wait call: counted, not timed, in no
    /// stack (the clock starts at an episode's first wait). 0 when read from a file
    /// written before it was added.
    #[serde(default)]
    pub returned_without_waiting: u64,
    /// Wall time of the episodes, nested frames included.
    pub wall_ns: u64,
    /// Wall time minus nested frames: the site's own waiting.
    pub self_ns: u64,
    /// `async fn` sites: time suspended between polls (first poll to completion, minus
    /// the polls); `wall_ns + suspended_ns` is the episodes' whole span. 0 otherwise.
    #[serde(default)]
    pub suspended_ns: u64,
    /// Of `wall_ns`, episodes still open when the report was read, counted up to that
    /// moment. 0 when none was open, or read from a file written before it was added.
    #[serde(default)]
    pub open_ns: u64,
    /// Own time drawn as `[spin]`: on the CPU (or not measured) outside timed calls,
    /// in episodes that counted spin calls.
    pub spin_ns: u64,
    /// Own time inside timed calls (yield, sleep, lock, channel, ...).
    pub in_calls_ns: u64,
    /// Where the episodes' time went (nested frames included).
    pub time: TimeSplit,
    /// Own time outside timed calls, by what was measured.
    pub own: OwnTime,
    /// yieldprof's own time inside the site's frames (`[profiler]`), never in `own`;
    /// 0 in reports written before this field.
    #[serde(default)]
    pub profiler_ns: u64,
    /// Episode durations.
    pub durations: Durations,
    /// Its episodes' fragmentation.
    pub fragmentation: Fragmentation,
    /// Counters over the episodes (nested frames included).
    pub counters: Counters,
    /// Calls per call site, ordered by line.
    pub calls: Vec<Call>,
    /// Durations of the timed calls made directly in the function, per kind.
    #[serde(default)]
    pub call_durations: Vec<KindDurations>,
    /// It spins on a FALSE or MIXED line (see `sharing`); drawn reddish purple in the flame graph.
    #[serde(default)]
    pub false_sharing: bool,
}

/// Episode durations of a site (nested frames included); `null` without episodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Durations {
    /// The shortest (exact).
    pub min_ns: Option<u64>,
    /// The median, within 1.6 % ([`crate::report::Histogram::quantile`]).
    pub median_ns: Option<u64>,
    /// The 90th percentile, within 1.6 %.
    pub p90_ns: Option<u64>,
    /// The 99th percentile, within 1.6 %.
    pub p99_ns: Option<u64>,
    /// The 99.9th percentile, within 1.6 %.
    pub p999_ns: Option<u64>,
    /// The longest (exact).
    pub max_ns: Option<u64>,
}

/// The durations of one kind of timed call at a wait site, e.g. each `yield_now`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KindDurations {
    /// [`crate::Kind::name`]: `yield`, `sleep`, `park`, `lock`, ...
    pub kind: String,
    /// Calls timed.
    pub calls: u64,
    /// Their durations.
    pub durations: Durations,
}

/// One call site inside a wait site, as in [`crate::report::CallStats`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Call {
    /// [`crate::Kind::name`]: `spin`, `yield`, `sleep`, `park`, `async-yield`, `lock`,
    /// `condvar`, `channel`, `join`, `barrier` or `backoff`.
    pub kind: String,
    /// Source file of the call.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// Its column.
    pub column: u32,
    /// Number of calls.
    pub calls: u64,
    /// Time inside the calls (0 for spins, which are counted only).
    pub ns: u64,
    /// `calls` per episode of the site.
    pub per_episode: f64,
    /// Made without `.await` in async code: it blocked the executor's thread.
    #[serde(default)]
    pub in_async: bool,
    /// What a sleep-like call asked for (`sleep(d)`, `park_timeout(d)`, `usleep`,
    /// `nanosleep`); absent for other calls and in older files.
    #[serde(default)]
    pub asked: Option<Asked>,
    /// A call made from async code without `.await`: how long it held its thread at
    /// once and the annotated async episodes it kept waiting there, as in
    /// [`crate::report::HeldWorker`]; absent for other calls and in older files.
    #[serde(default)]
    pub held: Option<Held>,
    /// A backoff call: how many of its calls spun and how many yielded, as in
    /// [`crate::report::Snoozes`]; absent for other calls and in older files.
    #[serde(default)]
    pub backoff: Option<Backoff>,
}

/// How one backoff line's calls went, as in [`crate::report::Snoozes`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Backoff {
    /// Calls that made no `sched_yield`.
    pub spun: u64,
    /// Their time, ns.
    pub spun_ns: u64,
    /// Calls that made a `sched_yield`.
    pub yielded: u64,
    /// Their time, ns.
    pub yielded_ns: u64,
}

/// What one call line made from async code held, as in [`crate::report::HeldWorker`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Held {
    /// The longest call, ns.
    pub max_ns: u64,
    /// Polls of other annotated async episodes on its thread that waited for it.
    pub delayed_polls: u64,
    /// Their wait for it, summed, ns.
    pub delayed_ns: u64,
    /// The longest of those waits, ns.
    pub delayed_max_ns: u64,
}

/// The durations one call line asked to sleep for, as in [`crate::report::Asked`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Asked {
    /// Calls whose request was seen.
    pub calls: u64,
    /// The shortest request, ns.
    pub min_ns: u64,
    /// The longest request, ns.
    pub max_ns: u64,
    /// The mean request, ns.
    pub mean_ns: u64,
}

/// What this process can count, as in [`crate::counters::Capabilities`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// The fd budget for counters in force.
    pub fd_budget: u64,
    /// Counter fds open when the report was taken.
    pub fds_in_use: u64,
    /// One row per [`crate::counters::CounterEvent`], in [`crate::counters::CounterEvent::ALL`] order.
    pub events: Vec<EventStatus>,
}

/// Whether one event is counted, as in [`crate::counters::EventStatus`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EventStatus {
    /// The event's `perf list` name.
    pub event: String,
    /// [`crate::counters::EventSource::name`]: `getrusage`, `perf sw` or `perf hw`.
    pub source: String,
    /// Whether it is counted.
    pub available: bool,
    /// Why not ([`crate::counters::Reason`] as the summary writes it); `null` when available.
    pub reason: Option<String>,
}
