//! The main demo: an SPSC ring buffer, producer and consumer on two threads, with the
//! wait loops annotated (seed 002's case).
//!
//! `cargo run --release -p yieldprof-demo` runs four configurations, each in its own
//! process so each writes its own profile:
//!
//! - `--layout packed|padded`: `head` and `tail` on one cache line, or 128 B apart;
//! - `--wait spin|backoff`: the consumer spins, or backs off spin ×64 → yield ×16 →
//!   sleep 50 µs (seed 000 §5.4).
//!
//! `head` and `tail` are `yieldprof::Watched` and registered with `yieldprof::watch`,
//! so the summary's "False sharing" section names the shared line in the packed layout
//! (and the flame graph marks the wait sites that spin on it).
//!
//! Then it prints a comparison. Files go to `target/yieldprof/spsc-<layout>-<wait>.*`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use yieldprof::Watched;

const CAPACITY: u64 = 1024;
const MESSAGES: u64 = 1_000_000;

/// Where the two indices live: the only difference between the layouts.
trait Indices: Default + Send + Sync + 'static {
    fn head(&self) -> &Watched<AtomicU64>;
    fn tail(&self) -> &Watched<AtomicU64>;
}

/// `head` and `tail` side by side: offsets 0 and 8 of one 64-B cache line.
#[derive(Default)]
#[repr(C, align(64))]
struct Packed {
    head: Watched<AtomicU64>,
    tail: Watched<AtomicU64>,
}

impl Indices for Packed {
    fn head(&self) -> &Watched<AtomicU64> {
        &self.head
    }
    fn tail(&self) -> &Watched<AtomicU64> {
        &self.tail
    }
}

/// 128 B per index: the adjacent-line prefetcher pairs 64-B lines.
#[derive(Default)]
#[repr(align(128))]
struct Line(Watched<AtomicU64>);

#[derive(Default)]
struct Padded {
    head: Line,
    tail: Line,
}

impl Indices for Padded {
    fn head(&self) -> &Watched<AtomicU64> {
        &self.head.0
    }
    fn tail(&self) -> &Watched<AtomicU64> {
        &self.tail.0
    }
}

struct Ring<I> {
    idx: I,
    slots: Box<[AtomicU64]>,
}

impl<I: Indices> Ring<I> {
    fn new() -> Self {
        Ring {
            idx: I::default(),
            slots: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Producer side. `head` is the consumer's index, cached so the producer reads
    /// the consumer's line only when the ring looks full (as in rigtorp's SPSCQueue).
    fn try_push(&self, v: u64, head: &mut u64) -> bool {
        let tail = self.idx.tail().load(Ordering::Relaxed);
        if tail - *head == CAPACITY {
            *head = self.idx.head().load(Ordering::Acquire);
            if tail - *head == CAPACITY {
                return false;
            }
        }
        self.slots[(tail % CAPACITY) as usize].store(v, Ordering::Relaxed);
        self.idx.tail().store(tail + 1, Ordering::Release);
        true
    }

    /// Consumer side, with the producer's index cached the same way.
    fn try_pop(&self, tail: &mut u64) -> Option<u64> {
        let head = self.idx.head().load(Ordering::Relaxed);
        if head == *tail {
            *tail = self.idx.tail().load(Ordering::Acquire);
            if head == *tail {
                return None;
            }
        }
        let v = self.slots[(head % CAPACITY) as usize].load(Ordering::Relaxed);
        self.idx.head().store(head + 1, Ordering::Release);
        Some(v)
    }

    /// The producer waits for a free slot by spinning.
    #[yieldprof::instrument_wait]
    fn wait_for_space(&self) {
        while self.idx.tail().load(Ordering::Relaxed) - self.idx.head().load(Ordering::Acquire)
            == CAPACITY
        {
            std::hint::spin_loop();
        }
    }

    /// The consumer waits for a message by pure spinning.
    #[yieldprof::instrument_wait]
    fn spin_for_message(&self) {
        let head = self.idx.head().load(Ordering::Relaxed);
        while self.idx.tail().load(Ordering::Acquire) == head {
            std::hint::spin_loop();
        }
    }

    /// The consumer waits with layered backoff: spin ×64, yield ×16, then sleep.
    #[yieldprof::instrument_wait]
    fn backoff_for_message(&self) {
        let head = self.idx.head().load(Ordering::Relaxed);
        let mut round = 0u32;
        while self.idx.tail().load(Ordering::Acquire) == head {
            if round < 64 {
                std::hint::spin_loop();
            } else if round < 80 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
            round += 1;
        }
    }
}

/// Stand-in business work: `rounds` of hashing (~1 ns each). The producer does 4×
/// the consumer's work per message, so the consumer waits most of the time.
fn process(v: u64, rounds: u32) -> u64 {
    let mut h = v ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..rounds {
        h = h.rotate_left(5).wrapping_mul(0x0100_0000_01b3) ^ v;
    }
    h
}

fn run<I: Indices>(backoff: bool, messages: u64) -> (Duration, u64) {
    let ring = Arc::new(Ring::<I>::new());
    yieldprof::watch(ring.idx.head(), "head");
    yieldprof::watch(ring.idx.tail(), "tail");
    let start = Instant::now();
    let producer = {
        let ring = ring.clone();
        std::thread::Builder::new()
            .name("producer".into())
            .spawn(move || {
                let mut head = 0;
                for i in 0..messages {
                    let v = {
                        yieldprof::frame!("produce");
                        process(i, 256)
                    };
                    while !ring.try_push(v, &mut head) {
                        ring.wait_for_space();
                    }
                }
            })
            .expect("spawn producer")
    };
    let consumer = std::thread::Builder::new()
        .name("consumer".into())
        .spawn(move || {
            let mut sum = 0u64;
            let mut got = 0;
            let mut tail = 0;
            while got < messages {
                match ring.try_pop(&mut tail) {
                    Some(v) => {
                        yieldprof::frame!("consume");
                        sum = sum.wrapping_add(process(v, 64));
                        got += 1;
                    }
                    None if backoff => ring.backoff_for_message(),
                    None => ring.spin_for_message(),
                }
            }
            sum
        })
        .expect("spawn consumer");
    producer.join().expect("producer");
    let sum = consumer.join().expect("consumer");
    (start.elapsed(), sum)
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// One configuration in this process: runs the ring, prints `RESULT <msg/s>`, and
/// writes `spsc-<layout>-<wait>.*` when the guard drops.
fn child(layout: &str, wait: &str, messages: u64) {
    let _guard = yieldprof::Options::from_env()
        .name(format!("spsc-{layout}-{wait}"))
        .init();
    let backoff = wait == "backoff";
    let (elapsed, sum) = match layout {
        "padded" => run::<Padded>(backoff, messages),
        _ => run::<Packed>(backoff, messages),
    };
    println!(
        "RESULT {:.0} {sum:x}",
        messages as f64 / elapsed.as_secs_f64()
    );
}

/// What the comparison table shows of one configuration, read from its JSON.
fn row(layout: &str, wait: &str, rate: f64, json: &serde_json::Value) -> String {
    let consumer = json["threads"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "consumer"));
    let share = |key: &str| consumer.map_or(0.0, |c| c[key].as_f64().unwrap_or(0.0));
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| -> u64 {
        json["sites"]
            .as_array()
            .map_or(0, |s| s.iter().map(f).sum())
    };
    let spin_ms = sum(&|s| s["spin_ns"].as_u64().unwrap_or(0)) as f64 / 1e6;
    let calls = |kind: &str| {
        sum(&|s| {
            s["calls"].as_array().map_or(0, |c| {
                c.iter()
                    .filter(|c| c["kind"] == kind)
                    .map(|c| c["calls"].as_u64().unwrap_or(0))
                    .sum()
            })
        })
    };
    let mut rules: Vec<&str> = json["findings"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["rule"].as_str()).collect())
        .unwrap_or_default();
    rules.dedup();
    format!(
        "{layout:<7} {wait:<8} {:>9.2}M {:>8.0}% {:>10.0} {:>8} {:>7}  {}",
        rate / 1e6,
        100.0 * share("wait_share"),
        spin_ms,
        calls("yield"),
        calls("sleep"),
        if rules.is_empty() {
            "-".to_string()
        } else {
            rules.join(", ")
        }
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages = arg(&args, "--messages")
        .and_then(|m| m.parse().ok())
        .unwrap_or(MESSAGES);
    if let (Some(layout), Some(wait)) = (arg(&args, "--layout"), arg(&args, "--wait")) {
        child(&layout, &wait, messages);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let out = yieldprof::Options::from_env().out_dir;
    println!("SPSC ring, {messages} messages, producer and consumer on two threads");
    let mut rows = Vec::new();
    for (layout, wait) in [
        ("packed", "spin"),
        ("padded", "spin"),
        ("packed", "backoff"),
        ("padded", "backoff"),
    ] {
        let run = std::process::Command::new(&exe)
            .args(["--layout", layout, "--wait", wait, "--messages"])
            .arg(messages.to_string())
            .output()
            .expect("run a configuration");
        assert!(
            run.status.success(),
            "{layout}/{wait} failed: {}",
            run.status
        );
        let stdout = String::from_utf8_lossy(&run.stdout);
        let rate: f64 = stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .and_then(|r| r.split(' ').next()?.parse().ok())
            .expect("the child prints its rate");
        let name = format!("spsc-{layout}-{wait}");
        let text = std::fs::read_to_string(out.join(format!("{name}.json"))).expect("json");
        let json: serde_json::Value = serde_json::from_str(&text).expect("valid json");
        if (layout, wait) == ("packed", "spin") {
            let summary = std::fs::read_to_string(out.join(format!("{name}.txt")));
            println!("\n{}", summary.unwrap_or_default());
        }
        rows.push(row(layout, wait, rate, &json));
    }
    println!("Comparison (consumer's wait share; spin = CPU burnt spinning in wait sites)");
    println!(
        "{:<7} {:<8} {:>10} {:>9} {:>10} {:>8} {:>7}  findings",
        "layout", "wait", "msg/s", "waiting", "spin ms", "yields", "sleeps"
    );
    rows.iter().for_each(|r| println!("{r}"));
    let doc = |name: &str| -> Option<yieldprof::report::json::Document> {
        let text = std::fs::read_to_string(out.join(format!("{name}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    };
    if let (Some(packed), Some(padded)) = (doc("spsc-packed-spin"), doc("spsc-padded-spin")) {
        println!("\nPacked → padded (spin), site by site");
        print!("{}", yieldprof::report::compare(&packed, &padded));
    }
    let diff = out.join("spsc-diff-packed-vs-padded.svg");
    let svg = std::fs::File::create(&diff).map_err(|e| e.to_string());
    let made = svg.and_then(|f| {
        yieldprof::report::diff(
            &out.join("spsc-packed-spin.folded"),
            &out.join("spsc-padded-spin.folded"),
            std::io::BufWriter::new(f),
        )
        .map_err(|e| e.to_string())
    });
    match made {
        Ok(()) => println!(
            "\nfiles: {}/spsc-*.{{svg,split.svg,folded,json,txt,pb.gz,trace.json}}, diff {}",
            out.display(),
            diff.display()
        ),
        Err(e) => eprintln!("differential graph not written: {e}"),
    }
}
