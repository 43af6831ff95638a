//! Work done inside a wait with no frame around it (`record/gaps.rs`): stretches of
//! 10 µs or more between a wait's calls are its `[unmarked work]`, the loop's short
//! checks and spinning are not. Truth: the work the test does between the waits, on
//! its own CPU clock, and counts it arranges. (Own binary: one session per test, one
//! test thread at a time through `ONE`.)

mod clocks;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use yieldprof::report::OwnTime;

static ONE: Mutex<()> = Mutex::new(());

/// Spins on the CPU for `d` of wall time; its (CPU, wall) time, ns.
fn busy(d: Duration) -> (u64, u64) {
    let c = clocks::cpu_ns();
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::black_box(0u64);
    }
    (clocks::cpu_ns() - c, t.elapsed().as_nanos() as u64)
}

/// This thread's time runnable but waiting for a CPU so far, ns (schedstat).
fn queued_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `rounds` yields with `work` of business between each two, all in one wait episode;
/// the business's (CPU, wall) time.
#[yieldprof::instrument_wait]
fn yields_with_work_between(rounds: u32, work: Duration) -> (u64, u64) {
    let (mut cpu, mut wall) = (0, 0);
    for _ in 0..rounds {
        std::thread::yield_now();
        let (c, w) = busy(work);
        cpu += c;
        wall += w;
    }
    std::thread::yield_now();
    (cpu, wall)
}

/// A nested wait that only spins, for about `d`: its first wait a spin, so it opens on
/// the fast path.
#[yieldprof::instrument_wait]
fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[yieldprof::instrument_wait]
fn yields_around_a_spinning_wait(rounds: u32) {
    for _ in 0..rounds {
        std::thread::yield_now();
        spin_for(Duration::from_micros(50));
    }
    std::thread::yield_now();
}

fn own(p: &yieldprof::Profile, site: &str) -> OwnTime {
    p.site(site).unwrap_or_else(|| panic!("no site {site}")).own
}

#[test]
fn long_stretches_between_waits_are_work_and_the_loops_checks_are_not() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let session = yieldprof::Session::this_thread();
    let q0 = queued_ns();
    // 50 stretches of 1 ms of work, then 500 of 1 µs (checks, not work).
    let (cpu, wall) = yields_with_work_between(50, Duration::from_millis(1));
    let (_, checks) = yields_with_work_between(500, Duration::from_micros(1));
    let queued = queued_ns() - q0;
    let p = session.finish();
    let own = own(&p, "yields_with_work_between");
    let work = own.unmarked_work_ns;
    // Unswitched, a stretch is work whole; preempted, less the time queued. So at
    // least the stretches' CPU time less what the thread queued (0 on an idle
    // machine), at most their wall and the checks' (the stretches around them).
    assert!(
        work + queued + cpu / 30 >= cpu && work <= wall + checks + 100_000,
        "[unmarked work] {work} ns; the stretches' CPU {cpu} ns, wall {wall} ns, queued \
         {queued} ns, checks {checks} ns: {own:?}"
    );
    let t = &p.threads()[0];
    assert_eq!(t.unmarked_work_ns, work, "{t:?}");
    println!("[unmarked work] {work} ns; the stretches' CPU {cpu} ns, queued {queued} ns");
}

/// Stands in for a wake call that takes long (a condvar's `notify_one` waking a
/// thread on another CPU of a VM took 10–15 µs): the macro knows wake calls by
/// name.
struct SlowWake(Duration);

impl SlowWake {
    fn notify_one(&self) -> (u64, u64) {
        busy(self.0)
    }
}

/// `rounds` yields with a wake call between each two, as a condvar turn notifies
/// after its wait; the wake calls' (CPU, wall) time.
#[yieldprof::instrument_wait]
fn yields_with_wakes_between(rounds: u32, wake: &SlowWake) -> (u64, u64) {
    let (mut cpu, mut wall) = (0, 0);
    for _ in 0..rounds {
        std::thread::yield_now();
        let (c, w) = wake.notify_one();
        cpu += c;
        wall += w;
    }
    std::thread::yield_now();
    (cpu, wall)
}

#[test]
fn a_wake_call_between_waits_is_not_work() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let session = yieldprof::Session::this_thread();
    // 50 wakes of 200 µs each between the waits: 10 ms, none of it a job.
    let (cpu, wall) = yields_with_wakes_between(50, &SlowWake(Duration::from_micros(200)));
    let p = session.finish();
    let own = own(&p, "yields_with_wakes_between");
    // The stretches around each wake are the loop's own few instructions.
    assert!(
        own.unmarked_work_ns <= wall / 100,
        "[unmarked work] {} ns; the wake calls' CPU {cpu} ns, wall {wall} ns: {own:?}",
        own.unmarked_work_ns
    );
    assert!(cpu > 0 && wall >= 10_000_000, "the wakes took {wall} ns");
}

/// This thread's context switches so far (/proc: voluntary and involuntary).
fn switches() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    status
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

#[test]
fn a_nested_spinning_wait_is_not_work_of_the_wait_around_it() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 1..=3 {
        let session = yieldprof::Session::this_thread();
        let s0 = switches();
        yields_around_a_spinning_wait(400);
        let switched = switches() - s0;
        let p = session.finish();
        let outer = own(&p, "yields_around_a_spinning_wait");
        let inner = p.site("spin_for").expect("the nested site");
        // 400 × 50 µs of spinning nested in it, opened and closed on the fast path (one
        // record each) or as frames: the nested site's, never the outer's work. A first
        // episode's set-up (its node, its histograms) can make one stretch long.
        assert_eq!(inner.episodes, 400, "{inner:?}");
        if outer.unmarked_work_ns <= inner.wall_ns / 100 {
            return;
        }
        // Preempted or handed over between its waits, a stretch of the outer's own
        // code holds the time it waited for a CPU: run again.
        assert!(
            switched > 0,
            "{outer:?}; nested {} ns, never switched",
            inner.wall_ns
        );
        println!("attempt {attempt}: switched {switched} times; {outer:?}");
    }
    println!("inconclusive: the thread was switched in 3 attempts");
}

/// Waits (a yield), then runs one long job inside the wait, then waits again.
#[yieldprof::instrument_wait]
fn wait_then_long_job(started: &std::sync::OnceLock<Instant>, done: &AtomicBool) {
    std::thread::yield_now();
    let _ = started.set(Instant::now());
    while !done.load(Relaxed) {
        std::hint::black_box(0u64);
    }
    std::thread::yield_now();
}

#[test]
fn a_job_still_running_at_a_report_is_work_up_to_then() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 1..=3 {
        let before = yieldprof::snapshot();
        let started = std::sync::OnceLock::new();
        let done = AtomicBool::new(false);
        let (report, in_job) = std::thread::scope(|s| {
            let worker = std::thread::Builder::new()
                .name("long-job".into())
                .spawn_scoped(s, || wait_then_long_job(&started, &done))
                .unwrap();
            while started.get().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(30));
            let report = yieldprof::snapshot().since(&before);
            let in_job = started.get().unwrap().elapsed().as_nanos() as u64;
            done.store(true, Relaxed);
            worker.join().unwrap();
            (report, in_job)
        });
        let t = report
            .threads()
            .into_iter()
            .find(|t| t.name == "long-job")
            .expect("the worker");
        // The job ran ~30 ms on the CPU when the report was read: work, not waiting,
        // less what the run queue held it (a loaded machine: run again).
        if t.run_queue_ns.unwrap_or(0) > in_job / 5 {
            println!(
                "attempt {attempt}: queued {:?} ns of {in_job}: run again",
                t.run_queue_ns
            );
            continue;
        }
        assert!(
            t.unmarked_work_ns >= in_job * 7 / 10 && t.unmarked_work_ns <= in_job + 1_000_000,
            "[unmarked work] {} ns, {in_job} ns into the job at the report: {t:?}",
            t.unmarked_work_ns
        );
        return;
    }
    println!("inconclusive: the job was queued for a CPU in 3 attempts");
}
