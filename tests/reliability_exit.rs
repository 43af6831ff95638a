//! `std::process::exit` skips destructors, so the guard never writes. A host that exits
//! that way calls `yieldprof::flush()` first, or opts in to the exit hook
//! (`Options::write_at_exit(true)` or `YIELDPROF_WRITE_AT_EXIT=1`). Each case is a
//! child process exiting with code 3.

mod child_process;

use child_process::{folded_total, names, run, temp_dir, Exit};
use std::sync::atomic::{AtomicBool, Ordering};

const HOST_EXIT: i32 = 3;

#[yieldprof::instrument_wait]
fn poll() {
    std::thread::yield_now();
    std::thread::yield_now();
}

/// Waits until told to stop, as a background thread still busy at exit would.
#[yieldprof::instrument_wait]
fn wait_for_stop(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

/// One entry per call: a spin is counted in its episode.
#[yieldprof::instrument_wait]
fn spin_once() {
    std::hint::spin_loop();
}

/// A value of the host's whose destructor still waits.
struct Late;

impl Drop for Late {
    fn drop(&mut self) {
        spin_once();
        spin_once();
    }
}

thread_local! {
    static LATE: Late = const { Late };
}

fn polls(n: usize) {
    for _ in 0..n {
        poll();
    }
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    let opts = yieldprof::Options::from_env().name("exited");
    // The guard stays alive until `exit`, as in a host whose `main` calls it.
    let _guard = match role.as_str() {
        "exit" => {
            let guard = opts.init();
            polls(5);
            Some(guard)
        }
        "flush-then-exit" => {
            let guard = opts.init();
            polls(5);
            let paths = yieldprof::flush().unwrap();
            assert_eq!(paths.len(), 7, "{paths:?}");
            // Not in the files: after the flush.
            polls(100);
            Some(guard)
        }
        "hook" => {
            let guard = opts.write_at_exit(true).init();
            polls(5);
            // A thread still inside an episode when the process exits.
            static STOP: AtomicBool = AtomicBool::new(false);
            std::thread::spawn(|| wait_for_stop(&STOP));
            Some(guard)
        }
        "late-destructor" => {
            // Made before yieldprof's own thread-local, so its destructor runs after
            // yieldprof's at exit, and before the exit hook writes.
            LATE.with(|_| ());
            let guard = opts.write_at_exit(true).init();
            polls(5);
            Some(guard)
        }
        "hook-then-return" => {
            let guard = opts.write_at_exit(true).init();
            polls(5);
            // As when `main` returns: the guard wrote, the hook finds nothing to do.
            drop(guard);
            None
        }
        other => panic!("unknown role {other}"),
    };
    println!("host done");
    std::process::exit(HOST_EXIT);
}

fn host(role: &str, dir: &std::path::Path, extra: &[(&str, &str)]) -> Exit {
    let mut env = vec![
        ("YIELDPROF_OUT", dir.to_str().unwrap()),
        ("YIELDPROF_METRIC", "calls"),
    ];
    env.extend_from_slice(extra);
    let exit = run(role, &env);
    assert_eq!(exit.code, Some(HOST_EXIT), "{exit:?}");
    assert!(exit.stdout.contains("host done"), "{exit:?}");
    exit
}

fn yields_written(dir: &std::path::Path) -> u64 {
    let folded = std::fs::read_to_string(dir.join("exited.folded")).unwrap();
    folded_total(&folded, "poll;[yield]")
}

#[test]
fn exit_without_flush_writes_nothing() {
    let dir = temp_dir("exit-plain");
    let exit = host("exit", &dir, &[]);
    assert_eq!(names(&dir), Vec::<String>::new());
    assert!(!exit.stderr.contains("yieldprof:"), "{exit:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flush_before_exit_keeps_what_was_recorded_until_then() {
    let dir = temp_dir("exit-flush");
    host("flush-then-exit", &dir, &[]);
    assert_eq!(yields_written(&dir), 10);
    assert_eq!(names(&dir).len(), 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_exit_hook_writes_everything_even_with_a_thread_still_waiting() {
    let dir = temp_dir("exit-hook");
    let exit = host("hook", &dir, &[]);
    assert_eq!(yields_written(&dir), 10);
    let hook_lines = exit
        .stderr
        .lines()
        .filter(|l| l.starts_with("yieldprof: wrote 7 files") && l.ends_with("at exit"))
        .count();
    assert_eq!(hook_lines, 1, "{exit:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_exit_hook_can_be_turned_on_from_the_environment() {
    let dir = temp_dir("exit-hook-env");
    host("exit", &dir, &[("YIELDPROF_WRITE_AT_EXIT", "1")]);
    assert_eq!(yields_written(&dir), 10);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_guard_that_dropped_is_not_written_again_at_exit() {
    let dir = temp_dir("exit-hook-dropped");
    let exit = host("hook-then-return", &dir, &[]);
    assert_eq!(yields_written(&dir), 10);
    let writes = exit
        .stderr
        .lines()
        .filter(|l| l.starts_with("yieldprof: wrote"))
        .count();
    assert_eq!(writes, 1, "{exit:?}");
    assert!(!exit.stderr.contains("at exit"), "{exit:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn entries_after_the_threads_recording_ended_are_counted_in_the_files_written_at_exit() {
    let dir = temp_dir("exit-late");
    host("late-destructor", &dir, &[]);
    assert_eq!(yields_written(&dir), 10);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("exited.json")).unwrap()).unwrap();
    let host_thread = json["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "child")
        .unwrap();
    assert_eq!(host_thread["entries_after_exit"], 2, "{host_thread}");
    let txt = std::fs::read_to_string(dir.join("exited.txt")).unwrap();
    assert!(
        txt.contains("child: 2 entries after its recording ended"),
        "{txt}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
