//! `yieldprof timeline` on a real run's `<name>.trace.json`. (Own test binary: the
//! timeline length set here applies to every thread that starts recording after.)

mod common;

use common::{dir, record, yieldprof};

#[test]
fn timeline_lists_the_threads_episodes_kept_and_dropped_and_the_sites() {
    let dir = dir("timeline");
    // 4 episodes per thread: the recorder's 8 (7 polls and a spin) keep the last 4.
    let guard = yieldprof::Options::from_env()
        .timeline(4)
        .out_dir(&dir)
        .init();
    let run = record(&dir, "tl", 7, 2);
    let (code, stdout, stderr) = yieldprof(&[&"timeline", &run]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "{}: 1 thread, 4 of 8 episodes kept (4 dropped; 4 per thread)",
            dir.join("tl.trace.json").display()
        )
    );
    let row = |first: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(first))
            .unwrap_or_else(|| panic!("no {first} row in {stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // thread, tid, kept, recorded, dropped, span (a number and its unit).
    let recorder = row("recorder");
    assert_eq!(recorder[2..5], ["4", "8", "4"], "{stdout}");
    // The newest 4: 3 polls of 2 yields each, then the spin.
    let poll = row("common::poll");
    assert_eq!((poll[1], poll[poll.len() - 1]), ("3", "yield"), "{stdout}");
    let spin = row("common::spin");
    assert_eq!((spin[1], spin[spin.len() - 1]), ("1", "spin"), "{stdout}");
    assert!(stdout.contains("ui.perfetto.dev"), "{stdout}");
    // `--top 1`: only the costliest site.
    let (_, top, _) = yieldprof(&[&"timeline", &run, &"--top", &"1"]);
    assert_eq!(top.lines().count(), lines.len() - 1, "{top}");
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_without_a_trace_says_what_turns_the_timeline_on() {
    let dir = dir("timeline-none");
    let (code, _, stderr) = yieldprof(&[&"timeline", &dir.join("absent")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("absent.trace.json: no such file") && stderr.contains("YIELDPROF_TIMELINE"),
        "{stderr}"
    );
    std::fs::write(dir.join("bad.trace.json"), "{\"traceEvents\": 3}").unwrap();
    let (code, _, stderr) = yieldprof(&[&"timeline", &dir.join("bad.json")]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a yieldprof trace"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
