//! fork(): the child's copy of the guard writes nothing (the parent's files stay the
//! parent's, counted once), the child's reports hold only what the child did, and a
//! guard the child makes writes `<name>.<child pid>.*`. The host runs in a child process
//! of the test binary, so the fork happens in a process with no test threads.

mod child_process;

use child_process::{folded_total, names, run, temp_dir};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use yieldprof::Watched;

#[yieldprof::instrument_wait]
fn poll() {
    std::thread::yield_now();
    std::thread::yield_now();
}

fn polls(n: usize) {
    for _ in 0..n {
        poll();
    }
}

/// Child-side checks; a failure exits the forked child with a code naming it.
fn check(ok: bool, code: i32, what: &str) {
    if !ok {
        eprintln!("forked child: {what}");
        // SAFETY: ends the forked child at once, without the test harness it copied.
        unsafe { libc::_exit(code) };
    }
}

fn forked_child(guard: yieldprof::Guard) -> ! {
    polls(2);
    let p = yieldprof::snapshot();
    let episodes = p.site("poll").map_or(0, |s| s.episodes);
    check(
        episodes == 2,
        10,
        &format!("poll episodes {episodes}, not 2"),
    );
    // The parent's worker thread does not exist here, nor in the child's reports.
    check(p.threads().len() == 1, 11, &format!("{:?}", p.threads()));
    // The inherited guard: nothing written, and no wait for the parent's snapshot
    // thread (which would never answer).
    drop(guard);
    let out = yieldprof::Options::from_env().out_dir.clone();
    check(
        !out.join("forked.folded").exists(),
        12,
        "the child wrote the parent's file",
    );
    let own = yieldprof::Options::from_env().name("forked").init();
    check(
        own.options().name == format!("forked.{}", std::process::id()),
        13,
        &own.options().name,
    );
    polls(1);
    drop(own);
    // SAFETY: as in `check`.
    unsafe { libc::_exit(0) };
}

/// A host that forks before any thread has recorded: the child still knows it is one.
fn fork_before_recording() -> ! {
    let guard = yieldprof::Options::from_env().name("early").init();
    // SAFETY: the child records, writes its own files and ends in `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let own = yieldprof::Options::from_env().name("early").init();
        polls(2);
        drop(own);
        std::mem::forget(guard);
        // SAFETY: as in `check`.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is writable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    println!("child pid {pid}");
    polls(1);
    drop(guard);
    std::process::exit(0);
}

/// Forks a host whose other threads keep taking every lock yieldprof has: watching and
/// unwatching values, starting and ending recording threads, flushing the guard.
const BUSY_FORKS: usize = 8;
/// How long a child may take to record and write its report before it counts as hung:
/// far above the ~0.1 s it takes on a loaded 2-core machine.
const HUNG_AFTER: Duration = Duration::from_secs(60);

/// The forked child of `fork_while_busy`: watches, records and writes its own report.
fn busy_child() -> ! {
    let value: Watched<AtomicU64> = Watched::new(0);
    yieldprof::watch(&value, "child-value");
    value.fetch_add(1, Ordering::Relaxed);
    polls(2);
    let p = yieldprof::snapshot();
    check(
        p.site("poll").map(|s| s.episodes) == Some(2),
        20,
        "poll episodes",
    );
    check(
        p.sharing()
            .iter()
            .any(|l| l.words.iter().any(|w| w.name == "child-value")),
        21,
        "watched value",
    );
    let own = yieldprof::Options::from_env().name("busy-child").init();
    drop(own);
    // SAFETY: as in `check`.
    unsafe { libc::_exit(0) };
}

/// Waits for `pid` until it exits or `HUNG_AFTER` passes (then kills it): its exit
/// status, `None` when it hung.
fn wait_or_kill(pid: libc::pid_t) -> Option<i32> {
    let start = std::time::Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is writable.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return Some(status);
        }
        if start.elapsed() > HUNG_AFTER {
            // SAFETY: `pid` is our child, hung; reap it after the kill.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn fork_while_busy() -> ! {
    let guard = yieldprof::Options::from_env().name("busy").init();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = |f: fn()| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                f();
            }
        })
    };
    let threads = [
        busy(|| {
            let v: Box<Watched<AtomicU64>> = Box::new(Watched::new(1));
            yieldprof::watch(&*v, "busy-value");
            v.fetch_add(1, Ordering::Relaxed);
        }),
        busy(|| std::thread::spawn(|| polls(1)).join().unwrap()),
        busy(|| {
            yieldprof::flush().unwrap();
        }),
    ];
    let (mut forked, mut hung, mut failed, mut wrote) = (0, 0, 0, 0);
    let out = yieldprof::Options::from_env().out_dir;
    for _ in 0..BUSY_FORKS {
        // SAFETY: the child only runs `busy_child`, which ends in `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            busy_child();
        }
        forked += 1;
        match wait_or_kill(pid) {
            None => {
                // One is enough to fail; the next would wait as long again.
                hung += 1;
                break;
            }
            Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => {
                let folded = std::fs::read_to_string(out.join(format!("busy-child.{pid}.folded")));
                if folded.is_ok_and(|f| folded_total(&f, "poll;[yield]") == 4) {
                    wrote += 1;
                }
            }
            Some(s) => {
                eprintln!("child {pid}: status {s:#x}");
                failed += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    drop(guard);
    println!("forks {forked} hung {hung} failed {failed} wrote {wrote}");
    std::process::exit(0);
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    if role == "fork-before-recording" {
        fork_before_recording();
    }
    if role == "fork-while-busy" {
        fork_while_busy();
    }
    assert_eq!(role, "forking-host");
    let guard = yieldprof::Options::from_env()
        .name("forked")
        .init()
        .snapshot_every(Duration::from_secs(3600));
    polls(5);
    // A second thread, recording and alive across the fork.
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        polls(1);
        ready_tx.send(()).unwrap();
        let _ = rx.recv();
    });
    ready.recv().unwrap();
    // SAFETY: the child only runs `forked_child`, which ends in `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        forked_child(guard);
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is writable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "forked child failed: {status:#x}"
    );
    println!("child pid {pid}");
    polls(1);
    tx.send(()).unwrap();
    worker.join().unwrap();
    drop(guard);
    println!("host done");
    std::process::exit(0);
}

#[test]
fn a_forked_child_neither_overwrites_nor_doubles_the_parents_profile() {
    let dir = temp_dir("fork");
    let exit = run(
        "forking-host",
        &[
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
            ("YIELDPROF_METRIC", "calls"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    assert!(exit.stdout.contains("host done"), "{exit:?}");
    let child_pid: u32 = exit
        .stdout
        .lines()
        .find_map(|l| l.split_once("child pid ").map(|(_, pid)| pid))
        .unwrap()
        .parse()
        .unwrap();
    // The parent: 5 + 1 polls on main, 1 on the worker; none of the child's.
    let parent = std::fs::read_to_string(dir.join("forked.folded")).unwrap();
    assert_eq!(folded_total(&parent, "poll;[yield]"), 14, "{parent}");
    // The child's own guard: its 3 polls since the fork, none of the parent's.
    let child = std::fs::read_to_string(dir.join(format!("forked.{child_pid}.folded"))).unwrap();
    assert_eq!(folded_total(&child, "poll;[yield]"), 6, "{child}");
    // The timelines likewise: the parent's 7 episodes, the child's 3 since the fork.
    let slices = |name: &str| {
        let trace = std::fs::read_to_string(dir.join(name)).unwrap();
        trace.matches(r#""ph":"X""#).count()
    };
    assert_eq!(slices("forked.trace.json"), 7);
    assert_eq!(slices(&format!("forked.{child_pid}.trace.json")), 3);
    let files = names(&dir);
    assert_eq!(files.len(), 15, "{files:?}"); // 7 + 7 files and snapshots/
                                              // One snapshot (the parent's last), none from the child.
    assert_eq!(names(&dir.join("snapshots")).len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_child_forked_before_anything_was_recorded_writes_under_its_own_name() {
    let dir = temp_dir("fork-early");
    let exit = run(
        "fork-before-recording",
        &[
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
            ("YIELDPROF_METRIC", "calls"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let child_pid = exit
        .stdout
        .lines()
        .find_map(|l| l.split_once("child pid ").map(|(_, pid)| pid.to_string()))
        .unwrap();
    let parent = std::fs::read_to_string(dir.join("early.folded")).unwrap();
    assert_eq!(folded_total(&parent, "poll;[yield]"), 2, "{parent}");
    let child = std::fs::read_to_string(dir.join(format!("early.{child_pid}.folded"))).unwrap();
    assert_eq!(folded_total(&child, "poll;[yield]"), 4, "{child}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn children_forked_while_other_threads_take_every_lock_record_and_write_their_own_report() {
    let dir = temp_dir("fork-busy");
    let exit = run(
        "fork-while-busy",
        &[
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
            ("YIELDPROF_METRIC", "calls"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let line = format!("forks {BUSY_FORKS} hung 0 failed 0 wrote {BUSY_FORKS}");
    assert!(
        exit.stdout.contains(&line),
        "{}\n{}",
        exit.stdout,
        exit.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
