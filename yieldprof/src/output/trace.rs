//! The timeline as Chrome trace-event JSON (`<name>.trace.json`): one complete event
//! per kept wait episode, one track per thread, for Perfetto, speedscope and
//! `chrome://tracing`.

use crate::base::site::Kind;
use crate::model::profile::Profile;
use crate::model::timeline::Episode;
use crate::model::tree::ThreadProfile;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::io::{self, Write};

/// A thread whose kernel tid an earlier thread of the profile already had (the
/// kernel reuses them) gets this plus its serial: above Linux's largest pid.
const REUSED_TID_BASE: u64 = 1 << 22;

#[derive(Serialize)]
struct Trace {
    #[serde(rename = "traceEvents")]
    events: Vec<Value>,
    #[serde(rename = "displayTimeUnit")]
    unit: &'static str,
    /// String values only: what the format's readers expect there.
    #[serde(rename = "otherData")]
    other: Map<String, Value>,
}

/// Microseconds, the format's unit, from ns: exact to the ns.
fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// An episode's kinds of wait, in report order, e.g. `sleep,lock`; `none` when it
/// made no wait call.
fn kinds(set: u16) -> String {
    let names: Vec<&str> = Kind::in_set(set).map(Kind::name).collect();
    match names.is_empty() {
        true => "none".to_string(),
        false => names.join(","),
    }
}

fn slice(p: &Profile, t: &ThreadProfile, pid: u32, tid: u64, e: &Episode) -> Value {
    let frame = &p.frames[e.frame as usize];
    let kinds = kinds(e.kinds);
    let mut args = json!({
        "site": format!("{}:{}", frame.file, frame.line),
        "kind": kinds,
        "calls": e.calls,
    });
    if t.timeline.switches_counted {
        args["switches"] = json!(e.switches);
    }
    json!({
        "ph": "X",
        "name": frame.name,
        "cat": kinds,
        "ts": us(e.start),
        "dur": us(e.duration),
        "pid": pid,
        "tid": tid,
        "args": args,
    })
}

fn thread_events(p: &Profile, t: &ThreadProfile, pid: u32, tid: u64, out: &mut Vec<Value>) {
    let tl = &t.timeline;
    out.push(json!({
        "ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
        "args": {
            "name": t.name,
            "episodes_recorded": tl.recorded,
            "episodes_kept": tl.episodes.len(),
            "episodes_dropped": tl.dropped(),
            "capacity": tl.capacity,
        },
    }));
    out.push(json!({
        "ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
        "args": { "sort_index": t.serial },
    }));
    // Episodes are kept in the order they closed; viewers want each track by start,
    // an enclosing frame before the ones nested in it.
    let mut order: Vec<&Episode> = tl.episodes.iter().collect();
    order.sort_by_key(|e| (e.start, std::cmp::Reverse(e.duration)));
    out.extend(order.into_iter().map(|e| slice(p, t, pid, tid, e)));
}

/// The program's name for the process track: the executable's file stem.
fn process_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "yieldprof".to_string())
}

fn trace(p: &Profile) -> Trace {
    let pid = std::process::id();
    let mut events = vec![json!({
        "ph": "M", "name": "process_name", "pid": pid, "tid": 0,
        "args": { "name": process_name() },
    })];
    let mut tids = HashSet::new();
    let (mut recorded, mut dropped, mut capacity) = (0, 0, 0);
    for t in &p.threads {
        recorded += t.timeline.recorded;
        dropped += t.timeline.dropped();
        capacity = capacity.max(t.timeline.capacity);
        if t.timeline.episodes.is_empty() {
            continue;
        }
        let mut tid = u64::try_from(t.tid).unwrap_or(0);
        if !tids.insert(tid) {
            tid = REUSED_TID_BASE + t.serial;
        }
        thread_events(p, t, pid, tid, &mut events);
    }
    let mut other = Map::new();
    for (key, value) in [
        (
            "generator",
            format!("yieldprof {}", env!("CARGO_PKG_VERSION")),
        ),
        ("clock", "CLOCK_MONOTONIC".to_string()),
        ("episodes_per_thread", capacity.to_string()),
        ("episodes_recorded", recorded.to_string()),
        ("episodes_dropped", dropped.to_string()),
    ] {
        other.insert(key.to_string(), Value::String(value));
    }
    Trace {
        events,
        unit: "ns",
        other,
    }
}

impl Profile {
    /// Writes the timeline, each thread's last wait episodes (`YIELDPROF_TIMELINE`,
    /// [`Options::timeline`](crate::Options::timeline): 4096 by default), as Chrome
    /// trace-event JSON: the file `init()` saves as `<name>.trace.json`, which Perfetto
    /// (ui.perfetto.dev), speedscope and `chrome://tracing` open.
    ///
    /// One track per thread (`thread_name` metadata, whose args also give the thread's
    /// episodes recorded, kept and dropped), and one complete event (`"ph": "X"`) per
    /// kept episode: named by its site, `ts` and `dur` in µs with `ts` on
    /// `CLOCK_MONOTONIC`, category and `args.kind` its kinds of wait (`sleep,lock`, or
    /// `none`), `args.site` its `file:line`, `args.calls` its wait calls and
    /// `args.switches` its context switches (where the thread counts them exactly).
    /// Each poll of an `async fn` episode is one event. `otherData` totals the
    /// episodes recorded and dropped (the oldest give way once a thread's ring is full).
    ///
    /// ```
    /// #[yieldprof::instrument_wait]
    /// fn nap() {
    ///     std::thread::sleep(std::time::Duration::from_millis(1));
    /// }
    /// std::thread::spawn(nap).join().unwrap();
    /// let mut json = Vec::new();
    /// yieldprof::snapshot().write_trace(&mut json).unwrap();
    /// let json = String::from_utf8(json).unwrap();
    /// assert!(json.contains(r#""ph":"X""#) && json.contains(r#""cat":"sleep""#));
    /// ```
    pub fn write_trace<W: Write>(&self, mut out: W) -> io::Result<()> {
        serde_json::to_writer(&mut out, &trace(self))?;
        writeln!(out)
    }

    /// Whether any thread keeps a timeline (`YIELDPROF_TIMELINE` is not 0).
    pub(crate) fn has_timeline(&self) -> bool {
        self.threads.iter().any(|t| t.timeline.capacity > 0)
    }
}
