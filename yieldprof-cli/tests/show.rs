//! `yieldprof show` on a real run's files.

mod common;

use common::{dir, record, yieldprof};
use std::cmp::Reverse;
use yieldprof::report::json::Document;

/// The site names in the order `show` lists them.
fn listed(stdout: &str, doc: &Document) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| doc.sites.iter().any(|s| s.name == *w))
        .map(str::to_string)
        .collect()
}

#[test]
fn show_prints_the_headline_each_site_with_its_calls_and_the_findings() {
    let dir = dir("show");
    let run = record(&dir, "ten-polls", 10, 3);
    let (code, stdout, stderr) = yieldprof(&[&"show", &run]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  1 thread, "), "{stdout}");
    assert!(
        stdout.contains("Wait sites by wall time (2 of 2)"),
        "{stdout}"
    );
    let poll = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("common::poll "))
        .take(2)
        .collect::<Vec<_>>();
    assert_eq!(
        poll[0].split_whitespace().nth(1),
        Some("10"),
        "episodes: {stdout}"
    );
    assert!(
        poll[1].contains("calls: yield 30 (3.0/episode)"),
        "{stdout}"
    );
    assert!(stdout.contains("\nFindings ("), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn show_sorts_by_the_figure_asked_and_keeps_the_top_n() {
    let dir = dir("show-sort");
    let run = record(&dir, "sorted", 20, 2);
    let json = run.with_extension("json");
    let doc: Document = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let by = |key: &dyn Fn(&yieldprof::report::json::Site) -> Option<u64>| {
        let mut sites: Vec<_> = doc.sites.iter().collect();
        sites.sort_by_key(|s| Reverse(key(s)));
        sites.iter().map(|s| s.name.clone()).collect::<Vec<_>>()
    };
    for (sort, expected) in [
        ("wall", by(&|s| Some(s.wall_ns))),
        ("p99", by(&|s| s.durations.p99_ns)),
        ("switches", by(&|s| s.switches())),
    ] {
        let (code, stdout, stderr) = yieldprof(&[&"show", &json, &"--sort", &sort]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(listed(&stdout, &doc), expected, "--sort {sort}: {stdout}");
    }
    let (code, stdout, _) = yieldprof(&[&"show", &json, &"--sort", &"p99", &"--top", &"1"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Wait sites by p99 episode (1 of 2)"),
        "{stdout}"
    );
    assert_eq!(listed(&stdout, &doc), by(&|s| s.durations.p99_ns)[..1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn show_names_a_missing_or_malformed_report_and_exits_2() {
    let dir = dir("show-bad");
    let (code, _, stderr) = yieldprof(&[&"show", &dir.join("nothing")]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nothing.json: no such file"), "{stderr}");
    std::fs::write(
        dir.join("broken.json"),
        "{\"schema\": \"yieldprof/2\", \"run\": ",
    )
    .unwrap();
    let (code, _, stderr) = yieldprof(&[&"show", &dir.join("broken.json")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("broken.json: not a yieldprof report"),
        "{stderr}"
    );
    std::fs::write(dir.join("future.json"), "{\"schema\": \"yieldprof/9\"}").unwrap();
    let (code, _, stderr) = yieldprof(&[&"show", &dir.join("future")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("a report of schema `yieldprof/9`"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn show_lists_lock_sites_with_their_holders() {
    use std::sync::{mpsc, Arc};
    use std::time::Duration;
    let dir = dir("show-locks");
    let m = Arc::new(yieldprof::sync::Mutex::new(()));
    let (tx, rx) = mpsc::channel();
    let m2 = m.clone();
    let holder = std::thread::spawn(move || {
        let (g, line) = (m2.lock().unwrap(), line!());
        tx.send(line).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        drop(g);
    });
    let holder_line = rx.recv().unwrap();
    let (g, waiter) = (m.lock().unwrap(), line!());
    drop(g);
    holder.join().unwrap();
    let profile = yieldprof::snapshot();
    profile.write(&dir, "locks").unwrap();
    let (code, stdout, stderr) = yieldprof(&[&"show", &dir.join("locks")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\nLocks (hold times sampled"), "{stdout}");
    assert!(
        stdout.contains(&format!("tests/show.rs:{waiter}:")),
        "{stdout}"
    );
    let contended = profile
        .locks()
        .sites
        .iter()
        .any(|s| s.site.line() == waiter && s.contended > 0);
    if contended {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains("held by")
                    && l.contains(&format!("tests/show.rs:{holder_line}:"))),
            "{stdout}"
        );
    } else {
        println!("inconclusive: the waiter was descheduled past the whole hold");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
