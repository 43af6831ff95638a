//! The machine probe: what each wait primitive costs here, whether it gives the core
//! away, and the spin → yield → sleep backoff that follows from it.
//!
//! The founding articles measured `sched_yield`, `sleep(0)` and friends on their
//! machines and got opposite answers (0.8 µs and no switch on one kernel, 95 µs and a
//! full reschedule on another). Only a measurement on *this* machine tells, so
//! [`run`] makes it: each primitive in a loop, alone and then with a busy thread
//! pinned to the same core, counting calls, wall time, thread CPU time and
//! `getrusage` switches. It takes ~5 s (bounded by time, not by call count, so a
//! slow machine finishes as soon).
//!
//! `cargo run --release --example probe` prints the table; `-- --save` also keeps the
//! costs in [`saved_path`] (`target/yieldprof/machine.json`), which later reports on
//! this host load and cite.
//!
//! ```no_run
//! let machine = yieldprof::probe::run();
//! println!("{machine}");
//! let spins = machine.backoff.spins_per_yield;
//! # let _ = spins;
//! ```

pub use crate::analysis::costs::saved_path;
use crate::analysis::costs::{timer_slack_ns, CostSource, Costs, DEFAULT_SWITCH_NS};
use crate::base::host::HostId;
use crate::counters::{self, pin, Capabilities};
use std::fmt;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What the probe measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Machine {
    /// Cores this process may run on (`available_parallelism`).
    pub cores: usize,
    /// The core the probe pinned itself and its competitor to; `None` when
    /// `sched_setaffinity` was refused (then "contended" means "another busy thread
    /// somewhere").
    pub pinned_core: Option<usize>,
    /// The calling thread's timer slack (`prctl(PR_GET_TIMERSLACK)`): every sleep is
    /// rounded up by up to this much.
    pub timer_slack_ns: Option<u64>,
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// What the counters can count here.
    pub capabilities: Capabilities,
    /// One row per primitive, in the order of [`PRIMITIVES`].
    pub primitives: Vec<Primitive>,
    /// Cost of one context switch: two threads on one core taking turns with
    /// `sched_yield`, wall time over switches. `None` without pinning (or when the
    /// scheduler did not switch).
    pub switch_ns: Option<f64>,
    /// One `getrusage(RUSAGE_THREAD)`, in ns.
    pub getrusage_ns: f64,
    /// One read of a thread's perf software group, in ns (`None` without perf).
    pub perf_read_ns: Option<f64>,
    /// The backoff that follows from the figures.
    pub backoff: Backoff,
    /// How long the probe took.
    pub elapsed: Duration,
}

/// One wait primitive, measured twice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Primitive {
    /// As in [`PRIMITIVES`].
    pub name: &'static str,
    /// Nothing else runnable on its core.
    pub alone: Measure,
    /// A busy thread pinned to the same core.
    pub contended: Measure,
}

/// A primitive called in a loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measure {
    /// Calls made.
    pub calls: u64,
    /// Wall time per call.
    pub ns_per_call: f64,
    /// Voluntary context switches per call (the thread blocked or slept).
    pub voluntary_per_call: f64,
    /// Involuntary context switches per call (preempted, or a yield that handed the
    /// core over).
    pub involuntary_per_call: f64,
    /// Thread CPU time over wall time: 1.0 burns the core, ~0 sleeps.
    pub cpu_share: f64,
}

/// A spin → yield → sleep backoff for this machine, layered the usual way: spin about as
/// long as one yield costs, yield about as long as one sleep costs, then sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// `spin_loop()` calls per `sched_yield()`: yield cost / spin cost.
    pub spins_per_yield: u64,
    /// `sched_yield()` calls before sleeping: shortest real sleep / yield cost.
    pub yields_per_sleep: u64,
    /// The shortest real sleep measured (a primitive that did switch out), in ns.
    pub sleep_ns: u64,
}

impl Backoff {
    /// The backoff for these per-call costs (ns): `spin` (a PAUSE), `yield_` (a
    /// `sched_yield` with nobody to yield to) and `sleep` (the shortest real sleep).
    ///
    /// ```
    /// // CONTEXT.md's figures: 35 ns PAUSE, 700 ns yield, 59 µs nanosleep(0).
    /// let b = yieldprof::probe::Backoff::derive(35.0, 700.0, 59_000.0);
    /// assert_eq!((b.spins_per_yield, b.yields_per_sleep), (20, 84));
    /// ```
    pub fn derive(spin: f64, yield_: f64, sleep: f64) -> Backoff {
        let ratio = |a: f64, b: f64| {
            if a.is_finite() && b.is_finite() && b > 0.0 {
                (a / b).round().clamp(1.0, 1e6) as u64
            } else {
                1
            }
        };
        Backoff {
            spins_per_yield: ratio(yield_, spin),
            yields_per_sleep: ratio(sleep, yield_),
            sleep_ns: if sleep.is_finite() {
                sleep.max(0.0) as u64
            } else {
                0
            },
        }
    }
}

/// The primitives the probe measures, in table order.
pub const PRIMITIVES: [&str; 9] = [
    "empty loop",
    "spin_loop",
    "yield_now",
    "sched_yield",
    "sleep(ZERO)",
    "nanosleep(0)",
    "usleep(0)",
    "park_timeout(ZERO)",
    "sleep(1 µs)",
];

fn call(primitive: usize) {
    match primitive {
        0 => black_box(()),
        1 => std::hint::spin_loop(),
        2 => std::thread::yield_now(),
        3 => {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
        4 => std::thread::sleep(Duration::ZERO),
        5 => {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `zero` is a valid timespec; a null remainder is allowed.
            unsafe { libc::nanosleep(&zero, std::ptr::null_mut()) };
        }
        6 => {
            // SAFETY: usleep has no preconditions.
            unsafe { libc::usleep(0) };
        }
        7 => std::thread::park_timeout(Duration::ZERO),
        _ => std::thread::sleep(Duration::from_micros(1)),
    }
}

impl Machine {
    /// The row of the primitive named `name` (one of [`PRIMITIVES`]).
    pub fn primitive(&self, name: &str) -> Option<&Primitive> {
        self.primitives.iter().find(|p| p.name == name)
    }
}

/// Runs the probe (~5 s) and returns what it measured.
pub fn run() -> Machine {
    run_for(Duration::from_millis(250))
}

/// Runs the probe with `per_measurement` for each of the 19 loops.
///
/// ```
/// let m = yieldprof::probe::run_for(std::time::Duration::from_millis(2));
/// assert_eq!(m.primitives.len(), yieldprof::probe::PRIMITIVES.len());
/// // std's sleep(ZERO) returns without a syscall: it never blocks.
/// assert!(m.primitive("sleep(ZERO)").unwrap().alone.voluntary_per_call < 0.01);
/// ```
pub fn run_for(per_measurement: Duration) -> Machine {
    let started = Instant::now();
    // A thread of its own: the pinning never touches the caller's affinity.
    let machine = match std::thread::Builder::new()
        .name("yieldprof-probe".into())
        .spawn(move || probe(per_measurement, started, true))
    {
        Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
        Err(_) => probe(per_measurement, started, false),
    };
    // Later reports judge waits by these figures instead of a quick estimate.
    Costs::from_machine(&machine).remember();
    machine
}

fn probe(target: Duration, started: Instant, may_pin: bool) -> Machine {
    // Before pinning, which leaves this thread one core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok();
    let pinned_core = cpu.filter(|&c| may_pin && pin(c));
    let primitives = (0..PRIMITIVES.len())
        .map(|i| Primitive {
            name: PRIMITIVES[i],
            alone: measure(target, || call(i)),
            contended: with_competitor(pinned_core, || measure(target, || call(i))),
        })
        .collect::<Vec<_>>();
    let switch_ns = pinned_core.and_then(|c| switch_cost(c, target));
    let cost = counters::read_cost(10_000);
    let alone = |name: &str| {
        primitives
            .iter()
            .find(|p| p.name == name)
            .map_or(f64::NAN, |p| p.alone.ns_per_call)
    };
    // The shortest primitive that really slept (switched out on most calls).
    let sleep = primitives
        .iter()
        .filter(|p| p.alone.voluntary_per_call >= 0.5)
        .map(|p| p.alone.ns_per_call)
        .fold(f64::NAN, f64::min);
    let backoff = Backoff::derive(alone("spin_loop"), alone("sched_yield"), sleep);
    Machine {
        cores,
        pinned_core,
        timer_slack_ns: timer_slack_ns(),
        paranoid: counters::paranoid(),
        capabilities: counters::capabilities(),
        primitives,
        switch_ns,
        getrusage_ns: cost.getrusage_ns,
        perf_read_ns: cost.perf_software_ns,
        backoff,
        elapsed: started.elapsed(),
    }
}

struct Usage {
    voluntary: u64,
    involuntary: u64,
    cpu_ns: u64,
}

fn usage() -> Usage {
    // SAFETY: rusage is plain integers; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec. The thread CPU clock has ns
    // resolution where getrusage's utime/stime are tick-based.
    let cpu_ns = if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    } else {
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    Usage {
        voluntary: ru.ru_nvcsw as u64,
        involuntary: ru.ru_nivcsw as u64,
        cpu_ns,
    }
}

/// Calls `f` in growing batches until `target` has passed; the time check costs
/// ~20 ns per batch, nothing per call.
fn measure(target: Duration, mut f: impl FnMut()) -> Measure {
    let (u0, t0) = (usage(), Instant::now());
    let (mut calls, mut batch) = (0u64, 1u64);
    loop {
        for _ in 0..batch {
            f();
        }
        calls += batch;
        let elapsed = t0.elapsed();
        if elapsed >= target {
            break;
        }
        // Grow geometrically, but never past what the remaining time allows: a
        // slow primitive does not overshoot the target by a whole batch.
        let per_call = elapsed.as_nanos() as f64 / calls as f64;
        let left = (target - elapsed).as_nanos() as f64;
        batch = ((left / per_call.max(0.1)) as u64).clamp(1, batch * 2);
    }
    let wall = t0.elapsed().as_nanos().max(1) as f64;
    let u1 = usage();
    let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / calls as f64;
    Measure {
        calls,
        ns_per_call: wall / calls as f64,
        voluntary_per_call: per(u0.voluntary, u1.voluntary),
        involuntary_per_call: per(u0.involuntary, u1.involuntary),
        cpu_share: u1.cpu_ns.saturating_sub(u0.cpu_ns) as f64 / wall,
    }
}

const STARTING: u8 = 0;
const RUNNING: u8 = 1;
const STOP: u8 = 2;

/// Runs `f` while a busy thread runs on `core` (the calling thread's, when pinned).
fn with_competitor<R>(core: Option<usize>, f: impl FnOnce() -> R) -> R {
    let state = Arc::new(AtomicU8::new(STARTING));
    let s = state.clone();
    let competitor = std::thread::Builder::new()
        .name("yieldprof-probe-competitor".into())
        .spawn(move || {
            if let Some(c) = core {
                pin(c);
            }
            s.store(RUNNING, Ordering::Release);
            while s.load(Ordering::Relaxed) != STOP {
                std::hint::spin_loop();
            }
        });
    // Measure only once it is runnable on the core; sleeping lets it be scheduled.
    if competitor.is_ok() {
        while state.load(Ordering::Acquire) == STARTING {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let out = f();
    state.store(STOP, Ordering::Relaxed);
    if let Ok(h) = competitor {
        let _ = h.join();
    }
    out
}

/// Two threads on `core` taking turns with `sched_yield` for `target`: wall time per
/// context switch, the switches counted by getrusage on both sides.
fn switch_cost(core: usize, target: Duration) -> Option<f64> {
    let go = Arc::new(Barrier::new(2));
    let done = Arc::new(AtomicBool::new(false));
    let yield_until_done = |done: &AtomicBool| {
        let u0 = usage();
        while !done.load(Ordering::Relaxed) {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
        let u1 = usage();
        (u1.voluntary + u1.involuntary).saturating_sub(u0.voluntary + u0.involuntary)
    };
    let (g, d) = (go.clone(), done.clone());
    let partner = std::thread::Builder::new()
        .name("yieldprof-probe-partner".into())
        .spawn(move || {
            pin(core);
            g.wait();
            yield_until_done(&d)
        })
        .ok()?;
    go.wait();
    let t0 = Instant::now();
    let d = done.clone();
    let ours = std::thread::scope(|s| {
        // The stop flag is set by a third party so neither yielder reads the clock.
        s.spawn(move || {
            std::thread::sleep(target);
            d.store(true, Ordering::Relaxed);
        });
        yield_until_done(&done)
    });
    let wall = t0.elapsed().as_nanos() as f64;
    let theirs = partner.join().ok()?;
    let switches = ours + theirs;
    // Fewer switches than 1 per 100 µs: the two did not share the core.
    (switches as f64 > wall / 100_000.0).then(|| wall / switches as f64)
}

/// `35` as `35 ns`, `59123` as `59.1 µs`.
fn ns(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v < 10.0 {
        format!("{v:.2} ns")
    } else if v < 1e3 {
        format!("{v:.0} ns")
    } else if v < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{:.2} ms", v / 1e6)
    }
}

impl fmt::Display for Measure {
    /// `ns/call vol/call invol/call CPU%`, 34 columns.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>10} {:>8.3} {:>8.3} {:>4.0}%",
            ns(self.ns_per_call),
            self.voluntary_per_call,
            self.involuntary_per_call,
            100.0 * self.cpu_share
        )
    }
}

impl fmt::Display for Machine {
    /// A table within 100 columns.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
        writeln!(
            f,
            "yieldprof probe: {} cores, timer slack {}, perf_event_paranoid {}, took {:.1} s",
            self.cores,
            opt(self.timer_slack_ns.map(|s| ns(s as f64))),
            opt(self.paranoid.map(|p| p.to_string())),
            self.elapsed.as_secs_f64()
        )?;
        match self.pinned_core {
            Some(c) => writeln!(
                f,
                "pinned to cpu {c}; contended = a busy thread pinned to the same cpu"
            )?,
            None => writeln!(
                f,
                "not pinned (sched_setaffinity refused); contended = one more busy thread"
            )?,
        }
        writeln!(f)?;
        let over = format!(
            "{:<20} {:^34} | {:^34}",
            "", "alone", "with a competitor on the core"
        );
        writeln!(f, "{}", over.trim_end())?;
        let head = format!(
            "{:>10} {:>8} {:>8} {:>5}",
            "per call", "vol/call", "inv/call", "CPU"
        );
        writeln!(f, "{:<20} {head} | {head}", "primitive")?;
        for p in &self.primitives {
            writeln!(f, "{:<20} {} | {}", p.name, p.alone, p.contended)?;
        }
        writeln!(f)?;
        match self.switch_ns {
            Some(s) => writeln!(
                f,
                "context switch: {} (two threads taking turns with sched_yield on one cpu)",
                ns(s)
            )?,
            None => writeln!(f, "context switch: not measured (no pinning)")?,
        }
        let b = self.backoff;
        writeln!(
            f,
            "backoff: spin_loop ×{} (≈ one sched_yield), then sched_yield ×{} (≈ one sleep),",
            b.spins_per_yield, b.yields_per_sleep
        )?;
        writeln!(
            f,
            "         then sleep (the shortest real sleep here takes {})",
            ns(b.sleep_ns as f64)
        )?;
        writeln!(
            f,
            "counter read: getrusage {}, perf group {} (two of each per sampled episode)",
            ns(self.getrusage_ns),
            self.perf_read_ns.map_or("n/a".into(), ns)
        )?;
        writeln!(f)?;
        write!(f, "{}", self.capabilities)
    }
}

impl Machine {
    /// Saves the costs this probe measured to `path` (usually [`saved_path`]), so that
    /// later reports on this host use and cite them instead of a quick estimate.
    /// Written to a temporary name and renamed into place.
    ///
    /// ```no_run
    /// let machine = yieldprof::probe::run();
    /// machine.save(yieldprof::probe::saved_path()).unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let text = Costs::from_machine(self).saved_text(&HostId::current(), now);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    }
}

impl Costs {
    /// The costs the probe measured.
    pub fn from_machine(m: &Machine) -> Costs {
        let quick = Costs::quick();
        let alone = |name| m.primitive(name).map(|p| p.alone.ns_per_call);
        Costs {
            spin_ns: alone("spin_loop").unwrap_or(quick.spin_ns).max(0.1),
            yield_ns: alone("sched_yield").unwrap_or(quick.yield_ns).max(1.0),
            switch_ns: m.switch_ns.unwrap_or(DEFAULT_SWITCH_NS),
            timer_slack_ns: m.timer_slack_ns.unwrap_or(quick.timer_slack_ns),
            cores: m.cores,
            source: CostSource::Probe,
            switch_measured: m.switch_ns.is_some(),
        }
    }
}

#[cfg(test)]
mod tests;
