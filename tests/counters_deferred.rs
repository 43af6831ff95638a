//! A thread's perf counters open only after its first 16 wait episodes (the default
//! `counters_after`): a thread that waits once reads its switches on getrusage, exact
//! per episode, and opens no fd; one that waits 40 times opens its counter, and its
//! episodes' switches stay exact across the change of source. Ground truth: the
//! kernel's counts in `/proc/self/task/<tid>/status` around the episodes, read on the
//! thread, and the thread's own fds in `/proc/self/fd`.

use yieldprof::counters::{capabilities, Count, CounterEvent, CounterSource, Reason};

mod kernel;
use kernel::switches as kernel_switches;

/// One episode that blocks a few times.
#[yieldprof::instrument_wait]
fn short_wait() {
    for _ in 0..5 {
        // SAFETY: usleep has no preconditions.
        unsafe { libc::usleep(100) };
    }
}

#[yieldprof::instrument_wait]
fn nap() {
    // SAFETY: usleep has no preconditions.
    unsafe { libc::usleep(1) };
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn exact(c: Count) -> u64 {
    match c {
        Count::Exact(v) => v,
        other => panic!("not counted exactly: {other:?}"),
    }
}

/// What a thread saw around its episodes: the kernel's switch deltas and its fds.
struct Seen {
    switches: (u64, u64),
    fds: (usize, usize),
}

fn on_thread(name: &str, episodes: impl FnOnce() + Send + 'static) -> Seen {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let (f0, k0) = (fds(), kernel_switches(tid));
            episodes();
            let (k1, f1) = (kernel_switches(tid), fds());
            Seen {
                switches: (k1.0 - k0.0, k1.1 - k0.1),
                fds: (f0, f1),
            }
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn a_short_thread_counts_exactly_without_a_perf_event_and_a_long_one_opens_its_counter() {
    let out = std::env::temp_dir().join(format!("yieldprof-deferred-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&out)
        .name("deferred")
        .init();
    let perf = capabilities().get(CounterEvent::ContextSwitches);

    // Three short threads, one episode each: the site sums them.
    let short: Vec<Seen> = (0..3)
        .map(|i| on_thread(&format!("short-{i}"), short_wait))
        .collect();
    let on_perf = capabilities().threads_on_perf;
    let long = on_thread("long", || (0..40).for_each(|_| nap()));

    let profile = yieldprof::snapshot();
    let site = profile.site("short_wait").unwrap().counters;
    let truth: (u64, u64) = short
        .iter()
        .fold((0, 0), |a, s| (a.0 + s.switches.0, a.1 + s.switches.1));
    // Every block is inside the episode: voluntary switches match exactly. An
    // involuntary one can also land between the kernel read and the episode.
    assert_eq!(exact(site.voluntary_switches), truth.0, "{site:?}");
    assert!(truth.0 >= 15, "5 sleeps per thread: {truth:?}");
    assert!(
        exact(site.involuntary_switches) <= truth.1,
        "{site:?} {truth:?}"
    );
    for (i, s) in short.iter().enumerate() {
        assert_eq!(
            s.fds.0, s.fds.1,
            "short-{i} opened an fd for its one episode"
        );
    }
    let threads = profile.threads();
    let thread = |name: &str| threads.iter().find(|t| t.name == name).unwrap();
    assert!(
        matches!(
            thread("short-0").counter_source,
            CounterSource::Getrusage(Reason::Deferred { episodes: 16 })
        ),
        "{:?}",
        thread("short-0").counter_source
    );

    let naps = profile.site("nap").unwrap().counters;
    assert_eq!(exact(naps.voluntary_switches), long.switches.0, "{naps:?}");
    assert!(exact(naps.involuntary_switches) <= long.switches.1);
    if !perf.is_available() {
        eprintln!(
            "inconclusive for the perf part: context switches are not countable here ({perf:?})"
        );
    } else {
        assert_eq!(thread("long").counter_source, CounterSource::Perf);
        assert_eq!(capabilities().threads_on_perf, on_perf + 1);
        assert!(
            long.fds.1 > long.fds.0,
            "the long thread holds its counter: {:?}",
            long.fds
        );
        // Page-counted from its 17th episode: the site's switches are exact over all.
        assert!(matches!(naps.context_switches, Count::Exact(_)), "{naps:?}");
    }
    drop(guard);
    let _ = std::fs::remove_dir_all(&out);
}
