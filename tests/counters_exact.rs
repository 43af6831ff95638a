//! Switches counted on every episode through the perf user page: ~2000 `usleep(1)`
//! episodes on one thread. The thread's totals agree with the kernel's own count in
//! `/proc/self/task/<tid>/status` within 1 %; the episodes' counts add up exactly to
//! the enclosing episode's and to the thread's voluntary total (every block happens
//! in them); the on-CPU / queued split agrees with the thread's CPU clock and its
//! schedstat run-queue wait.
//!
//! Where perf is unavailable the page is too: the test says so and checks the
//! labelled getrusage fallback instead.
//!
//! A thread reads getrusage on its first 16 waits (`Options::counters_after`) and opens
//! its page after: the warm-up makes those waits, so the naps are all on the page (an
//! episode that spans the opening: `tests/counters_opening_span.rs`).

use yieldprof::counters::{capabilities, Availability, Count, CounterEvent, CounterSource};
use yieldprof::report::{SiteStats, ThreadStats};

mod clocks;
use clocks::cpu_ns;

mod kernel;
use kernel::switches as kernel_switches;

const NAPS: u32 = 2000;

/// More waits than a thread reads on getrusage before its page opens (16 by default).
const WARM_UP: u32 = 20;

/// Timed calls count toward the opening (an empty episode does not: it never
/// materialises); Rust's `sleep(0)` returns without a syscall.
#[yieldprof::instrument_wait]
fn warm_up() {
    for _ in 0..WARM_UP {
        std::thread::sleep(std::time::Duration::ZERO);
    }
}

#[yieldprof::instrument_wait]
fn nap() {
    // SAFETY: usleep has no preconditions.
    unsafe { libc::usleep(1) };
}

#[yieldprof::instrument_wait]
fn naps(n: u32) {
    for _ in 0..n {
        nap();
    }
}

fn run_delay_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

fn exact(c: Count) -> u64 {
    match c {
        Count::Exact(v) => v,
        other => panic!("not counted exactly: {other:?}"),
    }
}

struct Truth {
    tid: i32,
    switches: (u64, u64),
    /// The kernel's counts over the thread's life, after the naps.
    life: (u64, u64),
    cpu_ns: u64,
    run_delay_ns: Option<u64>,
}

#[test]
fn two_thousand_switches_are_counted_exactly_on_every_episode() {
    let perf = capabilities().get(CounterEvent::ContextSwitches);
    // Every block in `naps` is a nap's, the checks below take it: where the kernel saw
    // more voluntary switches than naps (a block elsewhere in the window, seen once in
    // a CI run: 2001), the run is no evidence and is made again, a few times at most.
    let mut attempt = 0;
    let (truth, profile) = loop {
        attempt += 1;
        let before = yieldprof::snapshot();
        let truth = run_naps();
        let profile = yieldprof::snapshot().since(&before);
        if truth.switches.0 <= u64::from(NAPS) || attempt == 3 {
            break (truth, profile);
        }
        println!(
            "attempt {attempt}: {} voluntary switches in {NAPS} naps: run again",
            truth.switches.0
        );
    };
    if truth.switches.0 > u64::from(NAPS) {
        println!("inconclusive: a block outside the naps in 3 attempts");
        return;
    }
    let thread = profile
        .threads()
        .into_iter()
        .find(|t| t.tid == truth.tid)
        .unwrap();
    let outer = profile.site("naps").unwrap();
    let inner = profile.site("nap").unwrap();
    assert_eq!((outer.episodes, inner.episodes), (1, u64::from(NAPS)));
    check(&truth, &thread, &outer, &inner, perf);
}

/// One thread that warms up, then naps, and the kernel's figures around the naps.
fn run_naps() -> Truth {
    std::thread::Builder::new()
        .name("exact".into())
        .spawn(|| {
            warm_up();
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let (k0, c0, q0) = (kernel_switches(tid), cpu_ns(), run_delay_ns());
            naps(NAPS);
            let (k1, c1, q1) = (kernel_switches(tid), cpu_ns(), run_delay_ns());
            Truth {
                tid,
                switches: (k1.0 - k0.0, k1.1 - k0.1),
                life: k1,
                cpu_ns: c1 - c0,
                run_delay_ns: q0.zip(q1).map(|(a, b)| b - a),
            }
        })
        .unwrap()
        .join()
        .unwrap()
}

fn check(
    truth: &Truth,
    thread: &ThreadStats,
    outer: &SiteStats,
    inner: &SiteStats,
    perf: Availability,
) {
    if !perf.is_available() {
        eprintln!("perf unavailable ({perf:?}): the user page is too; checking the fallback");
        assert!(matches!(thread.counter_source, CounterSource::Getrusage(_)));
        assert!(thread.split_method.is_some_and(|m| !m.every_episode));
        return;
    }
    assert_eq!(thread.counter_source, CounterSource::Perf);
    assert!(thread.split_method.is_some_and(|m| m.every_episode));

    // The thread's totals are its whole life's: at least the kernel's after the naps,
    // within 1 % (the thread's exit comes after).
    let (kv, ki) = truth.switches;
    let total =
        exact(thread.counters.voluntary_switches) + exact(thread.counters.involuntary_switches);
    assert!(kv + ki >= 1900, "{kv} + {ki}: the naps did not switch");
    let life = truth.life.0 + truth.life.1;
    assert!(
        total >= life,
        "totals {total} < the kernel's {life} before the exit"
    );
    let off = total.abs_diff(life) as f64 / life as f64;
    assert!(
        off <= 0.01,
        "page {total}, kernel {life} ({:.2}% off)",
        100.0 * off
    );
    assert_eq!(exact(thread.counters.context_switches), total);
    eprintln!(
        "switches: page {total}, kernel {} ({kv} voluntary, {ki} involuntary)",
        kv + ki
    );

    // Every block after the thread first recorded is in a nap: the naps' voluntary
    // switches add up exactly to the enclosing episode's and, with those before the
    // thread's first record, to the thread's.
    let v_inner = exact(inner.counters.voluntary_switches);
    let v_outer = exact(outer.counters.voluntary_switches);
    let v_thread = exact(thread.counters.voluntary_switches);
    let v_before = exact(thread.counters_before_recording.voluntary_switches);
    assert_eq!(v_inner, v_outer);
    assert_eq!(v_outer + v_before, v_thread);
    assert_eq!(exact(thread.counters_in_wait.voluntary_switches), v_thread);
    // Preemptions may land anywhere, but no episode counts more than happened.
    let i_inner = exact(inner.counters.involuntary_switches);
    let i_outer = exact(outer.counters.involuntary_switches);
    assert!(i_inner <= i_outer && i_outer <= exact(thread.counters.involuntary_switches));
    for s in [inner, outer] {
        assert_eq!(
            exact(s.counters.context_switches),
            exact(s.counters.voluntary_switches) + exact(s.counters.involuntary_switches)
        );
        // The default holds one perf event per thread, the switch counter: migrations
        // are counted (exactly) in the exact-everything setting only
        // (`tests/counters_first_episode.rs`).
        assert_eq!(s.counters.cpu_migrations, Count::NotAvailable);
    }

    // The split against the thread's own clocks: on-CPU time within 10 % (plus the
    // µs the kernel reads outside the episode cost), queued time within 10 % + 1 ms.
    let on = outer.time.on_cpu_ns.value().unwrap();
    assert!(
        on.abs_diff(truth.cpu_ns) as f64 <= 0.1 * truth.cpu_ns as f64 + 200_000.0,
        "on-CPU {on} ns, the thread's CPU clock {} ns",
        truth.cpu_ns
    );
    let off_cpu = outer.time.off_cpu_ns.value().unwrap();
    eprintln!(
        "on-CPU {on} ns (CPU clock {} ns), off-CPU {off_cpu} ns, queued {:?} ns (schedstat \
         {:?} ns)",
        truth.cpu_ns,
        outer.time.queued_ns.value(),
        truth.run_delay_ns
    );
    assert_eq!(on + off_cpu, outer.wall_ns);
    if let (Some(q), Some(truth_q)) = (outer.time.queued_ns.value(), truth.run_delay_ns) {
        assert!(
            q.abs_diff(truth_q) as f64 <= 0.1 * truth_q as f64 + 1_000_000.0,
            "queued {q} ns, schedstat {truth_q} ns: {:?}",
            outer.time
        );
        // The naps sleep: each is blocked for at least the 1 µs it asks for. (How it
        // compares with the queued time depends on the machine's load: on a loaded
        // 2-core VM each wake-up can queue longer than the nap slept.)
        let blocked = outer.time.blocked_ns.value().unwrap();
        assert!(
            blocked >= u64::from(NAPS) * 1_000,
            "blocked {blocked} ns < {NAPS} naps of 1 µs: {:?}",
            outer.time
        );
    }
}
