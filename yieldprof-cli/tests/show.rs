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
        stdout.contains("Wait sites by on-CPU time (2 of 2)"),
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
        sites.sort_by_key(|s| Reverse((key(s), s.wall_ns)));
        sites.iter().map(|s| s.name.clone()).collect::<Vec<_>>()
    };
    for (sort, expected) in [
        ("on-cpu", by(&|s| s.on_cpu_ns())),
        ("calls", by(&|s| Some(s.calls_total()))),
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

/// An idle wait: long on the clock, next to nothing on the CPU.
#[yieldprof::instrument_wait]
fn idle_wait() {
    std::thread::sleep(std::time::Duration::from_millis(30));
}

/// A busy wait: spins for 5 ms of the caller's clock.
#[yieldprof::instrument_wait]
fn busy_wait() {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(5) {
        std::hint::spin_loop();
    }
}

#[test]
fn show_lists_where_the_cores_go_first_by_default() {
    let dir = dir("show-default");
    let json = dir.join("cores.json");
    // The arrangement (idle: longer on the clock, shorter on the CPU) holds unless the
    // machine preempts the spinner for long: tried a few times, else inconclusive.
    for attempt in 1..=3 {
        let run = std::thread::spawn(|| {
            let session = yieldprof::Session::this_thread();
            idle_wait();
            busy_wait();
            session.finish()
        });
        run.join().unwrap().write(&dir, "cores").unwrap();
        let doc: Document = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let (idle, busy) = (
            doc.site("idle_wait").unwrap(),
            doc.site("busy_wait").unwrap(),
        );
        let order = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
            let (code, stdout, stderr) = yieldprof(args);
            assert_eq!(code, 0, "{stderr}");
            listed(&stdout, &doc)
        };
        let arranged = idle.wall_ns > busy.wall_ns;
        match (idle.on_cpu_ns(), busy.on_cpu_ns()) {
            (Some(i), Some(b)) if b > i && arranged => {
                let by_wall = order(&[&"show", &json, &"--sort", &"wall"]);
                assert_eq!(by_wall, ["show::idle_wait", "show::busy_wait"]);
                let by_default = order(&[&"show", &json]);
                assert_eq!(by_default, ["show::busy_wait", "show::idle_wait"]);
                std::fs::remove_dir_all(&dir).unwrap();
                return;
            }
            split => println!(
                "attempt {attempt}: not as arranged: wall idle {} busy {}, on-CPU {split:?}",
                idle.wall_ns, busy.wall_ns
            ),
        }
    }
    println!("inconclusive: the machine did not let the arrangement hold in 3 tries");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_report_that_is_not_utf8_is_named_with_its_line_and_exits_2() {
    let dir = dir("show-utf8");
    std::fs::write(dir.join("bad.json"), b"{\n  \"schema\":\n  \"\xff\"\n}\n").unwrap();
    let (code, _, stderr) = yieldprof(&[&"show", &dir.join("bad")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.json") && stderr.contains("line 3 is not UTF-8"),
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

/// Takes a std lock the macro rewrites, then yields.
#[yieldprof::instrument_wait]
fn take_std_lock(m: &std::sync::Mutex<u32>) {
    *m.lock().unwrap() += 1;
    std::thread::yield_now();
}

#[test]
fn show_labels_a_rewritten_lock_figure_as_recorded_not_calls() {
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;
    let dir = dir("show-std-lock");
    let m = Arc::new(Mutex::new(0));
    for _ in 0..100 {
        take_std_lock(&m);
    }
    // One arranged block, so the site has a lock figure to label.
    let (tx, rx) = mpsc::channel();
    let m2 = m.clone();
    let holder = std::thread::spawn(move || {
        let g = m2.lock().unwrap();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        drop(g);
    });
    rx.recv().unwrap();
    take_std_lock(&m);
    holder.join().unwrap();
    assert_eq!(*m.lock().unwrap(), 101);
    let profile = yieldprof::snapshot();
    let recorded = profile
        .site("show::take_std_lock")
        .unwrap()
        .calls_of(yieldprof::Kind::Lock);
    profile.write(&dir, "std-lock").unwrap();
    let (code, stdout, stderr) = yieldprof(&[&"show", &dir.join("std-lock")]);
    assert_eq!(code, 0, "{stderr}");
    let label = format!("lock {recorded} recorded (");
    assert!(stdout.contains(&label), "{label}: {stdout}");
    assert!(stdout.contains("free first locks not counted"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
