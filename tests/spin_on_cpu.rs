//! Two threads pinned to the two cores pass a token back and forth with a CAS spin
//! loop: each site's episodes are measured on the CPU (≥ 90 %), and the figure agrees
//! with each thread's own CPU clock.
//!
//! On a loaded machine other processes take the cores from time to time and the
//! spinners sit in the run queue. The test tells that apart from a wrong measure: the
//! on-CPU figure must match the thread's CPU clock in every run, and a run below 90 %
//! must show the shortfall as queued (preempted) time. Such a run is retried, a
//! bounded number of times; if the machine never leaves the spinners alone the test
//! reports the result as inconclusive instead of failing.
//!
//! Each spinner waits once before its CPU clock starts, and the test's own thread once
//! before the first attempt: the profiler's set-up on a thread (its state, the process's
//! clock rate and perf probe, whose first `perf_event_open` can take the kernel
//! milliseconds) is its own time, outside the episode, but inside a CPU clock read
//! around it (0.5–1 ms short in every first attempt).
//!
//! The bound is 1 % + 1 ms, under the 4 ms slice a busy machine gives: the episode's
//! end once took such a slice (the thread switched out in the profiler's work after
//! the end, read as the episode's off-CPU time) one attempt in four under 4 busy loops,
//! labelled exact, within the 5 % the test allowed then.
//!
//! A spinner preempted between its episode's end and the read of its figures gets
//! its split apportioned (issue 26: 77 ms on the CPU against the clocks' 95 ms, marked
//! exact): the split is then labelled estimated, and the run is retried too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use yieldprof::counters::Count;
use yieldprof::report::{Costs, Rule, SiteStats};

mod clocks;
use clocks::cpu_ns;

const RUN: Duration = Duration::from_millis(200);
const ATTEMPTS: usize = 4;

/// Waits for `turn` to be `mine` (mod 2) and passes it on, until `stop`.
#[yieldprof::instrument_wait]
fn cas_spin(turn: &AtomicU64, mine: u64, stop: &AtomicBool) -> u64 {
    let mut passes = 0;
    while !stop.load(Ordering::Relaxed) {
        let t = turn.load(Ordering::Acquire);
        if t % 2 == mine
            && turn
                .compare_exchange_weak(t, t + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            passes += 1;
        }
        std::hint::spin_loop();
    }
    passes
}

/// One wait on the calling thread: its profiler set-up happens here.
#[yieldprof::instrument_wait]
fn warm_up() {
    std::hint::spin_loop();
}

/// Pins the calling thread to `cpu`; false where the affinity call is refused.
fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
    }
}

/// One spinner's own view: when it spun, and its CPU time meanwhile.
struct Spun {
    start: Instant,
    end: Instant,
    cpu_ns: u64,
    passes: u64,
}

fn attempt() -> (Vec<Spun>, SiteStats) {
    let before = yieldprof::snapshot();
    let turn = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spun: Vec<Spun> = std::thread::scope(|s| {
        let spinners: Vec<_> = (0..2u64)
            .map(|me| {
                let (turn, stop) = (&turn, &stop);
                s.spawn(move || {
                    pin(me as usize % cores);
                    warm_up();
                    let (start, c0) = (Instant::now(), cpu_ns());
                    let passes = cas_spin(turn, me, stop);
                    Spun {
                        start,
                        end: Instant::now(),
                        cpu_ns: cpu_ns() - c0,
                        passes,
                    }
                })
            })
            .collect();
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        spinners.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let site = yieldprof::snapshot()
        .since(&before)
        .site("cas_spin")
        .unwrap();
    (spun, site)
}

#[test]
fn a_cas_spin_loop_on_two_busy_threads_is_measured_on_the_cpu() {
    warm_up();
    for n in 1..=ATTEMPTS {
        let (spun, site) = attempt();
        assert_eq!(site.episodes, 2);
        // Both really spun at once, and passed the token to each other.
        let overlap =
            spun.iter().map(|s| s.end).min().unwrap() - spun.iter().map(|s| s.start).max().unwrap();
        // A loaded machine may keep one spinner off the CPU for the whole run: no
        // evidence either way, retried.
        let passes: Vec<u64> = spun.iter().map(|s| s.passes).collect();
        if overlap < RUN * 3 / 4 || passes.iter().any(|&p| p <= 10) {
            eprintln!("attempt {n}: overlapped {overlap:?}, passes {passes:?}: retrying");
            continue;
        }

        let truth: u64 = spun.iter().map(|s| s.cpu_ns).sum();
        let on = site.time.on_cpu_ns.value().expect("the split is measured");
        let off = site.time.off_cpu_ns.value().unwrap();
        assert_eq!(on + off, site.wall_ns);
        if site.time.estimated_episodes > 0 {
            // Apportioned: labelled so, and not the exact figure the bound is for.
            assert!(site.time.on_cpu_ns.is_scaled(), "{:?}", site.time);
            eprintln!(
                "attempt {n}: {} of 2 episodes apportioned (on-CPU ~{on} ns, the clocks \
                 {truth} ns): retrying",
                site.time.estimated_episodes
            );
            continue;
        }
        // An exact figure is checked against the threads' CPU clocks in every run.
        assert!(
            matches!(site.time.on_cpu_ns, Count::Exact(_)),
            "{:?}",
            site.time
        );
        // 1 % + 1 ms: a scheduler slice (4 ms here) taken for the episode's is caught.
        assert!(
            on.abs_diff(truth) as f64 <= 0.01 * truth as f64 + 1_000_000.0,
            "on-CPU {on} ns, the threads' CPU clocks {truth} ns"
        );
        let share = on as f64 / (on + off) as f64;
        eprintln!(
            "attempt {n}: on-CPU {on} ns ({:.1}%), the threads' CPU clocks {truth} ns",
            100.0 * share
        );
        if share >= 0.9 {
            // Spinning, measured on the CPU: the spin finding may fire, with that
            // evidence, and the own time is `[spin]`.
            assert!(
                site.spin_ns() as f64 >= 0.9 * site.self_ns as f64,
                "{:?}",
                site.own
            );
            let findings = yieldprof::snapshot().findings(&Costs::current());
            for f in findings.iter().filter(|f| f.rule == Rule::LongSpin) {
                assert!(f.evidence.contains("on the CPU"), "{}", f.evidence);
            }
            return;
        }
        // Below 90 %: only a loaded machine may explain it, and then the time off
        // the CPU is queued (preempted), not blocked.
        let queued = site.time.queued_ns.value();
        assert!(
            queued.is_none_or(|q| q as f64 >= 0.8 * off as f64),
            "off the CPU {off} ns but not queued: {:?}",
            site.time
        );
        eprintln!(
            "attempt {n}: {} ns queued: the machine is loaded, retrying",
            queued.unwrap_or(0)
        );
    }
    eprintln!("inconclusive: in {ATTEMPTS} attempts other processes always preempted the spinners");
}
