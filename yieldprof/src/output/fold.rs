//! Folded stacks: `thread;frame;...;[kind] value`, one line per unique stack.
//!
//! The leaf of each line says where the time went: inside a recognised call, its
//! kind's frame (`[yield]`, `[sleep]`, `[lock]`, `[condvar]`, `[channel]`, ...); a wait
//! frame's own time outside them by what was measured (`[spin]`, `[on-cpu]`,
//! `[off-cpu]`, `[unexplained]`: see [`OwnTime`](crate::report::OwnTime)); `[work]` for a
//! thread's or business frame's own time. Exited threads with the same name share
//! lines, so the file grows with unique stacks, never with episodes; live threads that
//! share a name (a pool's workers) are told apart by their tid.

use crate::base::site::{FrameKind, Kind};
use crate::counters::CounterEvent;
use crate::model::profile::Profile;
use crate::model::tree::ThreadProfile;
use std::collections::{BTreeMap, HashMap};

pub use crate::config::Metric;

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

    /// Folded stacks with their values, merged and sorted.
    pub(crate) fn fold(&self, metric: Metric) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let mut add = |stack: String, v: u64| {
            if v > 0 {
                *out.entry(stack).or_insert(0) += v;
            }
        };
        let roots = self.thread_frames();
        for (t, root) in self.threads.iter().zip(roots) {
            let child_wall = t.child_wall();
            let own = t.own_times(&self.frames, &self.calls);
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
            let mut paths: Vec<String> = Vec::with_capacity(t.nodes.len());
            for (i, n) in t.nodes.iter().enumerate() {
                let frame = &self.frames[n.frame as usize];
                let path = if i == 0 {
                    root.clone()
                } else {
                    format!("{};{}", paths[n.parent as usize], clean(&frame.name))
                };
                let mut kinds = [0u64; Kind::ALL.len()];
                for s in &n.slots {
                    let k = self.calls[s.call as usize].kind as usize;
                    kinds[k] += match metric {
                        Metric::Wall => s.ns,
                        Metric::Calls => s.calls,
                        Metric::Switches => 0,
                    };
                }
                if metric == Metric::Switches {
                    // Switches are not split by call: a wait frame holds its own, the
                    // thread root's rest is `[work]`'s.
                    match frame.kind {
                        FrameKind::Thread => add(format!("{path};[work]"), switches[i]),
                        _ => add(path.clone(), switches[i]),
                    }
                }
                if metric == Metric::Wall {
                    match (frame.kind, &own[i]) {
                        (FrameKind::Wait, Some(own)) => {
                            for (leaf, v) in own.leaves() {
                                add(format!("{path};{leaf}"), v);
                            }
                        }
                        (FrameKind::Overflow, _) => add(path.clone(), n.rest_ns(child_wall[i])),
                        _ => add(format!("{path};[work]"), n.rest_ns(child_wall[i])),
                    }
                }
                for kind in Kind::ALL {
                    add(format!("{path};{}", kind.frame()), kinds[kind as usize]);
                }
                paths.push(path);
            }
        }
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
        split_folded(self.fold(metric))
    }

    /// Folded lines in inferno's format, sorted.
    ///
    /// ```
    /// let lines = yieldprof::snapshot().folded(yieldprof::report::Metric::Wall);
    /// assert!(lines.iter().all(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().is_ok()));
    /// ```
    pub fn folded(&self, metric: Metric) -> Vec<String> {
        self.fold(metric)
            .into_iter()
            .map(|(stack, v)| format!("{stack} {v}"))
            .collect()
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
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, v) in stacks {
        let (thread, rest) = stack.split_once(';').unwrap_or((&stack, ""));
        let half = if rest.ends_with("[work]") {
            "work"
        } else {
            "wait"
        };
        *out.entry(format!("{thread};{half};{rest}")).or_insert(0) += v;
    }
    out.into_iter().map(|(s, v)| format!("{s} {v}")).collect()
}
