//! Quantiles per kind of call: each timed call (here sleeps and yields) lands in its
//! site's histogram for that kind, counted exactly, and its quantiles fall between the
//! durations the test asked for and the ones its own clock saw around each call.
//! (Own test binary: it reads one site's totals.)

use std::time::{Duration, Instant};
use yieldprof::Kind;

const SHORT: Duration = Duration::from_millis(1);
const LONG: Duration = Duration::from_millis(8);
const SHORTS: usize = 30;
const LONGS: usize = 10;
const YIELDS: u64 = 200;

#[yieldprof::instrument_wait]
fn nap(d: Duration) {
    std::thread::sleep(d);
}

#[yieldprof::instrument_wait]
fn give_way(n: u64) {
    for _ in 0..n {
        std::thread::yield_now();
    }
}

/// The `q` quantile of sorted samples, by rank.
fn rank(sorted: &[Duration], q: f64) -> Duration {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

#[test]
fn each_kind_of_call_has_its_own_quantiles() {
    // Short and long sleeps interleaved, each timed by the test from outside the call.
    let mut outside = Vec::new();
    for i in 0..SHORTS + LONGS {
        let d = if i % 4 == 3 { LONG } else { SHORT };
        let t = Instant::now();
        nap(d);
        outside.push(t.elapsed());
    }
    give_way(YIELDS);
    outside.sort();

    let profile = yieldprof::snapshot();
    let site = profile.site("nap").expect("nap");
    assert_eq!(
        site.call_durations
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>(),
        [Kind::Sleep]
    );
    let h = &site.call_durations[0].1;
    assert_eq!(h.count(), (SHORTS + LONGS) as u64);
    let ns = |d: Duration| d.as_nanos() as u64;
    // 30 of 40 are short: the median is a short sleep, p90 and above a long one. Each
    // is at least what was asked and at most what the test saw at that rank, within
    // the histogram's 1.6 % bucket error either way (a quantile is its bucket's
    // midpoint: 8 ms sleeps of 8.00x ms once read p90 7.977 ms).
    for (q, asked) in [(0.5, SHORT), (0.9, LONG), (0.99, LONG)] {
        let got = h.quantile(q).unwrap();
        let seen = ns(rank(&outside, q));
        assert!(
            got as f64 >= ns(asked) as f64 / 1.016 && got as f64 <= seen as f64 * 1.016,
            "p{}: {got} ns outside [{asked:?}, {seen} ns]",
            q * 100.0
        );
    }
    assert!(h.min().unwrap() >= ns(SHORT) && h.min().unwrap() <= ns(outside[0]));
    assert!(h.max().unwrap() >= ns(LONG) && h.max().unwrap() <= ns(outside[outside.len() - 1]));

    let site = profile.site("give_way").expect("give_way");
    let kinds: Vec<(Kind, u64)> = site
        .call_durations
        .iter()
        .map(|(k, h)| (*k, h.count()))
        .collect();
    assert_eq!(kinds, [(Kind::Yield, YIELDS)]);
    // Every yield is inside the one episode.
    let yields = &site.call_durations[0].1;
    assert!(yields.max().unwrap() <= site.durations.max().unwrap());

    let doc = profile.json(&yieldprof::report::Costs::current());
    assert_eq!(doc.inconsistencies(), Vec::<String>::new());
    let json = doc.sites.iter().find(|s| s.name.ends_with("nap")).unwrap();
    assert_eq!(json.call_durations.len(), 1);
    assert_eq!(json.call_durations[0].kind, "sleep");
    assert_eq!(json.call_durations[0].calls, (SHORTS + LONGS) as u64);
    assert_eq!(json.call_durations[0].durations.median_ns, h.quantile(0.5));
    let text = profile.summary();
    assert!(text.contains("each sleep: min "), "{text}");
    assert!(text.contains("(40 calls timed)"), "{text}");
}
