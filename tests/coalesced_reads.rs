//! A hot loop of switching episodes reads the thread's switch figures only now and
//! then (`record::deferred`: episodes of one site with no switch between them merge
//! into one unread episode), and its figures stay those of the kernel: the site's
//! voluntary switches equal `/proc/self/task/<tid>/status`'s delta, its off-CPU time
//! the thread's (monotonic clock minus schedstat's on-CPU time) and its queued time
//! schedstat's run delay, over the whole loop.
//!
//! The loop's thread blocks only in the site (a channel ping-pong), so when the kernel
//! counts every switch of the thread inside the site (no preemption between
//! episodes), the thread's whole off-CPU and queued time is the site's. An attempt
//! preempted at all (a preemption in the profiler's time around an episode counts with
//! it, its time outside it), or after the loop before its last figures were read (they
//! are then apportioned, estimated), is run again, a few times at most, then reported
//! inconclusive. (Own test binary: the site is read process-wide.)

mod affinity;
mod clocks;
mod kernel;
#[macro_use]
mod turns;

use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use yieldprof::counters::{capabilities, Count, CounterEvent};
use yieldprof::Profile;

const EPISODES: u64 = 2_000;
const ATTEMPTS: usize = 10;

/// The thread's figures as the kernel keeps them.
#[derive(Clone, Copy, Debug)]
struct Kernel {
    voluntary: u64,
    involuntary: u64,
    /// CLOCK_MONOTONIC minus schedstat's on-CPU time, ns.
    off_ns: u64,
    /// schedstat's run delay, ns; `None` without schedstat.
    queued_ns: Option<u64>,
    /// The machine's steal time (`/proc/stat`, clock ticks): time a VM's CPUs ran
    /// another guest. No task's run time counts it, so a thread running its own code
    /// then reads off the CPU without a switch.
    stolen: u64,
}

/// Read again (a few times at most) where the thread was switched between its reads:
/// a switch after the status file's counts would be in schedstat's figures only.
fn kernel_now() -> Kernel {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let mut k = kernel_read(tid);
    for _ in 0..4 {
        let again = kernel::switches(tid);
        if again == (k.voluntary, k.involuntary) {
            break;
        }
        k = kernel_read(tid);
    }
    k
}

fn kernel_read(tid: i32) -> Kernel {
    let (voluntary, involuntary) = kernel::switches(tid);
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok();
    let stat = |i: usize| -> Option<u64> {
        schedstat
            .as_deref()?
            .split_whitespace()
            .nth(i)?
            .parse()
            .ok()
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    // Without schedstat, the thread's CPU clock (the same sum of run time).
    let cpu = stat(0).unwrap_or_else(clocks::cpu_ns);
    Kernel {
        voluntary,
        involuntary,
        off_ns: mono - cpu,
        queued_ns: stat(1),
        stolen: stolen_ticks(),
    }
}

/// The `steal` column of `/proc/stat`'s first line; 0 where there is none.
fn stolen_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu = stat.lines().next().unwrap_or_default();
    cpu.split_whitespace()
        .nth(8)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[yieldprof::instrument_wait]
fn hot_recv(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

/// More waits than a thread reads on getrusage before its perf counters open (16 by
/// default, `Options::counters_after`): the loop below runs on the page, every episode's
/// queued time read.
#[yieldprof::instrument_wait]
fn warm_up() {
    for _ in 0..20 {
        std::thread::sleep(Duration::from_micros(10));
    }
}

/// Keeps the calling thread on CPU `cpu` (of those there are), so that a handoff's
/// wake-up goes to the other CPU instead of preempting the waker outside the site.
fn pin(cpu: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        affinity::pin(cpu % cpus);
    }
}

/// A wait then a lock in one episode, as a condvar's own re-lock after its park
/// (parking_lot's `Condvar::wait_until_internal`, annotated): the lock opens right after
/// the switched wait.
#[yieldprof::instrument_wait]
fn recv_then_lock(rx: &Receiver<u64>, total: &Mutex<u64>) -> u64 {
    let t = rx.recv().unwrap();
    *total.lock().unwrap() += t;
    t
}

take_turn!(
    /// The lock before the wait is another call than the wait: two targets in one
    /// episode.
    #[yieldprof::instrument_wait]
    fn take_turn
);
take_turn!(fn take_turn_raw);

/// How the two threads hand off.
#[derive(Clone, Copy, Debug)]
enum Handoff {
    /// Through two channels, the worker waiting in `hot_recv`.
    Channel,
    /// Under one Mutex with a Condvar, the worker waiting in `take_turn`.
    Condvar,
    /// Through two channels, the worker waiting in `recv_then_lock`.
    ChannelThenLock,
}

/// One ping-pong of `EPISODES` handoffs: the kernel's figures of the thread that
/// waits in the site at its start and end, and how many times it read its switch
/// figures in between.
fn ping_pong(handoff: Handoff) -> (Kernel, Kernel, u64, Duration) {
    let (to_worker, rx) = channel();
    let (tx, from_worker) = channel();
    let turns = Arc::new((Mutex::new(0), Condvar::new()));
    let total = Mutex::new(0);
    let partner = {
        let turns = turns.clone();
        std::thread::spawn(move || {
            pin(1);
            for i in 0..EPISODES {
                match handoff {
                    Handoff::Channel | Handoff::ChannelThenLock => {
                        to_worker.send(i).unwrap();
                        from_worker.recv().unwrap();
                    }
                    Handoff::Condvar => take_turn_raw(&turns, 0),
                }
            }
        })
    };
    let worker = std::thread::spawn(move || {
        pin(0);
        // The thread's counters open here, outside the count.
        warm_up();
        let reads = yieldprof::__private::switch_reads();
        let before = kernel_now();
        let started = Instant::now();
        for _ in 0..EPISODES {
            match handoff {
                Handoff::Channel => {
                    let t = hot_recv(&rx);
                    tx.send(t).unwrap();
                }
                Handoff::Condvar => take_turn(&turns, 1),
                Handoff::ChannelThenLock => {
                    let t = recv_then_lock(&rx, &total);
                    tx.send(t).unwrap();
                }
            }
        }
        let elapsed = started.elapsed();
        let after = kernel_now();
        let reads = yieldprof::__private::switch_reads() - reads;
        (before, after, reads, elapsed)
    });
    let seen = worker.join().unwrap();
    partner.join().unwrap();
    seen
}

fn value(c: Count) -> Option<u64> {
    c.value()
}

#[test]
fn a_hot_loop_reads_its_switch_figures_rarely_and_they_equal_the_kernels() {
    hot_loop(Handoff::Channel, "hot_recv");
}

/// The lock before the wait is another call than the wait, and needs no read where it
/// does not block: a read at every lock made a Mutex+Condvar ping-pong read once per
/// episode (2026-12-05).
#[test]
fn a_lock_before_the_wait_does_not_read_either() {
    hot_loop(Handoff::Condvar, "take_turn");
}

/// Nor a lock after the wait, in the same episode: the wait's end and the episodes
/// before it had ended unread at different switch counts, and each such lock read
/// (parking_lot's condvar ping-pong annotated: 197k schedstat reads for 185k episodes,
/// 2026-12-05).
#[test]
fn a_lock_after_the_wait_does_not_read_either() {
    hot_loop(Handoff::ChannelThenLock, "recv_then_lock");
}

/// One test at a time: two ping-pongs at once preempt each other on 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn hot_loop(handoff: Handoff, site: &str) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !capabilities()
        .get(CounterEvent::ContextSwitches)
        .is_available()
    {
        eprintln!("perf unavailable: switches are sampled, not per episode: skipped");
        return;
    }
    for attempt in 1..=ATTEMPTS {
        let before = yieldprof::snapshot();
        let (k0, k1, reads, elapsed) = ping_pong(handoff);
        let d: Profile = yieldprof::snapshot().since(&before);
        let s = d.site(site).unwrap();
        let (kv, ki) = (k1.voluntary - k0.voluntary, k1.involuntary - k0.involuntary);
        let koff = k1.off_ns - k0.off_ns;
        let kqueued = k1.queued_ns.zip(k0.queued_ns).map(|(a, b)| a - b);
        let v = value(s.counters.voluntary_switches).unwrap();
        let i = value(s.counters.involuntary_switches).unwrap();
        let off = value(s.time.off_cpu_ns).unwrap();
        let queued = value(s.time.queued_ns);
        eprintln!(
            "{site} attempt {attempt}: {} episodes, {reads} reads of the switch figures; site {v} \
             voluntary + {i} involuntary, off-CPU {off} ns, queued {queued:?} ns, {} \
             estimated; kernel {kv} + {ki}, off-CPU {koff} ns, queued {kqueued:?} ns",
            s.episodes, s.time.estimated_episodes
        );
        assert_eq!(s.episodes, EPISODES);
        // Each episode's switch count is exact; its voluntary/involuntary split is
        // apportioned (voluntary first) where it was read after a later switch.
        assert!(v + i <= kv + ki, "more switches than the kernel counted");
        if s.time.estimated_episodes == 0 {
            assert!(v <= kv && i <= ki, "more switches than the kernel counted");
        }
        if !(v == kv && i == ki && kv > 0) {
            // Preempted (or blocked) outside the site: its figures are not the thread's.
            continue;
        }
        if ki > 0 {
            // A preemption can land in the profiler's own time next to an episode (after
            // its close tick, before the page's count is read): counted with the episode,
            // its off-CPU time is outside the episode's wall, and so not the site's (16.8
            // ms once under 4 busy loops). Only the blocks in `recv` are surely inside.
            continue;
        }
        // A read that falls due at a lock after the wait comes after the wait's
        // switch, too late for the episodes that ended before it; they take that read's
        // figures at the next one, exact (they were apportioned: 31-118 of 2000 in
        // every attempt, 2026-12-06).
        if matches!(handoff, Handoff::ChannelThenLock) {
            assert!(
                s.time.estimated_episodes <= 2,
                "{} apportioned with no preemption",
                s.time.estimated_episodes
            );
        }
        if s.time.estimated_episodes > 0 {
            // Switched after the loop (after the kernel's figures were read, so not in
            // them) before its last episodes' figures were read: those were apportioned
            // over a window longer than the kernel's.
            continue;
        }
        // Besides one read per 64 merged episodes, the loop reads at least every 1 ms
        // (`READ_LAG_NS`), and an episode 200 reads long is read at its end: on a loaded
        // machine the round trips slow down and both add up. A slow attempt is run
        // again; a fast one must have coalesced.
        let bound = EPISODES / 10 + elapsed.as_millis() as u64;
        if reads > bound && elapsed >= Duration::from_micros(75) * EPISODES as u32 {
            eprintln!("attempt {attempt}: {elapsed:?} for the loop, slow: run again");
            continue;
        }
        assert!(
            reads <= bound,
            "{reads} reads for {EPISODES} switching episodes in {elapsed:?}"
        );
        assert!(s.counters.voluntary_switches == Count::Exact(kv));
        // Steal is off the CPU with no switch, outside the site too, where the site
        // cannot hold it: the one such time known for 3 of 6 idle runs in one minute
        // with every count exact and 2-16 ms short (2026-12-06). Counted in ticks, a
        // shorter steal can pass unseen.
        let stolen = k1.stolen != k0.stolen;
        if !stolen {
            // Both sides read the thread's CPU clock (the same run-time sum) a few µs
            // apart from the monotonic clock: 1 % and 100 µs at most.
            assert!(
                off.abs_diff(koff) <= (koff / 100).max(100_000),
                "site off-CPU {off} ns, the thread's {koff} ns"
            );
        }
        if let (Some(q), Some(kq)) = (queued, kqueued) {
            // schedstat's run delay moves only when the thread is switched in, and
            // every switch was in the site: the same sum, but for one clip. An
            // episode's off-CPU time (and the queued part of it) is held within its
            // wall, ticks made ns with a ratio within ~1e-5 of the truth: one queued
            // nearly all its time can lose that much (21 ns once under 4 busy loops).
            let clip = s.wall_ns / 100_000 + reads;
            assert!(
                q.abs_diff(kq) <= clip,
                "site queued {q} ns, schedstat's {kq} ns (clip {clip} ns)"
            );
        }
        if stolen {
            eprintln!("attempt {attempt}: the VM's CPUs were stolen: off-CPU again");
            continue;
        }
        return;
    }
    eprintln!("inconclusive: every attempt was switched outside the site");
}
