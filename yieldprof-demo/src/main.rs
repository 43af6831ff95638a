//! The main demo: an SPSC ring buffer, producer and consumer on two threads pinned to two
//! cores, with the wait loops annotated (the classic false-sharing case: in a .NET
//! write-up this project started from, `head` and `tail` on one cache line held such a ring
//! to 22k msg/s, against 52k msg/s padded).
//!
//! `cargo run --release -p yieldprof-demo` runs each configuration in its own process, so
//! each writes its own profile:
//!
//! - `--layout packed|padded`: `head` and `tail` on one cache line, or 128 B apart;
//! - `--wait spin|backoff`: the consumer spins, or backs off spin ×64 → yield ×16 →
//!   sleep 50 µs (the usual layered backoff: spin about as long as one syscall, then yield).
//!
//! Packed and padded (spinning) alternate for several rounds of a fixed time, so that both
//! see the same machine; then each backoff configuration runs once. Messages go in batches
//! of 64, each published as soon as it is written: every message is a read-modify-write
//! of the sender's index and of the receiver's, which in the packed layout takes the line
//! from the other core each time. The per-message work is small, so that cost shows.
//!
//! `head` and `tail` are `yieldprof::Watched` and registered with `yieldprof::watch`, so
//! the summary's "False sharing" section names the shared line and both fields, and the
//! flame graph and the site-by-site comparison mark the wait sites that spin on it.
//!
//! Files go to `target/yieldprof/spsc-<layout>-<wait>.*` (the last round's), plus the
//! differential graph `spsc-diff-packed-vs-padded.svg`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use yieldprof::report::json::Document;
use yieldprof::Watched;

const CAPACITY: u64 = 256;
/// Messages per send and per receive: each side waits for room for, or the arrival of, a
/// whole batch, so that the two sides then run side by side instead of in lock-step, one
/// message at a time. Each batch is one wait episode.
const BATCH: usize = 64;
const RUN: Duration = Duration::from_millis(200);
const ROUNDS: usize = 9;
/// Hashing rounds per message on each side (~1 ns each): small, so the cost of moving
/// the indices' line between cores is not hidden behind the work.
const WORK: u32 = 4;

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

/// Where the producer stopped: `u64::MAX` until it has sent its last batch. On a
/// line of its own, read only by a consumer that waits.
#[repr(align(128))]
struct End(AtomicU64);

struct Ring<I> {
    idx: I,
    slots: Box<[AtomicU64]>,
    end: End,
}

impl<I: Indices> Ring<I> {
    fn new() -> Self {
        Ring {
            idx: I::default(),
            slots: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
            end: End(AtomicU64::new(u64::MAX)),
        }
    }

    /// The producer sends a batch: it waits, spinning, for room for all of it, then
    /// writes and publishes each message in turn.
    #[yieldprof::instrument_wait]
    fn wait_for_space(&self, batch: &[u64; BATCH]) {
        let tail = self.idx.tail().load(Ordering::Relaxed);
        while tail + BATCH as u64 - self.idx.head().load(Ordering::Acquire) > CAPACITY {
            std::hint::spin_loop();
        }
        for (i, &v) in batch.iter().enumerate() {
            self.slots[((tail + i as u64) % CAPACITY) as usize].store(v, Ordering::Relaxed);
            self.idx.tail().fetch_add(1, Ordering::Release);
        }
    }

    /// The consumer waits, spinning, until a batch has arrived past its cached copy
    /// `tail` of the producer's index; false once the producer has stopped and
    /// everything it sent was received.
    #[yieldprof::instrument_wait]
    fn spin_for_message(&self, head: u64, tail: &mut u64) -> bool {
        loop {
            if let Some(more) = self.poll(head, tail) {
                return more;
            }
            std::hint::spin_loop();
        }
    }

    /// The consumer waits with layered backoff: spin ×64, yield ×16, then sleep.
    #[yieldprof::instrument_wait]
    fn backoff_for_message(&self, head: u64, tail: &mut u64) -> bool {
        let mut round = 0u32;
        loop {
            if let Some(more) = self.poll(head, tail) {
                return more;
            }
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

    /// Refreshes `tail`; `Some(true)` once a batch has arrived past `head` (or, the
    /// producer having stopped, whatever it sent last), `Some(false)` once everything
    /// was received, `None` while the consumer must wait.
    fn poll(&self, head: u64, tail: &mut u64) -> Option<bool> {
        *tail = self.idx.tail().load(Ordering::Acquire);
        if *tail - head >= BATCH as u64 {
            return Some(true);
        }
        let end = self.end.0.load(Ordering::Acquire);
        (end != u64::MAX).then(|| {
            *tail = end;
            end > head
        })
    }

    /// The message at `head`, its slot released at once. Reads the consumer's own index
    /// on the shared line, and writes it, on every message.
    fn take(&self) -> (u64, u64) {
        let head = self.idx.head().load(Ordering::Relaxed);
        let v = self.slots[(head % CAPACITY) as usize].load(Ordering::Relaxed);
        self.idx.head().fetch_add(1, Ordering::Release);
        (head + 1, v)
    }
}

/// Stand-in business work: `WORK` rounds of hashing.
fn process(v: u64) -> u64 {
    let mut h = v ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..WORK {
        h = h.rotate_left(5).wrapping_mul(0x0100_0000_01b3) ^ v;
    }
    h
}

/// The CPUs this process may run on (`sched_getaffinity`), lowest first.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it in.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to `cpu`; false where the kernel refuses.
fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
    }
}

/// Runs the ring for `run`: the messages sent, the time from both threads' start to
/// the last one received, and a checksum of what the consumer received. `cpus`: the
/// producer's and the consumer's.
fn ring<I: Indices>(
    backoff: bool,
    run: Duration,
    cpus: Option<[usize; 2]>,
) -> (u64, Duration, u64) {
    let ring = Arc::new(Ring::<I>::new());
    yieldprof::watch(ring.idx.head(), "head");
    yieldprof::watch(ring.idx.tail(), "tail");
    let start = Arc::new(Barrier::new(3));
    let pinned = move |side: usize| {
        if let Some(cpus) = cpus {
            if !pin(cpus[side]) {
                eprintln!("note: could not pin to CPU {}", cpus[side]);
            }
        }
    };
    let producer = {
        let (ring, start) = (ring.clone(), start.clone());
        std::thread::Builder::new()
            .name("producer".into())
            .spawn(move || {
                pinned(0);
                start.wait();
                let deadline = Instant::now() + run;
                let (mut sent, mut batch) = (0, [0; BATCH]);
                while Instant::now() < deadline {
                    for v in &mut batch {
                        *v = process(sent);
                        sent += 1;
                    }
                    ring.wait_for_space(&batch);
                }
                ring.end.0.store(sent, Ordering::Release);
                sent
            })
            .expect("spawn producer")
    };
    let consumer = {
        let start = start.clone();
        std::thread::Builder::new()
            .name("consumer".into())
            .spawn(move || {
                pinned(1);
                start.wait();
                let (mut sum, mut head, mut tail) = (0u64, 0, 0);
                loop {
                    if head == tail {
                        let more = if backoff {
                            ring.backoff_for_message(head, &mut tail)
                        } else {
                            ring.spin_for_message(head, &mut tail)
                        };
                        if !more {
                            break;
                        }
                    }
                    let v;
                    (head, v) = ring.take();
                    sum = sum.wrapping_add(process(v));
                }
                sum
            })
            .expect("spawn consumer")
    };
    start.wait();
    let began = Instant::now();
    let sent = producer.join().expect("producer");
    let sum = consumer.join().expect("consumer");
    (sent, began.elapsed(), sum)
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// One configuration in this process: runs the ring, prints `RESULT <msg/s>`, and
/// writes `spsc-<layout>-<wait>.*` when the guard drops.
fn child(layout: &str, wait: &str, run: Duration, cpus: Option<[usize; 2]>) {
    let _guard = yieldprof::Options::from_env()
        .name(format!("spsc-{layout}-{wait}"))
        .init();
    let backoff = wait == "backoff";
    let (messages, elapsed, sum) = match layout {
        "padded" => ring::<Padded>(backoff, run, cpus),
        _ => ring::<Packed>(backoff, run, cpus),
    };
    println!(
        "RESULT {:.0} {sum:x}",
        messages as f64 / elapsed.as_secs_f64()
    );
}

/// One configuration run in a child process: its rate and its report.
struct Outcome {
    rate: f64,
    doc: Document,
}

impl Outcome {
    /// The largest share of a ring thread's wall time spent runnable but waiting for a
    /// CPU: other processes took the cores from the pinned threads.
    fn queued(&self) -> f64 {
        let share = |t: &yieldprof::report::json::Thread| {
            t.run_queue_ns.unwrap_or(0) as f64 / t.wall_ns.max(1) as f64
        };
        self.doc.threads.iter().map(share).fold(0.0, f64::max)
    }
}

/// Runs `--layout layout --wait wait` in a child process and reads its report.
fn configuration(
    exe: &std::path::Path,
    out: &std::path::Path,
    layout: &str,
    wait: &str,
    run: Duration,
    cpus: &str,
) -> Result<Outcome, String> {
    let run = std::process::Command::new(exe)
        .args(["--layout", layout, "--wait", wait, "--cpus", cpus, "--ms"])
        .arg(run.as_millis().to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() {
        return Err(format!("{layout}/{wait} failed: {}\n{stderr}", run.status));
    }
    // The files are listed once at the end; anything else the child says is shown.
    let said = stderr
        .lines()
        .filter(|l| !l.starts_with("yieldprof: wrote "));
    said.for_each(|l| eprintln!("{l}"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let rate = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|r| r.split(' ').next()?.parse().ok())
        .ok_or_else(|| format!("{layout}/{wait} printed no rate: {stdout}"))?;
    let path = out.join(format!("spsc-{layout}-{wait}.json"));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Outcome { rate, doc })
}

/// What the comparison table shows of one configuration.
fn row(layout: &str, wait: &str, rate: f64, doc: &Document) -> String {
    let waiting = doc
        .threads
        .iter()
        .find(|t| t.name == "consumer")
        .map_or(0.0, |t| t.wait_share);
    let spin_ms = doc.sites.iter().map(|s| s.spin_ns).sum::<u64>() as f64 / 1e6;
    let calls = |kind: &str| -> u64 {
        let of_kind = doc.sites.iter().flat_map(|s| &s.calls);
        of_kind.filter(|c| c.kind == kind).map(|c| c.calls).sum()
    };
    let mut rules: Vec<&str> = doc.findings.iter().map(|f| f.rule.as_str()).collect();
    rules.dedup();
    format!(
        "{layout:<7} {wait:<8} {:>9.2}M {:>8.0}% {:>10.0} {:>8} {:>7}  {}",
        rate / 1e6,
        100.0 * waiting,
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

/// The median of `v` (sorted in place); `v` is not empty.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One decimal, or two significant digits below 1 (a starved round: 0.031×, not 0.0×).
fn ratio_text(r: f64) -> String {
    let decimals = 1 + (-r.log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{r:.decimals$}")
}

/// The summary's "False sharing" section, from its heading to the next blank line.
fn sharing_section(summary: &str) -> String {
    let lines = summary
        .lines()
        .skip_while(|l| !l.starts_with("False sharing"));
    let section: Vec<&str> = lines.take_while(|l| !l.is_empty()).collect();
    section.join("\n")
}

/// What `--help` prints: the options a user may give, with their defaults.
fn usage() -> String {
    format!(
        "spsc: the yieldprof demo. An SPSC ring profiled with `head` and `tail` on one cache line
(packed) and 128 B apart (padded); writes target/yieldprof/spsc-*.{{svg,json,txt,...}}

usage: spsc [--rounds N] [--ms MS]
  --rounds N   packed/padded rounds with the consumer spinning (default {ROUNDS})
  --ms MS      length of each run in milliseconds (default {})
  -h, --help   print this and exit

environment: YIELDPROF_OUT=DIR writes the files to DIR instead of target/yieldprof
",
        RUN.as_millis()
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().skip(1).any(|a| a == "-h" || a == "--help") {
        print!("{}", usage());
        return;
    }
    let run = arg(&args, "--ms")
        .and_then(|m| m.parse().ok())
        .filter(|&ms| ms > 0)
        .map_or(RUN, Duration::from_millis);
    if let (Some(layout), Some(wait)) = (arg(&args, "--layout"), arg(&args, "--wait")) {
        let cpus = arg(&args, "--cpus").and_then(|c| {
            let (a, b) = c.split_once(',')?;
            Some([a.parse().ok()?, b.parse().ok()?])
        });
        child(&layout, &wait, run, cpus);
        return;
    }
    let rounds = arg(&args, "--rounds")
        .and_then(|r| r.parse().ok())
        .filter(|&r: &usize| r > 0)
        .unwrap_or(ROUNDS);
    if let Err(e) = demo(run, rounds) {
        eprintln!("demo failed: {e}");
        std::process::exit(1);
    }
}

fn demo(run_for: Duration, rounds: usize) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let out = yieldprof::Options::from_env().out_dir;
    let allowed = allowed_cpus();
    let cpus = match allowed[..] {
        [a, b, ..] => {
            println!(
                "SPSC ring, runs of {run_for:?}, producer pinned to CPU {a}, consumer to CPU {b}"
            );
            format!("{a},{b}")
        }
        _ => {
            println!(
                "SPSC ring, runs of {run_for:?}. Only {} CPU allowed to this process: the \
                 threads are not pinned and take turns on it, so their line never moves between \
                 cores and the two layouts run alike.",
                allowed.len()
            );
            "none".to_string()
        }
    };
    let run = |layout: &str, wait: &str| configuration(&exe, &out, layout, wait, run_for, &cpus);

    println!("\nPacked and padded rings, spinning, alternating ({rounds} rounds)");
    println!(
        "round  {:>13} {:>13}  {:>13}  queued for a CPU (packed, padded)",
        "packed msg/s", "padded msg/s", "padded/packed"
    );
    let (mut packed_rates, mut padded_rates, mut ratios) = (vec![], vec![], vec![]);
    let mut queued: f64 = 0.0;
    let mut last = None;
    for round in 1..=rounds {
        let packed = run("packed", "spin")?;
        let padded = run("padded", "spin")?;
        let ratio = padded.rate / packed.rate;
        println!(
            "{round:>5}  {:>12.2}M {:>12.2}M  {:>12.2}×  {:>7.1}% {:>7.1}%",
            packed.rate / 1e6,
            padded.rate / 1e6,
            ratio,
            100.0 * packed.queued(),
            100.0 * padded.queued()
        );
        queued = queued.max(packed.queued()).max(padded.queued());
        packed_rates.push(packed.rate);
        padded_rates.push(padded.rate);
        ratios.push(ratio);
        last = Some((packed, padded));
    }
    let (packed, padded) = last.expect("at least one round");

    let summary = std::fs::read_to_string(out.join("spsc-packed-spin.txt")).unwrap_or_default();
    println!("\nThe packed run's report (last round), {}", {
        let section = sharing_section(&summary);
        if section.is_empty() {
            "found no falsely shared line".to_string()
        } else {
            format!("spsc-packed-spin.txt:\n{section}")
        }
    });
    let lines: Vec<String> = padded
        .doc
        .sharing
        .iter()
        .map(|l| {
            let names: Vec<&str> = l.words.iter().map(|w| w.name.as_str()).collect();
            format!("`{}` {}", names.join("`, `"), l.verdict)
        })
        .collect();
    println!("The padded run's watched lines: {}", lines.join("; "));

    let backoff = [run("packed", "backoff")?, run("padded", "backoff")?];
    println!(
        "\nComparison (msg/s: median of the rounds; waiting: the consumer's share; spin: CPU \
         burnt in waits)"
    );
    println!(
        "{:<7} {:<8} {:>10} {:>9} {:>10} {:>8} {:>7}  findings",
        "layout", "wait", "msg/s", "waiting", "spin ms", "yields", "sleeps"
    );
    println!(
        "{}",
        row("packed", "spin", median(&mut packed_rates), &packed.doc)
    );
    println!(
        "{}",
        row("padded", "spin", median(&mut padded_rates), &padded.doc)
    );
    println!(
        "{}",
        row("packed", "backoff", backoff[0].rate, &backoff[0].doc)
    );
    println!(
        "{}",
        row("padded", "backoff", backoff[1].rate, &backoff[1].doc)
    );

    println!("\nPacked → padded (spin, last round), site by site");
    print!("{}", yieldprof::report::compare(&packed.doc, &padded.doc));
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
            "\nfiles: {0}/spsc-*.{{svg,split.svg,folded,json,txt,pb.gz,trace.json}}\n\
             differential flame graph: {1}\n\
             the same table from the files (yieldprof = cargo run --release -p yieldprof-cli --):\n  \
             yieldprof diff {0}/spsc-packed-spin {0}/spsc-padded-spin",
            out.display(),
            diff.display()
        ),
        Err(e) => eprintln!("differential graph not written: {e}"),
    }

    let (low, high) = ratios
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
    println!(
        "\npadded/packed: {}× (rounds {}–{})",
        ratio_text(median(&mut ratios)),
        ratio_text(low),
        ratio_text(high)
    );
    // Unpinned on one CPU the two threads queue behind each other: not other processes.
    if queued > 0.05 && cpus != "none" {
        println!(
            "note: other processes kept a ring thread waiting for a CPU up to {:.0}% of a run;\n  \
             the line moves between cores only while both threads run, so the ratio shrinks\n  \
             and swings with the machine's load",
            100.0 * queued
        );
    }
    Ok(())
}
