//! Watched lines where nothing happened fold into one summary line, however many.

use std::sync::atomic::AtomicU64;
use yieldprof::Watched;

#[repr(align(128))]
struct Own(Watched<AtomicU64>);

#[test]
fn quiet_lines_fold_into_one_summary_line() {
    let values: Vec<Own> = (0..40).map(|_| Own(Watched::new(0))).collect();
    for (i, v) in values.iter().enumerate() {
        yieldprof::watch(&v.0, &format!("idle{i}"));
    }
    let summary = yieldprof::snapshot().summary();
    let section = summary
        .split("\nFalse sharing")
        .nth(1)
        .expect("a false-sharing section");
    let quiet: Vec<&str> = section.lines().filter(|l| l.contains("quiet")).collect();
    assert_eq!(quiet.len(), 1, "{section}");
    assert!(
        quiet[0].contains("40 lines, each < 32 invalidations: idle0, idle1"),
        "{}",
        quiet[0]
    );
    assert!(quiet[0].chars().count() <= 100);
    assert!(!section.contains("fields: idle"), "{section}");
}
