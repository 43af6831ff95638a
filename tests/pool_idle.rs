//! CPU a pool burns in its idle rounds, with known truth: two pools of two workers run
//! the same phases of jobs (`frame!`), one whose idle workers spin and yield until the
//! next job (no sleep), one whose idle workers block on a Condvar. The first must get
//! one `[pool-idle-rounds]` finding whose figure matches the CPU the test measured
//! outside its jobs (each worker's CPU clock over its wait, less its jobs' CPU clocks),
//! within the jobs' own time off the CPU (a preempted job's time off the CPU cannot be
//! told from the loop's: the finding gives the range, checked to hold the truth); the
//! second none.

mod clocks;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use yieldprof::report::{Costs, Finding, Rule};

const JOB: Duration = Duration::from_micros(500);
const JOBS_PER_PHASE: u64 = 20;
const PHASES: u64 = 8;
/// The caller's pause between phases, when workers idle.
const GAP: Duration = Duration::from_millis(10);
const WORKERS: usize = 2;

struct Pool {
    pending: Mutex<u64>,
    posted: Condvar,
    done: AtomicU64,
    stop: AtomicBool,
    /// Per worker: CPU ns outside jobs over its wait (its CPU clock less its jobs').
    idle_cpu_ns: [AtomicU64; WORKERS],
    /// Per worker: its wait's wall ns.
    life_ns: [AtomicU64; WORKERS],
    /// The jobs' wall and CPU ns, all workers.
    jobs_wall_ns: AtomicU64,
    jobs_cpu_ns: AtomicU64,
}

fn take(pool: &Pool) -> bool {
    let mut pending = pool.pending.lock().unwrap();
    let took = *pending > 0;
    *pending = pending.saturating_sub(1);
    took
}

/// Runs one job and returns its CPU ns.
fn run_job(pool: &Pool) -> u64 {
    let (cpu, t) = (clocks::cpu_ns(), Instant::now());
    job();
    let wall = t.elapsed().as_nanos() as u64;
    let cpu = clocks::cpu_ns() - cpu;
    pool.jobs_wall_ns.fetch_add(wall, Relaxed);
    pool.jobs_cpu_ns.fetch_add(cpu, Relaxed);
    pool.done.fetch_add(1, Relaxed);
    cpu
}

fn job() {
    yieldprof::frame!("job");
    let t = Instant::now();
    while t.elapsed() < JOB {
        std::hint::black_box(0u64);
    }
}

/// A worker that polls when idle: 256 spins, a yield, again, until a job or the stop.
#[yieldprof::instrument_wait]
fn poll_for_jobs(pool: &Pool) -> u64 {
    let mut jobs_cpu = 0;
    while !pool.stop.load(Relaxed) {
        if take(pool) {
            jobs_cpu += run_job(pool);
            continue;
        }
        for _ in 0..256 {
            std::hint::spin_loop();
        }
        std::thread::yield_now();
    }
    jobs_cpu
}

/// A worker that blocks when idle, until jobs are posted or the stop.
#[yieldprof::instrument_wait]
fn sleep_for_jobs(pool: &Pool) -> u64 {
    let mut jobs_cpu = 0;
    loop {
        let mut pending = pool.pending.lock().unwrap();
        while *pending == 0 && !pool.stop.load(Relaxed) {
            pending = pool.posted.wait(pending).unwrap();
        }
        if *pending == 0 {
            return jobs_cpu;
        }
        *pending -= 1;
        drop(pending);
        jobs_cpu += run_job(pool);
    }
}

/// What a pool run gives: the findings of what it recorded, and as the test measured
/// them, summed over the workers: CPU outside jobs, lives, and the jobs' time off the
/// CPU (their wall less their CPU clocks).
struct Run {
    findings: Vec<Finding>,
    idle_cpu: u64,
    lives: u64,
    jobs_off: u64,
}

/// Runs a pool of workers named `{name}-{i}` through the phases.
fn run(name: &str, worker: fn(&Pool) -> u64) -> Run {
    let before = yieldprof::snapshot();
    let pool = Pool {
        pending: Mutex::new(0),
        posted: Condvar::new(),
        done: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        idle_cpu_ns: [AtomicU64::new(0), AtomicU64::new(0)],
        life_ns: [AtomicU64::new(0), AtomicU64::new(0)],
        jobs_wall_ns: AtomicU64::new(0),
        jobs_cpu_ns: AtomicU64::new(0),
    };
    std::thread::scope(|s| {
        let pool = &pool;
        for me in 0..WORKERS {
            std::thread::Builder::new()
                .name(format!("{name}-{me}"))
                .spawn_scoped(s, move || {
                    let (cpu, t) = (clocks::cpu_ns(), Instant::now());
                    let jobs = worker(pool);
                    let idle = (clocks::cpu_ns() - cpu).saturating_sub(jobs);
                    pool.idle_cpu_ns[me].store(idle, Relaxed);
                    pool.life_ns[me].store(t.elapsed().as_nanos() as u64, Relaxed);
                })
                .unwrap();
        }
        for phase in 1..=PHASES {
            *pool.pending.lock().unwrap() += JOBS_PER_PHASE;
            pool.posted.notify_all();
            while pool.done.load(Relaxed) < phase * JOBS_PER_PHASE {
                std::thread::sleep(Duration::from_micros(100));
            }
            std::thread::sleep(GAP);
        }
        let _pending = pool.pending.lock().unwrap();
        pool.stop.store(true, Relaxed);
        pool.posted.notify_all();
    });
    let report = yieldprof::snapshot().since(&before);
    let sum = |v: &[AtomicU64; WORKERS]| v.iter().map(|c| c.load(Relaxed)).sum();
    Run {
        findings: report.findings(&Costs::current()),
        idle_cpu: sum(&pool.idle_cpu_ns),
        lives: sum(&pool.life_ns),
        jobs_off: pool
            .jobs_wall_ns
            .load(Relaxed)
            .saturating_sub(pool.jobs_cpu_ns.load(Relaxed)),
    }
}

/// The first duration in `text` after `key`, ns.
fn duration_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let mut words = rest.split_whitespace();
    let n: f64 = words.next()?.parse().ok()?;
    let unit = match words.next()? {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" => 1e3,
        _ => 1.0,
    };
    Some(n * unit)
}

/// The pools share the findings' view of the process: one at a time.
static ONE_POOL: Mutex<()> = Mutex::new(());

fn idle_findings<'a>(findings: &'a [Finding], name: &str) -> Vec<&'a Finding> {
    findings
        .iter()
        .filter(|f| f.rule == Rule::IdleRounds && f.evidence.contains(&format!("{name}-0")))
        .collect()
}

#[test]
fn workers_that_spin_and_yield_between_phases_are_named_with_the_cpu_they_burnt() {
    let _one = ONE_POOL.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 0..3 {
        let name = format!("poller{attempt}");
        let run = run(&name, poll_for_jobs);
        let truth = run.idle_cpu as f64;
        let jobs_off = run.jobs_off as f64;
        let found = idle_findings(&run.findings, &name);
        eprintln!(
            "truth: {truth} ns of CPU outside jobs in {} ns of lives, jobs {jobs_off} ns off \
             the CPU; {found:#?}",
            run.lives
        );
        // The arrangement held: the pollers got the CPU for a tenth of their lives at
        // least beyond what their preempted jobs can hide (a loaded machine can give
        // their cores to others, and preempt the jobs).
        if truth - jobs_off < 0.1 * run.lives as f64 {
            eprintln!(
                "attempt {attempt}: the pollers hardly ran, or their jobs were preempted; again"
            );
            continue;
        }
        assert_eq!(
            found.len(),
            1,
            "one finding for the pool: {:#?}",
            run.findings
        );
        let f = found[0];
        assert!(
            f.subject.contains("`job`") && f.subject.contains("2 workers"),
            "{f}"
        );
        let least = duration_after(&f.evidence, "at least").expect("the figure");
        let most = least + duration_after(&f.evidence, "up to").unwrap_or(0.0);
        // The floor misses at most the jobs' time off the CPU; the range holds the truth.
        let tolerance = 0.2 * truth + 2e6;
        assert!(
            least <= truth + tolerance && least >= truth - jobs_off - tolerance,
            "at least {least} ns shown, {truth} ns measured, jobs {jobs_off} ns off the CPU: {f}"
        );
        assert!(
            most >= truth - tolerance,
            "up to {most} ns shown, {truth} ns measured: {f}"
        );
        return;
    }
    eprintln!("inconclusive: the machine never let the pollers run unhidden");
}

#[test]
fn workers_that_block_between_phases_burn_nothing_worth_a_finding() {
    let _one = ONE_POOL.lock().unwrap_or_else(|e| e.into_inner());
    let run = run("sleeper", sleep_for_jobs);
    eprintln!(
        "truth: {} ns of CPU outside jobs in {} ns of lives",
        run.idle_cpu, run.lives
    );
    let found = idle_findings(&run.findings, "sleeper");
    assert!(found.is_empty(), "{found:#?}");
}
