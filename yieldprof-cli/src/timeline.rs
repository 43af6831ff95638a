//! `yieldprof timeline RUN`: what the run's `<name>.trace.json` holds (each thread's
//! last wait episodes, as Chrome trace events) and where to open it.

use crate::cli::TimelineArgs;
use crate::failure::Failure;
use crate::run::RunFiles;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::io;
use std::path::Path;
use yieldprof::report::text::{duration, tail};

/// One thread's track.
#[derive(Default)]
struct Track {
    name: String,
    tid: u64,
    recorded: u64,
    dropped: u64,
    /// Episodes in the file, and when the first began and the last ended (ns).
    kept: u64,
    first_ns: u64,
    last_ns: u64,
}

/// One site's episodes over every track.
#[derive(Default)]
struct SiteRow {
    episodes: u64,
    total_ns: u64,
    longest_ns: u64,
    kinds: Vec<String>,
}

pub fn command(args: &TimelineArgs, out: &mut String) -> Result<(), Failure> {
    let run = RunFiles::locate(&args.run);
    let path = run.file("trace.json");
    let trace = read(&path)?;
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(&path, "no traceEvents array"))?;
    let (tracks, sites) = tally(events).map_err(|why| malformed(&path, &why))?;
    let kept: u64 = tracks.values().map(|t| t.kept).sum();
    let recorded: u64 = tracks.values().map(|t| t.recorded).sum();
    let per_thread = trace["otherData"]["episodes_per_thread"]
        .as_str()
        .unwrap_or("?");
    let _ = writeln!(
        out,
        "{}: {} thread{}, {kept} of {recorded} episodes kept ({} dropped; {per_thread} per thread)",
        path.display(),
        tracks.len(),
        if tracks.len() == 1 { "" } else { "s" },
        recorded.saturating_sub(kept),
    );
    let _ = writeln!(
        out,
        "  {:<24} {:>8} {:>8} {:>9} {:>8} {:>11}",
        "thread", "tid", "kept", "recorded", "dropped", "span"
    );
    let mut by_start: Vec<&Track> = tracks.values().collect();
    by_start.sort_by_key(|t| (t.first_ns, t.tid));
    for t in by_start {
        let _ = writeln!(
            out,
            "  {:<24} {:>8} {:>8} {:>9} {:>8} {:>11}",
            tail(if t.name.is_empty() { "?" } else { &t.name }, 24),
            t.tid,
            t.kept,
            t.recorded,
            t.dropped,
            duration(t.last_ns.saturating_sub(t.first_ns))
        );
    }
    let mut rows: Vec<(&String, &SiteRow)> = sites.iter().collect();
    rows.sort_by_key(|(name, s)| (Reverse(s.total_ns), *name));
    let _ = writeln!(
        out,
        "  {:<40} {:>8} {:>11} {:>11}  kinds",
        "site", "episodes", "total", "longest"
    );
    for (name, s) in rows.into_iter().take(args.top) {
        let _ = writeln!(
            out,
            "  {:<40} {:>8} {:>11} {:>11}  {}",
            tail(name, 40),
            s.episodes,
            duration(s.total_ns),
            duration(s.longest_ns),
            s.kinds.join(",")
        );
    }
    let _ = writeln!(
        out,
        "Open it in https://ui.perfetto.dev or https://www.speedscope.app (or chrome://tracing)."
    );
    Ok(())
}

fn read(path: &Path) -> Result<Value, Failure> {
    let text = yieldprof::report::text::read_utf8(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Failure::Input(format!(
            "{}: no such file: the run kept no timeline (YIELDPROF_TIMELINE=0), or RUN is not \
             a run's `<dir>/<name>.json` or `<dir>/<name>`",
            path.display()
        )),
        _ => Failure::Input(format!("cannot read {}: {e}", path.display())),
    })?;
    serde_json::from_str(&text).map_err(|e| malformed(path, &e.to_string()))
}

fn malformed(path: &Path, why: &str) -> Failure {
    Failure::Input(format!("{}: not a yieldprof trace: {why}", path.display()))
}

/// ns from a trace's µs.
fn ns(v: &Value) -> Option<u64> {
    v.as_f64()
        .filter(|us| us.is_finite() && *us >= 0.0)
        .map(|us| (us * 1e3).round() as u64)
}

/// The tracks (by pid and tid) and the sites (by name) of the trace's events.
type Tally = (BTreeMap<(u64, u64), Track>, BTreeMap<String, SiteRow>);

fn tally(events: &[Value]) -> Result<Tally, String> {
    let mut tracks: BTreeMap<(u64, u64), Track> = BTreeMap::new();
    let mut sites: BTreeMap<String, SiteRow> = BTreeMap::new();
    for e in events {
        let key = (
            e["pid"].as_u64().unwrap_or(0),
            e["tid"].as_u64().unwrap_or(0),
        );
        match (e["ph"].as_str(), e["name"].as_str()) {
            (Some("M"), Some("thread_name")) => {
                let a = &e["args"];
                let t = tracks.entry(key).or_default();
                t.name = a["name"].as_str().unwrap_or("?").to_string();
                t.tid = key.1;
                t.recorded = a["episodes_recorded"].as_u64().unwrap_or(0);
                t.dropped = a["episodes_dropped"].as_u64().unwrap_or(0);
            }
            (Some("X"), Some(name)) => {
                let (Some(start), Some(dur)) = (ns(&e["ts"]), ns(&e["dur"])) else {
                    return Err(format!("an event without ts or dur: {e}"));
                };
                let t = tracks.entry(key).or_default();
                t.tid = key.1;
                if t.kept == 0 || start < t.first_ns {
                    t.first_ns = start;
                }
                t.last_ns = t.last_ns.max(start + dur);
                t.kept += 1;
                let s = sites.entry(name.to_string()).or_default();
                s.episodes += 1;
                s.total_ns += dur;
                s.longest_ns = s.longest_ns.max(dur);
                // `none`: an episode that made no wait call, which adds no kind.
                for kind in e["args"]["kind"].as_str().unwrap_or("").split(',') {
                    if !matches!(kind, "" | "none") && !s.kinds.iter().any(|k| k == kind) {
                        s.kinds.push(kind.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Ok((tracks, sites))
}
