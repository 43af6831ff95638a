//! What watching costs: the unpadded SPSC ring (`head`/`tail` at offsets 0/8, as in
//! `yieldprof-demo/src/main.rs`) with its indices watched vs not watched.
//!
//! `cargo bench --bench sharing [-- --messages N --rounds R --work W]` (also run by a plain
//! `cargo bench`, after `benches/overhead.rs`)
//!
//! Each configuration runs in its own process (the detector's state is global), `R`
//! times interleaved, and the median time per configuration is compared:
//!
//! - `off`: the same `Watched` indices, never `watch`ed (one relaxed load per access);
//! - `full`: watched, every access tracked;
//! - `sampled`: watched, one access in `64` (64) tracked
//!   after each thread's warm-up (the default).
//!
//! `--work W` sets the hashing rounds per message on the producer, a quarter of it on
//! the consumer (the demo's 256/64 by default; 0 measures the bare ring, the worst
//! case). It also prints one thread's cost per access on a watched line nobody else
//! touches. Targets: full tracking ≤ 1.2×, sampled ≤ 1.05× with the demo's work.
//!
//! Then plain data (`sharing::watch_plain`): Phoenix's histogram on a plain
//! `Vec<u64>`, two threads with 3096-B counter blocks (one line straddled), `--pixels P`
//! per thread, unwatched vs watched by hardware watchpoints at the default rate, with
//! the writes the watchpoints saw and the cost per hit they imply. Target ≤ 1.05×.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use yieldprof::Watched;

const CAPACITY: u64 = 1024;

#[repr(C, align(64))]
#[derive(Default)]
struct Packed {
    head: Watched<AtomicU64>,
    tail: Watched<AtomicU64>,
}

struct Ring {
    idx: Packed,
    slots: Box<[AtomicU64]>,
}

impl Ring {
    fn try_push(&self, v: u64, head: &mut u64) -> bool {
        let tail = self.idx.tail.load(Ordering::Relaxed);
        if tail - *head == CAPACITY {
            *head = self.idx.head.load(Ordering::Acquire);
            if tail - *head == CAPACITY {
                return false;
            }
        }
        self.slots[(tail % CAPACITY) as usize].store(v, Ordering::Relaxed);
        self.idx.tail.store(tail + 1, Ordering::Release);
        true
    }

    fn try_pop(&self, tail: &mut u64) -> Option<u64> {
        let head = self.idx.head.load(Ordering::Relaxed);
        if head == *tail {
            *tail = self.idx.tail.load(Ordering::Acquire);
            if head == *tail {
                return None;
            }
        }
        let v = self.slots[(head % CAPACITY) as usize].load(Ordering::Relaxed);
        self.idx.head.store(head + 1, Ordering::Release);
        Some(v)
    }

    #[yieldprof::instrument_wait]
    fn wait_for_space(&self) {
        while self.idx.tail.load(Ordering::Relaxed) - self.idx.head.load(Ordering::Acquire)
            == CAPACITY
        {
            std::hint::spin_loop();
        }
    }

    #[yieldprof::instrument_wait]
    fn wait_for_message(&self) {
        let head = self.idx.head.load(Ordering::Relaxed);
        while self.idx.tail.load(Ordering::Acquire) == head {
            std::hint::spin_loop();
        }
    }
}

fn process(v: u64, rounds: u32) -> u64 {
    let mut h = v ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..rounds {
        h = h.rotate_left(5).wrapping_mul(0x0100_0000_01b3) ^ v;
    }
    h
}

fn ring_time(watched: bool, messages: u64, work: u32) -> Duration {
    let ring = Arc::new(Ring {
        idx: Packed::default(),
        slots: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
    });
    if watched {
        yieldprof::watch(&ring.idx.head, "head");
        yieldprof::watch(&ring.idx.tail, "tail");
    }
    let start = Instant::now();
    let producer = {
        let ring = ring.clone();
        std::thread::spawn(move || {
            let mut head = 0;
            for i in 0..messages {
                let v = process(i, work);
                while !ring.try_push(v, &mut head) {
                    ring.wait_for_space();
                }
            }
        })
    };
    let consumer = {
        let ring = ring.clone();
        std::thread::spawn(move || {
            let (mut tail, mut sum, mut got) = (0, 0u64, 0);
            while got < messages {
                match ring.try_pop(&mut tail) {
                    Some(v) => {
                        sum = sum.wrapping_add(process(v, work / 4));
                        got += 1;
                    }
                    None => ring.wait_for_message(),
                }
            }
            sum
        })
    };
    producer.join().expect("producer");
    std::hint::black_box(consumer.join().expect("consumer"));
    start.elapsed()
}

/// One thread storing to a watched line of its own: the CPU cost of tracking.
fn per_access_ns(watched: bool) -> f64 {
    let w: Box<Watched<AtomicU64>> = Box::new(Watched::new(0));
    if watched {
        yieldprof::watch(&*w, "private");
    }
    let n = 2_000_000u64;
    let start = Instant::now();
    for i in 0..n {
        w.store(i, Ordering::Relaxed);
        std::hint::black_box(w.load(Ordering::Relaxed));
    }
    start.elapsed().as_nanos() as f64 / (2 * n) as f64
}

/// Phoenix histogram: per-thread counter blocks of 3096 B in one `Vec<u64>`, three
/// counters per pixel, each a load and a store to memory as in the C code.
/// CPU time of the whole process so far (every thread, user and kernel): what the
/// watchpoints cost, less disturbed than wall time by other load on the machine.
fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// Wall and process CPU time of the workload, and what the watchpoints did.
fn histogram_time(
    watched: bool,
    pixels: u64,
) -> (Duration, Duration, yieldprof::sharing::WatchpointStatus) {
    const STRIDE_WORDS: usize = 3096 / 8;
    let mut counts = vec![0u64; 2 * STRIDE_WORDS];
    let guard = watched.then(|| yieldprof::sharing::watch_plain(&counts[..], "histogram"));
    let (start, cpu) = (Instant::now(), process_cpu());
    std::thread::scope(|s| {
        for block in counts.chunks_mut(STRIDE_WORDS) {
            s.spawn(move || {
                let n = block.len() as u64;
                for i in 0..pixels {
                    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
                    for channel in 0..3 {
                        let k = ((x >> (channel * 8)) + channel * 131) % n;
                        let p: *mut u64 = &mut block[k as usize];
                        // SAFETY: `p` comes from a live `&mut` into this thread's block.
                        unsafe { p.write_volatile(p.read_volatile() + 1) };
                    }
                }
            });
        }
    });
    let (t, cpu) = (start.elapsed(), process_cpu() - cpu);
    let status = yieldprof::sharing::watchpoints();
    drop(guard);
    std::hint::black_box(&counts);
    (t, cpu, status)
}

fn arg<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> T {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages = arg(&args, "--messages", 1_000_000u64);
    let rounds = arg(&args, "--rounds", 5usize);
    let work = arg(&args, "--work", 256u32);
    let pixels = arg(&args, "--pixels", 100_000_000u64);
    if let Some(i) = args.iter().position(|a| a == "--plain") {
        let (t, cpu, s) = histogram_time(args[i + 1] == "watchpoints", pixels);
        let window = s.window.as_secs_f64() * 1e3;
        println!(
            "{} {} {} {} {window} {}",
            t.as_nanos(),
            cpu.as_nanos(),
            s.hits,
            s.windows,
            s.lost
        );
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let mode = args[i + 1].as_str();
        yieldprof::sharing::set_watch_sampling(match mode {
            "full" => 1,
            _ => 64,
        });
        let t = ring_time(mode != "off", messages, work);
        let access = per_access_ns(mode != "off");
        println!("{} {access}", t.as_nanos());
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let modes = ["off", "full", "sampled"];
    let mut ring: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut access: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (m, mode) in modes.iter().enumerate() {
            let out = std::process::Command::new(&exe)
                .args(["--child", mode, "--messages", &messages.to_string()])
                .args(["--work", &work.to_string()])
                .output()
                .expect("run a configuration");
            assert!(out.status.success(), "{mode}: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().unwrap());
            ring[m].push(fields.next().unwrap() / 1e6);
            access[m].push(fields.next().unwrap());
        }
    }
    println!(
        "unpadded SPSC ring, {messages} messages, work {work} rounds/message, median of {rounds}"
    );
    let off = median(ring[0].clone());
    for (m, mode) in modes.iter().enumerate() {
        let t = median(ring[m].clone());
        println!(
            "  {mode:<8} {t:>9.1} ms  {:>5.2}x off   one thread: {:>5.1} ns/access",
            t / off,
            median(access[m].clone())
        );
    }
    plain(&exe, rounds, pixels);
}

/// The plain-data rows: Phoenix's histogram unwatched and watched by hardware
/// watchpoints, each configuration in its own process, interleaved.
fn plain(exe: &std::path::Path, rounds: usize, pixels: u64) {
    let modes = ["unwatched", "watchpoints"];
    let mut runs: Vec<Vec<[f64; 5]>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (m, mode) in modes.iter().enumerate() {
            let out = std::process::Command::new(exe)
                .args(["--plain", mode, "--pixels", &pixels.to_string()])
                .output()
                .expect("run a configuration");
            assert!(out.status.success(), "{mode}: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            let f: Vec<f64> = text
                .split_whitespace()
                .map(|f| f.parse().unwrap())
                .collect();
            runs[m].push([f[0] / 1e6, f[1] / 1e6, f[2], f[3], f[4]]);
        }
    }
    println!(
        "plain Vec<u64>, Phoenix histogram, 2 threads x {pixels} pixels (3 counters each), \
         median of {rounds}"
    );
    let col = |m: usize, k: usize| median(runs[m].iter().map(|r| r[k]).collect());
    let (wall_off, cpu_off) = (col(0, 0), col(0, 1));
    for (m, mode) in modes.iter().enumerate() {
        let (wall, cpu, hits) = (col(m, 0), col(m, 1), col(m, 2));
        print!(
            "  {mode:<12} wall {wall:>8.1} ms {:>5.2}x   cpu {cpu:>8.1} ms {:>5.2}x",
            wall / wall_off,
            cpu / cpu_off
        );
        if hits > 0.0 {
            print!(
                "   {hits:.0} writes seen ({:.0}/s), {:.0} windows of {:.1} ms; {:.1} us of extra \
                 cpu per hit, windows included",
                hits / (wall / 1e3),
                col(m, 3),
                col(m, 4),
                (cpu - cpu_off) * 1e3 / hits
            );
        }
        println!();
    }
}
