//! The user workflow: annotate the wait loop, run the workload in a session, assert.
use std::sync::atomic::{AtomicU64, Ordering};
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
    let (next, session) = (AtomicU64::new(0), Session::this_thread());
    session.scope(|s| {
        s.spawn(|| (1..=1000).for_each(|i| next.store(i, Ordering::Release)));
        (1..=1000).for_each(|i| wait_for(&next, i));
    });
    let budget = Budget::new().site("wait_for", |s| {
        s.max_episodes(1000)
            .max_calls_per_episode(Kind::Yield, 16.0)
    });
    assert_budget!(session.finish(), budget);
}
