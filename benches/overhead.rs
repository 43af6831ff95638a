//! What yieldprof costs, each figure against its baseline in the same run.
//!
//! `cargo bench --bench overhead` prints one row per case: baseline and instrumented
//! ns per operation and their ratio. Runs alternate baseline and instrumented several
//! times and keep each side's best, so drift on a noisy machine hits both alike.

use std::hint::black_box;
use std::time::Instant;
use yieldprof::counters::CounterSampling;

const ROUNDS: usize = 7;

/// Best ns per operation of `f(iters)` over the rounds.
fn best(iters: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            f(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Baseline and instrumented, interleaved round by round.
fn pair(iters: u64, mut base: impl FnMut(u64), mut inst: impl FnMut(u64)) -> (f64, f64) {
    let (mut b, mut i) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..ROUNDS {
        b = b.min(best(iters, &mut base));
        i = i.min(best(iters, &mut inst));
    }
    (b, i)
}

fn row(case: &str, base: f64, inst: f64, target: &str) {
    println!(
        "| {case:<44} | {base:>10.2} | {inst:>10.2} | {:>6.2}× | {target:<14} |",
        inst / base
    );
}

#[inline(never)]
fn raw_spins(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn counted_spins(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

#[inline(never)]
fn raw_yields(n: u64) {
    for _ in 0..n {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn counted_yields(n: u64) {
    for _ in 0..n {
        std::thread::yield_now();
    }
}

#[inline(never)]
fn raw_empty() {
    black_box(());
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn empty_episode() {
    black_box(());
}

#[inline(never)]
fn raw_one_spin() {
    std::hint::spin_loop();
}

/// The floor a waited episode is held to: the same body timed by a bare clock pair,
/// its duration kept as an episode's would be.
#[inline(never)]
fn paired_one_spin() {
    let t0 = clock_read();
    std::hint::spin_loop();
    black_box(clock_read().wrapping_sub(t0));
}

/// An episode that waits: its one spin opens (and times) it.
#[yieldprof::instrument_wait]
#[inline(never)]
fn one_spin_episode() {
    std::hint::spin_loop();
}

#[inline(never)]
fn raw_sleep() {
    std::thread::sleep(std::time::Duration::from_micros(1));
}

#[yieldprof::instrument_wait]
#[inline(never)]
fn sleep_episode() {
    std::thread::sleep(std::time::Duration::from_micros(1));
}

#[tracing::instrument]
#[inline(never)]
fn traced_empty() {
    black_box(());
}

/// One read of the clock an episode takes: the TSC where yieldprof uses it (x86_64),
/// else the monotonic clock.
#[inline(always)]
fn clock_read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC exists on every x86_64 CPU and has no preconditions.
    let t = unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    let t = {
        use std::sync::OnceLock;
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
    };
    t
}

/// The two reads of the clock an episode takes, back to back.
#[inline(always)]
fn clock_pair() -> u64 {
    let a = clock_read();
    clock_read().wrapping_sub(a)
}

fn episodes(n: u64, f: fn()) {
    for _ in 0..n {
        f();
    }
}

/// 10 annotated functions; `walk` descends through them by the digits of `path`, so
/// `10^depth` paths make as many unique stacks.
macro_rules! fanout {
    ($($f:ident),*) => {
        $(
            #[yieldprof::instrument_wait]
            fn $f(depth: u32, path: u64) {
                std::hint::spin_loop();
                walk(depth, path);
            }
        )*
        const FANOUT: [fn(u32, u64); 10] = [$($f),*];
    };
}
fanout!(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9);

fn walk(depth: u32, path: u64) {
    if depth > 0 {
        FANOUT[(path % 10) as usize](depth - 1, path / 10);
    }
}

/// The first episode that waits on a fresh thread, where the thread's setup happens (its tree,
/// timeline ring and counters): median over `THREADS` threads per setting, next to
/// spawning and joining an empty thread. Then the costliest of the thread's next
/// `sleep(1 µs)` episodes, where counters that the first episode left closed open, next
/// to the costliest of as many raw sleeps on a thread of its own.
fn first_episode_rows(base: &yieldprof::Options) {
    const THREADS: usize = 200;
    const BLOCKS: usize = 4;
    const LATER: usize = 32;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    fn timed(f: fn()) -> f64 {
        let t = Instant::now();
        f();
        t.elapsed().as_nanos() as f64
    }
    fn costliest(f: fn()) -> f64 {
        (0..LATER).map(|_| timed(f)).fold(0.0, f64::max)
    }
    let (mut spawn, mut raw_later) = (Vec::new(), Vec::new());
    let mut first = [Vec::new(), Vec::new()];
    let mut later = [Vec::new(), Vec::new()];
    for _ in 0..BLOCKS {
        for (k, sampling) in [CounterSampling::Off, CounterSampling::Auto]
            .into_iter()
            .enumerate()
        {
            let _g = base.clone().counters(sampling).init();
            for _ in 0..THREADS / BLOCKS {
                let t = Instant::now();
                std::thread::spawn(|| black_box(())).join().expect("thread");
                spawn.push(t.elapsed().as_nanos() as f64);
                let (f, l) =
                    std::thread::spawn(move || (timed(one_spin_episode), costliest(sleep_episode)))
                        .join()
                        .expect("thread");
                first[k].push(f);
                later[k].push(l);
                if k == 0 {
                    let r = std::thread::spawn(move || costliest(raw_sleep));
                    raw_later.push(r.join().expect("thread"));
                }
            }
        }
    }
    let spawn = median(spawn);
    let raw_later = median(raw_later);
    let [off, auto] = first.map(median);
    let [later_off, later_auto] = later.map(median);
    row(
        "   first episode on a new thread, counters off",
        spawn,
        off,
        "≤ 50 µs",
    );
    row(
        "   first episode on a new thread, counters auto",
        spawn,
        auto,
        "≤ 50 µs",
    );
    row(
        "   costliest of its next 32 sleeps, counters off",
        raw_later,
        later_off,
        "",
    );
    row(
        "   costliest of its next 32 sleeps, counters auto",
        raw_later,
        later_auto,
        "",
    );
}

fn main() {
    let out = std::env::temp_dir().join(format!("yieldprof-bench-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("temp dir");
    // Room for the 100k-stack case below (111 110 nodes on one thread).
    let base = yieldprof::Options::from_env()
        .max_nodes(120_000)
        .out_dir(&out)
        .name("bench");
    let _guard = base.clone().init();
    // Counter settings apply to threads that start recording afterwards, so each
    // counter case runs on a thread of its own.
    let on_thread = |sampling: CounterSampling, fds: usize, f: &(dyn Fn() -> (f64, f64) + Sync)| {
        let _g = base.clone().counters(sampling).fd_budget(fds).init();
        std::thread::scope(|s| s.spawn(f).join().expect("bench thread"))
    };
    // `ring KEPT N`: only N empty episodes on a thread keeping KEPT of them, for
    // instruction and cache-miss counts under `valgrind --tool=cachegrind`, which a
    // loaded machine does not blur (docs/cost.md).
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "ring") {
        let number = |i: usize| args.get(at + i).and_then(|a| a.parse::<u64>().ok());
        let (Some(kept), Some(n)) = (number(1), number(2)) else {
            panic!("usage: overhead ring KEPT N");
        };
        let _g = base
            .clone()
            .counters(CounterSampling::Off)
            .timeline(kept as u32)
            .init();
        std::thread::scope(|s| {
            s.spawn(|| episodes(n, one_spin_episode))
                .join()
                .expect("ring")
        });
        // Nothing written: the count is the episodes'.
        std::mem::forget(_g);
        return;
    }
    // `first`: only the first-episode rows.
    if args.iter().any(|a| a == "first") {
        first_episode_rows(&base);
        drop(_guard);
        let _ = std::fs::remove_dir_all(&out);
        return;
    }
    // `report`: only the report rows (the 1M-episode file and row 7).
    if args.iter().any(|a| a == "report") {
        million_and_stacks(&out, None);
        drop(_guard);
        let _ = std::fs::remove_dir_all(&out);
        return;
    }
    // `waits N`: N episodes that wait (one spin) with exact page counters, for
    // `perf record -e cpu-clock` (where the ns of goal 2's row go).
    if let Some(at) = args.iter().position(|a| a == "waits") {
        let Some(n) = args.get(at + 1).and_then(|a| a.parse::<u64>().ok()) else {
            panic!("usage: overhead waits N");
        };
        let _g = base
            .clone()
            .counters(CounterSampling::Every(u32::MAX))
            .init();
        std::thread::scope(|s| {
            s.spawn(|| episodes(n, one_spin_episode))
                .join()
                .expect("waits")
        });
        std::mem::forget(_g);
        return;
    }
    // `unwaited N`: N raw calls and N unwaited episodes of the same fn, counters off,
    // for `valgrind --tool=callgrind` (instructions per episode, docs/cost.md).
    if let Some(at) = args.iter().position(|a| a == "unwaited") {
        let Some(n) = args.get(at + 1).and_then(|a| a.parse::<u64>().ok()) else {
            panic!("usage: overhead unwaited N");
        };
        let _g = base.clone().counters(CounterSampling::Off).init();
        std::thread::scope(|s| s.spawn(|| unwaited_calls(n)).join().expect("unwaited"));
        std::mem::forget(_g);
        return;
    }
    // `hot`: only the hot path's rows (an episode that returns without waiting; a
    // counted and timed `yield_now`; a waited one-spin episode against a clock pair),
    // each side by side with its baseline.
    if args.iter().any(|a| a == "hot") {
        hot_rows(&on_thread);
        drop(_guard);
        let _ = std::fs::remove_dir_all(&out);
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("yieldprof overhead, {cores} cores, best of {ROUNDS}×{ROUNDS} rounds\n");
    println!(
        "| {:<44} | {:>10} | {:>10} | {:>7} | {:<14} |",
        "case (ns per op)", "baseline", "yieldprof", "ratio", "target"
    );
    println!(
        "|{:-<46}|{:-<12}|{:-<12}|{:-<9}|{:-<16}|",
        "", "", "", "", ""
    );

    let (b, i) = pair(1, |_| raw_spins(1_000_000), |_| counted_spins(1_000_000));
    row(
        "1. spin_loop in a loop (per spin)",
        b / 1e6,
        i / 1e6,
        "≤ 1.05×",
    );

    let (b, i) = pair(1, |_| raw_yields(20_000), |_| counted_yields(20_000));
    row("2. yield_now (per call)", b / 2e4, i / 2e4, "≤ 1.10×");

    let n = 2_000_000;
    let (b, i) = on_thread(CounterSampling::Off, 512, &|| unwaited_pair(n));
    // It makes no wait call: counted, never timed (the clock starts at a first wait).
    row("3. episode that returns without waiting", b, i, "≤ +3 ns");
    let ours = i - b;

    // tracing + tracing-flame on the same empty function.
    let flame_path = out.join("tracing.folded");
    let (flame, flush) = tracing_flame::FlameLayer::with_file(&flame_path).expect("flame file");
    use tracing_subscriber::prelude::*;
    let subscriber = tracing_subscriber::registry().with(flame);
    let traced = tracing::subscriber::with_default(subscriber, || {
        // 7 × 100k measured + 300k more: 1M spans in the file, as for yieldprof below.
        let t = best(100_000, |n| episodes(n, traced_empty));
        episodes(1_000_000 - 100_000 * ROUNDS as u64, traced_empty);
        t
    });
    flush.flush().expect("flush tracing-flame");
    drop(flush);
    row("   #[tracing::instrument] + tracing-flame", b, traced, "");
    println!(
        "|   → yieldprof is {:.0}× cheaper per episode{:<17}| {:>10} | {:>10} | {:>7} | {:<14} |",
        (traced - b) / ours.max(0.01),
        "",
        "",
        "",
        "",
        "≥ 20×"
    );

    // Counter costs on top of the same episode with counters off, each setting on
    // threads of its own, alternated round by round: an episode that waits, since one
    // that returns without waiting reads no counter.
    let episode_ns = |sampling: CounterSampling, fds: usize| {
        on_thread(sampling, fds, &|| {
            (best(n / 4, |n| episodes(n, one_spin_episode)), 0.0)
        })
        .0
    };
    let vs_off = |sampling: CounterSampling, fds: usize| {
        let (mut off, mut with) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            off = off.min(episode_ns(CounterSampling::Off, 512));
            with = with.min(episode_ns(sampling, fds));
        }
        (off, with)
    };
    // The thread's first episode is always sampled; 1 in 2^32 after it is never.
    let (off, page) = vs_off(CounterSampling::Every(u32::MAX), 512);
    row(
        "4. exact page counters vs counters off",
        off,
        page,
        "≤ +10 ns",
    );
    let floor = || {
        pair(
            n,
            |n| (0..n).for_each(|_| black_box(())),
            |n| {
                (0..n).for_each(|_| {
                    black_box(clock_pair());
                })
            },
        )
    };
    let (b, i) = floor();
    row("   floor: a pair of raw clock reads", b, i, "");
    // An episode that waits (one spin) with exact per-episode counters (page only),
    // its cost over the same function unannotated, against the floor, in one run.
    let waits = || {
        let (fb, fi) = floor();
        let (b, i) = pair(
            n,
            |n| episodes(n, raw_one_spin),
            |n| episodes(n, one_spin_episode),
        );
        (fi - fb, i - b)
    };
    let (floor_ns, cost) = on_thread(CounterSampling::Every(u32::MAX), 512, &waits);
    row(
        "   episode that waits (1 spin), exact page ctrs",
        floor_ns,
        cost,
        "≤ 1.3× floor",
    );
    for (case, sampling, fds) in [
        (
            "   counters auto (default) vs off",
            CounterSampling::Auto,
            512,
        ),
        (
            "   counters auto, getrusage only (no fds)",
            CounterSampling::Auto,
            0,
        ),
        (
            "   page + perf group read on every episode",
            CounterSampling::Every(1),
            512,
        ),
        (
            "   getrusage on every episode (no fds)",
            CounterSampling::Every(1),
            0,
        ),
    ] {
        let (b, i) = vs_off(sampling, fds);
        row(case, b, i, "");
    }
    // The timeline ring (the default 4096 episodes per thread) against none, counters
    // off, each on threads of its own (a thread's ring is sized when it first records).
    let ring_ns = |kept: u32| {
        let _g = base
            .clone()
            .counters(CounterSampling::Off)
            .timeline(kept)
            .init();
        std::thread::scope(|s| {
            s.spawn(|| best(n / 4, |n| episodes(n, one_spin_episode)))
                .join()
                .expect("bench thread")
        })
    };
    let (mut off, mut on) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..ROUNDS {
        off = off.min(ring_ns(0));
        on = on.min(ring_ns(4096));
    }
    row(
        "   timeline ring (4096) vs off, counters off",
        off,
        on,
        "≤ +3 ns",
    );
    let sleepy = || {
        pair(
            2_000,
            |n| episodes(n, raw_sleep),
            |n| episodes(n, sleep_episode),
        )
    };
    let (b, i) = on_thread(CounterSampling::Auto, 512, &sleepy);
    row("   counters auto, a sleep(1 µs) episode", b, i, "≤ 1.05×");

    yieldprof::set_enabled(false);
    let (b, i) = pair(
        n,
        |n| episodes(n, raw_empty),
        |n| episodes(n, empty_episode),
    );
    yieldprof::set_enabled(true);
    row("5. YIELDPROF=0: empty episode", b, i, "≤ +1 ns");

    // Per-thread cost with one thread, then two at once.
    let per_thread = |threads: usize| {
        let each = 2_000_000u64;
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(move || episodes(each, one_spin_episode));
            }
        });
        t.elapsed().as_nanos() as f64 / each as f64
    };
    let one = (0..ROUNDS)
        .map(|_| per_thread(1))
        .fold(f64::INFINITY, f64::min);
    let two = (0..ROUNDS)
        .map(|_| per_thread(2))
        .fold(f64::INFINITY, f64::min);
    row("6. episode cost/thread: 1 thread vs 2", one, two, "≈ 1×");

    // A thread's setup, paid by its first episode.
    first_episode_rows(&base);

    million_and_stacks(&out, Some(&flame_path));
    drop(_guard);
    let _ = std::fs::remove_dir_all(&out);
}

#[path = "overhead/hot.rs"]
mod hot;
use hot::{hot_rows, unwaited_calls, unwaited_pair};

#[path = "../tests/clocks/mod.rs"]
mod clocks;
use clocks::cpu_ns as thread_cpu_ns;

#[path = "overhead/report.rs"]
mod report;
use report::million_and_stacks;
