//! The timeline: each thread keeps its last N wait episodes, and the run's
//! `<name>.trace.json` holds them as Chrome trace events, one track per thread.
//! (Own test binary: the timeline length applies process-wide to threads that start
//! recording afterwards, so the tests here take turns.)

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const N: u32 = 16;
const NAP: Duration = Duration::from_millis(2);
/// How far a converted timestamp may sit from the test's own reading of the same
/// clock: the tick-to-ns line drifts ~1e-5 of the time since the first reading.
const SLACK_NS: u64 = 200_000;

static TURNS: Mutex<()> = Mutex::new(());

#[yieldprof::instrument_wait]
fn nap(d: Duration) {
    std::thread::sleep(d);
}

#[yieldprof::instrument_wait]
fn outer() {
    std::thread::yield_now();
    nap(NAP);
}

/// `CLOCK_MONOTONIC`, ns: the clock the trace's `ts` is on.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yieldprof-timeline-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `episodes` naps on a thread named `name`, each bracketed by the test's own clock.
fn napper(name: &str, episodes: usize) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            (0..episodes)
                .map(|_| {
                    let before = monotonic_ns();
                    nap(NAP);
                    (before, monotonic_ns())
                })
                .collect()
        })
        .unwrap()
}

fn read_trace(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).expect("the trace is JSON")
}

/// The thread named `name`: its `thread_name` metadata args and its complete events.
fn track<'a>(trace: &'a Value, name: &str) -> (&'a Value, Vec<&'a Value>) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let meta = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == name)
        .unwrap_or_else(|| panic!("no track named {name}"));
    let slices = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == meta["tid"] && e["pid"] == meta["pid"])
        .collect();
    (&meta["args"], slices)
}

fn ns(us: &Value) -> u64 {
    (us.as_f64().expect("a number of µs") * 1e3).round() as u64
}

#[test]
fn each_thread_keeps_its_last_n_episodes_and_the_trace_shows_them_in_order() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = dir("two");
    let guard = yieldprof::Options::from_env()
        .timeline(N)
        .out_dir(&dir)
        .name("tl")
        .init();
    let (few, many) = (5, N as usize + 9);
    let short = napper("tl-short", few);
    let long = napper("tl-long", many);
    let measured = [
        ("tl-short", short.join().unwrap()),
        ("tl-long", long.join().unwrap()),
    ];
    // Both threads have exited: their timelines are kept like the rest.
    let paths = guard.write().unwrap();
    let trace_file = dir.join("tl.trace.json");
    assert!(paths.contains(&trace_file), "{paths:?}");
    let trace = read_trace(&trace_file);
    assert_eq!(trace["displayTimeUnit"], "ns");
    assert!(trace["otherData"]["generator"]
        .as_str()
        .unwrap()
        .starts_with("yieldprof "));
    for (name, calls) in &measured {
        let (meta, slices) = track(&trace, name);
        let kept = calls.len().min(N as usize);
        assert_eq!(slices.len(), kept, "{name}: events");
        assert_eq!(meta["episodes_recorded"], calls.len(), "{name}");
        assert_eq!(meta["episodes_kept"], kept, "{name}");
        assert_eq!(meta["episodes_dropped"], calls.len() - kept, "{name}");
        assert_eq!(meta["capacity"], N, "{name}");
        // The newest N, in order: each lies within the test's bracket of its call.
        let newest = &calls[calls.len() - kept..];
        let mut last_end = 0;
        for (e, &(before, after)) in slices.iter().zip(newest) {
            let (start, dur) = (ns(&e["ts"]), ns(&e["dur"]));
            assert!(start >= last_end, "{name}: ts not monotone: {e}");
            assert!(
                dur >= NAP.as_nanos() as u64,
                "{name}: {dur} ns < the nap: {e}"
            );
            assert!(
                start + SLACK_NS >= before && start + dur <= after + SLACK_NS,
                "{name}: [{start}, +{dur}] outside the call [{before}, {after}]"
            );
            last_end = start + dur;
            assert!(e["name"].as_str().unwrap().ends_with("nap"), "{e}");
            assert_eq!(
                (&e["cat"], &e["args"]["kind"]),
                (&"sleep".into(), &"sleep".into())
            );
            assert_eq!(e["args"]["calls"], 1);
            assert!(
                e["args"]["site"].as_str().unwrap().contains("timeline.rs:"),
                "{e}"
            );
            // A 2 ms sleep leaves the CPU: where switches are counted, it shows.
            if let Some(s) = e["args"]["switches"].as_u64() {
                assert!(s >= 1, "{e}");
            }
        }
    }
    let recorded = |key: &str| trace["otherData"][key].as_str().unwrap().parse::<u64>();
    assert!(recorded("episodes_recorded").unwrap() >= (few + many) as u64);
    assert!(recorded("episodes_dropped").unwrap() >= 9);
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_nested_episode_lies_inside_its_parent_which_counts_its_calls_too() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = dir("nested");
    let guard = yieldprof::Options::from_env()
        .timeline(N)
        .out_dir(&dir)
        .init();
    let profile = std::thread::Builder::new()
        .name("tl-nested".into())
        .spawn(|| {
            outer();
            yieldprof::snapshot()
        })
        .unwrap()
        .join()
        .unwrap();
    let mut json = Vec::new();
    profile.write_trace(&mut json).unwrap();
    let trace: Value = serde_json::from_slice(&json).unwrap();
    let (meta, slices) = track(&trace, "tl-nested");
    assert_eq!(meta["episodes_recorded"], 2);
    // Sorted by start: the enclosing frame first.
    assert_eq!(slices.len(), 2);
    let (o, n) = (slices[0], slices[1]);
    assert!(o["name"].as_str().unwrap().ends_with("outer"), "{o}");
    assert!(n["name"].as_str().unwrap().ends_with("nap"), "{n}");
    assert_eq!(
        (&o["args"]["kind"], &o["args"]["calls"]),
        (&"yield,sleep".into(), &2.into())
    );
    assert_eq!(
        (&n["args"]["kind"], &n["args"]["calls"]),
        (&"sleep".into(), &1.into())
    );
    let (os, od, ns_, nd) = (ns(&o["ts"]), ns(&o["dur"]), ns(&n["ts"]), ns(&n["dur"]));
    assert!(os <= ns_ && ns_ + nd <= os + od, "{o} does not enclose {n}");
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn with_the_timeline_off_nothing_is_kept_and_no_trace_is_written() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = dir("off");
    let guard = yieldprof::Options::from_env()
        .timeline(0)
        .out_dir(&dir)
        .init();
    let profile = std::thread::spawn(|| {
        let session = yieldprof::Session::this_thread();
        nap(Duration::ZERO);
        session.finish()
    })
    .join()
    .unwrap();
    let paths = profile.write(&dir, "off").unwrap();
    assert!(
        !paths
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".trace.json")),
        "{paths:?}"
    );
    let mut json = Vec::new();
    profile.write_trace(&mut json).unwrap();
    let trace: Value = serde_json::from_slice(&json).unwrap();
    assert!(!trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["ph"] == "X"));
    assert_eq!(trace["otherData"]["episodes_recorded"], "0");
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}
