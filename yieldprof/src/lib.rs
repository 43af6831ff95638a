//! yieldprof makes waiting visible from inside the program.
//!
//! Mark a function that waits with [`#[instrument_wait]`](instrument_wait): every call
//! becomes a **wait episode**, and the waits in its body (spins, yields, sleeps,
//! parks, locks, condvars, channels, joins, barriers, backoffs) are counted or timed per
//! kind and source line. An episode is timed from its first wait call to its return;
//! one that makes none (its condition held at once, or its lock was free) costs a few
//! ns and is only counted, as "returned without waiting"
//! ([`SiteStats::returned_without_waiting`](report::SiteStats::returned_without_waiting)).
//! At shutdown the guard returned by [`init`] writes folded stacks, a flame graph, a
//! pprof profile ([`Profile::write_pprof`]), each thread's last wait episodes as a
//! timeline for Perfetto ([`Profile::write_trace`]) and a plain-text summary in which
//! waiting stands apart from the thread's real work (`[work]`);
//! [`Options::snapshot_every`] also writes deltas while the program runs.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! #[yieldprof::instrument_wait]
//! fn wait_until(flag: &AtomicBool) {
//!     while !flag.load(Ordering::Acquire) {
//!         std::hint::spin_loop();
//!     }
//! }
//!
//! let flag = AtomicBool::new(true);
//! wait_until(&flag);
//! let site = yieldprof::snapshot().site("wait_until").unwrap();
//! assert_eq!(site.episodes, 1);
//! ```
//!
//! ## What the macro rewrites
//!
//! Inside the annotated function's body (closures and async blocks included) these
//! calls are wrapped, keeping the call expression, its value and its spans as written.
//! Each timed call is drawn as its kind's frame at its line; spins are counted.
//!
//! | kind (frame) | calls |
//! |---|---|
//! | spin `[spin]` | `std::hint::spin_loop`, `core::hint::spin_loop`, `hint::spin_loop`, `spin_loop`; the deprecated `spin_loop_hint` (and `atomic::…`, `std::`/`core::sync::atomic::…`) |
//! | yield `[yield]` | `std::thread::yield_now`, `thread::yield_now`, `yield_now`, `libc::sched_yield`, `sched_yield` |
//! | sleep `[sleep]` | `std::thread::sleep`, `thread::sleep`, `libc::usleep`, `libc::nanosleep`, `usleep`, `nanosleep` |
//! | park `[park]` | `std::thread::park`, `std::thread::park_timeout` (and `thread::…`) |
//! | lock `[lock]` | `.lock()`, `.read()`, `.write()`, `.upgradable_read()` with no argument; tokio's `.blocking_lock()`/`_read()`/`_write()` |
//! | condvar `[condvar]` | `.wait(guard)`, `.wait_timeout(g, d)`, `.wait_while(g, f)`, `.wait_timeout_while(g, d, f)`, parking_lot's `.wait_for(g, d)`, `.wait_until(g, t)` |
//! | channel `[channel]` | `.recv()`, `.recv_timeout(d)`, `.recv_deadline(t)`, `.send(v)`, `.send_timeout(v, d)`, `.blocking_recv()`, `.blocking_send(v)`; crossbeam's `select!` outside async code |
//! | join `[join]` | `.join()` with no argument (`JoinHandle`, `ScopedJoinHandle`) |
//! | barrier `[barrier]` | `.wait()` with no argument |
//! | backoff `[backoff]` | `.snooze()`; `.spin()` on a local bound by `let b = Backoff::new()` (or `::default()`) |
//! | async yield `[async-yield]` | `tokio::task::yield_now().await` |
//!
//! Wake calls with no argument outside async code (`.notify_one()`, `.notify_all()`,
//! `.unpark()`) are not waits, but their time is the handoff's, not a job's: they end
//! a stretch of `[unmarked work]` and begin the next (`docs/thread-pools.md`).
//!
//! Free functions are matched by their path as written, after the `use` declarations
//! in the body are followed (`use std::thread::sleep as nap;` makes `nap(d)` a sleep;
//! a bare `sleep`, `park` or `park_timeout` counts only when imported from
//! `std::thread` in the body). Methods are matched by name and number of arguments: a
//! proc macro cannot see types, and receiver names would misfire. So `io::Read::read(&mut
//! buf)`, `slice.join(",")` and a `lock(x)` of your own are left alone, while a method of
//! your own with a matched shape (a `wait()` with no argument, `ptr.read()`,
//! `Child::wait()`) is timed as that kind: a miscount, never a build error, since the
//! call is kept as written.
//!
//! In an `async fn` or block an awaited `.lock()`, `.read()`, `.write()`, `.acquire()`
//! (lock), `.notified()` (condvar), `.recv()`, `.send(v)`, `.changed()` (channel),
//! `.wait()` (barrier) is counted, not timed: the task waits, the thread does not (a
//! `JoinHandle` awaited as `handle.await` is not recognised). Such a future stored in
//! a local and awaited later (`let f = yield_now(); ...; f.await`) counts where it is
//! awaited; a local that no later statement awaits holds no future, so `let g =
//! m.lock();` stays a blocking lock. A blocking call made in async code without
//! `.await` is timed: it blocks the worker thread, and the `blocking-call-in-async`
//! finding names it once it held the thread ≥ 1 ms, with its longest call and how long
//! the annotated async episodes woken on that thread waited for it to return.
//!
//! With the opt-in feature `count-yields`, each backoff call is counted as spun or
//! yielded (whether it made a `sched_yield`): the feature defines the C symbol
//! `sched_yield`, counting each call on its thread before making the same system call
//! (`docs/findings.md`; opt-in because a program that defines it too fails to link).
//!
//! Nested items (`fn`, `impl`, `mod` inside the body) are not rewritten: they are
//! separate functions and get their own annotation if they wait. Macro invocations
//! (`println!(...)`, user macros) are left alone too: their tokens are not Rust
//! expressions until expanded. Mark what the syntax cannot show (a call through a
//! function pointer, in another macro or another function) with [`wait!`]
//! (`yieldprof::wait!(lock, expr)`); use [`wait::spin`], [`wait::yield_now`],
//! [`wait::sleep`], [`wait::park`] and [`wait::park_timeout`] where a wait sits outside
//! an annotated function.
//!
//! The expansion builds in a crate of any edition (an edition-2015 crate has no `core`
//! in scope, only `std`):
//!
//! ```edition2015
//! #[yieldprof::instrument_wait(name = "queue wait")]
//! fn wait_for(flag: &std::sync::atomic::AtomicBool) {
//!     while !flag.load(std::sync::atomic::Ordering::Acquire) {
//!         std::thread::yield_now();
//!         std::thread::sleep(std::time::Duration::from_micros(10));
//!     }
//! }
//!
//! wait_for(&std::sync::atomic::AtomicBool::new(true));
//! ```
//!
//! ## Where the time went
//!
//! Each wait episode and timed call reads the perf user page of the thread's
//! context-switch counter at both ends (~1 ns, no syscall), so every episode's voluntary
//! and involuntary switches and CPU migrations are counted exactly, and its time is
//! split into on-CPU, queued (runnable, waiting for a CPU) and blocked
//! ([`counters::TimeSplit`]). A wait frame's own time outside timed calls is named by
//! what was measured: `[spin]` (on the CPU, with spin calls counted), `[on-cpu]`,
//! `[off-cpu]`, or `[unexplained]` where nothing was measured ([`report::OwnTime`]);
//! it is never called spinning without on-CPU evidence. Where perf is denied,
//! `getrusage` on sampled episodes is the labelled fallback.
//!
//! ## Who holds the lock
//!
//! [`sync::Mutex`], [`sync::RwLock`] and [`sync::Condvar`] are std's locks with std's
//! API that also say who makes a thread wait: a contended acquisition's wait split by
//! the lines holding the lock meanwhile (`[held by worker.rs:88]` under `[lock]`),
//! sampled hold times, lock-order cycles (potential deadlocks) and condvar wakers
//! ([`Profile::locks`]). Without the `enabled` feature they are std's types.
//!
//! ## Reading a flame graph
//!
//! One thread of the demo (`yieldprof-demo`), drawn the way the report draws it (colours as in
//! the SVGs the exit flush writes; the summary and JSON give the same figures with
//! their evidence):
//!
#![doc = include_str!("../docs/anatomy.svg")]
//!
//! Every `YIELDPROF_*` variable (output folder, views, counters, timeline, live view,
//! ...) is in the table on [`Options`], with its default.
//!
//! ## Costs and switches
//!
//! `YIELDPROF=0` turns recording off at run time (one relaxed load per probe); building
//! without the default `enabled` feature compiles every probe to nothing and builds no
//! dependency but the macro crate. Such a build keeps what production code calls:
//! [`init`], [`flush`], [`Options`], [`Session`], [`snapshot`] and an empty [`Profile`]
//! (`folded`, `summary`, `write`), budgets (they pass: nothing was measured),
//! [`Watched`] as a plain atomic; the report's views, `report`, `counters` and `probe`
//! need the feature, and the `tracing` and `http` features turn it on. A spin
//! written directly in an annotated body (not in a closure) costs one add on a counter
//! in the episode's stack frame, recorded when the episode ends
//! (`cargo bench --bench overhead` measures it against a raw loop).

mod analysis;
mod base;
mod config;
#[cfg(feature = "enabled")]
pub mod counters;
/// Without the `enabled` feature: only the type [`Options::counters`] takes.
#[cfg(not(feature = "enabled"))]
pub mod counters {
    pub use crate::config::CounterSampling;
}
mod model;
mod output;
mod record;
pub mod sharing;
pub mod sync;

#[cfg(feature = "enabled")]
pub use analysis::probe;
pub use analysis::session::{Session, SessionScope};
pub use base::site::Kind;
pub use config::{is_enabled, set_enabled};
pub use model::profile::Profile;
#[cfg(feature = "enabled")]
pub use output::flush::flush;
#[cfg(not(feature = "enabled"))]
pub use output::init::flush;
pub use output::init::{init, Guard};
pub use output::options::Options;
pub use record::thread::snapshot;
#[cfg(feature = "tracing")]
pub use record::tracing_bridge;
pub use sharing::watch::{watch, Watched};
pub use yieldprof_macros::instrument_wait;

/// Opens a named business frame until the end of the enclosing block, so business work
/// shows by name next to the wait sites it calls.
///
/// ```
/// fn handle() {
///     yieldprof::frame!("handle_request");
///     // ... work, and calls into `#[instrument_wait]` functions ...
/// }
/// handle();
/// let profile = yieldprof::snapshot();
/// assert!(profile.folded(yieldprof::report::Metric::Wall).iter().any(|l| l.contains(";handle_request;")));
/// ```
///
/// In async code, `frame!(name, future)` wraps a future instead: the frame is open
/// while the future is polled, so tasks the thread runs while it waits are not inside
/// it. The block form held across an `.await` (possible on single-threaded executors:
/// its guard is not `Send`) also holds the frame over whatever the thread runs
/// meanwhile; frames closed out of order leave no stale frame behind.
///
/// ```
/// # use std::future::Future;
/// async fn serve() {
///     // ... awaits, and calls into `#[instrument_wait]` functions ...
/// }
/// let framed = yieldprof::frame!("serve", serve());
/// # let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
/// # assert!(std::pin::pin!(framed).poll(&mut cx).is_ready());
/// ```
#[macro_export]
macro_rules! frame {
    ($name:literal) => {
        let _yieldprof_frame = {
            static SITE: $crate::__private::WorkSite =
                $crate::__private::WorkSite::new($name, ::core::file!(), ::core::line!());
            $crate::__private::enter_work(&SITE)
        };
    };
    ($name:literal, $future:expr $(,)?) => {{
        static SITE: $crate::__private::WorkSite =
            $crate::__private::WorkSite::new($name, ::core::file!(), ::core::line!());
        $crate::__private::framed(&SITE, $future)
    }};
}

/// Times `expr` as a wait of `kind` at the expression's own line and column, in the
/// current frame: for a wait the syntax of an annotated body cannot show (a call
/// through a function pointer, inside another macro, in a helper function), or one
/// outside any annotated function. The value of `expr` is returned as it is.
///
/// `kind` is one of `lock`, `condvar`, `channel`, `join`, `barrier`, `backoff`,
/// `sleep`, `park` or `yield` ([`Kind::name`]); any other name is a compile error at
/// the name.
///
/// ```
/// use std::sync::Mutex;
///
/// fn read_through(get: fn(&Mutex<u32>) -> u32, m: &Mutex<u32>) -> u32 {
///     yieldprof::wait!(lock, get(m))
/// }
///
/// let m = Mutex::new(3);
/// assert_eq!(read_through(|m| *m.lock().unwrap(), &m), 3);
/// let calls = yieldprof::snapshot().folded(yieldprof::report::Metric::Calls);
/// assert!(calls.iter().any(|l| l.ends_with(";[lock] 1")));
/// ```
///
/// ```compile_fail
/// let m = std::sync::Mutex::new(3);
/// yieldprof::wait!(mutex, m.lock()); // error: unknown wait kind `mutex`
/// ```
#[macro_export]
macro_rules! wait {
    ($($args:tt)*) => {
        $crate::__private::wait_call!($crate; $($args)*)
    };
}

/// Checks `report` against `budget`; when a limit is exceeded it first writes the
/// failing run's `.folded`, `.svg` and `.txt` to `<YIELDPROF_OUT>/budget-failures/`
/// (named after the test), then panics with every violated limit: site, source
/// location, measured value and limit.
///
/// ```should_panic
/// use yieldprof::{assert_budget, Kind, Session};
/// use yieldprof::budget::Budget;
///
/// #[yieldprof::instrument_wait]
/// fn poll() {
///     std::thread::yield_now();
///     std::thread::yield_now();
/// }
///
/// let session = Session::this_thread();
/// poll();
/// let report = session.finish();
/// assert_budget!(report, Budget::new().site("poll", |s| s.max_calls(Kind::Yield, 1)));
/// ```
#[macro_export]
macro_rules! assert_budget {
    ($report:expr, $budget:expr $(,)?) => {
        $crate::__private::assert_budget(&$report, &$budget)
    };
}

/// Fails when two of the named fields of `Type` can share a 128-B line
/// ([`sharing::SEPARATE_LINE_BYTES`]): two 64-B lines, the unit the adjacent-line prefetcher
/// moves. It reads `core::mem::offset_of!`, the fields' sizes and `Type`'s alignment (a
/// low alignment lets the value start anywhere in a line), so a check needs no thread.
/// The message names the fields, their offsets and sizes, and the line size.
///
/// - A field is a name, a tuple index or a path to a nested field (`a.b`; nested paths
///   need Rust 1.82).
/// - `name[..]` is an array field: its neighbouring elements, a stride of `T` apart for
///   `[T; N]`, must not share a line either, and its whole span counts against the other
///   fields. `assert_separate_lines!([T; N])` checks the elements of an array type.
/// - In a test or function it panics; in a `const` it is evaluated by the compiler, and
///   a layout that shares a line does not build:
///   `const _: () = yieldprof::assert_separate_lines!(Ring, head, tail);`
///
/// ```
/// use std::sync::atomic::{AtomicU32, AtomicU64};
///
/// #[repr(align(128))]
/// struct Padded<T>(T);
///
/// struct Ring {
///     head: Padded<AtomicU64>,
///     tail: Padded<AtomicU64>,
///     locks: [Padded<AtomicU32>; 4],
/// }
/// const _: () = yieldprof::assert_separate_lines!(Ring, head, tail, locks[..]);
/// const _: () = yieldprof::assert_separate_lines!([Padded<AtomicU32>; 8]);
/// yieldprof::assert_separate_lines!(Ring, head, tail);
/// ```
///
/// ```should_panic
/// struct Packed {
///     head: std::sync::atomic::AtomicU64,
///     tail: std::sync::atomic::AtomicU64,
/// }
/// // panics: `head` (offset 0, 8 B) and `tail` (offset 8, 8 B) share a 128-B line
/// yieldprof::assert_separate_lines!(Packed, head, tail);
/// ```
///
/// ```compile_fail
/// // Four locks a stride of 4 B apart: the build fails.
/// const _: () = yieldprof::assert_separate_lines!([std::sync::atomic::AtomicU32; 4]);
/// ```
#[macro_export]
macro_rules! assert_separate_lines {
    ([$elem:ty; $n:expr] $(,)?) => {
        $crate::__private::assert_separate_lines(
            ::core::stringify!([$elem; $n]),
            ::core::mem::align_of::<$elem>(),
            &[$crate::__private::FieldLayout {
                name: "",
                offset: 0,
                size: ::core::mem::size_of::<$elem>(),
                count: $n,
            }],
        )
    };
    ($ty:ty, $($($field:tt).+ $([$($elements:tt)*])?),+ $(,)?) => {
        $crate::__private::assert_separate_lines(
            ::core::stringify!($ty),
            ::core::mem::align_of::<$ty>(),
            &[$($crate::assert_separate_lines!(@field $ty, $($field).+ $([$($elements)*])?)),+],
        )
    };
    (@field $ty:ty, $($field:tt).+ [..]) => {{
        let (size, count) = $crate::__private::array_of_field(|v: &$ty| &v.$($field).+);
        $crate::__private::FieldLayout {
            name: ::core::stringify!($($field).+),
            offset: ::core::mem::offset_of!($ty, $($field).+),
            size,
            count,
        }
    }};
    (@field $ty:ty, $($field:tt).+) => {
        $crate::__private::FieldLayout {
            name: ::core::stringify!($($field).+),
            offset: ::core::mem::offset_of!($ty, $($field).+),
            size: $crate::__private::size_of_field(|v: &$ty| &v.$($field).+),
            count: 1,
        }
    };
}

/// Waits written outside an annotated function, recorded as if they were inside one:
/// each call is counted (and timed, except spins) at its own call site. [`wait!`]
/// times any other expression as a wait of a given kind.
pub mod wait {
    pub use crate::record::wait::{park, park_timeout, sleep, spin, yield_now};
}

/// What a [`Profile`] holds, read by site and by thread, and what is made of it:
/// findings, folded stacks and their diff, the cost model the findings use.
pub mod report {
    pub use crate::config::Metric;
    pub use crate::output::files::WriteError;
    #[cfg(feature = "enabled")]
    pub use crate::{
        analysis::costs::{CostSource, Costs, ProfilerTime},
        analysis::findings::{Finding, Fragmentation, Rule, RATE_FLOOR_NS},
        base::asked::Asked,
        base::blocked::HeldWorker,
        base::site::{CallInfo, FrameInfo, FrameKind},
        base::snoozed::Snoozes,
        model::histogram::Histogram,
        model::own::OwnTime,
        model::profile::{CallStats, SiteStats, ThreadStats},
        output::compare::{compare, Change, Comparison, Row},
        output::diff::{diff, parse_folded, DiffError, Malformed},
        output::flamegraph::flamegraph,
        output::fold::split_folded,
        output::json,
    };

    /// How the reports write times, dates and long lines, for tools that print beside
    /// them (the `yieldprof` command).
    #[cfg(feature = "enabled")]
    pub mod text {
        pub use crate::base::text::{date_time, duration, read_utf8, shared_line, tail, wrap};
    }
}

/// Budgets: limits on what wait sites and threads may cost, checked in tests with
/// [`Profile::check`], [`Profile::check_declared`] or [`assert_budget!`].
pub mod budget {
    pub use crate::analysis::budget::{
        Budget, BudgetExceeded, SiteBudget, ThreadBudget, Violation,
    };
    pub use crate::base::site::Limit;
}

/// What `#[instrument_wait]` expands to. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::base::asked::AskedSite;
    pub use crate::base::site::Limit;
    pub use crate::base::site::{CallSite, EpisodeSite, Kind, WorkSite};
    pub use crate::record::asked::{asked, asked_micros, asked_timespec, Timespec};
    pub use crate::record::episode::{
        count, enter_nested, enter_work, framed, nested, wake_start, woke, CallGuard, EpisodeGuard,
        Instrumented, WaitGuard,
    };
    #[cfg(not(feature = "tracing"))]
    pub use crate::record::episode::{enter, instrument};
    pub use crate::record::outlined::{call_fn, enter_fn, timed_fn, FnCall, FnEpisode};
    pub use crate::record::spins::SpinCounts;
    #[cfg(feature = "tracing")]
    pub use crate::record::tracing_bridge::{enter, instrument, TracedEpisode};
    #[cfg(feature = "enabled")]
    pub use crate::record::woken::Woken;
    pub use crate::sharing::layout::{
        array_of_field, assert_separate_lines, size_of_field, FieldLayout,
    };
    /// Makes every later hardware watchpoint open fail with `errno` (0: open them for
    /// real): the tests' stand-in for a sandbox without breakpoints.
    #[cfg(feature = "enabled")]
    pub fn fail_watchpoints(errno: i32) {
        crate::counters::force_open_error(errno);
    }
    pub use yieldprof_macros::wait_call;

    /// How many times the calling thread has read its switch figures (getrusage, its
    /// CPU clock, schedstat) since it began recording: tests check that a hot loop of
    /// switching episodes reads far fewer times than it has episodes.
    #[cfg(feature = "enabled")]
    pub fn switch_reads() -> u64 {
        crate::record::deferred::reads_here()
    }

    /// Test hook: every perf group opened from now on fails with `errno`, for the
    /// refusals a test cannot cause for real. Call it before anything records.
    #[cfg(feature = "enabled")]
    pub fn fail_perf_groups(errno: i32) {
        crate::counters::fail_perf_groups(errno);
    }

    /// The body of `assert_budget!`.
    #[track_caller]
    pub fn assert_budget(report: &crate::Profile, budget: &crate::budget::Budget) {
        let Err(e) = report.check(budget) else {
            return;
        };
        let test = std::thread::current().name().unwrap_or("budget").replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_',
            "_",
        );
        let dir = crate::Options::from_env().out_dir.join("budget-failures");
        let saved = match report.write(&dir, &test) {
            Ok(paths) => format!(
                "profile of the failing run: {}",
                paths[0].with_extension("{folded,svg,json,txt}").display()
            ),
            Err(w) => format!("the failing run's profile was not saved: {w}"),
        };
        panic!("{e}{saved}");
    }
}

/// `docs/fleet.md`'s examples, compiled as doc-tests where the `tracing` feature they
/// use is on (`cargo test -p yieldprof --features tracing --doc`). Outside doc-tests the
/// page is not read: the published crate holds no `docs/` folder.
#[cfg(all(doctest, feature = "tracing"))]
#[doc = include_str!("../../docs/fleet.md")]
mod fleet_docs {}

/// `docs/locks.md`'s examples (`Tracked` around a lock of one's own), compiled and run
/// as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/locks.md")]
mod locks_docs {}
