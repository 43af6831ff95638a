//! pprof export: the profile as a gzipped `perftools.profiles.Profile` protobuf
//! (`<name>.pb.gz`), the format Grafana Pyroscope, Parca and `go tool pprof` read.
//!
//! Every folded line has a sample with the same stack, so the `.folded` and `.pb.gz`
//! files of one profile always agree: the thread is the root frame, business frames
//! and wait sites sit above it, and the leaf is a call's kind (`[yield]`, `[lock]`,
//! ...) at the file and line of the call, or a frame's own time (`[spin]`, `[on-cpu]`,
//! `[off-cpu]`, `[unexplained]`, `[work]`) at the frame's, so `pprof -lines` lists call
//! sites. Under the leaf, the frame that made the call is at that line too, as in a
//! stack trace. No frame is inlined, for readers that ignore inline frames. Each
//! sample carries two string labels: `thread` (the thread's root frame) and `kind`
//! (the leaf without brackets: `spin`, `lock`, `on-cpu`, `work`, ...). Threads share
//! samples as they share folded lines.
//!
//! The values are exact counts and durations, not statistical samples (counters are
//! estimated when episodes are sampled, as in the summary); `SAMPLE_TYPES` says what
//! each one holds. A counter no thread counts is left out.
//!
//! The messages are declared below with prost's derive, with the field numbers of the
//! published `profile.proto`: no protoc and no build script at build time.

use crate::base::site::{FrameInfo, FrameKind};
use crate::counters::CounterEvent;
use crate::model::profile::Profile;
use crate::model::tree::{NodeStats, SlotStats, ThreadProfile};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod proto;
#[cfg(test)]
mod tests;

/// What one sample stands for.
enum Part<'a> {
    /// The calls made at one call site, directly in a frame.
    Calls(&'a SlotStats),
    /// A part of a frame's own time outside its children and its timed calls (one
    /// leaf of a wait site's [`OwnTime`](crate::report::OwnTime), or `[work]`), and
    /// on the `first` part its entries and its own share of the counters (by sample
    /// type; 0 for the others).
    Own {
        node: &'a NodeStats,
        rest_ns: u64,
        first: bool,
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
    /// Entries of a wait site, on its first own leaf: a site's flat total is its
    /// episode count.
    Episodes,
    /// A counter, on each frame's first own leaf (`[spin]`, `[work]`, ...): what the frame
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
                    node,
                    wait: true,
                    first: true,
                    ..
                },
            ) => node.episodes,
            (
                Source::Counter(_),
                Part::Own {
                    counters,
                    first: true,
                    ..
                },
            ) => counters[index],
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
    out: proto::Profile,
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
            out: proto::Profile::default(),
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

    fn value_type(&mut self, name: &str, unit: &str) -> proto::ValueType {
        proto::ValueType {
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
        self.out.function.push(proto::Function {
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
        self.out.location.push(proto::Location {
            id,
            mapping_id: MAPPING,
            line: vec![proto::Line {
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
        self.out.sample.push(proto::Sample {
            location_id: key.0,
            value: values,
            label: vec![
                proto::Label {
                    key: thread_key,
                    str: thread,
                },
                proto::Label {
                    key: kind_key,
                    str: kind,
                },
            ],
        });
    }
}

/// The profile as a pprof message.
fn encode(profile: &Profile, window: Window) -> proto::Profile {
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
    b.out.mapping = vec![proto::Mapping {
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

    let roots = profile.thread_frames();
    for (t, root) in profile.threads.iter().zip(&roots) {
        let child_wall = t.child_wall();
        let own_times = t.own_times(&profile.frames, &profile.calls);
        let counters = own_counters(t, &profile.frames, &active);
        let thread = b.string(root);
        // Per node: the locations from it down to the root, leaf first.
        let mut stacks: Vec<Vec<u64>> = Vec::with_capacity(t.nodes.len());
        for (i, n) in t.nodes.iter().enumerate() {
            let frame = &profile.frames[n.frame as usize];
            let (function, file, line) = if i == 0 {
                (b.function(root, "", "", 0), "", 0)
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
            // The own leaves as in the folded file; the first carries the frame's
            // entries and counters.
            let leaves: Vec<(&str, u64)> = match (frame.kind, &own_times[i]) {
                (FrameKind::Wait, Some(own)) => {
                    let mut l: Vec<(&str, u64)> =
                        own.leaves().into_iter().filter(|(_, v)| *v > 0).collect();
                    if l.is_empty() {
                        l.push((own.leaves()[0].0, 0));
                    }
                    l
                }
                (FrameKind::Overflow, _) => Vec::new(),
                _ => vec![("[work]", rest_ns)],
            };
            let at_own_line = b.location(function, line, 0);
            if leaves.is_empty() {
                let own = Part::Own {
                    node: n,
                    rest_ns,
                    first: true,
                    wait: false,
                    counters: &counters[i],
                };
                b.sample(&[at_own_line], &parent, thread, "overflow", &own);
            }
            for (k, (leaf_name, ns)) in leaves.into_iter().enumerate() {
                let own = Part::Own {
                    node: n,
                    rest_ns: ns,
                    first: k == 0,
                    wait: frame.kind == FrameKind::Wait,
                    counters: &counters[i],
                };
                // The leaf at its frame's file and line, so `pprof -lines` can tell
                // the sites apart.
                let leaf = b.function(leaf_name, "", file, 0);
                let leaf = b.location(leaf, line, 0);
                let kind = leaf_name.trim_matches(['[', ']']);
                b.sample(&[leaf, at_own_line], &parent, thread, kind, &own);
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
    /// yieldprof::wait::yield_now();
    /// let mut gz = Vec::new();
    /// yieldprof::snapshot().write_pprof(&mut gz).unwrap();
    /// assert_eq!(gz[..2], [0x1f, 0x8b]); // the gzip magic number
    /// ```
    pub fn write_pprof<W: Write>(&self, out: W) -> io::Result<()> {
        write(self, Window::ending_now(self), out)
    }
}
