//! Copies of what was recorded, and the per-site and per-thread views of them.

use crate::base::clock;
use crate::base::site::Limit;
use crate::base::site::{CallInfo, FrameInfo, FrameKind, Kind};
use crate::counters::{Acc, Count, CounterEvent, CounterSource, Counters, NodeSnap, ThreadSnap};
use crate::model::histogram::Histogram;
use std::collections::HashMap;
use std::sync::OnceLock;

/// One calling-context-tree node as copied out of a thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeStats {
    pub(crate) frame: u32,
    pub(crate) parent: u32,
    pub(crate) episodes: u64,
    pub(crate) wall_ns: u64,
    pub(crate) durations: Histogram,
    pub(crate) counts: NodeSnap,
    pub(crate) slots: Vec<SlotStats>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SlotStats {
    pub(crate) call: u32,
    pub(crate) calls: u64,
    pub(crate) ns: u64,
}

/// One thread's tree. Node 0 is the thread root, node 1 `[overflow]`; a node's parent
/// always has a lower index.
#[derive(Clone, Debug)]
pub(crate) struct ThreadProfile {
    pub(crate) serial: u64,
    pub(crate) tid: i32,
    pub(crate) name: String,
    pub(crate) exited: bool,
    pub(crate) overflowed: u64,
    pub(crate) nodes: Vec<NodeStats>,
    pub(crate) counters: ThreadSnap,
}

impl NodeStats {
    /// Time in timed calls (yield, sleep, park) made directly in this frame.
    pub(crate) fn timed_ns(&self) -> u64 {
        self.slots.iter().map(|s| s.ns).sum()
    }

    /// The frame's own time outside its children and its timed calls (`child_wall`:
    /// its children's wall time): `[spin]` for a wait frame, `[work]` otherwise.
    pub(crate) fn rest_ns(&self, child_wall: u64) -> u64 {
        self.wall_ns
            .saturating_sub(child_wall)
            .saturating_sub(self.timed_ns())
    }
}

impl ThreadProfile {
    /// A thread's totals, and the part of them spent in wait episodes (outermost wait
    /// frames only: a wait frame's counts include what is nested in it).
    pub(crate) fn counters(&self, frames: &[FrameInfo]) -> (Counters, Counters) {
        let mut total = Acc::default();
        total.add(&self.nodes[0].counts, self.nodes[0].wall_ns);
        let mut wait = Acc::default();
        for n in self.outermost_waits(&self.in_wait(frames)) {
            wait.add(&n.counts, n.wall_ns);
        }
        let total = total.counters();
        let mut in_wait = wait.counters();
        if wait.is_empty() {
            // No wait time at all: whatever the thread counts, none of it was in waits.
            for e in CounterEvent::ALL {
                if total.get(e).value().is_some() {
                    *in_wait.slot(e) = Count::Exact(0);
                }
            }
        }
        (total, in_wait)
    }

    /// Adds `other`'s recording into this one, matching nodes by their stack (frame
    /// by frame from the root) and slots by call site; wall times add up.
    pub(crate) fn absorb(&mut self, other: &ThreadProfile) {
        let mut index: HashMap<(u32, u32), u32> = self
            .nodes
            .iter()
            .enumerate()
            .skip(2)
            .map(|(i, n)| ((n.parent, n.frame), i as u32))
            .collect();
        // Root and [overflow] are nodes 0 and 1 in every thread.
        let mut to_mine: Vec<u32> = vec![0, 1];
        for (i, n) in other.nodes.iter().enumerate() {
            let mine = if i < 2 {
                i as u32
            } else {
                let parent = to_mine[n.parent as usize];
                *index.entry((parent, n.frame)).or_insert_with(|| {
                    self.nodes.push(NodeStats {
                        frame: n.frame,
                        parent,
                        ..NodeStats::default()
                    });
                    self.nodes.len() as u32 - 1
                })
            };
            if i >= 2 {
                to_mine.push(mine);
            }
            let m = &mut self.nodes[mine as usize];
            m.episodes += n.episodes;
            m.wall_ns += n.wall_ns;
            m.durations.add(&n.durations);
            m.counts = m.counts.plus(&n.counts);
            for s in &n.slots {
                match m.slots.iter_mut().find(|x| x.call == s.call) {
                    Some(x) => {
                        x.calls += s.calls;
                        x.ns += s.ns;
                    }
                    None => m.slots.push(s.clone()),
                }
            }
        }
        self.overflowed += other.overflowed;
        self.counters = self.counters.plus(&other.counters);
        self.tid = other.tid;
    }

    /// Node `i`'s figure for `event`, nested frames included: wait frames and the
    /// thread root count (the root over the thread's life); `None` for other frames
    /// and for events not counted.
    pub(crate) fn counted(
        &self,
        i: usize,
        frames: &[FrameInfo],
        event: CounterEvent,
    ) -> Option<u64> {
        let n = &self.nodes[i];
        if i != 0 && frames[n.frame as usize].kind != FrameKind::Wait {
            return None;
        }
        let mut acc = Acc::default();
        acc.add(&n.counts, n.wall_ns);
        acc.counters().get(event).value()
    }

    /// Each node's own share of `event`: wait frames and the thread root count it
    /// (the root over the thread's life), less what counted frames below them hold;
    /// other frames pass their children's figures up. 0 where not counted.
    pub(crate) fn own_counts(&self, frames: &[FrameInfo], event: CounterEvent) -> Vec<u64> {
        let figure: Vec<Option<u64>> = (0..self.nodes.len())
            .map(|i| self.counted(i, frames, event))
            .collect();
        // Children come after their parents.
        let mut below = vec![0u64; self.nodes.len()];
        for i in (1..self.nodes.len()).rev() {
            let up = figure[i].unwrap_or(below[i]);
            let parent = self.nodes[i].parent as usize;
            below[parent] = below[parent].saturating_add(up);
        }
        figure
            .iter()
            .zip(&below)
            .map(|(f, b)| f.map_or(0, |v| v.saturating_sub(*b)))
            .collect()
    }

    /// Threads record clock ticks; reports speak nanoseconds.
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        for n in &mut self.nodes {
            n.wall_ns = scale.ns(n.wall_ns);
            n.durations.scale_to_ns(scale);
            n.counts.scale_to_ns(scale);
            for s in &mut n.slots {
                s.ns = scale.ns(s.ns);
            }
        }
        self.counters.scale_to_ns(scale);
    }

    /// Wall time of each node's children, by node.
    pub(crate) fn child_wall(&self) -> Vec<u64> {
        let mut sums = vec![0u64; self.nodes.len()];
        for n in self.nodes.iter().skip(1) {
            sums[n.parent as usize] += n.wall_ns;
        }
        sums
    }

    /// Per node: whether it is a wait frame or nested in one.
    pub(crate) fn in_wait(&self, frames: &[FrameInfo]) -> Vec<bool> {
        let mut in_wait = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            in_wait[i] =
                in_wait[n.parent as usize] || frames[n.frame as usize].kind == FrameKind::Wait;
        }
        in_wait
    }

    /// The outermost wait frames (`in_wait` from [`ThreadProfile::in_wait`]): a wait
    /// frame's wall and counts include everything nested in it, so only these add up.
    pub(crate) fn outermost_waits<'a>(
        &'a self,
        in_wait: &'a [bool],
    ) -> impl Iterator<Item = &'a NodeStats> {
        self.nodes
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(i, n)| in_wait[*i] && !in_wait[n.parent as usize])
            .map(|(_, n)| n)
    }

    /// Time in wait frames, and in wrapper calls (`yieldprof::wait::yield_now()`) outside
    /// them: the thread's time that is not `[work]`.
    fn wait_ns(&self, frames: &[FrameInfo]) -> u64 {
        let in_wait = self.in_wait(frames);
        let in_frames: u64 = self.outermost_waits(&in_wait).map(|n| n.wall_ns).sum();
        let in_calls: u64 = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !in_wait[*i])
            .map(|(_, n)| n.timed_ns())
            .sum();
        in_frames + in_calls
    }
}

/// Everything recorded so far, copied with [`snapshot`](crate::snapshot).
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub(crate) threads: Vec<ThreadProfile>,
    pub(crate) frames: Vec<FrameInfo>,
    pub(crate) calls: Vec<CallInfo>,
    /// The per-site and per-thread views, each computed at most once: writing one
    /// report reads them from the summary, the JSON, the findings and the budgets.
    views: Views,
}

#[derive(Clone, Debug, Default)]
struct Views {
    sites: OnceLock<Vec<SiteStats>>,
    threads: OnceLock<Vec<ThreadStats>>,
}

/// Calls made at one call site, summed over every thread and calling context.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallStats {
    /// Where, and what kind of call.
    pub site: CallInfo,
    /// Number of calls.
    pub calls: u64,
    /// Time inside the calls (0 for spins, which are counted only).
    pub ns: u64,
}

/// A wait site (an `#[instrument_wait]` function), summed over threads and callers.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SiteStats {
    /// The frame name: `name = "..."`, else `module::function`.
    pub name: String,
    /// The function's full path, `crate::module::function`.
    pub path: String,
    /// Source file of the function.
    pub file: &'static str,
    /// Line of the function.
    pub line: u32,
    /// The limits declared with `#[instrument_wait(budget(...))]`; empty when none.
    pub budget: &'static [Limit],
    /// Calls of the function.
    pub episodes: u64,
    /// Wall time of the episodes, nested frames included.
    pub wall_ns: u64,
    /// Wall time minus nested frames: the site's own waiting.
    pub self_ns: u64,
    /// Episode durations (nested frames included).
    pub durations: Histogram,
    /// Calls per call site, ordered by line.
    pub calls: Vec<CallStats>,
    /// Context switches and other counters over the episodes (nested frames included);
    /// `Scaled` where estimated from sampled episodes, `NotAvailable` where not counted.
    pub counters: Counters,
}

impl SiteStats {
    /// Whether `name` names this site: its frame name, its full path, or a tail of
    /// the path that starts at a `::`.
    pub fn matches(&self, name: &str) -> bool {
        self.name == name
            || self.path == name
            || self
                .path
                .strip_suffix(name)
                .is_some_and(|head| head.ends_with("::"))
    }

    /// Calls of one kind at every call site of this function.
    pub fn calls_of(&self, kind: Kind) -> u64 {
        self.calls
            .iter()
            .filter(|c| c.site.kind == kind)
            .map(|c| c.calls)
            .sum()
    }

    /// Time inside calls of one kind.
    pub fn ns_of(&self, kind: Kind) -> u64 {
        self.calls
            .iter()
            .filter(|c| c.site.kind == kind)
            .map(|c| c.ns)
            .sum()
    }

    /// Own time not inside a timed call: the CPU burnt spinning and checking.
    pub fn spin_ns(&self) -> u64 {
        let timed: u64 = self.calls.iter().map(|c| c.ns).sum();
        self.self_ns.saturating_sub(timed)
    }
}

/// One thread at a glance.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// The thread's name, else `thread-<n>` (n counts threads in the order they
    /// first recorded).
    pub name: String,
    /// Kernel thread id.
    pub tid: i32,
    /// From the thread's first recorded event to its exit (or now).
    pub wall_ns: u64,
    /// Time in wait episodes and wait calls.
    pub wait_ns: u64,
    /// The rest: `[work]`.
    pub work_ns: u64,
    /// Whether the thread has exited (its data is kept).
    pub exited: bool,
    /// Frame entries folded into `[overflow]` because the node cap was reached.
    pub overflowed: u64,
    /// Counter totals over the thread's life (perf ones from its first record on).
    pub counters: Counters,
    /// The part of `counters` spent in wait episodes; the rest is `[work]`'s.
    pub counters_in_wait: Counters,
    /// How the thread's counters were read.
    pub counter_source: CounterSource,
    /// Time the thread spent reading its counters.
    pub counter_overhead_ns: u64,
    /// Time it was runnable but waited for a CPU (the kernel's schedstat), since it
    /// first recorded; `None` where the kernel does not say.
    pub run_queue_ns: Option<u64>,
}

/// `(wall, wait)` time summed over `threads`.
pub(crate) fn totals(threads: &[ThreadStats]) -> (u64, u64) {
    let wall = threads.iter().map(|t| t.wall_ns).sum();
    let wait = threads.iter().map(|t| t.wait_ns).sum();
    (wall, wait)
}

impl Profile {
    pub(crate) fn new(
        threads: Vec<ThreadProfile>,
        frames: Vec<FrameInfo>,
        calls: Vec<CallInfo>,
    ) -> Profile {
        Profile {
            threads,
            frames,
            calls,
            views: Views::default(),
        }
    }

    /// Wait sites, costliest (wall time) first.
    pub fn sites(&self) -> Vec<SiteStats> {
        self.site_views().to_vec()
    }

    /// [`sites`](Profile::sites) without the copy.
    pub(crate) fn site_views(&self) -> &[SiteStats] {
        self.views.sites.get_or_init(|| self.compute_sites())
    }

    fn compute_sites(&self) -> Vec<SiteStats> {
        let mut by_frame: Vec<Option<SiteStats>> = vec![None; self.frames.len()];
        let mut counts = vec![Acc::default(); self.frames.len()];
        for t in &self.threads {
            let child_wall = t.child_wall();
            for (i, n) in t.nodes.iter().enumerate() {
                let f = &self.frames[n.frame as usize];
                if f.kind != FrameKind::Wait {
                    continue;
                }
                let s = by_frame[n.frame as usize].get_or_insert_with(|| SiteStats {
                    name: f.name.clone(),
                    path: f.path.clone(),
                    file: f.file,
                    line: f.line,
                    budget: f.budget,
                    episodes: 0,
                    wall_ns: 0,
                    self_ns: 0,
                    durations: Histogram::default(),
                    calls: Vec::new(),
                    counters: Counters::default(),
                });
                counts[n.frame as usize].add(&n.counts, n.wall_ns);
                s.durations.add(&n.durations);
                s.episodes += n.episodes;
                s.wall_ns += n.wall_ns;
                s.self_ns += n.wall_ns.saturating_sub(child_wall[i]);
                for slot in &n.slots {
                    let info = self.calls[slot.call as usize];
                    match s.calls.iter_mut().find(|c| c.site == info) {
                        Some(c) => {
                            c.calls += slot.calls;
                            c.ns += slot.ns;
                        }
                        None => s.calls.push(CallStats {
                            site: info,
                            calls: slot.calls,
                            ns: slot.ns,
                        }),
                    }
                }
            }
        }
        for (s, c) in by_frame.iter_mut().zip(&counts) {
            if let Some(s) = s {
                s.counters = c.counters();
            }
        }
        let mut sites: Vec<SiteStats> = by_frame.into_iter().flatten().collect();
        for s in &mut sites {
            s.calls
                .sort_by_key(|c| (c.site.line, c.site.column, c.site.kind));
        }
        sites.sort_by(|a, b| b.wall_ns.cmp(&a.wall_ns).then(a.name.cmp(&b.name)));
        sites
    }

    /// The wait site with this frame name, or this path: the full
    /// `crate::module::function` or any `::`-separated tail of it.
    ///
    /// ```
    /// #[yieldprof::instrument_wait]
    /// fn poll_once() {}
    /// poll_once();
    /// let p = yieldprof::snapshot();
    /// assert_eq!(p.site("poll_once").unwrap().episodes, 1);
    /// ```
    pub fn site(&self, name: &str) -> Option<SiteStats> {
        self.site_views().iter().find(|s| s.matches(name)).cloned()
    }

    /// Every thread that recorded, in the order they started recording. The first
    /// 10 000 threads to exit are kept one by one (~1 KiB each); later ones are merged
    /// per name (up to 256 names; unnamed threads and the rest as `[exited threads]`),
    /// so a program that starts a thread per request keeps bounded memory.
    pub fn threads(&self) -> Vec<ThreadStats> {
        self.thread_views().to_vec()
    }

    /// [`threads`](Profile::threads) without the copy.
    pub(crate) fn thread_views(&self) -> &[ThreadStats] {
        self.views.threads.get_or_init(|| self.compute_threads())
    }

    fn compute_threads(&self) -> Vec<ThreadStats> {
        self.threads
            .iter()
            .map(|t| {
                let wall_ns = t.nodes[0].wall_ns;
                let wait_ns = t.wait_ns(&self.frames).min(wall_ns);
                let (counters, counters_in_wait) = t.counters(&self.frames);
                ThreadStats {
                    name: t.name.clone(),
                    tid: t.tid,
                    wall_ns,
                    wait_ns,
                    work_ns: wall_ns - wait_ns,
                    exited: t.exited,
                    overflowed: t.overflowed,
                    counters,
                    counters_in_wait,
                    counter_source: t.counters.source,
                    counter_overhead_ns: t.counters.overhead_ns,
                    run_queue_ns: t.counters.run_queue_ns,
                }
            })
            .collect()
    }
}

impl NodeStats {
    /// This node minus what `earlier` (the same node, copied before) had.
    fn minus(&self, earlier: &NodeStats) -> NodeStats {
        let slots = self
            .slots
            .iter()
            .map(|s| match earlier.slots.iter().find(|e| e.call == s.call) {
                Some(e) => SlotStats {
                    call: s.call,
                    calls: s.calls.saturating_sub(e.calls),
                    ns: s.ns.saturating_sub(e.ns),
                },
                None => s.clone(),
            })
            .collect();
        NodeStats {
            frame: self.frame,
            parent: self.parent,
            episodes: self.episodes.saturating_sub(earlier.episodes),
            wall_ns: self.wall_ns.saturating_sub(earlier.wall_ns),
            durations: self.durations.minus(&earlier.durations),
            counts: self.counts.minus(&earlier.counts),
            slots,
        }
    }
}

impl ThreadProfile {
    /// This thread minus `earlier`, a copy of the same thread: nodes match by position
    /// since a thread's tree only grows.
    pub(crate) fn since(&self, earlier: &ThreadProfile) -> ThreadProfile {
        ThreadProfile {
            nodes: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| match earlier.nodes.get(i) {
                    Some(old) => n.minus(old),
                    None => n.clone(),
                })
                .collect(),
            overflowed: self.overflowed.saturating_sub(earlier.overflowed),
            counters: self.counters.minus(&earlier.counters),
            ..self.clone()
        }
    }
}

impl Profile {
    /// What was recorded between `earlier` and this snapshot: threads are matched by
    /// identity and nodes by position (a thread's tree only grows), so the result is
    /// exact even for threads that exited in between.
    ///
    /// ```
    /// let before = yieldprof::snapshot();
    /// yieldprof::wait::spin();
    /// let delta = yieldprof::snapshot().since(&before);
    /// assert_eq!(delta.folded(yieldprof::report::Metric::Calls).len(), 1);
    /// ```
    pub fn since(&self, earlier: &Profile) -> Profile {
        let threads = self
            .threads
            .iter()
            .map(
                |t| match earlier.threads.iter().find(|e| e.serial == t.serial) {
                    Some(e) => t.since(e),
                    None => t.clone(),
                },
            )
            .collect();
        Profile::new(threads, self.frames.clone(), self.calls.clone())
    }

    /// Wall time of the threads on which `site` ran.
    pub(crate) fn wall_of_threads_running(&self, site: &SiteStats) -> u64 {
        self.threads
            .iter()
            .filter(|t| {
                t.nodes.iter().any(|n| {
                    let f = &self.frames[n.frame as usize];
                    f.kind == FrameKind::Wait && f.name == site.name && n.episodes > 0
                })
            })
            .map(|t| t.nodes[0].wall_ns)
            .sum()
    }

    /// Only the threads `keep` accepts (by serial number).
    pub(crate) fn retain_threads(&mut self, keep: impl Fn(u64) -> bool) {
        self.threads.retain(|t| keep(t.serial));
        self.views = Views::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_kept_once_computed_and_dropped_after_a_change() {
        let mut p = Profile::default();
        assert!(p.views.sites.get().is_none() && p.views.threads.get().is_none());
        p.site_views();
        p.thread_views();
        assert!(p.views.sites.get().is_some() && p.views.threads.get().is_some());
        p.retain_threads(|_| true);
        assert!(p.views.sites.get().is_none() && p.views.threads.get().is_none());
    }
}
