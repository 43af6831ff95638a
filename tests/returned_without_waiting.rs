//! An `#[instrument_wait]` call that makes no wait call is counted, not timed: its site
//! shows it as "returned without waiting", per thread (exited threads included), and it
//! is in no stack. One that waits is timed from its first wait, with every pending
//! episode around it opened in order. Each test uses sites of its own: the tests of
//! this binary run at once and share the process's recording.

use std::sync::mpsc;
use std::time::Duration;
use yieldprof::report::{Metric, SiteStats, ThreadStats};

#[yieldprof::instrument_wait]
fn yields_if(wait: bool) {
    if wait {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
fn spins_if(wait: bool) {
    // A direct spin: counted in the episode's own frame (`SpinCounts`).
    if wait {
        std::hint::spin_loop();
    }
}

fn site(name: &str) -> SiteStats {
    yieldprof::snapshot()
        .site(name)
        .unwrap_or_else(|| panic!("no site {name}"))
}

fn thread(name: &str) -> ThreadStats {
    yieldprof::snapshot()
        .threads()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no thread {name}"))
}

/// Calls `f(i < waits)` `calls` times on a new thread named `name`.
fn on_thread(name: &str, calls: u32, waits: u32, f: fn(bool)) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || (0..calls).for_each(|i| f(i < waits)))
        .unwrap()
}

#[test]
fn counts_are_exact_per_site_and_per_thread_exited_or_live() {
    // Two threads that exit before the report, with 3 of 10 and 6 of 6 waiting.
    on_thread("rww-a", 10, 3, yields_if).join().unwrap();
    on_thread("rww-b", 6, 6, yields_if).join().unwrap();
    // One still running when the report is taken: 1 of 5 waits.
    let (done, ready) = mpsc::channel();
    let (release, hold) = mpsc::channel::<()>();
    let live = std::thread::Builder::new()
        .name("rww-live".to_string())
        .spawn(move || {
            (0..5).for_each(|i| yields_if(i < 1));
            done.send(()).unwrap();
            hold.recv().unwrap();
        })
        .unwrap();
    ready.recv().unwrap();

    let s = site("yields_if");
    assert_eq!(
        (s.episodes, s.returned_without_waiting, s.timed_episodes()),
        (21, 7 + 4, 10)
    );
    assert_eq!(s.durations.count(), 10, "only waited episodes are timed");
    assert_eq!(s.calls_of(yieldprof::Kind::Yield), 10);
    let (a, b, l) = (thread("rww-a"), thread("rww-b"), thread("rww-live"));
    assert_eq!(
        (
            a.returned_without_waiting,
            b.returned_without_waiting,
            l.returned_without_waiting
        ),
        (7, 0, 4)
    );
    assert!(a.exited && b.exited && !l.exited);
    release.send(()).unwrap();
    live.join().unwrap();
    assert_eq!(thread("rww-live").returned_without_waiting, 4);
    assert_eq!(site("yields_if").returned_without_waiting, 11);
}

#[test]
fn a_direct_spin_times_its_episode() {
    on_thread("rww-spin", 8, 5, spins_if).join().unwrap();
    let s = site("spins_if");
    assert_eq!((s.episodes, s.returned_without_waiting), (8, 3));
    assert_eq!(s.durations.count(), 5);
    assert_eq!(s.calls_of(yieldprof::Kind::Spin), 5);
}

#[yieldprof::instrument_wait]
fn inner_waits(wait: bool) {
    if wait {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[yieldprof::instrument_wait]
fn outer_calls_inner(wait: bool) {
    // Time before the first wait is not the episode's.
    std::hint::black_box(0);
    inner_waits(wait);
}

/// Folded lines (calls metric) on thread `name` that mention `frame`.
fn folded_on(name: &str, metric: Metric, frame: &str) -> Vec<String> {
    yieldprof::snapshot()
        .folded(metric)
        .into_iter()
        .filter(|l| l.starts_with(&format!("{name};")) && l.contains(frame))
        .collect()
}

#[test]
fn a_pending_outer_episode_opens_with_its_inner_one_in_order() {
    std::thread::Builder::new()
        .name("rww-nested".to_string())
        .spawn(|| {
            outer_calls_inner(true);
            outer_calls_inner(false);
            outer_calls_inner(false);
        })
        .unwrap()
        .join()
        .unwrap();
    let calls = folded_on("rww-nested", Metric::Calls, "outer_calls_inner");
    let path = "rww-nested;returned_without_waiting::outer_calls_inner;\
                returned_without_waiting::inner_waits;[sleep] 1";
    assert_eq!(calls, [path.to_string()]);
    let (outer, inner) = (site("outer_calls_inner"), site("inner_waits"));
    assert_eq!((outer.episodes, outer.returned_without_waiting), (3, 2));
    assert_eq!((inner.episodes, inner.returned_without_waiting), (3, 2));
    // Both opened at the sleep: the outer one holds the inner one and little more.
    assert!(outer.wall_ns >= inner.wall_ns && inner.wall_ns >= 2_000_000);
    assert_eq!(thread("rww-nested").returned_without_waiting, 4);
}

#[yieldprof::instrument_wait]
fn yields_in_closure(n: usize) {
    (0..n).for_each(|_| std::thread::yield_now());
}

#[yieldprof::instrument_wait]
fn returns_a_waiting_closure() -> impl Fn() {
    || std::thread::yield_now()
}

#[test]
fn closures_charge_their_site_and_open_it_at_their_first_wait() {
    std::thread::Builder::new()
        .name("rww-closure".to_string())
        .spawn(|| {
            yields_in_closure(3);
            yields_in_closure(0);
            let f = returns_a_waiting_closure();
            f();
            f();
        })
        .unwrap()
        .join()
        .unwrap();
    // Run inside the site's own pending episode: that episode, not a nested frame.
    assert_eq!(
        folded_on("rww-closure", Metric::Calls, "yields_in_closure"),
        ["rww-closure;returned_without_waiting::yields_in_closure;[yield] 3"]
    );
    let s = site("yields_in_closure");
    assert_eq!((s.episodes, s.returned_without_waiting), (2, 1));
    // Run after its site returned (without waiting): the site's frame, no episode.
    assert_eq!(
        folded_on("rww-closure", Metric::Calls, "returns_a_waiting_closure"),
        ["rww-closure;returned_without_waiting::returns_a_waiting_closure;[yield] 2"]
    );
    let s = site("returns_a_waiting_closure");
    assert_eq!((s.episodes, s.returned_without_waiting), (1, 1));
}

#[yieldprof::instrument_wait]
fn recurse(depth: u32, wait: bool) {
    if depth > 0 {
        recurse(depth - 1, wait);
    } else if wait {
        std::thread::yield_now();
    }
}

#[test]
fn past_the_pending_stack_episodes_open_at_entry() {
    std::thread::Builder::new()
        .name("rww-deep".to_string())
        .spawn(|| {
            recurse(10, false);
            recurse(99, true);
        })
        .unwrap()
        .join()
        .unwrap();
    let s = site("recurse");
    // 11 untimed; the 100 of the deep call are all timed, in one 100-frame stack.
    assert_eq!((s.episodes, s.returned_without_waiting), (111, 11));
    let lines = folded_on("rww-deep", Metric::Calls, "[yield]");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].matches("::recurse;").count(), 100, "{}", lines[0]);
}

#[yieldprof::instrument_wait]
fn takes_a_free_lock(m: &std::sync::Mutex<u32>) -> u32 {
    *m.lock().unwrap()
}

#[yieldprof::instrument_wait]
fn warms_the_lock_path(m: &std::sync::Mutex<u32>) -> u32 {
    *m.lock().unwrap()
}

#[test]
fn a_free_lock_is_no_wait_and_the_report_says_so() {
    // Whether a lock waited is told by its length (< 1000 ticks: no), so a thread
    // preempted inside one of these locks times it: a bounded number of tries.
    for attempt in 0..5 {
        let before = yieldprof::snapshot().site("takes_a_free_lock");
        let (episodes, rww) = before.map_or((0, 0), |s| (s.episodes, s.returned_without_waiting));
        std::thread::Builder::new()
            .name(format!("rww-lock-{attempt}"))
            .spawn(|| {
                let m = std::sync::Mutex::new(4);
                // The first run of a code path faults its pages in, longer than a lock.
                warms_the_lock_path(&m);
                for _ in 0..3 {
                    takes_a_free_lock(&m);
                }
            })
            .unwrap()
            .join()
            .unwrap();
        let p = yieldprof::snapshot();
        let doc = p.json(&yieldprof::report::Costs::current());
        assert_eq!(doc.inconsistencies(), Vec::<String>::new());
        let site = p.site("takes_a_free_lock").unwrap();
        let (episodes, rww) = (
            site.episodes - episodes,
            site.returned_without_waiting - rww,
        );
        assert_eq!(episodes, 3);
        // Every lock either did not wait, or was timed as a wait.
        assert_eq!(site.calls_of(yieldprof::Kind::Lock), site.timed_episodes());
        if rww < 3 {
            eprintln!("attempt {attempt}: {} of 3 locks timed, retrying", 3 - rww);
            continue;
        }
        // No frame, no `[lock]` call.
        let thread = format!("rww-lock-{attempt}");
        assert!(folded_on(&thread, Metric::Calls, "takes_a_free_lock").is_empty());
        let text = p.summary();
        assert!(
            text.contains(&format!(
                "returned without waiting: {} (not timed); waited: {}",
                site.returned_without_waiting,
                site.timed_episodes()
            )),
            "{text}"
        );
        return;
    }
    eprintln!("inconclusive: every attempt was preempted inside a lock");
}

#[yieldprof::instrument_wait]
fn takes_a_held_lock(m: &std::sync::Mutex<u32>) -> u32 {
    *m.lock().unwrap()
}

#[test]
fn a_lock_that_blocks_times_its_episode_from_the_lock() {
    let m = std::sync::Mutex::new(5);
    let (about_to_lock, told) = mpsc::channel();
    let mut blocked = None;
    for attempt in 1..=5 {
        std::thread::scope(|s| {
            let g = m.lock().unwrap();
            let waiter = std::thread::Builder::new()
                .name(format!("rww-held-{attempt}"))
                .spawn_scoped(s, || {
                    about_to_lock.send(()).unwrap();
                    let t = std::time::Instant::now();
                    takes_a_held_lock(&m);
                    t.elapsed()
                })
                .unwrap();
            told.recv().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            drop(g);
            let took = waiter.join().unwrap();
            // It surely blocked if the call outlasted most of the hold.
            if took >= Duration::from_millis(5) && blocked.is_none() {
                blocked = Some(attempt);
            }
        });
        if blocked.is_some() {
            break;
        }
    }
    let Some(attempts) = blocked else {
        eprintln!("inconclusive: the waiter never reached the lock while it was held");
        return;
    };
    let s = site("takes_a_held_lock");
    assert_eq!(s.episodes, attempts);
    assert!(s.timed_episodes() >= 1);
    assert_eq!(s.calls_of(yieldprof::Kind::Lock), s.timed_episodes());
    // Timed from the lock's start, not from when it was known to have blocked: the
    // episode holds the whole lock.
    let lock_ns = s.ns_of(yieldprof::Kind::Lock);
    assert!(lock_ns >= 5_000_000, "{lock_ns}");
    assert!(s.wall_ns >= lock_ns, "{} < {lock_ns}", s.wall_ns);
}

#[yieldprof::instrument_wait]
fn never_waits_here(wait: bool) {
    if wait {
        std::thread::yield_now();
    }
}

#[test]
fn a_site_none_of_whose_episodes_waited_says_so_not_counters_off() {
    on_thread("rww-never", 40, 0, never_waits_here)
        .join()
        .unwrap();
    let p = yieldprof::snapshot();
    let site = p.site("never_waits_here").unwrap();
    assert_eq!((site.episodes, site.returned_without_waiting), (40, 40));
    let text = p.summary();
    let block: String = text
        .lines()
        .skip_while(|l| !l.contains("never_waits_here"))
        .take_while(|l| !l.trim().is_empty())
        .take(8)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(block.contains("time: none (no episode waited)"), "{block}");
    assert!(!block.contains("counters off"), "{block}");
}

/// 40 sites that never wait, one more (`rww_outer`) around each call: more sites than the
/// thread's 32-entry cache of unwaited counts, so some share an entry and evict each other
/// on every call.
macro_rules! unwaited_sites {
    ($($f:ident),*) => {
        $(
            #[yieldprof::instrument_wait]
            #[inline(never)]
            fn $f(x: u64) -> u64 {
                x.wrapping_mul(3) + 1
            }
        )*
        const UNWAITED_SITES: &[(&str, fn(u64) -> u64)] = &[$((stringify!($f), $f)),*];
    };
}
unwaited_sites!(
    rww_s00, rww_s01, rww_s02, rww_s03, rww_s04, rww_s05, rww_s06, rww_s07, rww_s08, rww_s09,
    rww_s10, rww_s11, rww_s12, rww_s13, rww_s14, rww_s15, rww_s16, rww_s17, rww_s18, rww_s19,
    rww_s20, rww_s21, rww_s22, rww_s23, rww_s24, rww_s25, rww_s26, rww_s27, rww_s28, rww_s29,
    rww_s30, rww_s31, rww_s32, rww_s33, rww_s34, rww_s35, rww_s36, rww_s37, rww_s38, rww_s39
);

#[yieldprof::instrument_wait]
#[inline(never)]
fn rww_outer(f: fn(u64) -> u64, x: u64) -> u64 {
    f(x)
}

#[test]
fn every_unwaited_episode_is_counted_past_the_cache_on_two_threads() {
    const ROUNDS: u64 = 1_000;
    // Site i is called i + 1 times a round, interleaved, so each count is its own.
    let run = || {
        let mut sum = 0u64;
        for r in 0..ROUNDS {
            for (i, &(_, f)) in UNWAITED_SITES.iter().enumerate() {
                for k in 0..=i as u64 {
                    sum = sum.wrapping_add(if k == 0 { rww_outer(f, r) } else { f(r) });
                }
            }
        }
        std::hint::black_box(sum);
    };
    let threads: Vec<_> = ["rww-cache-a", "rww-cache-b"]
        .into_iter()
        .map(|name| {
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(run)
                .unwrap()
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let p = yieldprof::snapshot();
    for (i, &(name, _)) in UNWAITED_SITES.iter().enumerate() {
        let s = p.site(name).unwrap_or_else(|| panic!("no site {name}"));
        let calls = 2 * ROUNDS * (i as u64 + 1);
        assert_eq!(
            (s.episodes, s.returned_without_waiting),
            (calls, calls),
            "{name}"
        );
    }
    let outer = p.site("rww_outer").unwrap();
    let rounds = 2 * ROUNDS * UNWAITED_SITES.len() as u64;
    assert_eq!(
        (outer.episodes, outer.returned_without_waiting),
        (rounds, rounds)
    );
    let n = UNWAITED_SITES.len() as u64;
    let per_thread = ROUNDS * (n * (n + 1) / 2 + n);
    for name in ["rww-cache-a", "rww-cache-b"] {
        assert_eq!(thread(name).returned_without_waiting, per_thread, "{name}");
    }
}

#[yieldprof::instrument_wait]
fn early_if(wait: bool) {
    if wait {
        std::thread::yield_now();
    }
}

/// Calls `early_if(false)` `n` times on a thread named `name`, then `then` there.
fn early_thread(name: &str, n: u32, then: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            (0..n).for_each(|_| early_if(false));
            then();
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_thread_is_set_up_at_its_first_wait_not_at_an_episode_that_returned_without() {
    // A live thread whose episodes never waited is not set up (5-15 µs that an
    // annotated lock's first free acquire paid inside the lock): not in a report
    // yet; at its exit its counts are kept.
    let (done, ready) = mpsc::channel();
    let (release, hold) = mpsc::channel::<()>();
    let t = std::thread::Builder::new()
        .name("rww-early".to_string())
        .spawn(move || {
            (0..5).for_each(|_| early_if(false));
            done.send(()).unwrap();
            hold.recv().unwrap();
        })
        .unwrap();
    ready.recv().unwrap();
    let threads = yieldprof::snapshot().threads();
    assert!(threads.iter().all(|t| t.name != "rww-early"), "set up");
    let exiting = std::time::Instant::now();
    release.send(()).unwrap();
    t.join().unwrap();
    let exiting = exiting.elapsed().as_nanos() as u64;
    let exited = thread("rww-early");
    assert!(exited.exited);
    assert_eq!(exited.returned_without_waiting, 5);
    // Kept at its exit, not set up there: no time of the profiler's, and a life no
    // longer than its exit.
    assert_eq!(exited.profiler_ns, 0);
    assert!(
        exited.wall_ns <= exiting,
        "{} of {exiting} ns",
        exited.wall_ns
    );
    // Its first wait sets it up, the counts before it kept.
    early_thread("rww-early-wait", 4, || early_if(true));
    assert_eq!(thread("rww-early-wait").returned_without_waiting, 4);
    // A report made on it sets it up too.
    early_thread("rww-early-report", 3, || {
        let me = yieldprof::snapshot().threads();
        let me = me.iter().find(|t| t.name == "rww-early-report").unwrap();
        assert_eq!(me.returned_without_waiting, 3);
    });
    let s = site("early_if");
    assert_eq!((s.episodes, s.returned_without_waiting), (13, 12));
}

/// Makes an annotated call from its destructor, as a thread-local cache that flushes
/// into an annotated lock at the thread's exit would.
struct CallsAtExit;

impl Drop for CallsAtExit {
    fn drop(&mut self) {
        late_if(true);
    }
}

/// `early_if`'s twin, for the test below: `early_if`'s test counts every call of it.
#[yieldprof::instrument_wait]
fn late_if(wait: bool) {
    if wait {
        std::thread::yield_now();
    }
}

thread_local! {
    static CALLS_AT_EXIT: CallsAtExit = const { CallsAtExit };
}

#[test]
fn a_thread_kept_at_its_exit_is_one_thread_to_a_later_destructors_entry() {
    // Its destructor runs after the one that keeps the early counts (destructors run
    // last registered first): the entry comes after the thread's exit, as any thread's,
    // not a second thread of the same name.
    let late_thread = |name: &str, first: bool| {
        let name = name.to_string();
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                if first {
                    CALLS_AT_EXIT.with(|_| ());
                }
                (0..2).for_each(|_| late_if(false));
                CALLS_AT_EXIT.with(|_| ());
            })
            .unwrap()
            .join()
            .unwrap();
    };
    late_thread("rww-late-entry", false);
    late_thread("rww-late-entry-first", true);
    let threads = yieldprof::snapshot().threads();
    // A destructor that runs first waits before the exit: the thread sets up there.
    // After it, the episode and its `yield_now` are two entries after the exit.
    for (name, after_exit) in [("rww-late-entry", 0), ("rww-late-entry-first", 2)] {
        let same: Vec<_> = threads.iter().filter(|t| t.name == name).collect();
        assert_eq!(same.len(), 1, "{name}: {same:#?}");
        assert_eq!(same[0].returned_without_waiting, 2, "{name}");
        assert_eq!(same[0].entries_after_exit, after_exit, "{name}");
    }
}
