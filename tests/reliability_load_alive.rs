//! Load: 1000 threads alive at once, each running episodes while all the others are
//! alive too. Every episode and call is counted, perf fds stay within the budget and
//! are all given back, and the memory each live thread costs is measured.
//! (Own test binary: it reads every thread of the process.)

use std::sync::{Arc, Barrier};
use yieldprof::counters::capabilities;
use yieldprof::{Kind, Session};

const THREADS: u64 = 1000;
const EPISODES: u64 = 20;

#[yieldprof::instrument_wait]
fn step() {
    std::hint::spin_loop();
    std::thread::yield_now();
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_thousand_live_threads_are_all_counted_exactly() {
    let _guard = yieldprof::Options::from_env()
        .out_dir(std::env::temp_dir().join(format!("yieldprof-alive-{}", std::process::id())))
        .init();
    let before = capabilities();
    let session = Session::start();
    let rss_before = rss_kib();
    let started = Arc::new(Barrier::new(THREADS as usize + 1));
    let measured = Arc::new(Barrier::new(THREADS as usize + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (started, measured) = (started.clone(), measured.clone());
            std::thread::Builder::new()
                .name(format!("live-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    step();
                    // Every thread has recorded; all run their episodes side by side.
                    started.wait();
                    for _ in 1..EPISODES {
                        step();
                    }
                    measured.wait();
                })
                .unwrap()
        })
        .collect();
    started.wait();
    // A report while the 1000 run.
    let during = yieldprof::snapshot();
    assert_eq!(
        during
            .threads()
            .iter()
            .filter(|t| t.name.starts_with("live-"))
            .count(),
        1000
    );
    let caps = capabilities();
    assert!(caps.fds_in_use <= caps.fd_budget, "{caps}");
    // Each of the 1000 on perf or, past the budget, on getrusage.
    let on = |c: &yieldprof::counters::Capabilities| c.threads_on_perf + c.threads_on_getrusage;
    assert_eq!(on(&caps) - on(&before), THREADS);
    measured.wait();
    let rss_alive = rss_kib();
    for t in threads {
        t.join().unwrap();
    }
    let report = session.finish();
    let site = report.site("step").unwrap();
    assert_eq!(site.episodes, THREADS * EPISODES);
    assert_eq!(site.calls_of(Kind::Spin), THREADS * EPISODES);
    assert_eq!(site.calls_of(Kind::Yield), THREADS * EPISODES);
    assert_eq!(site.durations.count(), THREADS * EPISODES);
    let live: Vec<_> = report
        .threads()
        .into_iter()
        .filter(|t| t.name.starts_with("live-"))
        .collect();
    assert_eq!(live.len() as u64, THREADS);
    assert!(live.iter().all(|t| t.exited));
    // Every perf fd of the 1000 went back when they exited.
    assert_eq!(capabilities().fds_in_use, before.fds_in_use);
    let rss_after = rss_kib();
    eprintln!(
        "RSS: {rss_before} KiB before, {rss_alive} KiB with {THREADS} threads alive \
         (+{} KiB, {:.1} KiB per thread with its 64 KiB stack), {rss_after} KiB after exit",
        rss_alive.saturating_sub(rss_before),
        rss_alive.saturating_sub(rss_before) as f64 / THREADS as f64,
    );
}
