//! The user workflow: annotate the wait loop, run the workload in a session, assert.
//!
//! The consumer yields only while the producer has not stored what it waits for: it
//! starts once the producer runs (a thread's start is not the consumer's wait), so its
//! yields are bounded by the producer's stores' span. Within 1 ms, at least 62.5 ns a
//! yield (a syscall; ~0.3 µs here), that is ≤ 16 000, 16 per episode. A loaded machine
//! can leave the producer unscheduled for 50 ms: such a run says nothing about the
//! budget and is run again, a few times at most, then reported inconclusive.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use yieldprof::budget::Budget;
use yieldprof::{assert_budget, Kind, Session};

#[yieldprof::instrument_wait]
fn wait_for(next: &AtomicU64, want: u64) {
    let mut spins = 0;
    while next.load(Ordering::Acquire) < want {
        if spins < 64 {
            std::hint::spin_loop();
            spins += 1
        } else {
            std::thread::yield_now()
        }
    }
}

#[test]
fn consumer_stays_within_its_wait_budget() {
    for attempt in 1..=10 {
        let (next, started) = (&AtomicU64::new(0), &AtomicBool::new(false));
        let session = Session::this_thread();
        let span = session.scope(|s| {
            let producer = s.spawn(move || {
                let t0 = Instant::now();
                started.store(true, Ordering::Release);
                (1..=1000).for_each(|i| next.store(i, Ordering::Release));
                t0.elapsed()
            });
            while !started.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            (1..=1000).for_each(|i| wait_for(next, i));
            producer.join().unwrap()
        });
        if span > Duration::from_millis(1) {
            eprintln!("attempt {attempt}: the producer's stores took {span:?}: run again");
            continue;
        }
        let budget = Budget::new().site("wait_for", |s| {
            s.max_episodes(1000)
                .max_calls_per_episode(Kind::Yield, 16.0)
        });
        assert_budget!(session.finish(), budget);
        return;
    }
    eprintln!("inconclusive: the producer's stores took over 1 ms in every attempt");
}
