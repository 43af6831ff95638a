//! Panics in the host: the episode that panicked is still timed and counted, the
//! thread's frame stack unwinds with it, a thread that dies keeps its data, and the
//! guard writes the files while `main` unwinds.

mod child_process;

use child_process::{folded_total, names, run, temp_dir};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use yieldprof::report::Metric;
use yieldprof::{Kind, Session};

fn quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    catch_unwind(AssertUnwindSafe(f))
}

#[yieldprof::instrument_wait]
fn yield_then_panic() {
    std::thread::yield_now();
    std::thread::sleep(Duration::from_millis(2));
    panic!("host bug inside a wait");
}

#[test]
fn a_panic_inside_an_episode_still_counts_and_times_it() {
    let session = Session::this_thread();
    assert!(quietly(yield_then_panic).is_err());
    let report = session.finish();
    let site = report.site("yield_then_panic").unwrap();
    assert_eq!(site.episodes, 1);
    assert_eq!(site.calls_of(Kind::Yield), 1);
    assert_eq!(site.calls_of(Kind::Sleep), 1);
    assert!(site.wall_ns >= 2_000_000, "{}", site.wall_ns);
    assert_eq!(site.durations.count(), 1);
}

#[yieldprof::instrument_wait]
fn inner_panics() {
    std::thread::yield_now();
    panic!("nested");
}

#[yieldprof::instrument_wait]
fn outer_calls_inner() {
    std::thread::yield_now();
    inner_panics();
}

#[yieldprof::instrument_wait]
fn after_the_panic() {
    std::thread::yield_now();
}

#[test]
fn a_panic_in_a_nested_episode_closes_both_and_restores_the_stack() {
    let session = Session::this_thread();
    assert!(quietly(outer_calls_inner).is_err());
    after_the_panic();
    let report = session.finish();
    let outer = report.site("outer_calls_inner").unwrap();
    let inner = report.site("inner_panics").unwrap();
    assert_eq!((outer.episodes, inner.episodes), (1, 1));
    assert_eq!(
        (outer.calls_of(Kind::Yield), inner.calls_of(Kind::Yield)),
        (1, 1)
    );
    assert!(inner.wall_ns <= outer.wall_ns);
    // The inner frame's time is not the outer's own.
    assert_eq!(outer.self_ns, outer.wall_ns - inner.wall_ns);
    // After unwinding, the next episode opens at the thread's root, not inside the
    // frames the panic left.
    let folded = report.folded(Metric::Calls);
    let after: Vec<&String> = folded
        .iter()
        .filter(|l| l.contains("after_the_panic"))
        .collect();
    assert_eq!(after.len(), 1, "{folded:?}");
    assert!(!after[0].contains("outer_calls_inner"), "{}", after[0]);
    assert_eq!(
        folded_total(&folded.join("\n"), "inner_panics;[yield]"),
        1,
        "{folded:?}"
    );
}

#[yieldprof::instrument_wait]
fn worker_wait(i: u64) {
    std::thread::yield_now();
    if i == 4 {
        panic!("worker dies in its fifth episode");
    }
}

#[test]
fn a_thread_that_panics_keeps_its_data() {
    let session = Session::this_thread();
    let joined = session.scope(|s| {
        s.spawn(|| {
            for i in 0..10 {
                worker_wait(i);
            }
        })
        .join()
    });
    assert!(joined.is_err());
    let report = session.finish();
    let site = report.site("worker_wait").unwrap();
    assert_eq!((site.episodes, site.calls_of(Kind::Yield)), (5, 5));
    let threads = report.threads();
    let dead: Vec<_> = threads.iter().filter(|t| t.exited).collect();
    assert_eq!(dead.len(), 1, "{threads:?}");
    assert!(dead[0].wall_ns >= dead[0].wait_ns);
}

#[yieldprof::instrument_wait]
fn main_wait() {
    std::thread::yield_now();
    std::thread::yield_now();
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    assert_eq!(role, "panicking-main");
    let _guard = yieldprof::Options::from_env().name("crashed").init();
    for _ in 0..3 {
        main_wait();
    }
    std::thread::spawn(main_wait).join().unwrap();
    panic!("the host's main panics with the guard alive");
}

#[test]
fn the_guard_writes_the_files_while_main_unwinds() {
    let dir = temp_dir("panic-main");
    let exit = run(
        "panicking-main",
        &[
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
            ("YIELDPROF_METRIC", "calls"),
        ],
    );
    // libtest's exit code for a failed test: the panic reached the harness as usual.
    assert_eq!(exit.code, Some(101), "{exit:?}");
    assert!(exit.stderr.contains("the host's main panics"), "{exit:?}");
    assert!(
        exit.stderr.contains("yieldprof: wrote crashed.folded"),
        "{exit:?}"
    );
    let folded = std::fs::read_to_string(dir.join("crashed.folded")).unwrap();
    // Four episodes of two yields: three on the main thread, one on another.
    assert_eq!(folded_total(&folded, "main_wait;[yield]"), 8, "{folded}");
    assert!(names(&dir).contains(&"crashed.txt".to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
}
