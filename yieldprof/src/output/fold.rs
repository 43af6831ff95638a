//! Folded stacks: `thread;frame;...;[kind] value`, one line per unique stack.
//!
//! The leaf of each line says where the time went: inside a recognised call, its
//! kind's frame (`[yield]`, `[sleep]`, `[lock]`, `[condvar]`, `[channel]`, ...); a wait
//! frame's own time outside them by what was measured (`[spin]`, `[on-cpu]`,
//! `[off-cpu]`, `[unexplained]`: see [`OwnTime`](crate::report::OwnTime)); `[work]` for a
//! thread's or business frame's own time; `[profiler]` for yieldprof's own time inside
//! a frame (node creation, switch figures and sampled counters read), taken out of the
//! frame's own (a thread root's, its set-up included, stays in its `[work]`). Exited threads with the same name share
//! lines, so the file grows with unique stacks, never with episodes; live threads that
//! share a name (a pool's workers) are told apart by their tid.

use crate::base::site::{FrameKind, Kind};
use crate::base::snoozed::snoozes_at;
use crate::counters::CounterEvent;
use crate::model::profile::Profile;
use crate::model::tree::ThreadProfile;
use crate::output::palette::{SPUN, YIELDED};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

pub use crate::config::Metric;

/// The leaf of yieldprof's own time inside a frame (`NodeStats::profiler_ns`): its
/// set-up, node creation and switch figures read; never in the frame's own time.
pub(crate) const PROFILER: &str = "[profiler]";

/// A frame name safe inside a folded line (`;` separates frames, a newline ends it)
/// and inside inferno's frame attribute files (tab-separated).
pub(crate) fn clean(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r', '\t'], " ")
}

impl Profile {
    /// The root frame of each thread: its name, with its tid when it is live and
    /// another thread has the same name (the workers of a pool).
    pub(crate) fn thread_frames(&self) -> Vec<String> {
        let mut named: HashMap<&str, usize> = HashMap::new();
        for t in &self.threads {
            *named.entry(t.name.as_str()).or_default() += 1;
        }
        self.threads
            .iter()
            .map(|t: &ThreadProfile| {
                if named[t.name.as_str()] > 1 && !t.exited {
                    clean(&format!("{} (tid {})", t.name, t.tid))
                } else {
                    clean(&t.name)
                }
            })
            .collect()
    }

    /// Folded stacks with their values, merged and sorted: one text for every stack
    /// and each node's path written once, so many unique stacks cost no string each.
    pub(crate) fn fold(&self, metric: Metric) -> Folded {
        let mut out = Folded::default();
        let names: Vec<String> = self.frames.iter().map(|f| clean(&f.name)).collect();
        let roots = self.thread_frames();
        let holders = match metric {
            Metric::Wall => self.locks().holder_frames(),
            _ => BTreeMap::new(),
        };
        let mut under_lock = String::new();
        let mut under_backoff = String::new();
        // Each backoff call line's split (whole run), by call info.
        let snoozes: BTreeMap<_, _> = self
            .calls
            .iter()
            .filter(|c| c.kind == Kind::Backoff)
            .filter_map(|c| Some((c, snoozes_at(c.file, c.line, c.column)?)))
            .collect();
        // Each node's path, as a range of `paths`; reused from thread to thread.
        let mut paths = String::new();
        let mut at: Vec<(usize, usize)> = Vec::new();
        let mut joined = String::new();
        for (t, root) in self.threads.iter().zip(roots) {
            let child_wall = t.child_wall();
            let (own, jobs_off) = match metric {
                Metric::Wall => (
                    t.own_times(&self.frames, &self.calls),
                    t.jobs_off(&self.frames),
                ),
                _ => (Vec::new(), Vec::new()),
            };
            let switches: Vec<u64> = match metric {
                Metric::Switches => {
                    let own = |e| t.own_counts(&self.frames, e);
                    let (v, i) = (
                        own(CounterEvent::VoluntarySwitches),
                        own(CounterEvent::InvoluntarySwitches),
                    );
                    v.iter().zip(&i).map(|(a, b)| a + b).collect()
                }
                _ => Vec::new(),
            };
            paths.clear();
            at.clear();
            for (i, n) in t.nodes.iter().enumerate() {
                let start = paths.len();
                if i == 0 {
                    paths.push_str(&root);
                } else {
                    // Through `joined`, reused: the parent's path is in `paths` too.
                    let (from, to) = at[n.parent as usize];
                    joined.clear();
                    joined.push_str(&paths[from..to]);
                    joined.push(';');
                    joined.push_str(&names[n.frame as usize]);
                    paths.push_str(&joined);
                }
                at.push((start, paths.len()));
                let path = &paths[start..];
                let frame = &self.frames[n.frame as usize];
                let mut kinds = [0u64; Kind::ALL.len()];
                for s in &n.slots {
                    let call = &self.calls[s.call as usize];
                    let mut v = match metric {
                        Metric::Wall => s.ns,
                        Metric::Calls => s.calls,
                        Metric::Switches => 0,
                    };
                    // A `yieldprof::sync` lock's wait, split by who held the lock in
                    // the proportions its site waited for each holder; what rounding
                    // leaves stays on `[lock]`.
                    if let Some(split) = holders.get(&(call.file, call.line, call.column)) {
                        under_lock.clear();
                        under_lock.push_str(path);
                        under_lock.push_str(";[lock]");
                        for (frame, share) in split {
                            let part = (s.ns as f64 * share) as u64;
                            out.add(&under_lock, Some(frame), part);
                            v -= part.min(v);
                        }
                    }
                    // A backoff call's, split into the calls that only spun and those
                    // that yielded, in the proportions of its line's calls (by time, or
                    // by count) over the run.
                    if let Some(b) = snoozes.get(call) {
                        let (spun, yielded) = match metric {
                            Metric::Wall => (b.spun_ns, b.yielded_ns),
                            _ => (b.spun, b.yielded),
                        };
                        if spun + yielded > 0 {
                            under_backoff.clear();
                            under_backoff.push_str(path);
                            under_backoff.push_str(";[backoff]");
                            let part = (v as f64 * spun as f64 / (spun + yielded) as f64) as u64;
                            out.add(&under_backoff, Some(SPUN), part);
                            out.add(&under_backoff, Some(YIELDED), v - part);
                            v = 0;
                        }
                    }
                    kinds[call.kind as usize] += v;
                }
                if metric == Metric::Switches {
                    // Switches are not split by call: a wait frame holds its own, the
                    // thread root's rest is `[work]`'s.
                    match frame.kind {
                        FrameKind::Thread => out.add(path, Some("[work]"), switches[i]),
                        _ => out.add(path, None, switches[i]),
                    }
                }
                if metric == Metric::Wall {
                    match (frame.kind, &own[i]) {
                        (FrameKind::Wait, Some(own)) => {
                            for (leaf, v) in own.leaves() {
                                out.add(path, Some(leaf), v);
                            }
                        }
                        (FrameKind::Overflow, _) => out.add(path, None, n.rest_ns(child_wall[i])),
                        // The thread's own profiler time (its set-up, reads between
                        // frames) stays in its `[work]`: a thread's stacks keep one
                        // root line; `ThreadStats::profiler_ns` says how much.
                        (FrameKind::Thread, _) => out.add(
                            path,
                            Some("[work]"),
                            n.rest_ns(child_wall[i]) + n.profiler_ns,
                        ),
                        // A job's own time off the CPU is its `[off-cpu]`, not work.
                        _ => {
                            let rest = n.rest_ns(child_wall[i]);
                            out.add(path, Some("[work]"), rest - jobs_off[i]);
                            out.add(path, Some("[off-cpu]"), jobs_off[i]);
                        }
                    }
                    if frame.kind != FrameKind::Thread {
                        out.add(path, Some(PROFILER), n.profiler_ns);
                    }
                }
                for kind in Kind::ALL {
                    out.add(path, Some(kind.frame()), kinds[kind as usize]);
                }
            }
        }
        out.sort_and_merge();
        out
    }

    /// The split view: the same stacks with a `wait` or `work` frame under each thread,
    /// so each thread's two halves sit side by side in the graph.
    ///
    /// ```
    /// yieldprof::frame!("serve");
    /// yieldprof::wait::yield_now();
    /// let lines = yieldprof::snapshot().folded_split(yieldprof::report::Metric::Calls);
    /// assert!(lines.iter().any(|l| l.contains(";wait;serve;[yield] ")));
    /// ```
    pub fn folded_split(&self, metric: Metric) -> Vec<String> {
        self.fold(metric).split().lines()
    }

    /// Folded lines in inferno's format, sorted.
    ///
    /// ```
    /// let lines = yieldprof::snapshot().folded(yieldprof::report::Metric::Wall);
    /// assert!(lines.iter().all(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().is_ok()));
    /// ```
    pub fn folded(&self, metric: Metric) -> Vec<String> {
        self.fold(metric).lines()
    }
}

/// The split view of folded stacks (`stack`, value), e.g. read back with
/// [`parse_folded`](crate::report::parse_folded): a `wait` or `work` frame under each
/// thread, as in [`Profile::folded_split`] and `<name>.split.svg`.
///
/// ```
/// let stacks = yieldprof::report::parse_folded("main;poll;[yield] 7\nmain;[work] 3\n").unwrap();
/// assert_eq!(
///     yieldprof::report::split_folded(stacks),
///     ["main;wait;poll;[yield] 7", "main;work;[work] 3"]
/// );
/// ```
pub fn split_folded(stacks: impl IntoIterator<Item = (String, u64)>) -> Vec<String> {
    let mut folded = Folded::default();
    for (stack, v) in stacks {
        folded.add(&stack, None, v);
    }
    folded.sort_and_merge();
    folded.split().lines()
}

/// Folded stacks and their values: every stack a range of one text, so many unique
/// stacks cost no string each. Sorted and merged once filled ([`Folded::sort_and_merge`]).
#[derive(Debug, Default)]
pub(crate) struct Folded {
    text: String,
    /// Start and end of a stack in `text`, and its value.
    stacks: Vec<(usize, usize, u64)>,
}

impl Folded {
    /// Adds `path` (and `;leaf` after it) with value `v`; a zero value adds nothing.
    fn add(&mut self, path: &str, leaf: Option<&str>, v: u64) {
        if v == 0 {
            return;
        }
        let start = self.text.len();
        self.text.push_str(path);
        if let Some(leaf) = leaf {
            self.text.push(';');
            self.text.push_str(leaf);
        }
        self.stacks.push((start, self.text.len(), v));
    }

    /// `stack count` lines, sorted and merged; a line without a whole count after its
    /// last space is left out.
    pub(crate) fn of_lines(lines: &[String]) -> Folded {
        let mut out = Folded::default();
        for line in lines {
            if let Some((stack, Ok(v))) = line.trim().rsplit_once(' ').map(|(s, v)| (s, v.parse()))
            {
                out.add(stack, None, v);
            }
        }
        out.sort_and_merge();
        out
    }

    /// Sorts the stacks as strings and adds up the values of equal ones.
    fn sort_and_merge(&mut self) {
        let text = &self.text;
        // Stable: it runs fast over the sorted runs the split view leaves.
        self.stacks
            .sort_by(|a, b| text[a.0..a.1].cmp(&text[b.0..b.1]));
        self.stacks.dedup_by(|next, kept| {
            let same = text[next.0..next.1] == text[kept.0..kept.1];
            if same {
                kept.2 = kept.2.saturating_add(next.2);
            }
            same
        });
    }

    /// The stacks and their values, in order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u64)> + '_ {
        self.stacks
            .iter()
            .map(|&(start, end, v)| (&self.text[start..end], v))
    }

    /// `stack value` lines, in order.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.iter().map(|(s, v)| format!("{s} {v}")).collect()
    }

    /// Writes the [`lines`](Folded::lines), one per line, a chunk at a time (no
    /// formatting machinery per line: a report may have 100k of them).
    pub(crate) fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut chunk: Vec<u8> = Vec::with_capacity(1 << 16);
        for (stack, v) in self.iter() {
            chunk.extend_from_slice(stack.as_bytes());
            chunk.push(b' ');
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            let mut rest = v;
            loop {
                at -= 1;
                digits[at] = b'0' + (rest % 10) as u8;
                rest /= 10;
                if rest == 0 {
                    break;
                }
            }
            chunk.extend_from_slice(&digits[at..]);
            chunk.push(b'\n');
            if chunk.len() >= 1 << 16 {
                w.write_all(&chunk)?;
                chunk.clear();
            }
        }
        w.write_all(&chunk)
    }

    /// The split view: a `wait` or `work` frame under each thread.
    pub(crate) fn split(&self) -> Folded {
        let mut out = Folded::default();
        out.text.reserve(self.text.len() + 6 * self.stacks.len());
        for (stack, v) in self.iter() {
            let (thread, rest) = stack.split_once(';').unwrap_or((stack, ""));
            let half = if rest.ends_with("[work]") {
                "work"
            } else {
                "wait"
            };
            let start = out.text.len();
            for part in [thread, ";", half, ";", rest] {
                out.text.push_str(part);
            }
            out.stacks.push((start, out.text.len(), v));
        }
        out.sort_and_merge();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_sorted_as_strings_merged_and_written_as_lines() {
        let lines: Vec<String> = [
            "b;[work] 3",
            "a b;[spin] 1",
            "b;[work] 4",
            "no count",
            "a;x 18446744073709551615",
            "a;x 2",
        ]
        .map(String::from)
        .to_vec();
        let folded = Folded::of_lines(&lines);
        // Merged values saturate; the line without a count is left out.
        let expect = ["a b;[spin] 1", "a;x 18446744073709551615", "b;[work] 7"];
        assert_eq!(folded.lines(), expect);
        let mut written = Vec::new();
        folded.write(&mut written).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            expect.join("\n") + "\n"
        );
        assert_eq!(
            folded.split().lines(),
            [
                "a b;wait;[spin] 1",
                "a;wait;x 18446744073709551615",
                "b;work;[work] 7"
            ]
        );
    }
}
