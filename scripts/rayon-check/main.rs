//! rayon-core with its wait loops annotated, read against truth: every leaf job
//! spins a known time and adds it to its thread's business time; each worker's wait %
//! in the report is compared with 1 - business / life. With `bench WORKLOAD`: one
//! workload timed (`install`: two outside threads block on the pool in turn; else a
//! phase below, on a fresh global pool); nothing is written.
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

const THREADS: usize = 2;
/// Business time per thread: rayon workers by index, the caller last.
static BUSY: [AtomicU64; THREADS + 1] = [const { AtomicU64::new(0) }; THREADS + 1];
/// The same on the thread's CPU clock: a leaf's wall less the time it was preempted.
static BUSY_CPU: [AtomicU64; THREADS + 1] = [const { AtomicU64::new(0) }; THREADS + 1];

/// The calling thread's CPU clock, ns.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Thread `tid`'s (on-CPU, run-queue wait) ns from its schedstat file.
fn schedstat(tid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap_or_default();
    let mut f = text.split_whitespace().map(|v| v.parse().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

fn leaf(d: Duration) -> u64 {
    let c = cpu_ns();
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = std::hint::black_box(x + 1);
    }
    let wall = t.elapsed().as_nanos() as u64;
    let i = rayon::current_thread_index().unwrap_or(THREADS);
    BUSY[i].fetch_add(wall, Relaxed);
    BUSY_CPU[i].fetch_add(cpu_ns() - c, Relaxed);
    x
}

fn tree(depth: u32) -> u64 {
    if depth == 0 {
        return leaf(Duration::from_micros(200));
    }
    let (a, b) = rayon::join(|| tree(depth - 1), || tree(depth - 1));
    a + b
}

/// Runs `work` and reads its report against truth for the threads named `{pool}-N`
/// (and main).
fn phase(name: &str, pool: &str, work: impl FnOnce()) {
    BUSY.iter().chain(&BUSY_CPU).for_each(|b| b.store(0, Relaxed));
    let before = yieldprof::snapshot();
    let sched: Vec<_> = before
        .threads()
        .iter()
        .map(|t| (t.tid, schedstat(t.tid)))
        .collect();
    let t = Instant::now();
    work();
    let wall = t.elapsed();
    let p = yieldprof::snapshot().since(&before);
    println!("## {name} ({:.1} ms)", wall.as_secs_f64() * 1e3);
    println!("| thread | wait % shown | truth (1 - leaves / life) | leaves' time |");
    let mut split = Vec::new();
    for t in p.threads() {
        let i = match t.name.strip_prefix(pool).and_then(|n| n.strip_prefix('-')) {
            Some(n) => n.parse::<usize>().unwrap(),
            None if t.name == "main" => THREADS,
            None => continue,
        };
        let busy = BUSY[i].load(Relaxed);
        let shown = 100.0 * t.wait_ns as f64 / t.wall_ns.max(1) as f64;
        let truth = 100.0 * (1.0 - busy as f64 / t.wall_ns.max(1) as f64);
        println!(
            "| {} | {shown:.1} % | {truth:.1} % | {:.1} ms of {:.1} ms |",
            t.name,
            busy as f64 / 1e6,
            t.wall_ns as f64 / 1e6
        );
        // Where the life went by the kernel's clocks, over the phase (a thread that
        // recorded before it): on a CPU, queued, and the leaves' part of each.
        if let Some(&(_, (cpu0, q0))) = sched.iter().find(|(tid, _)| *tid == t.tid) {
            let (cpu1, q1) = schedstat(t.tid);
            let leaves_cpu = BUSY_CPU[i].load(Relaxed);
            split.push(format!(
                "| {} | {:.1} % | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
                t.name,
                100.0 * (1.0 - leaves_cpu as f64 / t.wall_ns.max(1) as f64),
                (cpu1 - cpu0) as f64 / 1e6,
                (q1 - q0) as f64 / 1e6,
                busy.saturating_sub(leaves_cpu) as f64 / 1e6,
                (q1 - q0).saturating_sub(busy.saturating_sub(leaves_cpu)) as f64 / 1e6,
            ));
        }
    }
    if !split.is_empty() {
        println!(
            "\n| thread | truth on leaves' CPU clock | on CPU | queued | leaves preempted | \
             queued outside leaves |"
        );
        split.iter().for_each(|l| println!("{l}"));
    }
    for f in p.findings(&yieldprof::report::Costs::current()) {
        println!("{f}");
    }
    let out = std::env::var("OUT").unwrap_or_else(|_| "out".into());
    p.write(&out, name).unwrap();
}

/// The workloads, as the report's phases and the bench run them.
fn join_tree() {
    for _ in 0..5 {
        std::hint::black_box(rayon::join(|| tree(7), || tree(7)));
    }
}

fn par_iter() {
    let s: u64 = (0..2000u32)
        .into_par_iter()
        .map(|_| leaf(Duration::from_micros(100)))
        .sum();
    std::hint::black_box(s);
}

/// ~5 ms of the caller's serial work, then a parallel step of 40 leaves; 20 times. The
/// caller's clock around the steps goes to `steps_ns`.
fn serial_then_parallel(steps_ns: &AtomicU64) {
    for _ in 0..20 {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(5) {
            std::hint::black_box(0);
        }
        BUSY[THREADS].fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
        let step = Instant::now();
        let s: u64 = (0..40u32)
            .into_par_iter()
            .map(|_| leaf(Duration::from_micros(200)))
            .sum();
        steps_ns.fetch_add(step.elapsed().as_nanos() as u64, Relaxed);
        std::hint::black_box(s);
    }
}

/// ns per `install` of a small parallel step, two outside threads calling at once.
fn installs() -> u128 {
    const INSTALLS: usize = 2000;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .unwrap();
    let pool = &pool;
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(move || {
                for _ in 0..INSTALLS {
                    let sum: u64 = pool.install(|| {
                        (0..8u32)
                            .into_par_iter()
                            .map(|_| leaf(Duration::from_micros(20)))
                            .sum()
                    });
                    std::hint::black_box(sum);
                }
            });
        }
    });
    t.elapsed().as_nanos() / (2 * INSTALLS) as u128
}

/// `bench WORKLOAD`: its wall time, ns (per install for `install`), on a fresh pool.
fn bench(workload: &str) {
    if workload == "install" {
        return println!("{}", installs());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build_global()
        .unwrap();
    rayon::spawn(|| {});
    std::thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    match workload {
        "join-tree" => join_tree(),
        "par-iter" => par_iter(),
        "serial-then-parallel" => serial_then_parallel(&AtomicU64::new(0)),
        other => panic!("no workload {other}"),
    }
    println!("{}", t.elapsed().as_nanos());
}

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("bench") {
        return bench(args.next().as_deref().unwrap_or("install"));
    }
    let _guard = yieldprof::init();
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .thread_name(|i| format!("rayon-{i}"))
        .build_global()
        .unwrap();
    // Let the workers start and fall asleep.
    rayon::spawn(|| {});
    std::thread::sleep(Duration::from_millis(50));
    phase("join-tree", "rayon", join_tree);
    phase("par-iter", "rayon", par_iter);
    static STEPS_NS: AtomicU64 = AtomicU64::new(0);
    phase("serial-then-parallel", "rayon", || {
        serial_then_parallel(&STEPS_NS);
        let leaves: u64 = BUSY[..THREADS].iter().map(|b| b.load(Relaxed)).sum();
        println!(
            "truth: the parallel steps' leaves {:.1} ms in {:.1} ms of steps (caller's clock): \
             parallelism {:.2}",
            leaves as f64 / 1e6,
            STEPS_NS.load(Relaxed) as f64 / 1e6,
            leaves as f64 / STEPS_NS.load(Relaxed) as f64
        );
    });
    // A pool of its own that ends before the report: its workers have exited.
    phase("ended-pool", "ended", || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .thread_name(|i| format!("ended-{i}"))
            // Each worker's recording starts with its life (a thread shows up at its
            // first record), so its life is the truth's denominator.
            .start_handler(|_| yieldprof::wait::yield_now())
            .build()
            .unwrap();
        pool.install(join_tree);
        drop(pool);
        // `drop` asks the workers to stop; they exit on their own. The caller waits
        // for that (a wait, as its truth counts it).
        yieldprof::wait::sleep(Duration::from_millis(50));
    });
}
