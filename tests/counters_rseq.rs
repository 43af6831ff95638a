//! The rseq switch source (`YIELDPROF_RSEQ=on`, `Options::rseq`): no perf event per
//! thread, switches seen through rseq (`counters/rseq.rs`) and counted by getrusage
//! after each one. A thread pinned with
//! its partner to one CPU blocks in one site (`take`, voluntary) and is preempted by
//! the partner it wakes in another (`hand_back`, involuntary), so it is switched
//! between every two episodes: each site's voluntary and involuntary switches still
//! add up to the kernel's counts in `/proc/self/task/<tid>/status`, exactly, and the
//! sites' off-CPU and queued time, read only now and then and apportioned between
//! reads (counted in `estimated_episodes`), add up to the thread's (monotonic clock
//! minus schedstat's on-CPU time; schedstat's run delay) within 5 % and 0.5 ms.
//! (Own test binary: the sites are read process-wide.)

mod affinity;
mod kernel;

use affinity::pin;
use std::sync::mpsc::{channel, Receiver, Sender};
use yieldprof::counters::{capabilities, Count, CounterEvent};

const TRIPS: u64 = 2_000;
const ATTEMPTS: usize = 10;

#[yieldprof::instrument_wait]
fn take(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

#[yieldprof::instrument_wait]
fn hand_back(tx: &Sender<u64>, v: u64) {
    tx.send(v).unwrap();
    // Where the partner it woke has not run yet, it preempts the thread here.
    std::hint::black_box(());
}

/// (voluntary, involuntary, off-CPU ns, queued ns) of the calling thread.
fn kernel_now() -> (u64, u64, u64, u64) {
    // SAFETY: gettid has no preconditions.
    let (v, i) = kernel::switches(unsafe { libc::gettid() });
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let (cpu, queued) = (f.next().unwrap(), f.next().unwrap());
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    (v, i, mono - cpu, queued)
}

fn exact(c: Count) -> u64 {
    match c {
        Count::Exact(v) => v,
        other => panic!("not counted exactly: {other:?}"),
    }
}

type Kernel = (u64, u64, u64, u64);

/// One attempt: a report and the kernel's figures of the worker before its loop (its
/// own report reads its unread figures first), and the kernel's after.
fn ping_pong() -> (yieldprof::Profile, Kernel, Kernel) {
    let (to_worker, rx) = channel();
    let (tx, from_worker) = channel();
    let partner = std::thread::spawn(move || {
        pin(0);
        // The worker's first waits (read on getrusage) open its counters.
        for i in 0..TRIPS + 40 {
            to_worker.send(i).unwrap();
            from_worker.recv().unwrap();
        }
    });
    let worker = std::thread::spawn(move || {
        pin(0);
        for _ in 0..40 {
            let v = take(&rx);
            hand_back(&tx, v);
        }
        let report = yieldprof::snapshot();
        let before = kernel_now();
        for _ in 0..TRIPS {
            let v = take(&rx);
            hand_back(&tx, v);
        }
        (report, before, kernel_now())
    });
    let seen = worker.join().unwrap();
    partner.join().unwrap();
    seen
}

#[test]
fn switched_between_episodes_each_sites_switches_stay_exact_and_its_times_add_up() {
    // Before anything reads the settings.
    std::env::set_var("YIELDPROF_RSEQ", "on");
    if !capabilities()
        .get(CounterEvent::ContextSwitches)
        .is_available()
    {
        eprintln!("inconclusive: context switches are not countable here");
        return;
    }
    for attempt in 1..=ATTEMPTS {
        let (before, k0, k1) = ping_pong();
        let d = yieldprof::snapshot().since(&before);
        let rseq = d
            .threads()
            .iter()
            .any(|t| t.split_method.is_some_and(|m| m.rseq));
        if !rseq {
            eprintln!("inconclusive: rseq does not tell switches here (the page counts)");
            return;
        }
        let (take, back) = (d.site("take").unwrap(), d.site("hand_back").unwrap());
        let (kv, ki) = (k1.0 - k0.0, k1.1 - k0.1);
        let (koff, kq) = (k1.2 - k0.2, k1.3 - k0.3);
        let v = exact(take.counters.voluntary_switches) + exact(back.counters.voluntary_switches);
        let i =
            exact(take.counters.involuntary_switches) + exact(back.counters.involuntary_switches);
        let off = take.time.off_cpu_ns.value().unwrap() + back.time.off_cpu_ns.value().unwrap();
        let q = take.time.queued_ns.value().unwrap_or(0) + back.time.queued_ns.value().unwrap_or(0);
        let estimated = take.time.estimated_episodes + back.time.estimated_episodes;
        eprintln!(
            "attempt {attempt}: sites {v} voluntary + {i} involuntary, off-CPU {off} ns, \
             queued {q} ns, {estimated} estimated of {} episodes; kernel {kv} + {ki}, \
             off-CPU {koff} ns, queued {kq} ns",
            take.episodes + back.episodes
        );
        if kv + ki < TRIPS {
            // A trip that found its message waiting (the partner ran while the worker
            // was preempted in its report, under load): run again.
            continue;
        }
        assert!(v <= kv && i <= ki, "more switches than the kernel counted");
        if (v, i) != (kv, ki) {
            // Switched between `hand_back` and `take`, outside both: run again.
            continue;
        }
        assert!(estimated <= take.episodes + back.episodes);
        let near = |a: u64, b: u64| a.abs_diff(b) <= (b / 20).max(500_000);
        assert!(
            near(off, koff),
            "sites off-CPU {off} ns, the thread's {koff} ns"
        );
        assert!(near(q, kq), "sites queued {q} ns, schedstat's {kq} ns");
        return;
    }
    eprintln!(
        "inconclusive: every attempt was switched outside the sites, or a trip did not switch"
    );
}
