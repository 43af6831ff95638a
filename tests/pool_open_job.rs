//! A pool job still open when the report is taken: its worker is inside an annotated
//! wait fn, running a job in `frame!` that a busy thread pinned to the same CPU keeps
//! preempting, and a live snapshot reads the worker in the middle of that job. The
//! job's time off the CPU is the pool's scheduling, not business (docs/thread-pools.md),
//! open or closed: the truth is 1 − the worker's CPU clock inside the job ÷ its life,
//! both read by this test around the snapshot.

mod affinity;

use affinity::pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use yieldprof::report::Metric;

/// The job's CPU time before the report is taken.
const JOB_CPU: Duration = Duration::from_millis(80);

struct Shared {
    tid: AtomicI32,
    /// When the worker began, just before its first recorded entry.
    started: OnceLock<Instant>,
    /// The worker's CPU clock when its job began; 0 before.
    job_cpu0: AtomicU64,
    /// The worker's CPU time inside the job so far, ns (updated as it spins).
    job_cpu: AtomicU64,
    /// The job's wall time so far, ns.
    job_wall: AtomicU64,
    stop: AtomicBool,
    /// Whether the job ends its spinning at `JOB_CPU` and waits, in an annotated fn,
    /// until the stop (a worker that waits on a latch inside a job, as rayon's
    /// `join` does); and whether it is waiting there now.
    nested: bool,
    in_nested: AtomicBool,
}

/// A thread's CPU clock, ns, read from another thread of the process
/// (`pthread_getcpuclockid` of a `pthread_t` is this clock id for its tid).
fn cpu_ns_of(tid: i32) -> u64 {
    let id = (!(tid as libc::clockid_t) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    assert_eq!(
        unsafe { libc::clock_gettime(id, &mut ts) },
        0,
        "thread clock"
    );
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn cpu_ns() -> u64 {
    cpu_ns_of(unsafe { libc::gettid() })
}

/// `(CPU time, run-queue wait)` of thread `tid` from its schedstat, ns.
fn schedstat(tid: i32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut f = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// The job: spins until the stop (or, nested, until `JOB_CPU` and then waits),
/// publishing its CPU and wall time so far.
fn run_job(s: &Shared) {
    yieldprof::frame!("open-job");
    let (cpu0, t) = (cpu_ns(), Instant::now());
    s.job_cpu0.store(cpu0, Relaxed);
    let cpu = JOB_CPU.as_nanos() as u64;
    let done = || s.nested && s.job_cpu.load(Relaxed) >= cpu;
    while !s.stop.load(Relaxed) && !done() {
        for _ in 0..1000 {
            std::hint::black_box(0u64);
        }
        s.job_cpu.store(cpu_ns() - cpu0, Relaxed);
        s.job_wall.store(t.elapsed().as_nanos() as u64, Relaxed);
    }
    if s.nested {
        wait_inside_job(s);
    }
}

/// A wait inside the job, open at the report: its time is waiting, not the job's.
#[yieldprof::instrument_wait]
fn wait_inside_job(s: &Shared) {
    s.in_nested.store(true, Relaxed);
    while !s.stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The worker's life: it waits a while, then runs one job that outlives the report.
#[yieldprof::instrument_wait]
fn wait_then_run(s: &Shared) {
    std::thread::sleep(Duration::from_millis(30));
    run_job(s);
}

struct Run {
    shown: f64,
    truth: f64,
    /// The open job's wall less its CPU time, as a share of the worker's life, %.
    preempted: f64,
    /// The job's `[off-cpu]` in the folded stacks, as a share of the life, %.
    folded_off: f64,
    /// The worker's folded stacks over its life in the report, %.
    folded_sum: f64,
    life_ms: f64,
    sched_cpu_ms: f64,
    queued_ms: f64,
}

fn run(name: &str, nested: bool) -> Run {
    let s = Shared {
        tid: AtomicI32::new(0),
        started: OnceLock::new(),
        job_cpu0: AtomicU64::new(0),
        job_cpu: AtomicU64::new(0),
        job_wall: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        nested,
        in_nested: AtomicBool::new(false),
    };
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
    let busy_stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let busy = scope.spawn(|| {
            pin(cpu);
            while !busy_stop.load(Relaxed) {
                std::hint::black_box(0u64);
            }
        });
        let worker = std::thread::Builder::new()
            .name(name.to_string())
            .spawn_scoped(scope, || {
                pin(cpu);
                s.tid.store(unsafe { libc::gettid() }, Relaxed);
                let _ = s.started.set(Instant::now());
                wait_then_run(&s);
            })
            .unwrap();
        while s.job_cpu.load(Relaxed) < JOB_CPU.as_nanos() as u64 {
            std::thread::sleep(Duration::from_millis(2));
        }
        if nested {
            while !s.in_nested.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        let tid = s.tid.load(Relaxed);
        let started = *s.started.get().expect("the worker began");
        // The truth around the report: the worker's CPU clock inside its job, and
        // its life, each the mean of a read before and after.
        let (c0, l0) = (cpu_ns_of(tid), started.elapsed());
        let report = yieldprof::snapshot();
        let (c1, l1) = (cpu_ns_of(tid), started.elapsed());
        let sched = schedstat(tid);
        let job_wall = s.job_wall.load(Relaxed);
        s.stop.store(true, Relaxed);
        worker.join().unwrap();
        busy_stop.store(true, Relaxed);
        busy.join().unwrap();
        // Nested, the job's business ended where its spinning did.
        let in_job = match nested {
            true => s.job_cpu.load(Relaxed),
            false => (c0 + c1) / 2 - s.job_cpu0.load(Relaxed),
        };
        let life = ((l0 + l1) / 2).as_nanos() as u64;
        let t = report
            .threads()
            .into_iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name} in the report"));
        let json = report.json(&yieldprof::report::Costs::current());
        let wrong = json.inconsistencies();
        assert!(wrong.is_empty(), "{wrong:?}");
        let j = json.threads.iter().find(|j| j.name == name).unwrap();
        assert_eq!(
            (j.wait_ns, j.jobs_off_cpu_ns),
            (t.wait_ns, t.jobs_off_cpu_ns),
            "the JSON's thread"
        );
        let folded = report.folded(Metric::Wall);
        let mine = || {
            folded
                .iter()
                .filter(|l| l.starts_with(&format!("{name};")))
                .filter_map(|l| Some((l, l.rsplit(' ').next()?.parse::<u64>().ok()?)))
        };
        let folded_off: u64 = mine()
            .filter(|(l, _)| l.contains(";open-job;[off-cpu] "))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(
            folded_off, t.jobs_off_cpu_ns,
            "the folded `[off-cpu]` lines"
        );
        let folded_sum: u64 = mine().map(|(_, v)| v).sum();
        let share = |ns: u64, of: u64| 100.0 * ns as f64 / of as f64;
        Run {
            shown: share(t.wait_ns, t.wall_ns),
            truth: 100.0 - share(in_job, life),
            preempted: share(job_wall.saturating_sub(in_job), life),
            folded_off: share(folded_off, t.wall_ns),
            folded_sum: share(folded_sum, t.wall_ns),
            life_ms: life as f64 / 1e6,
            sched_cpu_ms: sched.map_or(f64::NAN, |(c, _)| c as f64 / 1e6),
            queued_ms: sched.map_or(f64::NAN, |(_, q)| q as f64 / 1e6),
        }
    })
}

#[test]
fn a_job_open_at_the_report_has_its_time_off_the_cpu_as_waiting() {
    check("open-job", false);
}

#[test]
fn a_job_open_at_the_report_holds_none_of_the_wait_open_inside_it() {
    check("open-join", true);
}

fn check(name: &str, nested: bool) {
    // The profiler's one-time set-up is done first, outside the worker's life.
    std::thread::spawn(|| {
        yieldprof::frame!("warm-up");
    })
    .join()
    .unwrap();
    for attempt in 1..=4 {
        let r = run(&format!("{name}-{attempt}"), nested);
        eprintln!(
            "attempt {attempt}: wait {:.1} %, truth {:.1} %, open job off-CPU {:.1} % \
             (folded [off-cpu] {:.1} %), folded stacks {:.2} % of the life, life {:.1} ms; \
             schedstat: on CPU {:.1} ms, queued {:.1} ms",
            r.shown,
            r.truth,
            r.preempted,
            r.folded_off,
            r.folded_sum,
            r.life_ms,
            r.sched_cpu_ms,
            r.queued_ms
        );
        assert!(
            (r.folded_sum - 100.0).abs() <= 1.0,
            "the worker's folded stacks hold {:.2} % of its life",
            r.folded_sum
        );
        if r.preempted < 10.0 {
            continue;
        }
        assert!(
            (r.shown - r.truth).abs() <= 5.0,
            "wait {:.1} % against {:.1} % of truth, with {:.1} % of the life off the CPU \
             inside the open job",
            r.shown,
            r.truth,
            r.preempted
        );
        assert!(
            (r.folded_off - r.preempted).abs() <= 5.0,
            "the open job's [off-cpu] is {:.1} % of the life, {:.1} % measured",
            r.folded_off,
            r.preempted
        );
        return;
    }
    println!("inconclusive: the open job was never preempted for 10 % of the worker's life");
}
