//! What `#[instrument_wait]` records, checked through `yieldprof::snapshot()`.
//! Every test annotates functions of its own, so tests running in parallel on the
//! shared profile don't see each other's sites.

use std::future::Future;
use std::hint;
use std::panic;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;
use yieldprof::report::{CallStats, SiteStats};
use yieldprof::Kind;

fn site(name: &str) -> SiteStats {
    yieldprof::snapshot()
        .site(name)
        .unwrap_or_else(|| panic!("no wait site named {name}"))
}

/// `(kind, line, column, calls)` of each call site, in line order.
fn calls(site: &SiteStats) -> Vec<(Kind, u32, u32, u64)> {
    site.calls
        .iter()
        .map(|c: &CallStats| (c.site.kind, c.site.line, c.site.column, c.calls))
        .collect()
}

/// Line and column of `call` on the source line that ends in `// @tag`.
fn at(tag: &str, call: &str) -> (u32, u32) {
    let marker = format!("// @{tag}");
    let (i, text) = include_str!("macro_rewrite.rs")
        .lines()
        .enumerate()
        .find(|(_, l)| l.ends_with(&marker))
        .unwrap_or_else(|| panic!("no line tagged {tag}"));
    let column = text.find(call).expect("the call is on its tagged line") + 1;
    (i as u32 + 1, column as u32)
}

#[yieldprof::instrument_wait]
fn every_kind(n: u32) -> i32 {
    let mut rc = 0;
    for _ in 0..n {
        std::hint::spin_loop(); // @spin-std
        core::hint::spin_loop(); // @spin-core
        hint::spin_loop(); // @spin-hint
        #[allow(deprecated)]
        core::sync::atomic::spin_loop_hint(); // @spin-hint-deprecated
        thread::yield_now(); // @yield-thread
        rc += unsafe { libc::sched_yield() }; // @yield-libc
    }
    std::thread::sleep(Duration::ZERO); // @sleep-std
    rc += unsafe { libc::usleep(1) }; // @sleep-usleep
    thread::current().unpark();
    thread::park(); // @park
    thread::park_timeout(Duration::ZERO); // @park-timeout
    rc
}

#[test]
fn each_kind_is_counted_at_its_call_site() {
    assert_eq!(every_kind(10), 0);
    let s = site("macro_rewrite::every_kind");
    assert_eq!(s.episodes, 1);
    let expect = [
        ("spin-std", "std::hint::spin_loop", Kind::Spin, 10),
        ("spin-core", "core::hint::spin_loop", Kind::Spin, 10),
        ("spin-hint", "hint::spin_loop", Kind::Spin, 10),
        (
            "spin-hint-deprecated",
            "core::sync::atomic::spin_loop_hint",
            Kind::Spin,
            10,
        ),
        ("yield-thread", "thread::yield_now", Kind::Yield, 10),
        ("yield-libc", "libc::sched_yield", Kind::Yield, 10),
        ("sleep-std", "std::thread::sleep", Kind::Sleep, 1),
        ("sleep-usleep", "libc::usleep", Kind::Sleep, 1),
        ("park", "thread::park", Kind::Park, 1),
        ("park-timeout", "thread::park_timeout", Kind::Park, 1),
    ]
    .map(|(tag, call, kind, n)| {
        let (line, column) = at(tag, call);
        (kind, line, column, n)
    });
    assert_eq!(calls(&s), expect);
    assert_eq!(s.calls_of(Kind::Spin), 40);
    assert_eq!(s.ns_of(Kind::Spin), 0);
}

#[yieldprof::instrument_wait]
fn values_are_kept() -> (i32, &'static str, i32) {
    let slept = unsafe { libc::usleep(0) };
    // A rewritten call as an operand and in a condition.
    let sum = unsafe { libc::sched_yield() } + 7;
    let yielded = if unsafe { libc::sched_yield() } == 0 {
        "yielded"
    } else {
        "failed"
    };
    let unit: () = thread::park_timeout(Duration::ZERO);
    let () = unit;
    (slept, yielded, sum)
}

#[test]
fn a_wrapped_call_keeps_its_value() {
    assert_eq!(values_are_kept(), (0, "yielded", 7));
    let s = site("macro_rewrite::values_are_kept");
    assert_eq!(s.calls_of(Kind::Sleep), 1);
    assert_eq!(s.calls_of(Kind::Yield), 2);
    assert_eq!(s.calls_of(Kind::Park), 1);
}

#[yieldprof::instrument_wait]
fn returns_early(n: u32) -> Result<u32, String> {
    if n == 0 {
        return Ok(0);
    }
    let parsed: u32 = if n == 1 {
        "x".parse().map_err(|_| "not a number".to_string())?
    } else {
        n
    };
    hint::spin_loop();
    Ok(parsed)
}

#[yieldprof::instrument_wait]
fn calls_early_returns() {
    assert_eq!(returns_early(0), Ok(0));
    assert!(returns_early(1).is_err());
    assert_eq!(returns_early(2), Ok(2));
    // Counted here only if each inner episode closed on its way out.
    hint::spin_loop();
    hint::spin_loop();
}

#[test]
fn return_and_question_mark_close_the_episode() {
    calls_early_returns();
    let inner = site("macro_rewrite::returns_early");
    assert_eq!(inner.episodes, 3);
    assert_eq!(inner.calls_of(Kind::Spin), 1);
    let outer = site("macro_rewrite::calls_early_returns");
    assert_eq!(outer.episodes, 1);
    assert_eq!(outer.calls_of(Kind::Spin), 2);
}

#[yieldprof::instrument_wait]
fn panics_after_a_spin() {
    hint::spin_loop();
    panic!("inside an episode");
}

#[yieldprof::instrument_wait]
fn catches_the_panic() {
    let caught = panic::catch_unwind(panics_after_a_spin);
    assert!(caught.is_err());
    hint::spin_loop();
}

#[test]
fn a_panic_closes_the_episode() {
    catches_the_panic();
    let inner = site("macro_rewrite::panics_after_a_spin");
    assert_eq!(inner.episodes, 1);
    assert_eq!(inner.calls_of(Kind::Spin), 1);
    assert_eq!(
        site("macro_rewrite::catches_the_panic").calls_of(Kind::Spin),
        1
    );
}

macro_rules! spin_in_macro {
    () => {
        std::hint::spin_loop()
    };
}

#[yieldprof::instrument_wait]
fn closures_items_and_macros() {
    let spin = || std::hint::spin_loop(); // @closure
    spin();
    spin();
    block_on(async { thread::yield_now() }); // @async-block
    fn nested() {
        std::hint::spin_loop();
    }
    nested();
    spin_in_macro!();
}

#[test]
fn closures_are_rewritten_nested_items_and_macros_are_not() {
    closures_items_and_macros();
    let s = site("macro_rewrite::closures_items_and_macros");
    let (closure, closure_col) = at("closure", "std::hint::spin_loop");
    let (block, block_col) = at("async-block", "thread::yield_now");
    assert_eq!(
        calls(&s),
        [
            (Kind::Spin, closure, closure_col, 2),
            (Kind::Yield, block, block_col, 1)
        ]
    );
}

#[yieldprof::instrument_wait(name = "custom wait")]
fn named() {
    hint::spin_loop();
}

#[test]
fn name_argument_names_the_frame() {
    named();
    let s = site("custom wait");
    assert_eq!((s.episodes, s.calls_of(Kind::Spin)), (1, 1));
    // The function's path still finds it.
    assert_eq!(s.path, "macro_rewrite::named");
    assert_eq!(site("macro_rewrite::named").name, "custom wait");
}

/// Pending once, then ready: a stand-in for an executor's yield.
pub(crate) struct YieldOnce(pub(crate) bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

mod task {
    pub fn yield_now() -> super::YieldOnce {
        super::YieldOnce(false)
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

#[yieldprof::instrument_wait]
async fn awaits_yields(n: u32) -> Result<u32, std::num::ParseIntError> {
    for _ in 0..n {
        task::yield_now().await; // @async-yield
    }
    if n == 0 {
        return Ok(0);
    }
    let parsed: u32 = "5".parse()?;
    hint::spin_loop();
    Ok(parsed + n)
}

#[test]
fn async_fn_counts_awaited_yields_once_per_episode() {
    assert_eq!(block_on(awaits_yields(3)), Ok(8));
    assert_eq!(block_on(awaits_yields(0)), Ok(0));
    let s = site("macro_rewrite::awaits_yields");
    assert_eq!(s.episodes, 2);
    let (line, column) = at("async-yield", "task::yield_now");
    assert_eq!(
        calls(&s)[0],
        (Kind::AsyncYield, line, column, 3),
        "{:?}",
        s.calls
    );
    assert_eq!(s.calls_of(Kind::Spin), 1);
    assert_eq!(s.ns_of(Kind::AsyncYield), 0);
}

#[yieldprof::instrument_wait]
async fn stores_futures(n: u32) {
    // Built here, awaited later: one async yield each, no thread yield.
    let first = task::yield_now(); // @stored-yield
    let m = std::sync::Mutex::new(0);
    let g = m.lock(); // @blocking-lock
    drop(g);
    for _ in 0..n {
        hint::spin_loop(); // @stored-spin
    }
    first.await; // @stored-await
}

#[test]
fn a_stored_future_counts_where_it_is_awaited_and_a_bound_lock_still_blocks() {
    block_on(stores_futures(2));
    block_on(stores_futures(0));
    let s = site("macro_rewrite::stores_futures");
    let (await_line, await_col) = at("stored-await", "first");
    let (lock_line, lock_col) = at("blocking-lock", "lock");
    let (spin_line, spin_col) = at("stored-spin", "hint::spin_loop");
    assert_eq!(
        calls(&s),
        [
            (Kind::Lock, lock_line, lock_col, 2),
            (Kind::Spin, spin_line, spin_col, 2),
            (Kind::AsyncYield, await_line, await_col, 2),
        ],
        "{:?}",
        s.calls
    );
    assert_eq!(s.calls_of(Kind::Yield), 0, "{:?}", s.calls);
    // The lock blocks its thread from async code; the awaited yield does not.
    let lock = s.calls.iter().find(|c| c.site.kind == Kind::Lock).unwrap();
    assert!(lock.site.in_async);
    let awaited = s
        .calls
        .iter()
        .find(|c| c.site.kind == Kind::AsyncYield)
        .unwrap();
    assert!(!awaited.site.in_async);
}

#[yieldprof::instrument_wait]
async fn sleeps_in_async() {
    thread::sleep(Duration::from_millis(2)); // @async-sleep
}

#[yieldprof::instrument_wait]
fn sleeps_in_sync() {
    thread::sleep(Duration::from_millis(2));
}

#[test]
fn a_blocking_call_in_async_code_is_a_finding_and_in_sync_code_is_not() {
    block_on(sleeps_in_async());
    sleeps_in_sync();
    let profile = yieldprof::snapshot();
    let findings = profile.findings(&yieldprof::report::Costs::current());
    let blocking: Vec<_> = findings
        .iter()
        .filter(|f| f.rule.name() == "blocking-call-in-async")
        .collect();
    let (line, _) = at("async-sleep", "thread::sleep");
    assert_eq!(blocking.len(), 1, "{findings:#?}");
    assert_eq!(blocking[0].subject, "macro_rewrite::sleeps_in_async");
    assert_eq!(
        blocking[0].location.as_deref(),
        Some(format!("tests/macro_rewrite.rs:{line}").as_str())
    );
    assert!(blocking[0]
        .evidence
        .starts_with("1 sleep call made from async code"));
    assert!(
        blocking[0].fix.contains("tokio::time::sleep"),
        "{}",
        blocking[0].fix
    );
}

#[yieldprof::instrument_wait]
fn spins_around_inner(n: u32) {
    hint::spin_loop();
    spins_inner(n);
    for _ in 0..n {
        hint::spin_loop();
    }
    // Closures and async blocks keep the per-call probe: they may run after the
    // episode, or on another thread.
    let spin = || hint::spin_loop();
    spin();
    block_on(async { hint::spin_loop() });
}

#[yieldprof::instrument_wait]
fn spins_inner(n: u32) {
    for _ in 0..2 * n {
        hint::spin_loop();
    }
}

/// The `[spin]` count of the folded stack `<this thread>;<frames>;[spin]`.
fn spins_under(frames: &str) -> u64 {
    let stack = format!("{};{frames};[spin] ", thread::current().name().unwrap());
    yieldprof::snapshot()
        .folded(yieldprof::report::Metric::Calls)
        .iter()
        .find_map(|l| l.strip_prefix(&stack).map(|n| n.parse().unwrap()))
        .unwrap_or(0)
}

#[test]
fn direct_spins_count_in_their_own_episode_when_nested() {
    spins_around_inner(3);
    let outer = "macro_rewrite::spins_around_inner";
    let inner = "macro_rewrite::spins_inner";
    assert_eq!(spins_under(&format!("{outer};{inner}")), 6);
    assert_eq!(spins_under(outer), 1 + 3 + 1 + 1);
    let s = site(outer);
    assert_eq!(s.episodes, 1);
    // One call site each: before, loop, closure, async block.
    assert_eq!(
        calls(&s).iter().map(|c| c.3).collect::<Vec<_>>(),
        [1, 3, 1, 1]
    );
}

#[yieldprof::instrument_wait]
fn recurse_spinning(depth: u32) -> u32 {
    hint::spin_loop();
    if depth == 0 {
        return 0;
    }
    let below = recurse_spinning(depth - 1);
    hint::spin_loop();
    hint::spin_loop();
    below + 1
}

#[test]
fn each_recursion_level_counts_its_own_spins() {
    assert_eq!(recurse_spinning(2), 2);
    let f = "macro_rewrite::recurse_spinning";
    assert_eq!(spins_under(f), 3);
    assert_eq!(spins_under(&format!("{f};{f}")), 3);
    assert_eq!(spins_under(&format!("{f};{f};{f}")), 1);
    let s = site(f);
    assert_eq!((s.episodes, s.calls_of(Kind::Spin)), (3, 7));
}

#[yieldprof::instrument_wait]
fn spins_then_fails(text: &str) -> Result<u32, std::num::ParseIntError> {
    hint::spin_loop();
    hint::spin_loop();
    let n = text.parse::<u32>()?;
    hint::spin_loop();
    Ok(n)
}

#[test]
fn spins_before_a_question_mark_are_counted() {
    assert!(spins_then_fails("x").is_err());
    assert_eq!(spins_then_fails("5"), Ok(5));
    let s = site("macro_rewrite::spins_then_fails");
    assert_eq!((s.episodes, s.calls_of(Kind::Spin)), (2, 5));
}

#[yieldprof::instrument_wait]
fn spins_then_panics(n: u32) {
    for _ in 0..n {
        hint::spin_loop();
    }
    panic!("after {n} spins");
}

#[test]
fn spins_before_a_panic_are_counted_while_unwinding() {
    assert!(panic::catch_unwind(|| spins_then_panics(4)).is_err());
    let s = site("macro_rewrite::spins_then_panics");
    assert_eq!((s.episodes, s.calls_of(Kind::Spin)), (1, 4));
}

mod blocking {
    //! Blocking calls, each timed as its own kind at its own line and column, and
    //! their look-alikes left alone.

    use super::{at, block_on, calls, site, YieldOnce};
    use std::io::Read;
    use std::sync::{mpsc, Barrier, Condvar, Mutex, RwLock};
    use std::thread;
    use std::time::Duration;
    use yieldprof::Kind;

    #[yieldprof::instrument_wait]
    fn every_blocking_form() -> u32 {
        let m = Mutex::new(1);
        let l = RwLock::new(2);
        let cv = Condvar::new();
        let mut sum = *m.lock().unwrap(); // @lock
        sum += *l.read().unwrap(); // @read
        *l.write().unwrap() += 1; // @write
        let g = m.lock().unwrap(); // @lock-for-wait
        let (g, _) = cv.wait_timeout(g, Duration::ZERO).unwrap(); // @wait-timeout
        let g = cv.wait_while(g, |_| false).unwrap(); // @wait-while
        drop(g);
        let (tx, rx) = mpsc::sync_channel(1);
        tx.send(3).unwrap(); // @send
        sum += rx.recv().unwrap(); // @recv
        sum += rx.recv_timeout(Duration::ZERO).unwrap_or(0); // @recv-timeout
        sum += thread::spawn(|| 4).join().unwrap(); // @join
        thread::scope(|s| s.spawn(|| ()).join().unwrap()); // @scoped-join
        Barrier::new(1).wait(); // @barrier
        sum
    }

    #[test]
    fn each_blocking_form_is_timed_as_its_kind_at_its_call() {
        assert_eq!(every_blocking_form(), 1 + 2 + 3 + 4);
        let s = site("every_blocking_form");
        let expect = [
            ("lock", "lock()", Kind::Lock),
            ("read", "read()", Kind::Lock),
            ("write", "write()", Kind::Lock),
            ("lock-for-wait", "lock()", Kind::Lock),
            ("wait-timeout", "wait_timeout(", Kind::Condvar),
            ("wait-while", "wait_while(", Kind::Condvar),
            ("send", "send(", Kind::Channel),
            ("recv", "recv()", Kind::Channel),
            ("recv-timeout", "recv_timeout(", Kind::Channel),
            ("join", "join()", Kind::Join),
            ("scoped-join", "join()", Kind::Join),
            ("barrier", "wait()", Kind::Barrier),
        ]
        .map(|(tag, call, kind)| {
            let (line, column) = at(tag, call);
            (kind, line, column, 1)
        });
        assert_eq!(calls(&s), expect);
        // Each call's time is its own: the lock taken in a condvar's argument is not
        // counted in the wait too (nothing nests here, so all of it adds up).
        let timed: u64 = s.calls.iter().map(|c| c.ns).sum();
        assert!(timed <= s.self_ns, "{timed} > {}", s.self_ns);
    }

    #[yieldprof::instrument_wait]
    fn registers() {}

    #[yieldprof::instrument_wait]
    fn condvar_with_the_lock_in_its_argument(pair: &(Mutex<bool>, Condvar)) {
        let g = pair
            .1
            .wait_while(pair.0.lock().unwrap(), |ready| !*ready) // @nested
            .unwrap();
        drop(g);
    }

    #[test]
    fn a_call_nested_in_another_counts_its_time_once() {
        // The lock in the argument waits ~20 ms for its holder, who sets the flag
        // first: the wait itself returns at once. Counted in both, the wait would
        // hold the lock's 20 ms too, and the calls would outgrow the episode.
        let pair = (Mutex::new(false), Condvar::new());
        let held = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let mut ready = pair.0.lock().unwrap();
                held.wait();
                thread::sleep(Duration::from_millis(20));
                *ready = true;
            });
            // Registered before the holder's clock starts.
            registers();
            held.wait();
            condvar_with_the_lock_in_its_argument(&pair);
        });
        let s = site("condvar_with_the_lock_in_its_argument");
        let (line, _) = at("nested", "wait_while");
        assert_eq!(
            calls(&s).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
            [(Kind::Condvar, line), (Kind::Lock, line)]
        );
        let (lock, wait) = (s.ns_of(Kind::Lock), s.ns_of(Kind::Condvar));
        assert!(lock >= 15_000_000, "{lock}");
        assert!(
            wait < lock / 2,
            "the wait holds the lock's time: {wait} of {lock}"
        );
        assert!(lock + wait <= s.self_ns, "{lock} + {wait} > {}", s.self_ns);
    }

    /// The user's own types, with the names of waiting methods but other shapes.
    struct Words(Vec<&'static str>);

    impl Words {
        fn lock(&self, n: usize) -> &str {
            self.0[n]
        }
        fn send(&self) -> usize {
            self.0.len()
        }
        fn spin(&self) -> usize {
            self.0.len()
        }
    }

    fn lock(n: u32) -> u32 {
        n + 1
    }

    fn sleep(n: u32) -> u32 {
        n * 2
    }

    #[yieldprof::instrument_wait]
    fn look_alikes() -> String {
        let mut buf = [0u8; 4];
        let n = std::io::Cursor::new(b"abcd").read(&mut buf).unwrap(); // io::Read::read
        let joined = ["a", "b"].join(","); // slice::join
        let words = Words(vec!["x", "y"]);
        let picked = words.lock(1); // a method `lock` with an argument
        let counted = words.send() + words.spin(); // `send()` without one; not a Backoff
        let own = lock(1) + sleep(2); // the user's own `lock` and bare `sleep`
        format!("{n}{joined}{picked}{counted}{own}")
    }

    #[test]
    fn look_alikes_are_left_alone() {
        assert_eq!(look_alikes(), "4a,by46");
        assert_eq!(calls(&site("look_alikes")), []);
    }

    mod backoff {
        /// Stands for `crossbeam_utils::Backoff`: matched by its constructor's path.
        pub struct Backoff(std::cell::Cell<u32>);
        impl Backoff {
            pub fn new() -> Self {
                Backoff(std::cell::Cell::new(0))
            }
            pub fn spin(&self) {
                self.0.set(self.0.get() + 1);
            }
            pub fn snooze(&self) {
                self.0.set(self.0.get() + 10);
                std::thread::yield_now();
            }
            pub fn steps(&self) -> u32 {
                self.0.get()
            }
        }
    }

    #[yieldprof::instrument_wait]
    fn backs_off() -> u32 {
        let backoff = backoff::Backoff::new();
        backoff.spin(); // @backoff-spin
        backoff.snooze(); // @backoff-snooze
        backoff.steps()
    }

    #[test]
    fn a_backoffs_spin_and_snooze_are_timed_as_backoff() {
        assert_eq!(backs_off(), 11);
        let s = site("backs_off");
        let (spin, spin_col) = at("backoff-spin", "spin()");
        let (snooze, snooze_col) = at("backoff-snooze", "snooze()");
        assert_eq!(
            calls(&s),
            [
                (Kind::Backoff, spin, spin_col, 1),
                (Kind::Backoff, snooze, snooze_col, 1)
            ]
        );
    }

    #[yieldprof::instrument_wait]
    fn follows_uses() -> u32 {
        use std::thread::park_timeout as nap;
        use std::thread::{self as t, sleep};
        sleep(Duration::ZERO); // @bare-sleep
        nap(Duration::ZERO); // @alias
        t::yield_now(); // @module-alias
        {
            use self::lock as sleep;
            sleep(1) // a `use` in an inner block shadows the outer one there
        }
    }

    #[test]
    fn use_declarations_in_the_body_are_followed() {
        assert_eq!(follows_uses(), 2);
        let s = site("follows_uses");
        let expect = [
            ("bare-sleep", "sleep", Kind::Sleep),
            ("alias", "nap", Kind::Park),
            ("module-alias", "t::yield_now", Kind::Yield),
        ]
        .map(|(tag, call, kind)| {
            let (line, column) = at(tag, call);
            (kind, line, column, 1)
        });
        assert_eq!(calls(&s), expect);
    }

    fn via_pointer(f: fn(&Mutex<u32>) -> u32, m: &Mutex<u32>) -> u32 {
        f(m)
    }

    fn take(m: &Mutex<u32>) -> u32 {
        *m.lock().unwrap()
    }

    #[yieldprof::instrument_wait]
    fn marked_by_hand(m: &Mutex<u32>) -> u32 {
        yieldprof::wait!(lock, via_pointer(take, m)) // @wait-macro
    }

    #[test]
    fn wait_marks_what_the_syntax_cannot_show() {
        assert_eq!(marked_by_hand(&Mutex::new(9)), 9);
        let s = site("marked_by_hand");
        let (line, column) = at("wait-macro", "via_pointer");
        assert_eq!(calls(&s), [(Kind::Lock, line, column, 1)]);
        // Outside an annotated function it counts in the current frame.
        let before = yieldprof::snapshot();
        let v = yieldprof::wait!(channel, 5);
        assert_eq!(v, 5);
        let delta = yieldprof::snapshot().since(&before);
        assert!(delta
            .folded(yieldprof::report::Metric::Calls)
            .iter()
            .any(|l| l.ends_with(";[channel] 1")));
    }

    /// Stands for tokio's `Mutex`, `Notify` and `mpsc::Receiver`: awaited forms.
    struct AsyncLock;
    impl AsyncLock {
        fn lock(&self) -> YieldOnce {
            YieldOnce(false)
        }
        fn notified(&self) -> YieldOnce {
            YieldOnce(false)
        }
        fn recv(&self) -> YieldOnce {
            YieldOnce(false)
        }
    }

    #[yieldprof::instrument_wait]
    async fn awaits_blocking_forms(x: &AsyncLock) {
        x.lock().await; // @await-lock
        x.notified().await; // @await-notified
        x.recv().await; // @await-recv
    }

    #[test]
    fn awaited_forms_are_counted_not_timed() {
        block_on(awaits_blocking_forms(&AsyncLock));
        let s = site("awaits_blocking_forms");
        let expect = [
            ("await-lock", "lock()", Kind::Lock),
            ("await-notified", "notified()", Kind::Condvar),
            ("await-recv", "recv()", Kind::Channel),
        ]
        .map(|(tag, call, kind)| {
            let (line, column) = at(tag, call);
            (kind, line, column, 1)
        });
        assert_eq!(calls(&s), expect);
        assert!(s.calls.iter().all(|c| c.ns == 0));
    }
}
