//! Memory is bounded: past the per-thread node cap, new stacks fold into `[overflow]`
//! and are counted, never dropped. (Own test binary: the cap is process-wide.)

use yieldprof::report::Metric;
use yieldprof::{Kind, Session};

#[yieldprof::instrument_wait]
fn descend(depth: u32) {
    std::hint::spin_loop();
    if depth > 1 {
        descend(depth - 1);
    }
}

#[test]
fn stacks_past_the_cap_fold_into_overflow_with_counts() {
    let _guard = yieldprof::Options::from_env()
        .max_nodes(64)
        .out_dir(std::env::temp_dir().join("yieldprof-overflow"))
        .init();
    let session = Session::start();
    std::thread::spawn(|| descend(1000)).join().unwrap();
    let report = session.finish();
    let t = report.threads().into_iter().find(|t| t.exited).unwrap();
    // Nodes 0 and 1 are the thread root and `[overflow]`: 62 frames fit.
    assert_eq!(t.overflowed, 1000 - 62);
    let site = report.site("descend").unwrap();
    // Every call is still counted: 62 in their own frames, the rest in [overflow].
    assert_eq!(site.episodes, 62);
    let folded = report.folded(Metric::Calls);
    let overflow: u64 = folded
        .iter()
        .filter(|l| l.contains("[overflow]"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(site.calls_of(Kind::Spin) + overflow, 1000, "{folded:?}");
    assert!(report.summary().contains("overflow"));
}
