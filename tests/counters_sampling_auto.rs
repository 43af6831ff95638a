//! Sampling under `Auto` where the perf user page counts every episode's switches and
//! no hardware group can open (a VM without a PMU): a sample would read nothing, so
//! none is taken past the thread's first waits (read on getrusage while its counters
//! are deferred). Each took its episode off the fast path: 1 episode in ~1 200 of a hot
//! loop before (2026-12-06). Where a hardware group opens, samples go on as budgeted.

use yieldprof::counters::{capabilities, CounterEvent, EventSource};

#[yieldprof::instrument_wait]
fn one_spin() {
    std::hint::spin_loop();
}

#[test]
fn a_page_without_a_group_takes_no_sample_past_the_deferred_waits() {
    let caps = capabilities();
    let page = caps.get(CounterEvent::ContextSwitches).is_available();
    let hardware = CounterEvent::ALL
        .iter()
        .any(|&e| e.source() == EventSource::PerfHardware && caps.get(e).is_available());
    let before = yieldprof::snapshot();
    std::thread::spawn(|| (0..200_000).for_each(|_| one_spin()))
        .join()
        .unwrap();
    let site = yieldprof::snapshot().since(&before);
    let s = site.site("one_spin").unwrap();
    eprintln!(
        "page {page}, hardware {hardware}: {} episodes, {} sampled",
        s.episodes, s.counters.sampled
    );
    assert_eq!(s.episodes, 200_000);
    if page && !hardware {
        // Its first 16 waits, read on getrusage (`Options::counters_after`).
        assert!(s.counters.sampled <= 16, "{} sampled", s.counters.sampled);
    } else {
        eprintln!("inconclusive here: a group to sample, or no page");
    }
}
