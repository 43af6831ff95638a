//! `yieldprof diff` on two real runs' files: the table, the differential graph, and
//! `--fail-if` thresholds as the exit code.

mod common;

use common::{dir, record, yieldprof};
use std::path::{Path, PathBuf};

/// A run of 10 episodes of 2 yields, and one of 10 episodes of 4 yields.
fn two_runs(dir: &Path) -> (PathBuf, PathBuf) {
    (record(dir, "before", 10, 2), record(dir, "after", 10, 4))
}

#[test]
fn diff_prints_each_sites_figures_before_and_after() {
    let dir = dir("diff-table");
    let (before, after) = two_runs(&dir);
    let (code, stdout, stderr) = yieldprof(&[&"diff", &before, &after]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("before → after\n"), "{stdout}");
    let yields: Vec<&str> = stdout
        .lines()
        .find(|l| l.contains("yield calls"))
        .expect("a yield calls row")
        .split_whitespace()
        .collect();
    assert_eq!(
        yields[yields.len() - 3..],
        ["20", "40", "+100.0%"],
        "{stdout}"
    );
    let episodes = stdout.lines().find(|l| l.contains("common::poll")).unwrap();
    assert!(episodes.ends_with("10           10     +0.0%"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_broken_threshold_exits_1_naming_the_site_the_figure_and_the_change() {
    let dir = dir("diff-fail");
    let (before, after) = two_runs(&dir);
    let (code, stdout, stderr) =
        yieldprof(&[&"diff", &before, &after, &"--fail-if", &"yield-calls+50%"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("yield calls"),
        "the table still shows: {stdout}"
    );
    assert!(
        stderr.starts_with("1 threshold violation(s):\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "site `common::poll`: yield-calls 20 → 40 (+100.0%), over --fail-if yield-calls+50%"
        ),
        "{stderr}"
    );
    // The same figures falling: a `-` threshold.
    let (code, _, stderr) = yieldprof(&[&"diff", &after, &before, &"--fail-if", &"calls-40%"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("yield-calls 40 → 20 (-50.0%), over --fail-if calls-40%"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn thresholds_that_hold_exit_0() {
    let dir = dir("diff-pass");
    let (before, after) = two_runs(&dir);
    let args: [&dyn AsRef<std::ffi::OsStr>; 9] = [
        &"diff",
        &before,
        &after,
        &"--fail-if",
        &"yield-calls+100%",
        &"--fail-if",
        &"episodes+0%",
        &"--fail-if",
        &"spin-calls+0%",
    ];
    let (code, _, stderr) = yieldprof(&args);
    assert_eq!(code, 0, "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn diff_writes_a_differential_flame_graph_from_the_folded_files() {
    let dir = dir("diff-svg");
    let (before, after) = two_runs(&dir);
    let svg = dir.join("diff.svg");
    let (code, stdout, stderr) = yieldprof(&[&"diff", &before, &after, &"--svg", &svg]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&format!("differential flame graph: {}", svg.display())));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("<svg") && text.contains("common::poll"),
        "{text}"
    );
    assert!(text.contains("yieldprof diff: before → after"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_expression_is_a_usage_error() {
    let (code, stdout, stderr) = yieldprof(&[&"diff", &"a", &"b", &"--fail-if", &"wall*5"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.contains("`wall*5` is not <figure>+<percent>%"),
        "{stderr}"
    );
    let (code, _, stderr) = yieldprof(&[&"diff", &"a", &"b", &"--fail-if", &"latency+5%"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("`latency` is not a figure of the comparison"),
        "{stderr}"
    );
}

#[test]
fn missing_files_are_named_and_exit_2() {
    let dir = dir("diff-missing");
    let (before, _) = two_runs(&dir);
    let (code, _, stderr) = yieldprof(&[&"diff", &before, &dir.join("nope")]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nope.json: no such file"), "{stderr}");
    // The JSON alone: the table is made, the graph is not.
    let lone = dir.join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    std::fs::copy(dir.join("after.json"), lone.join("after.json")).unwrap();
    let svg = dir.join("diff.svg");
    let (code, _, stderr) = yieldprof(&[&"diff", &before, &lone.join("after"), &"--svg", &svg]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("differential flame graph not written"),
        "{stderr}"
    );
    assert!(stderr.contains("after.folded"), "{stderr}");
    assert!(!svg.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
