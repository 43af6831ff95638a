//! Continuous mode: delta snapshots written while the program runs, that add up to the
//! whole run, rotated to the newest K, and never a crash when the disk says no.
//! (Own test binary: each test holds a guard. Tests count their own wait site only,
//! since the snapshots cover every thread of the process.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use yieldprof::report::Metric;
use yieldprof::Options;

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yieldprof-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Snapshot files by sequence number: `(folded, pb.gz)` present.
fn snapshot_files(dir: &Path, name: &str) -> BTreeMap<u64, (bool, bool)> {
    let mut out: BTreeMap<u64, (bool, bool)> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let file = e.unwrap().file_name().into_string().unwrap();
        // <name>.20261202T151023.120Z-000007.{folded,pb.gz}
        let rest = file
            .strip_prefix(&format!("{name}."))
            .expect("only snapshot files");
        let (stem, pb) = match rest.strip_suffix(".pb.gz") {
            Some(stem) => (stem, true),
            None => (
                rest.strip_suffix(".folded").expect(".folded or .pb.gz"),
                false,
            ),
        };
        let (time, seq) = stem.split_once("Z-").expect("<time>Z-<seq>");
        assert_eq!(time.len(), "20261202T151023.120".len(), "{file}");
        assert_eq!(&time[8..9], "T", "{file}");
        let entry = out
            .entry(seq.parse().expect("a sequence number"))
            .or_default();
        if pb {
            entry.1 = true;
        } else {
            entry.0 = true;
        }
    }
    out
}

/// The `calls` of folded lines ending in `leaf`.
fn calls_ending(text: &str, leaf: &str) -> u64 {
    yieldprof::report::parse_folded(text)
        .unwrap()
        .into_iter()
        .filter(|(stack, _)| stack.ends_with(leaf))
        .map(|(_, v)| v)
        .sum()
}

#[yieldprof::instrument_wait]
fn snapshot_sum_wait() {
    std::thread::yield_now();
}

#[test]
fn delta_snapshots_add_up_to_the_whole_run() {
    let dir = temp_dir("snapshot-sum");
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("svc")
        .metric(Metric::Calls)
        .snapshot_every(Duration::from_millis(25))
        .init();
    for _ in 0..8 {
        (0..25).for_each(|_| snapshot_sum_wait());
        std::thread::sleep(Duration::from_millis(15));
    }
    drop(guard);
    let snaps = dir.join("snapshots");
    assert_eq!(Options::from_env().out_dir(&dir).snapshot_dir(), snaps);
    let files = snapshot_files(&snaps, "svc");
    assert!(files.len() >= 3, "{files:?}");
    // Numbered 1..=n with no gap, each a complete pair.
    let n = files.len() as u64;
    assert_eq!(
        files.keys().copied().collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>()
    );
    assert!(
        files.values().all(|&pair| pair == (true, true)),
        "{files:?}"
    );
    let leaf = "snapshots::snapshot_sum_wait;[yield]";
    let mut per_snapshot = Vec::new();
    for e in std::fs::read_dir(&snaps).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "folded") {
            per_snapshot.push(calls_ending(&std::fs::read_to_string(&path).unwrap(), leaf));
        }
    }
    assert_eq!(per_snapshot.iter().sum::<u64>(), 200, "{per_snapshot:?}");
    // Deltas, not running totals: no snapshot holds all of it.
    assert!(per_snapshot.iter().all(|&c| c < 200), "{per_snapshot:?}");
    // The whole-run file, written after the last snapshot, agrees.
    let whole = std::fs::read_to_string(dir.join("svc.folded")).unwrap();
    assert_eq!(calls_ending(&whole, leaf), 200);
    let pprof = std::fs::read(dir.join("svc.pb.gz")).unwrap();
    assert_eq!(pprof[..2], [0x1f, 0x8b], "gzip");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rotation_keeps_the_newest_snapshots_only() {
    let dir = temp_dir("snapshot-rotate");
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("rot")
        .snapshot_every(Duration::from_millis(10))
        .keep_snapshots(2)
        .init();
    std::thread::sleep(Duration::from_millis(120));
    drop(guard);
    let files = snapshot_files(&dir.join("snapshots"), "rot");
    let seqs: Vec<u64> = files.keys().copied().collect();
    assert_eq!(seqs.len(), 2, "{files:?}");
    // The last two taken; 120 ms at 10 ms makes well over two.
    assert!(seqs[0] >= 3 && seqs[1] == seqs[0] + 1, "{seqs:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[yieldprof::instrument_wait]
fn snapshot_live_wait() {
    std::thread::yield_now();
}

#[test]
fn snapshots_appear_while_the_program_runs() {
    let dir = temp_dir("snapshot-live");
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("live")
        .init()
        .snapshot_every(Duration::from_millis(20));
    snapshot_live_wait();
    let snaps = dir.join("snapshots");
    let start = Instant::now();
    while snapshot_count(&snaps) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no snapshot within 10 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(guard);
    assert!(snapshot_count(&snaps) >= 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[yieldprof::instrument_wait]
fn snapshot_restart_wait() {
    std::thread::yield_now();
}

#[test]
fn a_new_interval_goes_on_from_the_last_snapshot() {
    let dir = temp_dir("snapshot-restart");
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("re")
        .metric(Metric::Calls)
        .init()
        .snapshot_every(Duration::from_millis(15));
    (0..30).for_each(|_| snapshot_restart_wait());
    std::thread::sleep(Duration::from_millis(40));
    let guard = guard.snapshot_every(Duration::from_millis(25));
    (0..20).for_each(|_| snapshot_restart_wait());
    std::thread::sleep(Duration::from_millis(40));
    drop(guard);
    let snaps = dir.join("snapshots");
    let files = snapshot_files(&snaps, "re");
    let n = files.len() as u64;
    assert_eq!(
        files.keys().copied().collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>()
    );
    let total: u64 = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "folded"))
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            calls_ending(&text, "snapshots::snapshot_restart_wait;[yield]")
        })
        .sum();
    assert_eq!(total, 50);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn snapshot_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".pb.gz"))
        })
        .count()
    })
}

/// Set in the child process of the next test.
const CHILD: &str = "YIELDPROF_SNAPSHOT_TEST_CHILD";

#[test]
fn a_write_error_is_reported_once_on_stderr_and_the_program_goes_on() {
    let blocker = temp_dir("snapshot-blocked");
    std::fs::write(&blocker, b"a file where the output folder should be").unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "write_error_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, blocker.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the host failed: {stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("child done"),
        "{stderr}"
    );
    // Several snapshots failed for the same reason: one message.
    let messages = stderr.matches("yieldprof: snapshot ").count();
    assert_eq!(messages, 1, "{stderr}");
    assert!(stderr.contains("cannot create"), "{stderr}");
    std::fs::remove_file(&blocker).unwrap();
}

#[test]
fn write_error_child() {
    let Some(out) = std::env::var_os(CHILD) else {
        return;
    };
    let guard = Options::from_env()
        .out_dir(out)
        .name("blocked")
        .snapshot_every(Duration::from_millis(10))
        .init();
    std::thread::sleep(Duration::from_millis(80));
    drop(guard);
    println!("child done");
}

#[yieldprof::instrument_wait]
fn snapshot_many_wait() {
    std::thread::yield_now();
}

/// The roots (threads) of a folded file's stacks.
fn roots(text: &str) -> BTreeSet<String> {
    yieldprof::report::parse_folded(text)
        .unwrap()
        .into_iter()
        .map(|(stack, _)| stack.split(';').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn snapshots_list_threads_as_the_written_report_does_and_lose_no_call() {
    const THREADS: u64 = 12;
    let dir = temp_dir("snapshot-many");
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("many")
        .metric(Metric::Calls)
        .report_threads(Some(4))
        .snapshot_every(Duration::from_millis(200))
        .init();
    // Thread i makes i + 1 calls, all after one barrier: they land in one or two
    // snapshots, so at least one holds more threads than it lists.
    let start = Arc::new(Barrier::new(THREADS as usize));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let start = start.clone();
            std::thread::Builder::new()
                .name(format!("snap-many-{i}"))
                .spawn(move || {
                    start.wait();
                    (0..=i).for_each(|_| snapshot_many_wait());
                })
                .unwrap()
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    drop(guard);
    let leaf = "snapshots::snapshot_many_wait;[yield]";
    let (mut calls, mut merged) = (0, 0);
    for e in std::fs::read_dir(dir.join("snapshots")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "folded") {
            let text = std::fs::read_to_string(&path).unwrap();
            let roots = roots(&text);
            // Four one by one, the rest in one `[N other threads]` entry.
            assert!(roots.len() <= 5, "{}: {roots:?}", path.display());
            merged += roots
                .iter()
                .filter(|r| r.ends_with("other threads]"))
                .count();
            calls += calls_ending(&text, leaf);
        }
    }
    assert_eq!(calls, THREADS * (THREADS + 1) / 2);
    assert!(merged >= 1, "no snapshot merged its threads");
    std::fs::remove_dir_all(&dir).unwrap();
}
