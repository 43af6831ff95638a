//! The timeline as Chrome trace-event JSON (`<name>.trace.json`): one complete event
//! per kept wait episode, one track per thread, for Perfetto, speedscope and
//! `chrome://tracing`.

use crate::base::site::Kind;
use crate::model::profile::Profile;
use crate::model::timeline::Episode;
use crate::model::tree::ThreadProfile;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

/// How many of its newest kept episodes each thread writes when `limit` are shared
/// out: a thread with fewer than an even share writes all of them, the others split
/// what is left evenly.
fn shares(kept: &[usize], limit: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..kept.len()).collect();
    order.sort_by_key(|&i| kept[i]);
    let mut out = vec![0; kept.len()];
    let mut left = limit;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (kept.len() - done);
        out[i] = kept[i].min(share);
        left -= out[i];
    }
    out
}

/// A thread whose kernel tid an earlier thread of the profile already had (the
/// kernel reuses them) gets this plus its serial: above Linux's largest pid.
const REUSED_TID_BASE: u64 = 1 << 22;

#[derive(Serialize)]
struct Trace<'a> {
    #[serde(rename = "traceEvents")]
    events: Vec<Event<'a>>,
    #[serde(rename = "displayTimeUnit")]
    unit: &'static str,
    /// String values only: what the format's readers expect there.
    #[serde(rename = "otherData")]
    other: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Event<'a> {
    Meta(Meta<'a>),
    Slice(Slice<'a>),
}

/// A metadata event (`"ph": "M"`): a process's or thread's name, a track's order.
#[derive(Serialize)]
struct Meta<'a> {
    ph: &'static str,
    name: &'static str,
    pid: u32,
    tid: u64,
    args: MetaArgs<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum MetaArgs<'a> {
    Process {
        name: String,
    },
    Thread {
        name: &'a str,
        episodes_recorded: u64,
        episodes_kept: usize,
        episodes_dropped: u64,
        /// Kept but left out of the file to bound its size: the oldest of them.
        episodes_cut: usize,
        capacity: u32,
    },
    Order {
        sort_index: u64,
    },
}

/// A complete event (`"ph": "X"`): one episode.
#[derive(Serialize)]
struct Slice<'a> {
    ph: &'static str,
    name: &'a str,
    cat: &'a str,
    /// µs, exact to the ns.
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u64,
    args: SliceArgs<'a>,
}

#[derive(Serialize)]
struct SliceArgs<'a> {
    site: &'a str,
    kind: &'a str,
    calls: u32,
    /// Absent where the thread does not count switches exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    switches: Option<u32>,
}

/// Microseconds, the format's unit, from ns.
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

/// Texts every episode of a site or of a set of kinds shares, made once.
struct Texts {
    sites: Vec<String>,
    kinds: HashMap<u16, String>,
}

impl Texts {
    fn new(p: &Profile) -> Texts {
        let sites = p
            .frames
            .iter()
            .map(|f| format!("{}:{}", f.file, f.line))
            .collect();
        let kinds = p
            .threads
            .iter()
            .flat_map(|t| &t.timeline.episodes)
            .map(|e| e.kinds)
            .collect::<HashSet<u16>>()
            .into_iter()
            .map(|set| (set, kinds(set)))
            .collect();
        Texts { sites, kinds }
    }
}

/// The events of thread `t`: its track and its newest `share` kept episodes.
fn thread_events<'a>(
    p: &'a Profile,
    texts: &'a Texts,
    (t, share): (&'a ThreadProfile, usize),
    (pid, tid): (u32, u64),
    out: &mut Vec<Event<'a>>,
) {
    let tl = &t.timeline;
    let cut = tl.episodes.len() - share;
    let meta = |name, args| {
        Event::Meta(Meta {
            ph: "M",
            name,
            pid,
            tid,
            args,
        })
    };
    out.push(meta(
        "thread_name",
        MetaArgs::Thread {
            name: &t.name,
            episodes_recorded: tl.recorded,
            episodes_kept: tl.episodes.len(),
            episodes_dropped: tl.dropped(),
            episodes_cut: cut,
            capacity: tl.capacity,
        },
    ));
    out.push(meta(
        "thread_sort_index",
        MetaArgs::Order {
            sort_index: t.serial,
        },
    ));
    // Episodes are kept in the order they closed; viewers want each track by start,
    // an enclosing frame before the ones nested in it.
    let mut order: Vec<&Episode> = tl.episodes[cut..].iter().collect();
    order.sort_by_key(|e| (e.start, std::cmp::Reverse(e.duration)));
    out.extend(order.into_iter().map(|e| {
        let kind = texts.kinds[&e.kinds].as_str();
        Event::Slice(Slice {
            ph: "X",
            name: &p.frames[e.frame as usize].name,
            cat: kind,
            ts: us(e.start),
            dur: us(e.duration),
            pid,
            tid,
            args: SliceArgs {
                site: &texts.sites[e.frame as usize],
                kind,
                calls: e.calls,
                switches: tl.switches_counted.then_some(e.switches),
            },
        })
    }));
}

/// The program's name for the process track: the executable's file stem.
fn process_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "yieldprof".to_string())
}

fn write(p: &Profile, limit: usize, out: &mut dyn Write) -> io::Result<()> {
    let pid = std::process::id();
    let texts = Texts::new(p);
    let mut events = vec![Event::Meta(Meta {
        ph: "M",
        name: "process_name",
        pid,
        tid: 0,
        args: MetaArgs::Process {
            name: process_name(),
        },
    })];
    let mut tids = HashSet::new();
    let (mut recorded, mut dropped, mut capacity) = (0, 0, 0);
    let kept: Vec<usize> = p
        .threads
        .iter()
        .map(|t| t.timeline.episodes.len())
        .collect();
    let shares = shares(&kept, limit);
    // The kept episodes of threads a written report merged are cut too.
    let merged = p.merged.as_ref();
    let merged_episodes = merged.map_or(0, |m| m.episodes);
    let cut = kept.iter().zip(&shares).map(|(k, s)| k - s).sum::<usize>() as u64 + merged_episodes;
    recorded += merged_episodes;
    for (t, &share) in p.threads.iter().zip(&shares) {
        recorded += t.timeline.recorded;
        dropped += t.timeline.dropped();
        capacity = capacity.max(t.timeline.capacity);
        // A track with no episode in the file would only add to it.
        if share == 0 {
            continue;
        }
        let mut tid = u64::try_from(t.tid).unwrap_or(0);
        if !tids.insert(tid) {
            tid = REUSED_TID_BASE.saturating_add(t.serial);
        }
        thread_events(p, &texts, (t, share), (pid, tid), &mut events);
    }
    let other = BTreeMap::from([
        (
            "generator",
            format!("yieldprof {}", env!("CARGO_PKG_VERSION")),
        ),
        ("clock", "CLOCK_MONOTONIC".to_string()),
        ("episodes_per_thread", capacity.to_string()),
        ("episodes_recorded", recorded.to_string()),
        ("episodes_dropped", dropped.to_string()),
        ("episodes_limit", limit.to_string()),
        ("episodes_cut", cut.to_string()),
        (
            "threads_merged",
            merged.map_or(0, |m| m.threads).to_string(),
        ),
    ]);
    let trace = Trace {
        events,
        unit: "ns",
        other,
    };
    crate::base::json::to_writer(&mut *out, &trace)?;
    writeln!(out)
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
    /// At most 24 576 episodes over all threads are written (about 4.7 MB; see
    /// [`Options::trace_episodes`](crate::Options::trace_episodes)): each thread its
    /// newest, an even share or all of its own where it kept fewer. The oldest past
    /// that are cut: `episodes_cut` in a thread's metadata and in `otherData` (with
    /// `episodes_limit`) says how many; a thread with none left has no track. In the
    /// files a report writes, the threads it merged
    /// ([`Options::report_threads`](crate::Options::report_threads)) have no track
    /// either: their episodes count in `otherData`'s `episodes_cut`, and
    /// `threads_merged` says how many threads they were.
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
        write(self, crate::output::options::TRACE_EPISODES, &mut out)
    }

    /// [`write_trace`](Profile::write_trace) with at most `limit` episodes.
    pub(crate) fn write_trace_within(&self, limit: usize, out: &mut dyn Write) -> io::Result<()> {
        write(self, limit, out)
    }

    /// Whether any thread keeps a timeline (`YIELDPROF_TIMELINE` is not 0).
    pub(crate) fn has_timeline(&self) -> bool {
        self.threads.iter().any(|t| t.timeline.capacity > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::site::{self, EpisodeSite};
    use crate::model::timeline::Timeline;
    use serde_json::Value;

    fn thread(serial: u64, tid: i32, episodes: Vec<Episode>, switches: bool) -> ThreadProfile {
        ThreadProfile {
            serial,
            tid,
            name: format!("t{serial}"),
            threads: 1,
            exited: true,
            overflowed: 0,
            reentries_skipped: 0,
            entries_after_exit: 0,
            nodes: Vec::new(),
            site_durations: Vec::new(),
            unwaited: Vec::new(),
            counters: Default::default(),
            timeline: Timeline {
                recorded: episodes.len() as u64 + 5,
                episodes,
                capacity: 8,
                switches_counted: switches,
            },
        }
    }

    fn episode(start: u64, duration: u64, kinds: u16) -> Episode {
        Episode {
            start,
            duration,
            frame: 2,
            kinds,
            calls: 3,
            switches: 1,
        }
    }

    #[test]
    fn a_reused_tid_gets_its_own_track_and_each_track_is_ordered_by_start() {
        let mut frames: Vec<_> = site::tables().0[..2].to_vec();
        frames.push(EpisodeSite::new(None, "app", "wait", "src/app.rs", 10).info());
        // Closed in order: the nested episode first, then the one around it.
        let nested = vec![
            episode(2_000, 500, Kind::Sleep.bit()),
            episode(1_000, 3_000, 0),
        ];
        let profile = Profile::new(
            vec![
                thread(1, 7, nested, true),
                thread(
                    2,
                    7,
                    vec![episode(9_000, 1, Kind::Lock.bit() | Kind::Yield.bit())],
                    false,
                ),
            ],
            frames,
            Vec::new(),
        );
        let mut out = Vec::new();
        profile.write_trace(&mut out).unwrap();
        let trace: Value = serde_json::from_slice(&out).unwrap();
        let slices: Vec<&Value> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        let tids: Vec<u64> = slices.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
        assert_eq!(tids, [7, 7, REUSED_TID_BASE + 2]);
        let ts: Vec<f64> = slices.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
        assert_eq!(ts, [1.0, 2.0, 9.0]);
        assert_eq!(slices[0]["dur"], 3.0);
        assert_eq!(slices[0]["args"]["kind"], "none");
        assert_eq!(slices[1]["cat"], "sleep");
        assert_eq!(slices[1]["args"]["switches"], 1);
        assert_eq!(slices[2]["args"]["kind"], "yield,lock");
        // Not counted exactly on that thread: no figure rather than a 0.
        assert!(slices[2]["args"].get("switches").is_none());
        assert_eq!(slices[2]["args"]["site"], "src/app.rs:10");
        assert_eq!(slices[2]["name"], "app::wait");
        assert_eq!(trace["otherData"]["episodes_recorded"], "13");
        assert_eq!(trace["otherData"]["episodes_dropped"], "10");
        assert_eq!(trace["otherData"]["episodes_cut"], "0");
        // Bounded to 2 episodes: thread 2 keeps its one, thread 1 its newest (the
        // enclosing episode, closed last); the cut one is counted.
        let mut out = Vec::new();
        profile.write_trace_within(2, &mut out).unwrap();
        let trace: Value = serde_json::from_slice(&out).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let ts: Vec<f64> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        assert_eq!(ts, [1.0, 9.0]);
        assert_eq!(trace["otherData"]["episodes_cut"], "1");
        let cut: Vec<u64> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["episodes_cut"].as_u64().unwrap())
            .collect();
        assert_eq!(cut, [1, 0]);
    }

    #[test]
    fn the_limit_is_shared_evenly_and_a_small_thread_keeps_all_its_episodes() {
        assert_eq!(shares(&[10, 2, 100], 30), [10, 2, 18]);
        assert_eq!(shares(&[10, 2, 100], 6), [2, 2, 2]);
        assert_eq!(shares(&[5, 5], 100), [5, 5]);
        assert_eq!(shares(&[], 100), Vec::<usize>::new());
    }
}
