//! The foundation's promises: exact counts across threads, folded files inferno can
//! read, size that grows with unique stacks only, and data kept after threads exit.
//! Each test uses wait sites of its own, so tests running in parallel don't mix.

use std::path::PathBuf;
use std::time::Duration;
use yieldprof::report::Metric;
use yieldprof::{Kind, Session};

/// 1000 spins, 10 yields and 3 sleeps per call.
#[yieldprof::instrument_wait]
fn mixed_wait() {
    for _ in 0..1000 {
        std::hint::spin_loop();
    }
    for _ in 0..10 {
        std::thread::yield_now();
    }
    for _ in 0..3 {
        std::thread::sleep(Duration::from_micros(1));
    }
}

#[test]
fn seven_calls_on_two_threads_give_exact_counts_at_the_right_lines() {
    let session = Session::this_thread();
    session.scope(|s| {
        for _ in 0..2 {
            s.spawn(|| (0..7).for_each(|_| mixed_wait()));
        }
    });
    let report = session.finish();
    let site = report.site("mixed_wait").expect("the site is recorded");
    assert_eq!(site.episodes, 14);
    assert_eq!(site.calls_of(Kind::Spin), 14_000);
    assert_eq!(site.calls_of(Kind::Yield), 140);
    assert_eq!(site.calls_of(Kind::Sleep), 42);
    let src = include_str!("foundation.rs");
    let line_of = |needle: &str| {
        src.lines()
            .position(|l| l.trim_start().starts_with(needle))
            .expect("call in source") as u32
            + 1
    };
    let lines: Vec<(Kind, u32)> = site
        .calls
        .iter()
        .map(|c| (c.site.kind, c.site.line))
        .collect();
    assert_eq!(
        lines,
        vec![
            (Kind::Spin, line_of("std::hint::spin_loop();")),
            (Kind::Yield, line_of("std::thread::yield_now();")),
            (
                Kind::Sleep,
                line_of("std::thread::sleep(Duration::from_micros(1));")
            ),
        ]
    );
    // 42 sleeps of at least 1 µs each.
    assert!(site.ns_of(Kind::Sleep) >= 42_000, "{site:?}");
    assert!(site.wall_ns >= site.ns_of(Kind::Sleep) + site.ns_of(Kind::Yield));
    // Both worker threads have the site under their own thread frame.
    let folded = report.folded(Metric::Calls);
    let spin_lines: Vec<&String> = folded
        .iter()
        .filter(|l| l.contains("::mixed_wait;[spin] "))
        .collect();
    assert_eq!(spin_lines.len(), 2, "{folded:?}");
    assert!(
        spin_lines.iter().all(|l| l.ends_with(" 7000")),
        "{spin_lines:?}"
    );
}

#[yieldprof::instrument_wait]
fn one_stack_wait() {
    std::hint::spin_loop();
}

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yieldprof-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_million_episodes_of_one_stack_fold_into_one_line() {
    let session = Session::this_thread();
    for _ in 0..1_000_000 {
        one_stack_wait();
    }
    let report = session.finish();
    assert_eq!(report.site("one_stack_wait").unwrap().episodes, 1_000_000);
    let dir = out_dir("million");
    let paths = report.write(&dir, "million").expect("written");
    let folded = std::fs::read_to_string(&paths[0]).unwrap();
    let calls: Vec<&str> = folded
        .lines()
        .filter(|l| l.contains("one_stack_wait"))
        .collect();
    // The site's own time is one `[spin]` line, however many episodes ran, and one
    // `[off-cpu]` line more if the thread was ever preempted in an episode. (On a
    // loaded machine the preemptions can take all of it: then `[off-cpu]` alone.)
    let leaf = |l: &&str| l.contains(";[spin] ") || l.contains(";[off-cpu] ");
    assert!(
        (1..=2).contains(&calls.len()) && calls.iter().all(leaf),
        "{folded}"
    );
    let own: u64 = calls
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let site = report.site("one_stack_wait").unwrap();
    assert_eq!(own, site.self_ns, "{folded}");
    assert!(
        folded.len() < 300,
        "{} bytes for one stack: {folded}",
        folded.len()
    );
}

#[yieldprof::instrument_wait]
fn rendered_wait() {
    std::thread::yield_now();
    std::hint::spin_loop();
}

#[test]
fn the_folded_file_renders_with_inferno_unchanged() {
    let session = Session::this_thread();
    for _ in 0..100 {
        rendered_wait();
    }
    let dir = out_dir("render");
    let paths = session.finish().write(&dir, "render").expect("written");
    let folded = &paths[0];
    // inferno's own folded-file reader (the code behind `inferno-flamegraph`).
    let mut svg = Vec::new();
    let mut opts = inferno::flamegraph::Options::default();
    inferno::flamegraph::from_files(&mut opts, std::slice::from_ref(folded), &mut svg)
        .expect("renders");
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("rendered_wait"), "the frame is in the graph");
    assert!(svg.contains("[yield]"));
    // And the command-line tool itself, which .ci/run installs.
    match std::process::Command::new("inferno-flamegraph")
        .arg(folded)
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(String::from_utf8_lossy(&out.stdout).contains("rendered_wait"));
        }
        Err(e) => eprintln!("inferno-flamegraph not run ({e}); `cargo install inferno` adds it"),
    }
    // Our own SVG has the kinds in their colours.
    let ours = std::fs::read_to_string(&paths[1]).unwrap();
    assert!(ours.contains("rgb(230,159,0)"), "[yield] is orange");
    // A `[spin]` frame is drawn only where the spin's own time was measured on the CPU:
    // on a loaded machine a preempted episode's own time is `[off-cpu]` instead. Record
    // again (at most 5 times) until the folded file has one, then check its colour.
    for attempt in 1..=5 {
        let session = Session::this_thread();
        for _ in 0..100 {
            rendered_wait();
        }
        let paths = session.finish().write(&dir, "render").expect("written");
        let folded = std::fs::read_to_string(&paths[0]).unwrap();
        if !folded.contains(";[spin] ") {
            println!("attempt {attempt}: no [spin] stack in the folded file:\n{folded}");
            continue;
        }
        let ours = std::fs::read_to_string(&paths[1]).unwrap();
        assert!(ours.contains("rgb(213,94,0)"), "[spin] is vermillion");
        return;
    }
    println!("inconclusive: 5 recordings had no [spin] time on the CPU");
}

#[yieldprof::instrument_wait]
fn short_lived_wait(n: u32) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

#[test]
fn data_from_a_hundred_exited_threads_is_all_there() {
    let session = Session::this_thread();
    session.scope(|s| {
        let handles: Vec<_> = (1..=100u32)
            .map(|i| s.spawn(move || short_lived_wait(i)))
            .collect();
        // An explicit join waits for the OS thread, thread-local destructors included.
        handles.into_iter().for_each(|h| h.join().unwrap());
    });
    let report = session.finish();
    let site = report.site("short_lived_wait").unwrap();
    assert_eq!(site.episodes, 100);
    assert_eq!(site.calls_of(Kind::Spin), (1..=100u64).sum::<u64>());
    let threads = report.threads();
    assert_eq!(threads.len(), 101);
    assert_eq!(threads.iter().filter(|t| t.exited).count(), 100);
}

#[test]
fn a_business_frame_holds_its_work_and_the_waits_it_calls() {
    let session = Session::this_thread();
    {
        yieldprof::frame!("handle_request");
        short_lived_wait(3);
    }
    let folded = session.finish().folded(Metric::Calls);
    assert!(
        folded
            .iter()
            .any(|l| l.ends_with(";handle_request;foundation::short_lived_wait;[spin] 3")),
        "{folded:?}"
    );
}

#[yieldprof::instrument_wait]
fn scope_mine() {
    std::thread::yield_now();
}

#[yieldprof::instrument_wait]
fn scope_other() {
    std::thread::yield_now();
}

#[test]
fn a_whole_process_session_sees_other_threads_and_a_thread_session_does_not() {
    let everything = Session::start();
    let mine = Session::this_thread();
    // Another thread, as another test running at the same time would be.
    std::thread::spawn(scope_other).join().unwrap();
    scope_mine();
    let (everything, mine) = (everything.finish(), mine.finish());
    let episodes = |p: &yieldprof::Profile, site| p.site(site).map(|s| s.episodes);
    assert_eq!(episodes(&everything, "scope_other"), Some(1));
    assert_eq!(episodes(&everything, "scope_mine"), Some(1));
    assert_eq!(episodes(&mine, "scope_other"), None);
    assert_eq!(episodes(&mine, "scope_mine"), Some(1));
    assert_eq!(mine.threads().len(), 1);
}
