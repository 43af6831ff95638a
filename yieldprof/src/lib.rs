//! yieldprof makes waiting visible from inside the program.
//!
//! Mark a function that waits with [`#[instrument_wait]`](instrument_wait): every call
//! becomes a timed **wait episode**, and the spin/yield/sleep/park calls in its body are
//! counted per kind and source line. At shutdown the guard returned by [`init`] writes
//! folded stacks, a flame graph, a pprof profile ([`Profile::write_pprof`]) and a
//! plain-text summary in which waiting stands apart from the thread's real work
//! (`[work]`); [`Options::snapshot_every`] also writes deltas while the program runs.
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
//! Inside the annotated function's body (closures included) these calls are wrapped,
//! keeping the call expression and its spans as written:
//!
//! | kind | calls |
//! |---|---|
//! | spin | `std::hint::spin_loop`, `core::hint::spin_loop`, `hint::spin_loop`, `spin_loop` |
//! | yield | `std::thread::yield_now`, `thread::yield_now`, `libc::sched_yield`, `sched_yield` |
//! | sleep | `std::thread::sleep`, `thread::sleep`, `libc::usleep`, `libc::nanosleep`, `usleep`, `nanosleep` |
//! | park | `std::thread::park`, `std::thread::park_timeout` (and `thread::…`) |
//! | async yield | `tokio::task::yield_now().await` (counted, not timed) |
//!
//! Nested items (`fn`, `impl`, `mod` inside the body) are not rewritten: they are
//! separate functions and get their own annotation if they wait. Macro invocations
//! (`println!(...)`, user macros) are left alone too: their tokens are not Rust
//! expressions until expanded. Use [`wait::spin`], [`wait::yield_now`], [`wait::sleep`],
//! [`wait::park`] and [`wait::park_timeout`] where a wait sits outside an annotated function.
//!
//! ## Costs and switches
//!
//! `YIELDPROF=0` turns recording off at run time (one relaxed load per probe); building
//! without the default `enabled` feature compiles every probe to nothing. A spin
//! written directly in an annotated body (not in a closure) costs one add on a counter
//! in the episode's stack frame, recorded when the episode ends
//! (`cargo bench --bench overhead` measures it against a raw loop).

// Without `enabled` nothing records, so the recording half of the crate is unused.
#![cfg_attr(not(feature = "enabled"), allow(dead_code, unused_imports))]

mod analysis;
mod base;
mod config;
pub mod counters;
mod model;
mod output;
mod record;
pub mod sharing;

pub use analysis::probe;
pub use analysis::session::{Session, SessionScope};
pub use base::site::Kind;
pub use config::{is_enabled, set_enabled};
pub use model::profile::Profile;
pub use output::flush::flush;
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

/// Fails (panics) when two of the named fields of `Type` can share a 128-B line
/// ([`sharing::SEPARATE_LINE_BYTES`]): two 64-B lines, the unit the adjacent-line prefetcher
/// moves. It reads `core::mem::offset_of!`, the fields' sizes and `Type`'s alignment (a
/// low alignment lets the value start anywhere in a line), so a test catches removed
/// padding without running a thread. The message names the fields, their offsets and
/// sizes, and the line size.
///
/// ```
/// use std::sync::atomic::AtomicU64;
///
/// #[repr(align(128))]
/// struct Padded(AtomicU64);
///
/// struct Ring {
///     head: Padded,
///     tail: Padded,
/// }
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
#[macro_export]
macro_rules! assert_separate_lines {
    ($ty:ty, $($field:tt),+ $(,)?) => {
        $crate::__private::assert_separate_lines(
            ::core::stringify!($ty),
            ::core::mem::align_of::<$ty>(),
            &[$((
                ::core::stringify!($field),
                ::core::mem::offset_of!($ty, $field),
                $crate::__private::size_of_field(|v: &$ty| &v.$field),
            )),+],
        )
    };
}

/// Waits written outside an annotated function, recorded as if they were inside one:
/// each call is counted (and timed, except spins) at its own call site.
pub mod wait {
    pub use crate::record::wait::{park, park_timeout, sleep, spin, yield_now};
}

/// What a [`Profile`] holds, read by site and by thread, and what is made of it:
/// findings, folded stacks and their diff, the cost model the findings use.
pub mod report {
    pub use crate::analysis::costs::{CostSource, Costs};
    pub use crate::analysis::findings::{Finding, Fragmentation, Rule};
    pub use crate::base::site::{CallInfo, FrameInfo, FrameKind};
    pub use crate::model::histogram::Histogram;
    pub use crate::model::profile::{CallStats, SiteStats, ThreadStats};
    pub use crate::output::compare::{compare, Change, Comparison, Row};
    pub use crate::output::diff::{diff, parse_folded, DiffError, Malformed};
    pub use crate::output::files::WriteError;
    pub use crate::output::flamegraph::flamegraph;
    pub use crate::output::fold::{split_folded, Metric};
    pub use crate::output::json;

    /// How the reports write times, dates and long lines, for tools that print beside
    /// them (the `yieldprof` command).
    pub mod text {
        pub use crate::base::text::{date_time, duration, tail, wrap};
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
    pub use crate::base::site::Limit;
    pub use crate::base::site::{CallSite, EpisodeSite, Kind, WorkSite};
    pub use crate::record::episode::{
        call, count, enter_work, framed, CallGuard, EpisodeGuard, Instrumented,
    };
    #[cfg(not(feature = "tracing"))]
    pub use crate::record::episode::{enter, instrument};
    pub use crate::record::spins::SpinCounts;
    #[cfg(feature = "tracing")]
    pub use crate::record::tracing_bridge::{enter, instrument, TracedEpisode};
    pub use crate::sharing::layout::{assert_separate_lines, size_of_field};

    /// Test hook: every perf group opened from now on fails with `errno`, for the
    /// refusals a test cannot cause for real. Call it before anything records.
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
