//! The false-sharing findings in the written profile: the summary's "False sharing"
//! section and the marked wait-site frame in the folded stacks and the flame graph.
//! One test: the report covers every line this process watched.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use yieldprof::__private::{enter, EpisodeSite};
use yieldprof::report::Metric;
use yieldprof::sharing::Verdict;
use yieldprof::Watched;

const TURNS: u64 = 2_000;

/// `counter`, written by one thread, and `flag`, which another thread spins on in a
/// wait episode: different words of one line.
#[repr(C, align(64))]
struct Shared {
    counter: Watched<AtomicU64>,
    flag: Watched<AtomicU64>,
}

static WAIT_FOR_FLAG: EpisodeSite = EpisodeSite::new(
    Some("report::wait_for_flag"),
    module_path!(),
    "wait_for_flag",
    file!(),
    line!(),
);

#[test]
fn the_summary_and_the_flame_graph_name_the_falsely_shared_line() {
    yieldprof::sharing::set_watch_sampling(1);
    let shared = Arc::new(Shared {
        counter: Watched::new(0),
        flag: Watched::new(0),
    });
    yieldprof::watch(&shared.counter, "counter");
    yieldprof::watch(&shared.flag, "flag");
    // Turns through an unwatched flag make the interleaving the same on any machine.
    let turn = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..2)
        .map(|me| {
            let (shared, turn) = (shared.clone(), turn.clone());
            std::thread::Builder::new()
                .name(["writer", "spinner"][me].into())
                .spawn(move || {
                    for _ in 0..TURNS {
                        while turn.load(Acquire) % 2 != me {
                            std::thread::yield_now();
                        }
                        if me == 0 {
                            shared.counter.fetch_add(1, Relaxed);
                        } else {
                            let _episode = enter(&WAIT_FOR_FLAG);
                            std::hint::black_box(shared.flag.load(Acquire));
                            // It waits, so it is timed and drawn (one that returns
                            // at once is only counted).
                            yieldprof::wait::spin();
                        }
                        turn.fetch_add(1, Release);
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }

    let profile = yieldprof::snapshot();
    let lines = profile.sharing();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0].verdict, Verdict::False);
    // The spinner is the victim of every write after its first read.
    assert_eq!(lines[0].false_invalidations, TURNS - 1);
    assert_eq!(lines[0].wait_sites[0].name, "report::wait_for_flag");
    assert_eq!(lines[0].wait_sites[0].reads, TURNS);

    let summary = profile.summary();
    let section = &summary[summary.find("\nFalse sharing (").expect(&summary)..];
    let expected = [
        "FALSE         64 B at 0x",
        &format!("{} invalidations, 100% false, 0 contended", TURNS - 1),
        "+0  counter",
        "writer",
        &format!("{TURNS:>12}"),
        "+8  flag",
        "spinner",
        &format!("spun on by report::wait_for_flag ({TURNS} reads); cache misses there: "),
        "fix: pad `counter` (`Watched<AtomicU64>`, 8 B at +0) and `flag` (`Watched<AtomicU64>`, 8 B at",
        "+8) to 128 B each: `crossbeam_utils::CachePadded` or a `#[repr(align(128))]` wrapper",
    ];
    for e in expected {
        assert!(section.contains(e), "missing {e:?} in\n{section}");
    }
    for line in summary.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line:?}");
    }

    let folded = profile.folded(Metric::Calls);
    let wall = profile.folded(Metric::Wall);
    // The mark travels beside the name (the frame's colour): the name stays the site's
    // identity, so a packed and a padded run's stacks match in a diff.
    assert!(
        wall.iter()
            .any(|l| l.starts_with("spinner;report::wait_for_flag;")),
        "{wall:#?}"
    );
    assert!(
        !folded.iter().chain(&wall).any(|l| l.contains("[false")),
        "no mark in frame names: {wall:#?}"
    );

    let dir = std::env::temp_dir().join(format!("yieldprof-sharing-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&dir)
        .name("sharing")
        .init();
    let paths = guard.write().expect("profile written");
    let svg_path = paths
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "svg"))
        .expect("an svg");
    let svg = std::fs::read_to_string(svg_path).unwrap();
    // Each frame is `<g><title>name (…)</title><rect … fill="rgb(…)" …/>…</g>`.
    let purple: Vec<&str> = svg
        .split("<g>")
        .filter(|g| g.contains("fill=\"rgb(204,121,167)\""))
        .filter_map(|g| g.split("<title>").nth(1)?.split([' ', '(']).next())
        .collect();
    assert!(
        !purple.is_empty() && purple.iter().all(|n| *n == "report::wait_for_flag"),
        "only the spinning wait site is purple: {purple:?}"
    );
    let doc = profile.json(&yieldprof::report::Costs::current());
    let marked: Vec<&str> = doc
        .sites
        .iter()
        .filter(|s| s.false_sharing)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        marked,
        ["report::wait_for_flag"],
        "the JSON carries the same mark"
    );
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}
