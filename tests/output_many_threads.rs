//! A process that ran thousands of short threads, as a test binary or the trial's
//! channel tests do: its written report lists the threads that waited longest one by
//! one and merges the rest into one `[N other threads]` entry, so its files stay
//! within 10 MB, while every total (threads, episodes, switches, wall and wait time)
//! sums to what the unmerged profile holds.
//! (Own test binary: it reads every thread of the process.)

use serde_json::Value;
use std::time::{Duration, Instant};
use yieldprof::counters::CounterEvent;

const THREADS: u64 = 3000;
/// Threads started at once: the machine has 2 cores.
const AT_ONCE: u64 = 8;
/// What a written report lists one by one by default (`Options::report_threads`).
const LISTED: usize = 256;

#[yieldprof::instrument_wait]
fn nap() {
    std::thread::sleep(Duration::from_micros(1));
}

/// Runs `THREADS` unnamed threads, thread `i` making `1 + i % 3` naps; returns the
/// episodes arranged.
fn run_short_threads() -> u64 {
    let mut arranged = 0;
    for batch in 0..THREADS / AT_ONCE {
        let threads: Vec<_> = (0..AT_ONCE)
            .map(|j| {
                let naps = 1 + (batch * AT_ONCE + j) % 3;
                arranged += naps;
                std::thread::spawn(move || (0..naps).for_each(|_| nap()))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
    }
    arranged
}

/// A thread's counter `event` in a JSON entry (`counters.<event>.value`), 0 if not counted.
fn counted(thread: &Value, event: &str) -> u64 {
    thread["counters"][event]["value"].as_u64().unwrap_or(0)
}

#[test]
fn thousands_of_short_threads_write_a_bounded_report_whose_totals_are_exact() {
    let arranged = run_short_threads();
    let profile = yieldprof::snapshot();
    let dir = std::env::temp_dir().join(format!("yieldprof-many-{}", std::process::id()));
    let started = Instant::now();
    let files = profile.write(&dir, "many").unwrap();
    let took = started.elapsed();
    let sizes: Vec<(String, u64)> = files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::metadata(f).unwrap().len())
        })
        .collect();
    let total: u64 = sizes.iter().map(|(_, s)| s).sum();
    println!(
        "{} threads: {total} bytes written in {took:.2?} (caller's clock): {sizes:?}",
        profile.threads().len()
    );
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("many.json")).unwrap()).unwrap();
    let trace: Value =
        serde_json::from_slice(&std::fs::read(dir.join("many.trace.json")).unwrap()).unwrap();
    let txt = std::fs::read_to_string(dir.join("many.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    assert!(total <= 10 << 20, "{total} bytes: {sizes:?}");
    // The threads that waited longest one by one, the rest in one entry, last.
    let all = profile.threads();
    assert!(all.len() as u64 >= THREADS, "{} threads", all.len());
    let rows = json["threads"].as_array().unwrap();
    assert_eq!(rows.len(), LISTED + 1);
    let merged = rows.last().unwrap();
    let merged_count = (all.len() - LISTED) as u64;
    assert_eq!(merged["threads"], merged_count);
    assert_eq!(merged["name"], format!("[{merged_count} other threads]"));
    assert!(rows[..LISTED].iter().all(|r| r["threads"] == 1));
    let mut waits: Vec<u64> = all.iter().map(|t| t.wait_ns).collect();
    waits.sort_unstable_by(|a, b| b.cmp(a));
    let least_listed = rows[..LISTED]
        .iter()
        .map(|r| r["wait_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    assert_eq!(least_listed, waits[LISTED - 1]);
    // Nothing lost: the entries sum to the unmerged profile's figures exactly.
    assert_eq!(json["totals"]["threads"], all.len() as u64);
    let sum = |f: &dyn Fn(&Value) -> u64| rows.iter().map(f).sum::<u64>();
    for event in [
        CounterEvent::ContextSwitches,
        CounterEvent::VoluntarySwitches,
        CounterEvent::InvoluntarySwitches,
    ] {
        let unmerged: u64 = all
            .iter()
            .filter_map(|t| t.counters.get(event).value())
            .sum();
        assert_eq!(sum(&|r| counted(r, event.name())), unmerged, "{event:?}");
    }
    let wall: u64 = all.iter().map(|t| t.wall_ns).sum();
    let wait: u64 = all.iter().map(|t| t.wait_ns).sum();
    assert_eq!(sum(&|r| r["wall_ns"].as_u64().unwrap()), wall);
    assert_eq!(sum(&|r| r["wait_ns"].as_u64().unwrap()), wait);
    assert_eq!(json["totals"]["thread_ns"], wall);
    // Every episode arranged is in the site, which merging leaves alone.
    let site = json["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().unwrap().ends_with("nap"))
        .unwrap();
    assert_eq!(site["episodes"], arranged);
    assert_eq!(profile.site("nap").unwrap().episodes, arranged);
    // What was cut is said: in the text and in the trace.
    assert!(
        txt.contains(&format!(
            "[{merged_count} other threads]: the threads past the {LISTED}"
        )),
        "{txt}"
    );
    // Its row in the Threads table keeps its whole name.
    assert!(
        !txt.lines()
            .any(|l| l.contains("other threads] (exited)") && !l.trim_start().starts_with('[')),
        "{txt}"
    );
    let other = &trace["otherData"];
    assert_eq!(other["threads_merged"], merged_count.to_string());
    let recorded: u64 = other["episodes_recorded"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(recorded >= arranged, "{other}");
    let tracks = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .count();
    assert!(tracks <= LISTED, "{tracks} tracks");
}
