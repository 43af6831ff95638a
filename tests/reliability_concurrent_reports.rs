//! Reports taken while threads record: 100 reports while 8 threads run episodes and a
//! ninth keeps starting short-lived threads. No deadlock (a watchdog fails the test
//! after 60 s), every report consistent with the ones before it, the last one exact.
//! (Own test binary: it reads every thread of the process.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;
use yieldprof::report::Metric;
use yieldprof::{Kind, Profile};

const WORKERS: usize = 8;
const REPORTS: usize = 100;
const SPINS: u64 = 2;
const YIELDS: u64 = 1;
const SHORT_LIVED_EPISODES: u64 = 3;

/// One episode: exactly `SPINS` spins and `YIELDS` yields.
#[yieldprof::instrument_wait]
fn step() {
    std::hint::spin_loop();
    std::hint::spin_loop();
    std::thread::yield_now();
}

/// Per wait-site figures of one report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Figures {
    episodes: u64,
    spins: u64,
    yields: u64,
    histogram: u64,
}

fn figures(p: &Profile) -> Figures {
    p.site("step").map_or(Figures::default(), |s| Figures {
        episodes: s.episodes,
        spins: s.calls_of(Kind::Spin),
        yields: s.calls_of(Kind::Yield),
        histogram: s.durations.count(),
    })
}

#[test]
fn a_hundred_reports_while_threads_record_are_consistent_and_the_last_is_exact() {
    let (done, finished) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        run();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => runner.join().unwrap(),
        // `run` panicked: its message, not a timeout's.
        Err(RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().unwrap_err())
        }
        Err(RecvTimeoutError::Timeout) => panic!("no result after 60 s: a deadlock"),
    }
}

fn run() {
    let _guard = yieldprof::Options::from_env()
        .out_dir(std::env::temp_dir().join(format!("yieldprof-concurrent-{}", std::process::id())))
        .init();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    step();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let spawner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut threads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::spawn(|| {
                    for _ in 0..SHORT_LIVED_EPISODES {
                        step();
                    }
                })
                .join()
                .unwrap();
                threads += 1;
            }
            threads
        })
    };

    // On a loaded machine the workers may not have run yet: the reports must see them
    // at work, so wait for their first episodes, however slow the start.
    while figures(&yieldprof::snapshot()).episodes == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut previous = Figures::default();
    let mut first = None;
    for r in 0..REPORTS {
        let p = yieldprof::snapshot();
        let f = figures(&p);
        // Never less than a report before (each counter only grows).
        assert!(
            f.episodes >= previous.episodes,
            "report {r}: {f:?} after {previous:?}"
        );
        assert!(
            f.spins >= previous.spins,
            "report {r}: {f:?} after {previous:?}"
        );
        assert!(
            f.yields >= previous.yields,
            "report {r}: {f:?} after {previous:?}"
        );
        // Calls are recorded before the episode that made them closes, and a report
        // reads a node's episodes before its calls; x86 keeps stores in order.
        #[cfg(target_arch = "x86_64")]
        {
            assert!(f.spins >= SPINS * f.episodes, "report {r}: {f:?}");
            assert!(f.yields >= YIELDS * f.episodes, "report {r}: {f:?}");
        }
        // Every view of the report can be made while the threads run.
        let folded = p.folded(Metric::Calls);
        assert!(folded.iter().all(|l| l.rsplit_once(' ').is_some()));
        if r % 10 == 0 && f.episodes > 0 {
            assert!(p.summary().contains("step"));
        }
        first.get_or_insert(f);
        previous = f;
    }
    // And let them record past what the first report saw before stopping them.
    let seen = first.map_or(0, |f: Figures| f.episodes);
    while figures(&yieldprof::snapshot()).episodes <= seen {
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    let episodes: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
        + spawner.join().unwrap() * SHORT_LIVED_EPISODES;

    let last = figures(&yieldprof::snapshot());
    assert_eq!(
        last,
        Figures {
            episodes,
            spins: SPINS * episodes,
            yields: YIELDS * episodes,
            histogram: episodes,
        }
    );
    assert!(last.episodes >= previous.episodes);
    // The reports saw the threads at work, not after it.
    let first = first.unwrap();
    assert!(first.episodes < last.episodes, "{first:?} {last:?}");
    eprintln!(
        "{REPORTS} reports over {} episodes (first report saw {})",
        last.episodes, first.episodes
    );
}
