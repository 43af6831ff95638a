//! A pool with an arranged late wake: worker 1 sleeps a known delay at the start of
//! every phase before it takes a job, while worker 0 starts at once. The pool
//! findings must name worker 1 as late, by about the delay the test measured on its
//! own clock, and give the phases' achieved parallelism within 10 % of the test's.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use yieldprof::report::{Costs, Finding, Rule};

const JOB: Duration = Duration::from_micros(500);
const JOBS_PER_PHASE: u64 = 20;
const PHASES: u64 = 8;
/// How long worker 1 sleeps at the start of each phase before its first job.
const LATE: Duration = Duration::from_millis(3);
const WORKERS: usize = 2;

struct Pool {
    pending: AtomicU64,
    /// The phase being run (1-based; 0 before the first, `u64::MAX` to stop).
    phase: AtomicU64,
    /// Every job as the test saw it: (phase, worker, start, end).
    jobs: Mutex<Vec<(u64, usize, Instant, Instant)>>,
}

fn run_job() -> (Instant, Instant) {
    yieldprof::frame!("job");
    let t = Instant::now();
    while t.elapsed() < JOB {
        std::hint::black_box(0u64);
    }
    (t, Instant::now())
}

/// The worker's life: worker 1 sleeps [`LATE`] whenever it sees a new phase.
#[yieldprof::instrument_wait]
fn wait_for_jobs(pool: &Pool, me: usize) {
    let mut seen = 0;
    loop {
        let phase = pool.phase.load(Relaxed);
        if phase == u64::MAX {
            return;
        }
        if me == 1 && phase != seen {
            seen = phase;
            std::thread::sleep(LATE);
        }
        let took = pool
            .pending
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if took {
            let (start, end) = run_job();
            pool.jobs.lock().unwrap().push((phase, me, start, end));
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Truth on the test's clock: the phases' parallelism (jobs' time ÷ phases' wall),
/// worker 1's mean delay from a phase's first job to its own first, and a phase's mean
/// wall, ns.
fn truth(jobs: &[(u64, usize, Instant, Instant)]) -> (f64, f64, f64) {
    let (mut work, mut wall, mut lag) = (0.0, 0.0, 0.0);
    for phase in 1..=PHASES {
        let of: Vec<_> = jobs.iter().filter(|j| j.0 == phase).collect();
        let first = of.iter().map(|j| j.2).min().unwrap();
        let last = of.iter().map(|j| j.3).max().unwrap();
        work += of
            .iter()
            .map(|j| (j.3 - j.2).as_nanos() as f64)
            .sum::<f64>();
        wall += (last - first).as_nanos() as f64;
        let late = of.iter().filter(|j| j.1 == 1).map(|j| j.2).min();
        lag += (late.unwrap_or(last) - first).as_nanos() as f64;
    }
    let phases = PHASES as f64;
    (work / wall, lag / phases, wall / phases)
}

/// The longest stretch inside a phase with no job running on either worker, ns: a
/// stretch of 1 ms ends a phase for the pool findings (the caller's serial part), so
/// a loaded machine that preempts the running worker that long splits a phase.
fn longest_gap(jobs: &[(u64, usize, Instant, Instant)]) -> u128 {
    let mut longest = 0;
    for phase in 1..=PHASES {
        let mut of: Vec<_> = jobs.iter().filter(|j| j.0 == phase).collect();
        of.sort_by_key(|j| j.2);
        let mut reach = of[0].3;
        for j in &of[1..] {
            longest = longest.max(j.2.saturating_duration_since(reach).as_nanos());
            reach = reach.max(j.3);
        }
    }
    longest
}

/// The number in `text` right after `key`, and its unit's ns when it is a duration.
fn figure_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let mut words = rest.split_whitespace();
    let n: f64 = words.next()?.trim_end_matches(',').parse().ok()?;
    let unit = match words.next() {
        Some("ms") => 1e6,
        Some("µs") => 1e3,
        Some("s") => 1e9,
        _ => 1.0,
    };
    Some(n * unit)
}

fn run(name: &str) -> (Vec<Finding>, f64, f64, f64, u128) {
    let before = yieldprof::snapshot();
    let pool = Pool {
        pending: AtomicU64::new(0),
        phase: AtomicU64::new(0),
        jobs: Mutex::new(Vec::new()),
    };
    std::thread::scope(|s| {
        let pool = &pool;
        for me in 0..WORKERS {
            std::thread::Builder::new()
                .name(format!("{name}-{me}"))
                .spawn_scoped(s, move || wait_for_jobs(pool, me))
                .unwrap();
        }
        for phase in 1..=PHASES {
            pool.pending.store(JOBS_PER_PHASE, Relaxed);
            pool.phase.store(phase, Relaxed);
            while pool.jobs.lock().unwrap().len() < (phase * JOBS_PER_PHASE) as usize {
                std::thread::sleep(Duration::from_micros(100));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        pool.phase.store(u64::MAX, Relaxed);
    });
    let report = yieldprof::snapshot().since(&before);
    let jobs = pool.jobs.lock().unwrap();
    let (parallelism, lag, phase_wall) = truth(&jobs);
    (
        report.findings(&Costs::current()),
        parallelism,
        lag,
        phase_wall,
        longest_gap(&jobs),
    )
}

#[test]
fn a_worker_asleep_while_the_other_runs_the_jobs_is_named_late_with_the_phase_parallelism() {
    for attempt in 0..3 {
        let name = format!("late{attempt}");
        let (findings, parallelism, lag, phase_wall, gap) = run(&name);
        let pools: Vec<&Finding> = findings
            .iter()
            .filter(|f| matches!(f.rule, Rule::LateWake | Rule::LowParallelism))
            .collect();
        eprintln!(
            "truth: parallelism {parallelism:.2}, worker 1 late by {:.2} ms in phases of \
             {:.2} ms, longest gap in a phase {:.2} ms; {pools:#?}",
            lag / 1e6,
            phase_wall / 1e6,
            gap as f64 / 1e6
        );
        // The arrangement held: worker 1 came late by most of the delay and by a
        // quarter of a phase at least (the finding's rule is a fifth; a loaded machine
        // stretches the phases: 2.39 ms late in 12.5 ms phases once, 19 %), the pool
        // did not reach 1.6 of 2, and no phase had a 1 ms stretch without a job (a
        // loaded machine can spoil each).
        if lag < 0.7 * LATE.as_nanos() as f64
            || lag < 0.25 * phase_wall
            || parallelism >= 1.6
            || gap >= 1_000_000
        {
            eprintln!("attempt {attempt}: the arranged late wake did not happen; again");
            continue;
        }
        let late = pools
            .iter()
            .find(|f| f.rule == Rule::LateWake)
            .expect("a late-wake finding");
        assert!(
            late.evidence.contains(&format!("{name}-1 started")),
            "{late}"
        );
        assert!(
            !late.evidence.contains(&format!("{name}-0 started")),
            "{late}"
        );
        let shown = figure_after(&late.evidence, "started its first job").unwrap();
        assert!(
            (shown - lag).abs() <= 0.15 * lag + 200_000.0,
            "late by {shown} ns shown, {lag} ns measured: {late}"
        );
        let low = pools
            .iter()
            .find(|f| f.rule == Rule::LowParallelism)
            .expect("a low-parallelism finding");
        let shown = figure_after(&low.evidence, "achieved parallelism").unwrap();
        assert!(
            (shown - parallelism).abs() <= 0.1 * parallelism,
            "parallelism {shown} shown, {parallelism:.2} measured: {low}"
        );
        assert_eq!(pools.len(), 2, "one finding per pool and cause: {pools:#?}");
        return;
    }
    eprintln!("inconclusive: the machine never let the arranged late wake happen");
}
