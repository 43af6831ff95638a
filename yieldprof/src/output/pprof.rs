//! pprof export: the profile as a gzipped `perftools.profiles.Profile` protobuf
//! (`<name>.pb.gz`), the format Grafana Pyroscope, Parca and `go tool pprof` read.
//!
//! Every folded line has a sample with the same stack, so the `.folded` and `.pb.gz`
//! files of one profile always agree: the thread is the root frame, business frames
//! and wait sites sit above it, and the leaf is `[spin]`, `[yield]`, `[sleep]`,
//! `[park]`, `[async-yield]` or `[work]`, at the file and line of the call (of the
//! frame, for `[spin]` and `[work]` time), so `pprof -lines` lists call sites. Under
//! the leaf, the frame that made the call is at that line too, as in a stack trace.
//! No frame is inlined, for readers that ignore inline frames. Each sample carries
//! two string labels: `thread` (the thread's name) and `kind` (`spin`, `yield`,
//! `sleep`, `park`, `async-yield` or `work`). Threads with the same name share
//! samples, as they share folded lines.
//!
//! The values are exact counts and durations, not statistical samples (counters are
//! estimated when episodes are sampled, as in the summary); `SAMPLE_TYPES` says what
//! each one holds. A counter no thread counts is left out.
//!
//! The messages are declared below with prost's derive, with the field numbers of the
//! published `profile.proto`: no protoc and no build script at build time.

use crate::base::site::{FrameInfo, FrameKind};
use crate::counters::CounterEvent;
use crate::model::profile::{NodeStats, Profile, SlotStats, ThreadProfile};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `perftools.profiles` messages, only the fields yieldprof writes.
mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub(crate) sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub(crate) sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub(crate) mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub(crate) location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub(crate) function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub(crate) string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub(crate) time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub(crate) duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub(crate) period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub(crate) period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub(crate) comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub(crate) default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct ValueType {
        #[prost(int64, tag = "1")]
        pub(crate) r#type: i64,
        #[prost(int64, tag = "2")]
        pub(crate) unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub(crate) location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub(crate) value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub(crate) label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Label {
        #[prost(int64, tag = "1")]
        pub(crate) key: i64,
        #[prost(int64, tag = "2")]
        pub(crate) str: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Mapping {
        #[prost(uint64, tag = "1")]
        pub(crate) id: u64,
        #[prost(int64, tag = "5")]
        pub(crate) filename: i64,
        #[prost(bool, tag = "7")]
        pub(crate) has_functions: bool,
        #[prost(bool, tag = "8")]
        pub(crate) has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub(crate) has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub(crate) has_inline_frames: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Location {
        #[prost(uint64, tag = "1")]
        pub(crate) id: u64,
        #[prost(uint64, tag = "2")]
        pub(crate) mapping_id: u64,
        /// One entry: yieldprof inlines nothing.
        #[prost(message, repeated, tag = "4")]
        pub(crate) line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Line {
        #[prost(uint64, tag = "1")]
        pub(crate) function_id: u64,
        #[prost(int64, tag = "2")]
        pub(crate) line: i64,
        #[prost(int64, tag = "3")]
        pub(crate) column: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Function {
        #[prost(uint64, tag = "1")]
        pub(crate) id: u64,
        #[prost(int64, tag = "2")]
        pub(crate) name: i64,
        #[prost(int64, tag = "3")]
        pub(crate) system_name: i64,
        #[prost(int64, tag = "4")]
        pub(crate) filename: i64,
        #[prost(int64, tag = "5")]
        pub(crate) start_line: i64,
    }
}

/// What one sample stands for.
enum Part<'a> {
    /// The calls made at one call site, directly in a frame.
    Calls(&'a SlotStats),
    /// A frame's own time outside its children and its timed calls (`[spin]` for a
    /// wait site, `[work]` otherwise), its entries, and its own share of the counters
    /// (by sample type; 0 for the others).
    Own {
        node: &'a NodeStats,
        rest_ns: u64,
        wait: bool,
        counters: &'a [u64],
    },
}

/// Where a sample type's values come from.
#[derive(Clone, Copy)]
enum Source {
    /// Nanoseconds: the folded `wall` values.
    Wall,
    /// Spin/yield/sleep/park calls: the folded `calls` values.
    Calls,
    /// Entries of a wait site, on its `[spin]` leaf: a site's flat total is its
    /// episode count.
    Episodes,
    /// A counter, on each frame's own leaf (`[spin]`, `[work]`): what the frame
    /// counted minus what the wait frames nested in it counted. Estimated like the
    /// summary's when episodes are sampled. Present only if some thread counts it.
    Counter(CounterEvent),
}

/// A sample type: its name and unit in the profile, and where its values come from.
struct SampleType {
    name: &'static str,
    unit: &'static str,
    source: Source,
}

/// The sample types, in the order of each sample's values; another counter is one
/// more entry.
const SAMPLE_TYPES: &[SampleType] = &[
    SampleType {
        name: "wall",
        unit: "nanoseconds",
        source: Source::Wall,
    },
    SampleType {
        name: "calls",
        unit: "count",
        source: Source::Calls,
    },
    SampleType {
        name: "episodes",
        unit: "count",
        source: Source::Episodes,
    },
    SampleType {
        name: "voluntary_switches",
        unit: "count",
        source: Source::Counter(CounterEvent::VoluntarySwitches),
    },
    SampleType {
        name: "involuntary_switches",
        unit: "count",
        source: Source::Counter(CounterEvent::InvoluntarySwitches),
    },
    SampleType {
        name: "cache_misses",
        unit: "count",
        source: Source::Counter(CounterEvent::CacheMisses),
    },
];

impl SampleType {
    /// The value of `part`; `index` is this type's place in [`SAMPLE_TYPES`].
    fn value(&self, index: usize, part: &Part<'_>) -> u64 {
        match (self.source, part) {
            (Source::Wall, Part::Calls(s)) => s.ns,
            (Source::Wall, Part::Own { rest_ns, .. }) => *rest_ns,
            (Source::Calls, Part::Calls(s)) => s.calls,
            (
                Source::Episodes,
                Part::Own {
                    node, wait: true, ..
                },
            ) => node.episodes,
            (Source::Counter(_), Part::Own { counters, .. }) => counters[index],
            _ => 0,
        }
    }
}

/// Per node, per sample type: the node's own share of each counter (see
/// [`Source::Counter`]); only the types in `active` are filled in.
fn own_counters(t: &ThreadProfile, frames: &[FrameInfo], active: &[bool]) -> Vec<Vec<u64>> {
    let mut own = vec![vec![0u64; SAMPLE_TYPES.len()]; t.nodes.len()];
    for (k, ty) in SAMPLE_TYPES.iter().enumerate() {
        let Source::Counter(event) = ty.source else {
            continue;
        };
        if !active[k] {
            continue;
        }
        for (i, v) in t.own_counts(frames, event).into_iter().enumerate() {
            own[i][k] = v;
        }
    }
    own
}

/// The time span a profile covers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(crate) start: SystemTime,
    pub(crate) length: Duration,
}

impl Window {
    /// Ending now, as long as the longest-recording thread.
    fn ending_now(profile: &Profile) -> Window {
        let longest = profile
            .threads
            .iter()
            .map(|t| t.nodes[0].wall_ns)
            .max()
            .unwrap_or(0);
        let length = Duration::from_nanos(longest);
        let now = SystemTime::now();
        Window {
            start: now.checked_sub(length).unwrap_or(now),
            length,
        }
    }
}

/// Interns strings, functions and locations as the profile is filled in.
struct Builder {
    out: pb::Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<[i64; 4], u64>,
    locations: HashMap<(u64, u32, u32), u64>,
    samples: HashMap<(Vec<u64>, i64, i64), usize>,
    /// Which of [`SAMPLE_TYPES`] this profile has.
    active: Vec<bool>,
}

const MAPPING: u64 = 1;

impl Builder {
    fn new(active: Vec<bool>) -> Builder {
        let mut b = Builder {
            out: pb::Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
            samples: HashMap::new(),
            active,
        };
        // pprof requires string 0 to be "": it stands for "not set" everywhere.
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.out.string_table.len() as i64;
        self.out.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, name: &str, unit: &str) -> pb::ValueType {
        pb::ValueType {
            r#type: self.string(name),
            unit: self.string(unit),
        }
    }

    fn function(&mut self, name: &str, system_name: &str, file: &str, start_line: u32) -> u64 {
        let key = [
            self.string(name),
            self.string(system_name),
            self.string(file),
            i64::from(start_line),
        ];
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.out.function.len() as u64 + 1;
        self.out.function.push(pb::Function {
            id,
            name: key[0],
            system_name: key[1],
            filename: key[2],
            start_line: key[3],
        });
        self.functions.insert(key, id);
        id
    }

    /// The location of `function` at `line` and `column`.
    fn location(&mut self, function_id: u64, line: u32, column: u32) -> u64 {
        let key = (function_id, line, column);
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let id = self.out.location.len() as u64 + 1;
        self.out.location.push(pb::Location {
            id,
            mapping_id: MAPPING,
            line: vec![pb::Line {
                function_id,
                line: i64::from(line),
                column: i64::from(column),
            }],
        });
        self.locations.insert(key, id);
        id
    }

    /// Adds `part` at `leaves` (innermost first) above `stack`, merging identical
    /// samples.
    fn sample(&mut self, leaves: &[u64], stack: &[u64], thread: i64, kind: &str, part: &Part<'_>) {
        let values: Vec<i64> = SAMPLE_TYPES
            .iter()
            .enumerate()
            .filter(|(k, _)| self.active[*k])
            .map(|(k, t)| t.value(k, part).min(i64::MAX as u64) as i64)
            .collect();
        if values.iter().all(|&v| v == 0) {
            return;
        }
        let kind = self.string(kind);
        let mut locations = Vec::with_capacity(leaves.len() + stack.len());
        locations.extend_from_slice(leaves);
        locations.extend_from_slice(stack);
        let key = (locations, thread, kind);
        if let Some(&i) = self.samples.get(&key) {
            let s = &mut self.out.sample[i];
            for (sum, v) in s.value.iter_mut().zip(values) {
                *sum = sum.saturating_add(v);
            }
            return;
        }
        let (thread_key, kind_key) = (self.string("thread"), self.string("kind"));
        self.samples.insert(key.clone(), self.out.sample.len());
        self.out.sample.push(pb::Sample {
            location_id: key.0,
            value: values,
            label: vec![
                pb::Label {
                    key: thread_key,
                    str: thread,
                },
                pb::Label {
                    key: kind_key,
                    str: kind,
                },
            ],
        });
    }
}

/// The profile as a pprof message.
fn encode(profile: &Profile, window: Window) -> pb::Profile {
    // A counter no thread counts (no PMU for cache misses, counters off) is left out
    // rather than shown as zeros.
    let active: Vec<bool> = SAMPLE_TYPES
        .iter()
        .map(|t| match t.source {
            Source::Counter(e) => profile
                .threads
                .iter()
                .any(|th| th.counted(0, &profile.frames, e).is_some()),
            _ => true,
        })
        .collect();
    let mut b = Builder::new(active.clone());
    b.out.sample_type = SAMPLE_TYPES
        .iter()
        .zip(&active)
        .filter(|(_, on)| **on)
        .map(|(t, _)| b.value_type(t.name, t.unit))
        .collect();
    b.out.period_type = Some(b.value_type("wall", "nanoseconds"));
    b.out.period = 1;
    b.out.default_sample_type = b.string("wall");
    let comment = b.string(concat!(
        "yieldprof ",
        env!("CARGO_PKG_VERSION"),
        ": exact counts and durations, not sampled"
    ));
    b.out.comment = vec![comment];
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    b.out.mapping = vec![pb::Mapping {
        id: MAPPING,
        filename: b.string(&exe),
        // Every location already names its functions and lines: nothing to symbolize.
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
    }];
    let since_epoch = window.start.duration_since(UNIX_EPOCH).unwrap_or_default();
    b.out.time_nanos = since_epoch.as_nanos().min(i64::MAX as u128) as i64;
    b.out.duration_nanos = window.length.as_nanos().min(i64::MAX as u128) as i64;

    for t in &profile.threads {
        let child_wall = t.child_wall();
        let counters = own_counters(t, &profile.frames, &active);
        let thread = b.string(&t.name);
        // Per node: the locations from it down to the root, leaf first.
        let mut stacks: Vec<Vec<u64>> = Vec::with_capacity(t.nodes.len());
        for (i, n) in t.nodes.iter().enumerate() {
            let frame = &profile.frames[n.frame as usize];
            let (function, file, line) = if i == 0 {
                (b.function(&t.name, "", "", 0), "", 0)
            } else {
                let f = b.function(&frame.name, &frame.path, frame.file, frame.line);
                (f, frame.file, frame.line)
            };
            let parent: Vec<u64> = if i == 0 {
                Vec::new()
            } else {
                stacks[n.parent as usize].clone()
            };
            let rest_ns = n.rest_ns(child_wall[i]);
            let own = Part::Own {
                node: n,
                rest_ns,
                wait: frame.kind == FrameKind::Wait,
                counters: &counters[i],
            };
            let own_leaf = match frame.kind {
                FrameKind::Wait => Some(("[spin]", "spin")),
                FrameKind::Thread | FrameKind::Work => Some(("[work]", "work")),
                FrameKind::Overflow => None,
            };
            let at_own_line = b.location(function, line, 0);
            match own_leaf {
                Some((leaf_name, kind)) => {
                    // The leaf at its frame's file and line, so `pprof -lines` can
                    // tell the sites apart.
                    let leaf = b.function(leaf_name, "", file, 0);
                    let leaf = b.location(leaf, line, 0);
                    b.sample(&[leaf, at_own_line], &parent, thread, kind, &own);
                }
                None => b.sample(&[at_own_line], &parent, thread, "overflow", &own),
            }
            for slot in &n.slots {
                let call = &profile.calls[slot.call as usize];
                let leaf = b.function(call.kind.frame(), "", call.file, 0);
                let leaf = b.location(leaf, call.line, call.column);
                // Under it, the frame at the line of the call, as in a stack trace.
                let at_call = b.location(function, call.line, call.column);
                let part = Part::Calls(slot);
                b.sample(&[leaf, at_call], &parent, thread, call.kind.name(), &part);
            }
            let mut stack = Vec::with_capacity(parent.len() + 1);
            stack.push(at_own_line);
            stack.extend(parent);
            stacks.push(stack);
        }
    }
    b.out
}

/// Writes `profile` as gzipped protobuf covering `window`.
pub(crate) fn write<W: Write>(profile: &Profile, window: Window, out: W) -> io::Result<()> {
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&encode(profile, window).encode_to_vec())?;
    gz.finish()?;
    Ok(())
}

impl Profile {
    /// Writes the profile in pprof's format (gzipped `perftools.profiles.Profile`),
    /// the file `init()` saves as `<name>.pb.gz`: for `go tool pprof`, Pyroscope and
    /// Parca. Sample types `wall` (ns, the default), `calls` and `episodes`, then
    /// `voluntary_switches`, `involuntary_switches` and `cache_misses` where counted;
    /// labels `thread` and `kind`. The stacks are those of [`Profile::folded`].
    ///
    /// ```
    /// yieldprof::yield_now();
    /// let mut gz = Vec::new();
    /// yieldprof::snapshot().write_pprof(&mut gz).unwrap();
    /// assert_eq!(gz[..2], [0x1f, 0x8b]); // the gzip magic number
    /// ```
    pub fn write_pprof<W: Write>(&self, out: W) -> io::Result<()> {
        write(self, Window::ending_now(self), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::site::{self, CallInfo, EpisodeSite, FrameInfo, Kind, WorkSite};
    use crate::model::profile::ThreadProfile;
    use crate::output::fold::Metric;
    use std::collections::BTreeMap;

    // `..default()`: fields added to the stats later keep their zero here.
    #[allow(clippy::needless_update)]
    fn node(frame: u32, parent: u32, episodes: u64, wall_ns: u64) -> NodeStats {
        NodeStats {
            frame,
            parent,
            episodes,
            wall_ns,
            ..NodeStats::default()
        }
    }

    #[allow(clippy::needless_update)]
    fn slot(call: u32, calls: u64, ns: u64) -> SlotStats {
        SlotStats {
            call,
            calls,
            ns,
            ..SlotStats::default()
        }
    }

    /// Two threads named `worker`, each `serve` (business) → `wait_ready` (wait site)
    /// with spins at line 12 and yields at line 14, plus a thread-level sleep.
    fn sample_profile() -> Profile {
        // Frames 0 and 1 are the fixed thread root and `[overflow]`.
        let mut frames: Vec<FrameInfo> = site::tables().0[..2].to_vec();
        frames.push(WorkSite::new("serve", "src/app.rs", 3).info());
        frames.push(EpisodeSite::new(None, "app", "wait_ready", "src/app.rs", 10).info());
        let call = |kind, line| CallInfo {
            kind,
            file: "src/app.rs",
            line,
            column: 9,
        };
        let calls = vec![
            call(Kind::Spin, 0),
            call(Kind::Spin, 12),
            call(Kind::Yield, 14),
            call(Kind::Sleep, 30),
        ];
        let thread = |serial, scale: u64| {
            let mut root = node(0, 0, 1, 10_000 * scale);
            root.slots = vec![slot(3, 2, 500 * scale)];
            let mut wait = node(3, 2, 4, 3_000 * scale);
            wait.slots = vec![slot(1, 100 * scale, 0), slot(2, 5, 1_000 * scale)];
            ThreadProfile {
                serial,
                tid: serial as i32,
                name: "worker".to_string(),
                exited: false,
                overflowed: 0,
                nodes: vec![root, node(1, 0, 0, 0), node(2, 0, 2, 6_000 * scale), wait],
                counters: Default::default(),
            }
        };
        Profile {
            threads: vec![thread(1, 1), thread(2, 2)],
            frames,
            calls,
        }
    }

    fn decoded(profile: &Profile) -> pb::Profile {
        let window = Window {
            start: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            length: Duration::from_secs(10),
        };
        let mut gz = Vec::new();
        write(profile, window, &mut gz).unwrap();
        let mut raw = Vec::new();
        io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
        pb::Profile::decode(&raw[..]).unwrap()
    }

    /// Folded-style stacks of every sample (root first), summed per stack for value
    /// `index`.
    fn stacks(p: &pb::Profile, index: usize) -> BTreeMap<String, u64> {
        let s = |i: i64| p.string_table[i as usize].as_str();
        let mut out = BTreeMap::new();
        for sample in &p.sample {
            let mut names = Vec::new();
            for &id in sample.location_id.iter().rev() {
                let loc = &p.location[id as usize - 1];
                for line in loc.line.iter().rev() {
                    names.push(s(p.function[line.function_id as usize - 1].name));
                }
            }
            let v = sample.value[index] as u64;
            if v > 0 {
                *out.entry(names.join(";")).or_insert(0) += v;
            }
        }
        out
    }

    #[test]
    fn every_sample_matches_a_folded_line_for_wall_and_calls() {
        let profile = sample_profile();
        let p = decoded(&profile);
        for (index, metric) in [(0, Metric::Wall), (1, Metric::Calls)] {
            assert_eq!(stacks(&p, index), profile.fold(metric), "{metric:?}");
        }
        let calls: u64 = profile.fold(Metric::Calls).values().sum();
        assert_eq!(calls, (2 + 100 + 5) + (2 + 200 + 5));
    }

    #[test]
    fn episodes_sum_to_the_wait_sites_episodes() {
        let profile = sample_profile();
        let p = decoded(&profile);
        let episodes: i64 = p.sample.iter().map(|s| s.value[2]).sum();
        assert_eq!(episodes, 8);
        assert_eq!(profile.sites()[0].episodes, 8);
    }

    #[test]
    fn the_string_table_starts_empty_and_holds_each_string_once() {
        let p = decoded(&sample_profile());
        assert_eq!(p.string_table[0], "");
        let mut seen = std::collections::HashSet::new();
        for s in &p.string_table {
            assert!(
                seen.insert(s.as_str()),
                "{s:?} twice in {:?}",
                p.string_table
            );
        }
        let s = |i: i64| p.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("wall", "nanoseconds"),
                ("calls", "count"),
                ("episodes", "count")
            ]
        );
        assert_eq!(s(p.default_sample_type), "wall");
        assert_eq!(p.time_nanos, 1_700_000_000 * 1_000_000_000);
        assert_eq!(p.duration_nanos, 10_000_000_000);
    }

    #[test]
    fn call_sites_are_leaf_lines_and_threads_and_kinds_are_labels() {
        let p = decoded(&sample_profile());
        let s = |i: i64| p.string_table[i as usize].as_str();
        let f = |id: u64| &p.function[id as usize - 1];
        let yield_sample = p
            .sample
            .iter()
            .find(|smp| {
                smp.label
                    .iter()
                    .any(|l| s(l.key) == "kind" && s(l.str) == "yield")
            })
            .expect("a yield sample");
        let labels: Vec<(&str, &str)> = yield_sample
            .label
            .iter()
            .map(|l| (s(l.key), s(l.str)))
            .collect();
        assert_eq!(labels, [("thread", "worker"), ("kind", "yield")]);
        // Two same-named threads share the sample: 5 + 5 yields, 1000 + 2000 ns.
        assert_eq!(yield_sample.value, [3_000, 10, 0]);
        // One line per location (nothing inlined), innermost first: the kind, the
        // wait site at the line of the call, serve at its own line, the thread.
        let frames: Vec<(&str, &str, i64, i64)> = yield_sample
            .location_id
            .iter()
            .map(|&id| {
                let loc = &p.location[id as usize - 1];
                assert_eq!(loc.line.len(), 1);
                let func = f(loc.line[0].function_id);
                (
                    s(func.name),
                    s(func.filename),
                    func.start_line,
                    loc.line[0].line,
                )
            })
            .collect();
        assert_eq!(
            frames,
            [
                ("[yield]", "src/app.rs", 0, 14),
                ("app::wait_ready", "src/app.rs", 10, 14),
                ("serve", "src/app.rs", 3, 3),
                ("worker", "", 0, 0),
            ]
        );
        let site = &p.location[yield_sample.location_id[1] as usize - 1];
        assert_eq!(
            s(f(site.line[0].function_id).system_name),
            "app::wait_ready"
        );
    }

    #[test]
    fn an_empty_profile_is_a_valid_profile_without_samples() {
        let p = decoded(&Profile {
            threads: Vec::new(),
            frames: Vec::new(),
            calls: Vec::new(),
        });
        assert_eq!((p.sample.len(), p.sample_type.len()), (0, 3));
    }
}
