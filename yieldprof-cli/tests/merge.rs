//! `yieldprof merge DIR` over real runs' files, and a run named by its stem when each
//! process wrote `<name>.<pid>`.

mod common;

use common::{dir, record, yieldprof};
use std::collections::BTreeMap;

/// The stacks of a folded file and their values.
fn stacks(path: &std::path::Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    yieldprof::report::parse_folded(&text)
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn merge_sums_every_runs_stacks_into_one_folded_file_and_graph() {
    let dir = dir("merge");
    record(&dir, "rust_out.101", 4, 2);
    record(&dir, "rust_out.102", 6, 3);
    let (code, stdout, stderr) = yieldprof(&[&"merge", &dir]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(": 2 runs, "), "{stdout}");
    // Ground truth: each stack's value is the sum of the two runs' values.
    let (a, b) = (
        stacks(&dir.join("rust_out.101.folded")),
        stacks(&dir.join("rust_out.102.folded")),
    );
    let mut want = a.clone();
    for (s, v) in &b {
        *want.entry(s.clone()).or_default() += v;
    }
    assert_eq!(stacks(&dir.join("merged.folded")), want);
    let svg = std::fs::read_to_string(dir.join("merged.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("common::poll"),
        "{svg}"
    );
    // Merging again leaves its own output out.
    let (code, stdout, _) = yieldprof(&[&"merge", &dir, &"--by-run", &"-o", &dir.join("apart")]);
    assert_eq!(code, 0);
    assert!(stdout.contains(": 2 runs, "), "{stdout}");
    let apart = stacks(&dir.join("apart.folded"));
    let a_total: u64 = a.values().sum();
    let under_a: u64 = apart
        .iter()
        .filter(|(s, _)| s.starts_with("rust_out.101;"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(under_a, a_total);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merge_of_a_folder_without_runs_exits_2() {
    let dir = dir("merge-empty");
    let (code, _, stderr) = yieldprof(&[&"merge", &dir]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no run's files here"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stem_without_its_own_files_names_its_newest_pid_run() {
    let dir = dir("newest");
    record(&dir, "svc.7", 2, 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    record(&dir, "svc.8", 5, 1);
    let (code, stdout, stderr) = yieldprof(&[&"show", &dir.join("svc")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("svc.8.json, the newest run of svc"),
        "{stderr}"
    );
    let poll = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("common::poll "))
        .unwrap();
    assert_eq!(poll.split_whitespace().nth(1), Some("5"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
