//! The proc-macro behind [`yieldprof`](https://docs.rs/yieldprof): `#[instrument_wait]`.
//! Use it through `yieldprof::instrument_wait`; the generated code names the runtime
//! as `::yieldprof`, or by the key the calling crate's Cargo.toml gives it when renamed
//! there (`yp = { package = "yieldprof" }`, read with `proc-macro-crate`), or as the
//! `crate = path` argument.
//!
//! ## What an annotated function becomes
//!
//! The signature and outer attributes are kept. The body first opens a wait
//! **episode**, an RAII guard over the function's `static` of sites, so it closes on return,
//! on `?` and during a panic. An `async fn` has its body wrapped in a future whose
//! episode spans first poll to completion: the polls are its wall time, the gaps
//! between them its suspended time, the whole span its duration. A plain `fn`
//! returning `impl Future` is a plain function here: its episode is the building of
//! the future, not its polls.
//!
//! ```ignore
//! fn wait_ready(flag: &AtomicBool) {
//!     // One static per fn: its episode, its direct spin sites, then one field per
//!     // wrapped call or sleep request (here the `yield_now`).
//!     static SITES: (EpisodeSite, [CallSite; 1], CallSite) = (
//!         EpisodeSite::new(..),
//!         [CallSite::new(Kind::Spin, file!(), line!(), column!())],
//!         CallSite::new(Kind::Yield, file!(), line!(), column!()),
//!     );
//!     // `let __yieldprof_episode = enter_fn(&SITES.0);`, or, when the body has direct
//!     // spin calls, their counters (one per call site) holding the episode's guard:
//!     let __yieldprof_spins = SpinCounts::new(enter_fn(&SITES.0), &SITES.1);
//!     while !flag.load(Ordering::Acquire) {
//!         { __yieldprof_spins.hit(0); std::hint::spin_loop() }
//!         timed_fn(call_fn(&SITES.2), std::thread::yield_now());
//!     }
//! }
//! ```
//!
//! (paths shortened; the generated code names `::yieldprof::__private::…` and hygienic
//! locals that the body cannot see). The guards open and close through out-of-line
//! calls that cannot unwind (yieldprof's `record/outlined.rs`), so each annotated fn
//! holds a call where the runtime's paths would be inlined and no landing pad of its
//! own: what LLVM optimises per fn in a release build stays small.
//!
//! ## What is rewritten in the body
//!
//! The rules are in `calls.rs`, with the table of the `yieldprof` crate docs. Each
//! matched call is wrapped, not replaced: `timed_fn(call_fn(&SITES.n), <call>)` (paths
//! shortened), a function call rather than a block, so the call's temporaries
//! live as long as they did, its value and spans are kept, and `line!`/`column!` of the
//! site are the call's (a method's: the method name's). The call's own attributes
//! (`#[cfg(..)]`) move to its wrapper, so a call compiled out takes its probe with it.
//!
//! - **Free functions** by path as written (a leading `::` and generic arguments are
//!   ignored), after the `use` declarations of the body in scope are followed: `use a::b
//!   as c;`, `use a::{self as x, y};` and `use a::*;` in the body or one of its blocks.
//!   Bare `sleep`, `park` and `park_timeout` count only when such a `use` brings them
//!   from `std::thread`: too many crates have functions of those names. A `use` at the
//!   module level is invisible to the macro.
//! - **Methods** by name and number of arguments: `lock`/`read`/`write`/
//!   `upgradable_read` with none (lock), `wait` with one and `wait_timeout`/
//!   `wait_while`/`wait_for`/`wait_until` with two, `wait_timeout_while` with three
//!   (condvar), `recv` with none, `recv_timeout`/`recv_deadline`/`send` with one,
//!   `send_timeout` with two (channel), `join` with none (join), `wait` with none
//!   (barrier), `snooze` with none (backoff), and `spin` with none on a local bound by
//!   `let b = Backoff::new()` or `::default()` in the body (backoff). A receiver's name
//!   is never looked at.
//! - **Wake calls** `notify_one`/`notify_all`/`unpark` with none, outside async
//!   code: not waits, wrapped to note where they begin and end (`woke`), so that
//!   their time is not taken for a job run between waits.
//! - **Awaited calls** only build a future: a guard around one would time nothing, and
//!   the wait is the task's. `yield_now().await` (async yield) and awaited
//!   `lock`/`read`/`write`/`acquire` (lock), `notified` (condvar), `recv`/`changed`
//!   with none and `send` with one (channel), `wait` with none (barrier) are counted.
//! - **`select!`** (bare, `crossbeam_channel::`, `crossbeam::`) outside async code is
//!   timed whole as a channel wait; its tokens are not visited.
//!
//! A public wrapper (`yieldprof::wait::spin()`, ...) counts itself and is not matched by
//! path; don't import `yieldprof::wait::yield_now` by its bare name into an annotated
//! function, or its calls count twice.
//!
//! A PAUSE costs about 10 ns, less than a probe's thread-local look-up, so spins
//! written directly in a (non-`async`) body are counted differently: each call adds one
//! to a counter on the episode's stack frame (a register, in a loop), and the counts
//! go to the episode's node once, when it ends (on return, `?` or unwinding; nothing
//! when recording is off). Spins in closures and async blocks, which may run after the
//! episode or on another thread, and every other kind, go through the per-call probe.
//!
//! Closures and async blocks in the body are rewritten too, and one that waits is
//! charged to the site wherever it runs: its body opens the site's frame (counting no
//! episode) unless its thread is already in it. So a `thread::scope` spawn, a rayon
//! `for_each`, an iterator adaptor drained after the function returned, or an async
//! block spawned on an executor shows under the site on the thread that ran it. Not
//! followed: closures written elsewhere and passed in, function pointers, `async`
//! closures (`async |x| ..`), and code in macro invocations.
//!
//! A method of an `#[async_trait]` impl is an async episode like an `async fn`:
//! `async_trait` expands first, into a body that is only `Box::pin(async move { .. })`,
//! and that block becomes the episode, from its first poll to its completion.
//!
//! Left alone:
//! - nested items (`fn`, `impl`, `mod`, `trait`, `const`, `static` inside the body):
//!   they are functions of their own and need their own annotation;
//! - macro invocations other than `select!` (`assert!(..)`, `my_wait!(..)`): their
//!   tokens are not expressions until they expand. `yieldprof::wait!(kind, expr)` marks
//!   a wait there by hand; it expands through `wait_call!`, with the same wrapper.
//!
//! ## Arguments
//!
//! - `name = "frame name"`: the episode's frame name, instead of `module::function`;
//! - `crate = path`: where the runtime is, when `yieldprof` is re-exported or renamed
//!   other than in Cargo.toml (`extern crate yieldprof as yp;` then
//!   `#[yp::instrument_wait(crate = yp)]`);
//! - `budget(key = value, ...)`: limits the site declares (each key at most once, at
//!   least one), checked whenever the report is written (at exit and on `flush()`: the
//!   summary's "Declared budgets" section and stderr say which held and which were
//!   exceeded, with `file:line`) and in tests by `Profile::check_declared()`. The keys
//!   are the names the `Budget` builder and every budget message give the limits:
//!
//! | key | value | `Budget` builder | `yieldprof::budget::Limit` |
//! |---|---|---|---|
//! | `max_episodes` | whole number | `max_episodes(n)` | `Episodes` |
//! | `max_spins`, `max_yields`, `max_sleeps`, `max_parks`, `max_async_yields`, `max_locks`, `max_condvar_waits`, `max_channel_waits`, `max_joins`, `max_barrier_waits`, `max_backoffs` | whole number | `max_calls(Kind::Yield, n)` | `Calls(kind, n)`: in total |
//! | `max_spins_per_episode`, `max_yields_per_episode`, `max_sleeps_per_episode`, `max_parks_per_episode`, `max_async_yields_per_episode`, `max_locks_per_episode`, `max_condvar_waits_per_episode`, `max_channel_waits_per_episode`, `max_joins_per_episode`, `max_barrier_waits_per_episode`, `max_backoffs_per_episode` | number | `max_calls_per_episode(Kind::Yield, x)` | `CallsPerEpisode(kind, x)`: on average |
//! | `max_wall_share` | number from 0 to 1 | `max_wall_share(x)` | `WallShare`: of the wall time of the threads it ran on |
//!
//! The old spellings of the per-episode keys without `max_` (`yields_per_episode`) are
//! still accepted and mean the same limit.
//!
//! ```ignore
//! #[yieldprof::instrument_wait(budget(max_yields_per_episode = 16, max_wall_share = 0.3))]
//! fn take(queue: &Queue) -> Item { /* ... */ }
//! ```
//!
//! `const fn`s, items other than functions, unknown or repeated keys and bad values
//! (negative, not a number, a fraction where a count is expected) are rejected with an
//! error at the offending token.

mod attr;
mod budget;
mod calls;
mod expand;
mod item;
mod parse;
mod rewrite;
mod sites;
mod wait;

use proc_macro::TokenStream;

/// Makes each call of the function a timed wait episode and counts or times the wait
/// calls in its body; see the crate docs for what is rewritten.
///
/// ```ignore
/// #[yieldprof::instrument_wait(name = "wait_ready")]
/// fn wait_ready(flag: &std::sync::atomic::AtomicBool) {
///     while !flag.load(std::sync::atomic::Ordering::Acquire) {
///         std::hint::spin_loop();
///     }
/// }
/// ```
#[proc_macro_attribute]
pub fn instrument_wait(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::instrument_wait(args.into(), item.into()).into()
}

/// The body of `yieldprof::wait!(kind, expr)`, which passes its own path first:
/// `wait_call!($crate; kind, expr)`. Not a public API.
#[doc(hidden)]
#[proc_macro]
pub fn wait_call(input: TokenStream) -> TokenStream {
    wait::wait(input.into()).into()
}
