//! What a session reports is what happened inside it: a frame that did nothing since the
//! session began shows nothing, and the longest new episode of a site whose all-time
//! longest came before is never longer than the new episodes together.
//! (Own test binary: the scale of ticks to ns is fixed at the first report.)

use std::time::Duration;
use yieldprof::report::Metric;
use yieldprof::Session;

#[yieldprof::instrument_wait]
fn long_then_short(d: Duration) {
    std::thread::sleep(d);
}

#[yieldprof::instrument_wait]
fn only_before() {
    std::thread::sleep(Duration::from_millis(2));
}

#[test]
fn a_session_shows_only_what_happened_inside_it() {
    // Before: one long episode (the all-time longest) and a frame that stops here.
    long_then_short(Duration::from_millis(30));
    for _ in 0..20 {
        only_before();
    }
    // Reports scale ticks to ns; several in a row must agree on the old figures.
    let _ = yieldprof::snapshot();

    std::thread::sleep(Duration::from_millis(50));

    // Ten sessions of one episode each, of ten lengths: a bucket's midpoint lies above
    // about half of the durations it holds.
    for i in 0..10u64 {
        let session = Session::this_thread();
        long_then_short(Duration::from_micros(300 + 37 * i));
        let delta = session.finish();

        let folded = delta.folded(Metric::Wall);
        assert!(
            folded.iter().all(|l| !l.contains("only_before")),
            "a frame with no new episode has no wall time: {folded:?}"
        );
        let site = delta.site("long_then_short").unwrap();
        assert_eq!(site.episodes, 1);
        let max = site.durations.max().unwrap();
        assert!(
            max <= site.wall_ns && max >= 300_000,
            "session {i}: longest new episode {max} ns, its wall {} ns",
            site.wall_ns
        );
        let doc = delta.json(&yieldprof::report::Costs::current());
        assert_eq!(doc.inconsistencies(), Vec::<String>::new());
    }
}

#[yieldprof::instrument_wait]
fn naps_before_the_window() {
    std::thread::sleep(Duration::from_micros(50));
}

#[test]
fn a_thread_gone_before_the_window_is_not_in_it_and_one_that_ends_in_it_is() {
    let gone = std::thread::Builder::new()
        .name("delta-gone".into())
        .spawn(naps_before_the_window)
        .unwrap();
    gone.join().unwrap();
    let before = yieldprof::snapshot();
    let ends = std::thread::Builder::new()
        .name("delta-ends".into())
        .spawn(naps_before_the_window)
        .unwrap();
    ends.join().unwrap();
    let delta = yieldprof::snapshot().since(&before);
    let names: Vec<String> = delta.threads().into_iter().map(|t| t.name).collect();
    assert!(!names.iter().any(|n| n == "delta-gone"), "{names:?}");
    let ended = delta.threads().into_iter().find(|t| t.name == "delta-ends");
    assert!(
        ended.is_some_and(|t| t.wall_ns > 0 && t.exited),
        "{names:?}"
    );
    assert_eq!(delta.site("naps_before_the_window").unwrap().episodes, 1);
}
