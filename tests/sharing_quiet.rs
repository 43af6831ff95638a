//! Watched lines where nothing happened fold into one summary line, however many, and so
//! do watched lines that no tracked access reached.

use std::sync::atomic::AtomicU64;
use yieldprof::Watched;

#[repr(align(128))]
struct Own(Watched<AtomicU64>);

#[test]
fn quiet_lines_fold_into_one_summary_line() {
    let values: Vec<Own> = (0..40).map(|_| Own(Watched::new(0))).collect();
    for (i, v) in values.iter().enumerate() {
        yieldprof::watch(&v.0, &format!("idle{i}"));
        // One thread's access: tracked (the first ones always are), nothing shared.
        v.0.store(1, std::sync::atomic::Ordering::Relaxed);
    }
    let untouched: Vec<Own> = (0..30).map(|_| Own(Watched::new(0))).collect();
    for (i, v) in untouched.iter().enumerate() {
        yieldprof::watch(&v.0, &format!("unused{i}"));
    }
    let summary = yieldprof::snapshot().summary();
    let section = summary
        .split("\nFalse sharing")
        .nth(1)
        .expect("a false-sharing section");
    let quiet: Vec<&str> = section.lines().filter(|l| l.contains("quiet")).collect();
    assert_eq!(quiet.len(), 1, "{section}");
    assert!(
        quiet[0].contains("40 lines, each < 6 invalidations: idle0, idle1"),
        "{}",
        quiet[0]
    );
    assert!(quiet[0].chars().count() <= 100);
    assert!(!section.contains("fields: idle"), "{section}");
    let untracked: Vec<&str> = section
        .lines()
        .filter(|l| l.contains("untracked"))
        .collect();
    assert_eq!(untracked.len(), 1, "{section}");
    assert!(
        untracked[0].starts_with(
            "  untracked     30 lines, nothing tracked: 0 accesses through Watched on each: \
             unused0, unused1"
        ),
        "{}",
        untracked[0]
    );
}
