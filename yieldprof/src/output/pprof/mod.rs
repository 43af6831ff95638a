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
//! The messages are declared and encoded in `proto`, with the field numbers of the
//! published `profile.proto`: no protoc and no build script at build time.

use crate::base::site::{FrameInfo, FrameKind};
use crate::counters::CounterEvent;
use crate::model::own::OwnTime;
use crate::model::profile::Profile;
use crate::model::tree::{NodeStats, SlotStats, ThreadProfile};
use flate2::write::GzEncoder;
use flate2::Compression;
use samples::{IdMap, SampleKey, Samples, NO_STACK};
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod proto;
mod samples;
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

/// Per node, per sample type (`SAMPLE_TYPES.len()` values a node, in one vector): the
/// node's own share of each counter (see [`Source::Counter`]); only the types in
/// `active` are filled in.
fn own_counters(t: &ThreadProfile, frames: &[FrameInfo], active: &[bool]) -> Vec<u64> {
    let mut own = vec![0u64; SAMPLE_TYPES.len() * t.nodes.len()];
    for (k, ty) in SAMPLE_TYPES.iter().enumerate() {
        let Source::Counter(event) = ty.source else {
            continue;
        };
        if !active[k] {
            continue;
        }
        for (i, v) in t.own_counts(frames, event).into_iter().enumerate() {
            own[i * SAMPLE_TYPES.len() + k] = v;
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
    /// Everything but the samples, which are kept apart ([`Samples`]) and written one
    /// by one.
    out: proto::Profile,
    strings: HashMap<String, i64>,
    functions: IdMap<[i64; 4], u64>,
    locations: IdMap<(u64, u32, u32), u64>,
    samples: Samples,
    /// The string ids of sample kinds, looked up before `strings`.
    kinds: Vec<(&'static str, i64)>,
    /// Which of [`SAMPLE_TYPES`] this profile has.
    active: Vec<bool>,
}

const MAPPING: u64 = 1;

impl Builder {
    fn new(active: Vec<bool>) -> Builder {
        let mut b = Builder {
            out: proto::Profile::default(),
            strings: HashMap::new(),
            functions: IdMap::default(),
            locations: IdMap::default(),
            samples: Samples::default(),
            kinds: Vec::new(),
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

    /// Adds `part` at `leaves` (innermost first; 0 for none) above `stack`, merging
    /// identical samples.
    fn sample(
        &mut self,
        leaves: [u64; 2],
        stack: u32,
        thread: i64,
        kind: &'static str,
        part: &Part<'_>,
    ) {
        let mut values = [0i64; SAMPLE_TYPES.len()];
        let mut n = 0;
        for (k, t) in SAMPLE_TYPES.iter().enumerate() {
            if self.active[k] {
                values[n] = t.value(k, part).min(i64::MAX as u64) as i64;
                n += 1;
            }
        }
        let values = &values[..n];
        if values.iter().all(|&v| v == 0) {
            return;
        }
        let kind = match self.kinds.iter().find(|(k, _)| *k == kind) {
            Some(&(_, id)) => id,
            None => {
                let id = self.string(kind);
                self.kinds.push((kind, id));
                id
            }
        };
        let key = SampleKey {
            leaves,
            stack,
            thread,
            kind,
        };
        if self.samples.add(key, values) && self.samples.len() == 1 {
            // The label keys, in the string table after the first sample's kind.
            self.string("thread");
            self.string("kind");
        }
    }

    /// Writes the profile, its samples one by one, as one `Profile` message: fields
    /// are written in tag order, and the samples (tag 2) come between the sample
    /// types (1) and the rest (3 on).
    fn write(mut self, out: &mut impl Write) -> io::Result<()> {
        let key = |name: &str| self.strings.get(name).copied().unwrap_or(0);
        let (thread_key, kind_key) = (key("thread"), key("kind"));
        let types = proto::Profile {
            sample_type: std::mem::take(&mut self.out.sample_type),
            ..proto::Profile::default()
        };
        let mut buf = Vec::new();
        types.encode(&mut buf);
        out.write_all(&buf)?;
        let n = self.active.iter().filter(|&&on| on).count();
        self.samples.write(2, n, [thread_key, kind_key], out)?;
        buf.clear();
        self.out.encode(&mut buf);
        out.write_all(&buf)
    }
}

/// The profile as a pprof message, its samples kept apart.
fn build(profile: &Profile, window: Window) -> Builder {
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
    // About two samples a node: sized once rather than grown (and rehashed) by doubling.
    let nodes: usize = profile.threads.iter().map(|t| t.nodes.len()).sum();
    b.samples.reserve(nodes, SAMPLE_TYPES.len());
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
    // Per frame: its function and the location of its own line, then of its own
    // leaves (by `LEAVES`); per call site: its leaf's location. Made on first use, so
    // ids are given in the same order as without them.
    let mut frame_at: Vec<Option<(u64, u64)>> = vec![None; profile.frames.len()];
    let mut leaf_at: Vec<[u64; LEAVES]> = vec![[0; LEAVES]; profile.frames.len()];
    let mut leaf_names = ["[work]"; LEAVES];
    for (name, (own, _)) in leaf_names.iter_mut().zip(OwnTime::default().leaves()) {
        *name = own;
    }
    leaf_names[PROFILER] = crate::output::fold::PROFILER;
    let mut call_at: Vec<u64> = vec![0; profile.calls.len()];
    for (t, root) in profile.threads.iter().zip(&roots) {
        let child_wall = t.child_wall();
        let own_times = t.own_times(&profile.frames, &profile.calls);
        let jobs_off = t.jobs_off(&profile.frames);
        let counters = own_counters(t, &profile.frames, &active);
        let thread = b.string(root);
        let root_at = {
            let f = b.function(root, "", "", 0);
            (f, b.location(f, 0, 0))
        };
        let mut root_leaves = [0; LEAVES];
        // Per node: its stack, from it down to the root.
        let mut stacks: Vec<u32> = Vec::with_capacity(t.nodes.len());
        for (i, n) in t.nodes.iter().enumerate() {
            let frame = &profile.frames[n.frame as usize];
            let (file, line) = if i == 0 {
                ("", 0)
            } else {
                (frame.file, frame.line)
            };
            let (function, at_own_line) = if i == 0 {
                root_at
            } else {
                *frame_at[n.frame as usize].get_or_insert_with(|| {
                    let f = b.function(&frame.name, &frame.path, frame.file, frame.line);
                    (f, b.location(f, frame.line, 0))
                })
            };
            let leaf_cache = if i == 0 {
                &mut root_leaves
            } else {
                &mut leaf_at[n.frame as usize]
            };
            let parent = if i == 0 {
                NO_STACK
            } else {
                stacks[n.parent as usize]
            };
            let counters = &counters[i * SAMPLE_TYPES.len()..][..SAMPLE_TYPES.len()];
            let rest_ns = n.rest_ns(child_wall[i]);
            // The own leaves as in the folded file (by their index in `leaf_names`);
            // the first carries the frame's entries and counters.
            let mut leaves = [(0usize, 0u64); LEAVES];
            let mut count = 0;
            match (frame.kind, &own_times[i]) {
                (FrameKind::Wait, Some(own)) => {
                    for (k, (_, v)) in own.leaves().into_iter().enumerate() {
                        if v > 0 {
                            leaves[count] = (k, v);
                            count += 1;
                        }
                    }
                    if count == 0 {
                        // The first leaf, empty, still carries the entries.
                        leaves[0] = (0, 0);
                        count = 1;
                    }
                }
                (FrameKind::Overflow, _) => {}
                // As in the folded file: a thread's own profiler time stays in its
                // `[work]`, every other frame's is its `[profiler]` leaf.
                (FrameKind::Thread, _) => {
                    leaves[0] = (WORK, rest_ns + n.profiler_ns);
                    count = 1;
                }
                // A job's own time off the CPU: its `[off-cpu]` leaf.
                _ => {
                    leaves[0] = (WORK, rest_ns - jobs_off[i]);
                    leaves[1] = (OFF_CPU, jobs_off[i]);
                    count = if jobs_off[i] > 0 { 2 } else { 1 };
                }
            }
            let overflow = count == 0;
            if frame.kind != FrameKind::Thread && n.profiler_ns > 0 {
                leaves[count] = (PROFILER, n.profiler_ns);
                count += 1;
            }
            if overflow {
                let own = Part::Own {
                    node: n,
                    rest_ns,
                    first: true,
                    wait: false,
                    counters,
                };
                b.sample([at_own_line, 0], parent, thread, "overflow", &own);
            }
            for (k, &(leaf_index, ns)) in leaves[..count].iter().enumerate() {
                let own = Part::Own {
                    node: n,
                    rest_ns: ns,
                    first: k == 0,
                    wait: frame.kind == FrameKind::Wait,
                    counters,
                };
                let leaf_name = leaf_names[leaf_index];
                // The leaf at its frame's file and line, so `pprof -lines` can tell
                // the sites apart.
                if leaf_cache[leaf_index] == 0 {
                    let f = b.function(leaf_name, "", file, 0);
                    leaf_cache[leaf_index] = b.location(f, line, 0);
                }
                let kind = leaf_name.trim_matches(['[', ']']);
                b.sample(
                    [leaf_cache[leaf_index], at_own_line],
                    parent,
                    thread,
                    kind,
                    &own,
                );
            }
            for slot in &n.slots {
                let call = &profile.calls[slot.call as usize];
                let leaf = &mut call_at[slot.call as usize];
                if *leaf == 0 {
                    let f = b.function(call.kind.frame(), "", call.file, 0);
                    *leaf = b.location(f, call.line, call.column);
                }
                // Under it, the frame at the line of the call, as in a stack trace.
                let at_call = b.location(function, call.line, call.column);
                let part = Part::Calls(slot);
                b.sample([*leaf, at_call], parent, thread, call.kind.name(), &part);
            }
            stacks.push(b.samples.stack(at_own_line, parent));
        }
    }
    b
}

/// How many own leaves a frame can have: a wait frame's five
/// ([`OwnTime::leaves`](crate::report::OwnTime)), then `[work]` at [`WORK`].
const LEAVES: usize = 7;
const WORK: usize = 5;
/// `[off-cpu]`'s place among [`OwnTime::leaves`](crate::report::OwnTime).
const OFF_CPU: usize = 2;
const PROFILER: usize = 6;

/// Writes `profile` as gzipped protobuf covering `window`.
pub(crate) fn write<W: Write>(profile: &Profile, window: Window, out: W) -> io::Result<()> {
    // The fastest level: at the default one deflate took about a third of the CPU
    // time of writing a 100k-stack report, for a file only somewhat smaller.
    let mut gz = GzEncoder::new(out, Compression::fast());
    build(profile, window).write(&mut gz)?;
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
