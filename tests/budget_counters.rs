//! Budgets on counters and sharing: context switches per episode, cache misses (a
//! note where the hardware cannot count them, a failure with `require_counters`),
//! and `no_false_sharing` on a watched pair of per-thread counters.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use yieldprof::budget::Budget;
use yieldprof::{Session, Watched};

#[yieldprof::instrument_wait]
fn sleepy(n: u32) {
    for _ in 0..n {
        // SAFETY: usleep has no preconditions.
        unsafe { libc::usleep(1) };
    }
}

#[test]
fn a_switch_budget_catches_an_episode_that_sleeps() {
    let session = Session::this_thread();
    for _ in 0..20 {
        sleepy(5);
    }
    let report = session.finish();
    let site = report.site("sleepy").unwrap();
    let vol = site
        .counters
        .voluntary_switches
        .per(site.episodes)
        .expect("getrusage always counts");
    // Five 1-µs sleeps switch out about five times per episode (a few more when a
    // wakeup lands mid-episode on a busy machine).
    assert!(vol >= 4.0, "{vol} voluntary switches per episode");
    let ok = Budget::new().site("sleepy", |s| s.max_voluntary_switches_per_episode(10.0));
    report.check(&ok).unwrap();
    let tight = Budget::new().site("sleepy", |s| s.max_voluntary_switches_per_episode(1.0));
    let err = report.check(&tight).unwrap_err().to_string();
    assert!(
        err.contains("max_voluntary_switches_per_episode = 1, measured"),
        "{err}"
    );
}

#[test]
fn cache_misses_are_a_note_without_a_pmu_and_a_failure_when_required() {
    let session = Session::this_thread();
    sleepy(1);
    let report = session.finish();
    let budget = Budget::new().site("sleepy", |s| s.max_cache_misses_per_episode(1e9));
    let has_pmu = yieldprof::counters::capabilities()
        .get(yieldprof::counters::CounterEvent::CacheMisses)
        .is_available();
    if has_pmu {
        report.check(&budget.require_counters()).unwrap();
        return;
    }
    // No PMU (this VM): skipped with a note, so the budget passes ...
    report.check(&budget).unwrap();
    // ... unless counters are required.
    let err = report.check(&budget.require_counters()).unwrap_err();
    assert_eq!(err.unavailable.len(), 1);
    let msg = err.to_string();
    assert!(
        msg.contains("max_cache_misses_per_episode not checked: cache-misses is n/a"),
        "{msg}"
    );
    assert!(msg.contains("ENOENT") || msg.contains("PMU"), "{msg}");
}

#[repr(C, align(128))]
struct Turn(AtomicUsize);

/// Two threads take turns bumping their own counter in `slots`.
fn bump_in_turns(slots: Arc<[Watched<AtomicU64>; 2]>, turns: u64) {
    let turn = Arc::new(Turn(AtomicUsize::new(0)));
    std::thread::scope(|s| {
        for me in 0..2 {
            let (slots, turn) = (slots.clone(), turn.clone());
            s.spawn(move || {
                for _ in 0..turns {
                    while turn.0.load(Acquire) % 2 != me {
                        std::hint::spin_loop();
                    }
                    slots[me].fetch_add(1, Relaxed);
                    turn.0.fetch_add(1, Release);
                }
            });
        }
    });
}

#[test]
fn no_false_sharing_fails_on_two_threads_counters_in_one_line() {
    let slots = Arc::new([Watched::new(0), Watched::new(0)]);
    yieldprof::watch(&*slots, "budget_slots");
    let session = Session::start();
    bump_in_turns(slots.clone(), 2_000);
    let report = session.finish();
    let err = report.check(&Budget::new().no_false_sharing()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("FALSE line"), "{msg}");
    assert!(msg.contains("budget_slots"), "{msg}");
    assert!(msg.contains("no_false_sharing, measured 1"), "{msg}");
}
