//! A thread's first wait episode opens only what counts every episode's switches (the
//! switch counters' user pages and schedstat); its perf group (page faults) opens at
//! its second sampled episode. Switches are exact from the first episode on; page
//! faults are n/a until the group opens, and the thread's total, which then misses the
//! time before, is shown scaled, never as exact. The site sampled only after the group
//! opened counts its page faults exactly.

use yieldprof::counters::{capabilities, Count, CounterEvent, CounterSampling};
use yieldprof::report::ThreadStats;

/// Its spin makes it a timed episode (one that makes no wait call is only counted).
#[yieldprof::instrument_wait]
fn first() {
    std::hint::spin_loop();
}

#[yieldprof::instrument_wait]
fn nap() {
    // SAFETY: usleep has no preconditions.
    unsafe { libc::usleep(1) };
}

fn me(name: &str) -> ThreadStats {
    let profile = yieldprof::snapshot();
    profile
        .threads()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap()
}

#[test]
fn page_faults_open_at_the_second_sampled_episode_and_say_they_started_late() {
    let caps = capabilities();
    if !caps.get(CounterEvent::ContextSwitches).is_available()
        || !caps.get(CounterEvent::PageFaults).is_available()
    {
        eprintln!("inconclusive: perf software events are unavailable here ({caps})");
        return;
    }
    let out = std::env::temp_dir().join(format!("yieldprof-first-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .counters(CounterSampling::Every(1))
        .out_dir(&out)
        .init();
    let (before, after) = std::thread::Builder::new()
        .name("first-episode".into())
        .spawn(|| {
            first();
            let before = me("first-episode");
            (0..50).for_each(|_| nap());
            (before, me("first-episode"))
        })
        .unwrap()
        .join()
        .unwrap();

    assert!(
        matches!(before.counters.voluntary_switches, Count::Exact(_)),
        "{:?}",
        before.counters
    );
    assert_eq!(before.counters.page_faults, Count::NotAvailable);
    let Count::Exact(voluntary) = after.counters.voluntary_switches else {
        panic!("switches not exact: {:?}", after.counters);
    };
    assert!(voluntary >= 1, "{voluntary}");
    assert!(
        matches!(after.counters.page_faults, Count::Scaled(_)),
        "a total that misses the thread's first episode is an estimate: {:?}",
        after.counters
    );
    let profile = yieldprof::snapshot();
    let site = |name: &str| profile.site(name).unwrap().counters;
    assert!(
        matches!(site("nap").page_faults, Count::Exact(_)),
        "{:?}",
        site("nap")
    );
    assert_eq!(site("first").page_faults, Count::NotAvailable);
    assert!(matches!(site("first").voluntary_switches, Count::Exact(_)));
    // Sampling asked for is the exact-everything setting: the migration counter is
    // open too, read through its page on every episode (the default leaves it out).
    for s in ["first", "nap"] {
        assert!(
            matches!(site(s).cpu_migrations, Count::Exact(_)),
            "{s}: {:?}",
            site(s)
        );
    }
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
