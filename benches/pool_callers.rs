//! What yieldprof costs outside threads that block on a thread pool, in one run.
//!
//! `cargo bench --bench pool_callers` builds a small pool shaped like rayon-core's
//! (docs/thread-pools.md): two workers whose whole life is one wait (`worker_loop`, as
//! rayon's `wait_until_cold`), which run the jobs they find and, finding none, yield up
//! to 32 times (`no_work_found`) before they sleep on a condvar (`sleep`). Two outside
//! threads each make `INSTALLS` installs: post 8 jobs of 20 µs of spinning, wake the
//! workers, block on a latch (a Mutex + Condvar, as rayon's `LockLatch`) until the jobs
//! are done. Caller and workers switch at every install: this is the switching-episode
//! cost of a pool's users, where the waits are short and many.
//!
//! Two variants of the same pool, alternating round by round: raw, and every wait fn
//! under `#[yieldprof::instrument_wait]` with each job in `yieldprof::frame!` (default
//! settings, counters on). Printed, best and median round: µs per install (the callers'
//! wall), the process's CPU µs per install (jobs, pool, profiler and the kernel's work
//! for them: on a shared machine the wall also holds other processes' time, the CPU
//! does not), and the profiled variant against raw.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

const ROUNDS: usize = 7;
/// Installs per outside thread per round.
const INSTALLS: usize = 3000;
const CALLERS: usize = 2;
const WORKERS: usize = 2;
const JOBS_PER_INSTALL: usize = 8;
const JOB: Duration = Duration::from_micros(20);
/// Yields before an idle worker sleeps (rayon's `ROUNDS_UNTIL_SLEEPY`).
const IDLE_YIELDS: u32 = 32;

/// Counts an install's jobs down; the caller blocks until they are all done.
struct Latch {
    left: Mutex<usize>,
    done: Condvar,
}

impl Latch {
    fn set_one(&self) {
        let mut left = self.left.lock().unwrap_or_else(PoisonError::into_inner);
        *left -= 1;
        if *left == 0 {
            self.done.notify_all();
        }
    }
}

/// The pool's shared state: one queue of jobs, each the latch it counts down.
struct Shared {
    jobs: Mutex<VecDeque<Arc<Latch>>>,
    wake: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn take(&self) -> Option<Arc<Latch>> {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

/// The business of one job: spin for `JOB`.
fn spin_job() {
    let t = Instant::now();
    while t.elapsed() < JOB {
        std::hint::spin_loop();
    }
}

/// One variant of the pool: its wait fns under `$attr`, each job opening `$frame`.
macro_rules! pool {
    ($name:ident; $(#[$attr:meta])*; $($frame:tt)*) => {
        mod $name {
            use super::*;

            $(#[$attr])*
            fn worker_loop(pool: &Shared) {
                let mut idle = 0;
                while !pool.stop.load(Ordering::Acquire) {
                    match pool.take() {
                        Some(latch) => {
                            idle = 0;
                            run_job(&latch);
                        }
                        None => no_work_found(pool, &mut idle),
                    }
                }
            }

            fn run_job(latch: &Latch) {
                $($frame)*
                spin_job();
                latch.set_one();
            }

            $(#[$attr])*
            fn no_work_found(pool: &Shared, idle: &mut u32) {
                if *idle < IDLE_YIELDS {
                    *idle += 1;
                    std::thread::yield_now();
                } else {
                    *idle = 0;
                    sleep(pool);
                }
            }

            $(#[$attr])*
            fn sleep(pool: &Shared) {
                let mut jobs = pool.jobs.lock().unwrap_or_else(PoisonError::into_inner);
                while jobs.is_empty() && !pool.stop.load(Ordering::Acquire) {
                    jobs = pool.wake.wait(jobs).unwrap_or_else(PoisonError::into_inner);
                }
            }

            $(#[$attr])*
            fn wait_latch(latch: &Latch) {
                let mut left = latch.left.lock().unwrap_or_else(PoisonError::into_inner);
                while *left > 0 {
                    left = latch.done.wait(left).unwrap_or_else(PoisonError::into_inner);
                }
            }

            fn install(pool: &Shared) {
                let latch = Arc::new(Latch {
                    left: Mutex::new(JOBS_PER_INSTALL),
                    done: Condvar::new(),
                });
                pool.jobs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend((0..JOBS_PER_INSTALL).map(|_| latch.clone()));
                pool.wake.notify_all();
                wait_latch(&latch);
            }

            /// One round: starts the pool, runs the callers, stops the pool; µs per
            /// install (the callers' wall over the installs each made) and the process's
            /// CPU µs per install (over all the installs).
            pub(super) fn round() -> (f64, f64) {
                let pool = Arc::new(Shared {
                    jobs: Mutex::new(VecDeque::new()),
                    wake: Condvar::new(),
                    stop: AtomicBool::new(false),
                });
                let workers: Vec<_> = (0..WORKERS)
                    .map(|_| {
                        let pool = pool.clone();
                        std::thread::spawn(move || worker_loop(&pool))
                    })
                    .collect();
                let (t, cpu) = (Instant::now(), cpu_us());
                std::thread::scope(|s| {
                    for _ in 0..CALLERS {
                        s.spawn(|| (0..INSTALLS).for_each(|_| install(&pool)));
                    }
                });
                let per_install = t.elapsed().as_secs_f64() * 1e6 / INSTALLS as f64;
                let cpu = (cpu_us() - cpu) / (CALLERS * INSTALLS) as f64;
                // Under the queue's lock, so no worker misses the wake-up for good.
                let jobs = pool.jobs.lock().unwrap_or_else(PoisonError::into_inner);
                pool.stop.store(true, Ordering::Release);
                pool.wake.notify_all();
                drop(jobs);
                workers.into_iter().for_each(|w| w.join().expect("worker"));
                (per_install, cpu)
            }
        }
    };
}

pool!(raw;;);
pool!(profiled; #[yieldprof::instrument_wait]; yieldprof::frame!("job"););

/// A round's wall and CPU µs per install.
type Round = (f64, f64);
/// One of a round's figures.
type Pick = fn(&Round) -> f64;

/// CPU time of the whole process, µs.
fn cpu_us() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

fn main() {
    let out = std::env::temp_dir().join(format!("yieldprof-pool-callers-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&out)
        .name("pool-callers")
        .init();
    let (mut raw, mut profiled) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        raw.push(raw::round());
        profiled.push(profiled::round());
    }
    let sorted = |v: &[Round], pick: Pick| {
        let mut v: Vec<f64> = v.iter().map(pick).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    println!(
        "pool callers: {CALLERS} outside threads × {INSTALLS} installs of {JOBS_PER_INSTALL} \
         × {} µs jobs on {WORKERS} workers, {ROUNDS} alternating rounds\n",
        JOB.as_micros()
    );
    println!("| figure | round | raw | yieldprof | yieldprof ÷ raw | target |");
    println!("|---|---|---|---|---|---|");
    let figures: [(&str, Pick, &str); 2] = [
        (
            "wall µs per install",
            |r| r.0,
            "≤ 1.11× (≥ 0.9× throughput)",
        ),
        ("CPU µs per install", |r| r.1, ""),
    ];
    for (figure, pick, target) in figures {
        let (raw, profiled) = (sorted(&raw, pick), sorted(&profiled, pick));
        for (name, at) in [("best", 0), ("median", ROUNDS / 2)] {
            println!(
                "| {figure} | {name} | {:.1} | {:.1} | {:.3}× | {target} |",
                raw[at],
                profiled[at],
                profiled[at] / raw[at]
            );
        }
    }
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
