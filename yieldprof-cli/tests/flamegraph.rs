//! `yieldprof flamegraph` on a real run's folded files, one view at a time.

mod common;

use common::{dir, poll, record, yieldprof};
use yieldprof::report::Metric;

#[test]
fn the_calls_view_is_drawn_from_the_calls_folded_file_the_run_wrote() {
    let dir = dir("flame-calls");
    let guard = yieldprof::Options::from_env()
        .out_dir(&dir)
        .name("viewed")
        .view(Metric::Calls)
        .init();
    for _ in 0..5 {
        poll(3);
    }
    guard.write().expect("the run's files");
    let run = dir.join("viewed");
    let (code, stdout, stderr) = yieldprof(&[&"flamegraph", &run, &"--view", &"calls"]);
    assert_eq!(code, 0, "{stderr}");
    let svg = dir.join("viewed.calls.flamegraph.svg");
    assert_eq!(
        stdout,
        format!(
            "{} from {}\n",
            svg.display(),
            dir.join("viewed.calls.folded").display()
        )
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("yieldprof: viewed (calls)"), "title");
    // 15 yields, in calls: the leaf's hover title carries the count.
    assert!(text.contains("<title>[yield] (15 calls"), "{text}");
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_view_the_run_did_not_write_says_which_setting_writes_it() {
    let dir = dir("flame-missing");
    let run = record(&dir, "plain", 3, 1);
    let (code, _, stderr) = yieldprof(&[&"flamegraph", &run, &"--view", &"switches"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("plain.switches.folded: no such file"),
        "{stderr}"
    );
    assert!(stderr.contains("YIELDPROF_VIEWS=switches"), "{stderr}");
    assert!(
        stderr.contains("Options::view(Metric::Switches)"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_wall_and_split_views_are_drawn_from_the_main_folded_file() {
    let dir = dir("flame-split");
    let run = record(&dir, "halves", 4, 2);
    let out = dir.join("split.svg");
    let (code, _, stderr) = yieldprof(&[&"flamegraph", &run, &"--view", &"split", &"-o", &out]);
    assert_eq!(code, 0, "{stderr}");
    let split = std::fs::read_to_string(&out).unwrap();
    assert!(
        split.contains("<title>wait (") && split.contains("<title>work ("),
        "{split}"
    );
    // `-o -`: the SVG on standard output, and nothing else there.
    let (code, stdout, stderr) = yieldprof(&[&"flamegraph", &run, &"-o", &"-"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("<?xml"), "{stdout}");
    assert!(stdout.contains("yieldprof: halves (wall)") && stdout.contains("common::poll"));
    assert!(
        !stdout.contains("<title>wait ("),
        "the wall view is not split"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_malformed_folded_file_is_named_with_its_bad_lines() {
    let dir = dir("flame-bad");
    std::fs::write(dir.join("bad.folded"), "main;[work] 5\nmain;poll 12x\n").unwrap();
    let (code, _, stderr) = yieldprof(&[&"flamegraph", &dir.join("bad.json")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("bad.folded: 1 malformed line(s): line 2: the count is not a whole number"),
        "{stderr}"
    );
    assert!(!dir.join("bad.wall.flamegraph.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
