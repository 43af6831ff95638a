//! Copies of what each thread recorded: its calling-context tree of nodes and call
//! slots, merged, subtracted and walked by the views.

use crate::base::clock;
use crate::base::site::{CallInfo, FrameInfo, FrameKind, Kind};
use crate::counters::{Acc, Count, CounterEvent, Counters, NodeSnap, ThreadSnap, TimeSplit};
use crate::model::histogram::Histogram;
use crate::model::timeline::Timeline;
use std::collections::HashMap;

/// One calling-context-tree node as copied out of a thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeStats {
    pub(crate) frame: u32,
    pub(crate) parent: u32,
    pub(crate) episodes: u64,
    pub(crate) wall_ns: u64,
    /// Of `wall_ns`, the part of a frame still open when the thread was copied (counted
    /// up to that moment).
    pub(crate) open_ns: u64,
    /// Of `open_ns`, the part whose off-CPU time is in `counts` (read from the thread's
    /// clocks at the copy, `record::copy`): a wait frame's or a job's with a mark.
    pub(crate) open_split_ns: u64,
    /// Async episodes: time between polls, outside `wall_ns` (see `record::episode`).
    pub(crate) suspended_ns: u64,
    /// yieldprof's own time inside `wall_ns` while this node was current: set-up,
    /// node creation, switch figures read (`[profiler]`).
    pub(crate) profiler_ns: u64,
    /// Of its own time, the stretches between its waits long enough to be work done
    /// while waiting (`record::gaps`).
    pub(crate) gap_ns: u64,
    /// The same, of stretches the thread was switched in: their time on the CPU unknown.
    pub(crate) gap_switched_ns: u64,
    pub(crate) durations: Histogram,
    pub(crate) counts: NodeSnap,
    pub(crate) slots: Vec<SlotStats>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SlotStats {
    pub(crate) call: u32,
    pub(crate) calls: u64,
    pub(crate) ns: u64,
    /// Off-CPU time inside the calls, where measured per call (see `NodeSnap`).
    pub(crate) off_ns: u64,
}

/// One thread's tree. Node 0 is the thread root, node 1 `[overflow]`; a node's parent
/// always has a lower index.
#[derive(Clone, Debug)]
pub(crate) struct ThreadProfile {
    pub(crate) serial: u64,
    pub(crate) tid: i32,
    pub(crate) name: String,
    /// How many threads it holds: 1, or those merged into it (threads that exited past
    /// the registry's count, a written report's threads past its listing).
    pub(crate) threads: u64,
    pub(crate) exited: bool,
    pub(crate) overflowed: u64,
    /// Entries skipped because they interrupted yieldprof on this thread.
    pub(crate) reentries_skipped: u64,
    /// Entries made after the thread's state was torn down, not recorded.
    pub(crate) entries_after_exit: u64,
    pub(crate) nodes: Vec<NodeStats>,
    /// Fine durations per frame id, whatever the stack: of its episodes (kind `None`),
    /// what site quantiles are read from (nodes keep only coarse durations), and of the
    /// timed calls of each kind made directly in it.
    pub(crate) site_durations: Vec<((u32, Option<Kind>), Histogram)>,
    /// Per wait frame id, its episodes that returned without waiting: counted, never
    /// timed, in no node (`record::lazy`).
    pub(crate) unwaited: Vec<(u32, u64)>,
    pub(crate) counters: ThreadSnap,
    /// Its last wait episodes.
    pub(crate) timeline: Timeline,
}

impl NodeStats {
    /// Wall time of its closed frames: what its switch figures cover.
    pub(crate) fn closed_ns(&self) -> u64 {
        self.wall_ns.saturating_sub(self.open_ns)
    }

    /// Wall time its switch figures cover: its closed frames, and the open one where
    /// its off-CPU time was read at the copy.
    pub(crate) fn split_ns(&self) -> u64 {
        self.closed_ns() + self.open_split_ns.min(self.open_ns)
    }

    /// Of `open_ns`, the part without switch figures (its off-CPU time not read).
    pub(crate) fn open_unsplit_ns(&self) -> u64 {
        self.open_ns - self.open_split_ns.min(self.open_ns)
    }

    /// Time in timed calls (yield, sleep, park) made directly in this frame.
    pub(crate) fn timed_ns(&self) -> u64 {
        self.slots.iter().map(|s| s.ns).sum()
    }

    /// The frame's own time outside its children and its timed calls (`child_wall`:
    /// its children's wall time) and the profiler's: `[spin]` for a wait frame,
    /// `[work]` otherwise.
    pub(crate) fn rest_ns(&self, child_wall: u64) -> u64 {
        self.wall_ns
            .saturating_sub(child_wall)
            .saturating_sub(self.timed_ns())
            .saturating_sub(self.profiler_ns)
    }
}

impl ThreadProfile {
    /// A thread's totals, the part of them spent in wait episodes (outermost wait
    /// frames only: a wait frame's counts include what is nested in it), the part
    /// from before it first recorded, and where the wait episodes' time went.
    pub(crate) fn counters(
        &self,
        frames: &[FrameInfo],
    ) -> (Counters, Counters, Counters, TimeSplit) {
        let mut total = Acc::default();
        total.add(&self.nodes[0].counts, self.nodes[0].wall_ns);
        let mut wait = Acc::default();
        for n in self.outermost_waits(&self.in_wait(frames)) {
            wait.add(&n.counts, n.wall_ns);
        }
        let mut total = total.counters();
        let before = self.counters.before(&total);
        if self.counters.switches_stale {
            // As the thread last stored them: at most what it made, not read now.
            for e in [
                CounterEvent::VoluntarySwitches,
                CounterEvent::InvoluntarySwitches,
                CounterEvent::ContextSwitches,
            ] {
                *total.slot(e) = total.get(e).estimated();
            }
        }
        let mut in_wait = wait.counters();
        // An apportioned split (episodes switched again before it was read) gives each
        // episode voluntary switches first; should it give the waits more of a kind
        // than the thread made (flume's 4-producer channel read 17 935 voluntary in
        // waits of 17 929 before a close kept the split known at its end, 2026-12-06),
        // it is capped at what the thread made after it began recording, both marked
        // estimated.
        let (vol, invol) = (
            CounterEvent::VoluntarySwitches,
            CounterEvent::InvoluntarySwitches,
        );
        let made = |e| total.get(e).value()?.checked_sub(before.get(e).value()?);
        if let (Some(v), Some(i), Some(mv), Some(mi)) = (
            in_wait.get(vol).value(),
            in_wait.get(invol).value(),
            made(vol),
            made(invol),
        ) {
            // The rest goes to the other kind only where the count in waits is exact
            // (apportioned episodes); sampled episodes scale both, each capped alone.
            let exact = matches!(in_wait.get(vol), Count::Exact(_))
                && matches!(in_wait.get(invol), Count::Exact(_));
            if v > mv || i > mi {
                let (v, i) = match exact {
                    true if v > mv => (mv, i + v - mv),
                    true => (v + i - mi, mi),
                    false => (v, i),
                };
                *in_wait.slot(vol) = Count::Scaled(v.min(mv));
                *in_wait.slot(invol) = Count::Scaled(i.min(mi));
            }
        }
        if wait.is_empty() {
            // No wait time at all: whatever the thread counts, none of it was in waits.
            for e in CounterEvent::ALL {
                if total.get(e).value().is_some() {
                    *in_wait.slot(e) = Count::Exact(0);
                }
            }
        }
        (total, in_wait, before, wait.split())
    }

    /// Adds `other`'s recording into this one, matching nodes by their stack (frame
    /// by frame from the root) and slots by call site; wall times add up.
    pub(crate) fn absorb(&mut self, other: &ThreadProfile) {
        self.absorb_all([other]);
    }

    /// [`absorb`](ThreadProfile::absorb) for each of `others`, with one index of this
    /// tree's stacks for them all: thousands of threads merge in time linear in their
    /// nodes.
    pub(crate) fn absorb_all<'a>(&mut self, others: impl IntoIterator<Item = &'a ThreadProfile>) {
        let mut index = self.index();
        for other in others {
            self.absorb_indexed(other, &mut index, None);
        }
    }

    /// [`absorb_all`](ThreadProfile::absorb_all) with each thread's `[unmarked work]`
    /// settled first (`model::own`): the merged threads' is then the sum of theirs,
    /// where an estimate made over their sums would differ.
    pub(crate) fn absorb_all_settled<'a>(
        &mut self,
        others: impl IntoIterator<Item = &'a ThreadProfile>,
        frames: &[FrameInfo],
        calls: &[CallInfo],
    ) {
        self.settle_unmarked_work(frames, calls);
        let mut index = self.index();
        for other in others {
            let settled = other.unmarked_works(frames, calls);
            self.absorb_indexed(other, &mut index, Some(&settled));
        }
    }

    /// This tree's nodes by (parent, frame), past the root and `[overflow]`.
    fn index(&self) -> HashMap<(u32, u32), u32> {
        self.nodes
            .iter()
            .enumerate()
            .skip(2)
            .map(|(i, n)| ((n.parent, n.frame), i as u32))
            .collect()
    }

    /// `absorb` with `index`, this tree's nodes by (parent, frame), kept up to date;
    /// `settled`: `other`'s `[unmarked work]` per node, in place of its stretches.
    fn absorb_indexed(
        &mut self,
        other: &ThreadProfile,
        index: &mut HashMap<(u32, u32), u32>,
        settled: Option<&[u64]>,
    ) {
        self.threads += other.threads;
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
            m.open_ns += n.open_ns;
            m.open_split_ns += n.open_split_ns;
            m.suspended_ns += n.suspended_ns;
            m.profiler_ns += n.profiler_ns;
            match settled {
                Some(work) => m.gap_ns += work[i],
                None => {
                    m.gap_ns += n.gap_ns;
                    m.gap_switched_ns += n.gap_switched_ns;
                }
            }
            m.durations.add(&n.durations);
            m.counts = m.counts.plus(&n.counts);
            for s in &n.slots {
                match m.slots.iter_mut().find(|x| x.call == s.call) {
                    Some(x) => {
                        x.calls += s.calls;
                        x.ns += s.ns;
                        x.off_ns += s.off_ns;
                    }
                    None => m.slots.push(s.clone()),
                }
            }
        }
        for (key, h) in &other.site_durations {
            match self.site_durations.iter_mut().find(|(k, _)| k == key) {
                Some((_, mine)) => mine.add(h),
                None => self.site_durations.push((*key, h.clone())),
            }
        }
        for &(frame, n) in &other.unwaited {
            match self.unwaited.iter_mut().find(|(f, _)| *f == frame) {
                Some((_, mine)) => *mine += n,
                None => self.unwaited.push((frame, n)),
            }
        }
        self.overflowed += other.overflowed;
        self.reentries_skipped += other.reentries_skipped;
        self.entries_after_exit += other.entries_after_exit;
        self.counters = self.counters.plus(&other.counters);
        // One thread's timeline cannot hold another's episodes: theirs count as dropped.
        self.timeline.recorded += other.timeline.recorded;
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
            n.open_ns = scale.ns(n.open_ns);
            n.open_split_ns = scale.ns(n.open_split_ns);
            n.suspended_ns = scale.ns(n.suspended_ns);
            n.profiler_ns = scale.ns(n.profiler_ns);
            n.gap_ns = scale.ns(n.gap_ns);
            n.gap_switched_ns = scale.ns(n.gap_switched_ns);
            n.durations.scale_to_ns(scale);
            n.counts.scale_to_ns(scale);
            for s in &mut n.slots {
                s.ns = scale.ns(s.ns);
            }
        }
        for (_, h) in &mut self.site_durations {
            h.scale_to_ns(scale);
        }
        self.counters.scale_to_ns(scale);
        self.timeline.scale_to_ns(scale);
        // The profiler's time goes to the frame current when it ran: for pending frames
        // opened together, an outer one that started with them. A frame's share of it
        // is never more than its own time.
        let child_wall = self.child_wall();
        for (n, c) in self.nodes.iter_mut().zip(child_wall) {
            let own = n.wall_ns.saturating_sub(c).saturating_sub(n.timed_ns());
            n.profiler_ns = n.profiler_ns.min(own);
        }
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
    /// them: the thread's time that is not `[work]`. A business frame opened inside a
    /// wait (a job a pool worker runs while it waits for a latch) is work, not waiting,
    /// down to the waits nested in it in turn, except its own time off the CPU
    /// ([`ThreadProfile::jobs_off`]); so is the `[unmarked work]` of its wait frames
    /// (`unmarked_work`, [`ThreadProfile::unmarked_work`]).
    pub(crate) fn wait_ns(&self, frames: &[FrameInfo], unmarked_work: u64) -> u64 {
        // Whether each node is waiting: the innermost wait or business frame around it
        // (itself included) decides.
        let mut waiting = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            waiting[i] = match frames[n.frame as usize].kind {
                FrameKind::Wait => true,
                FrameKind::Work | FrameKind::Thread => false,
                FrameKind::Overflow => waiting[n.parent as usize],
            };
        }
        let (mut starts, mut ends, mut in_calls) = (0u64, 0u64, 0u64);
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            let parent = waiting[n.parent as usize];
            match (parent, waiting[i]) {
                (false, true) => starts += n.wall_ns,
                (true, false) => ends += n.wall_ns,
                _ => {}
            }
            if !waiting[i] {
                in_calls += n.timed_ns();
            }
        }
        // A wait's wall holds the business frames in it, and theirs the waits in them;
        // a job's time off the CPU is the pool's scheduling, not business.
        let jobs_off: u64 = self.jobs_off(frames).iter().sum();
        (starts.saturating_sub(ends) + in_calls + jobs_off + self.nodes[0].timed_ns())
            .saturating_sub(unmarked_work)
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
                    off_ns: s.off_ns.saturating_sub(e.off_ns),
                },
                None => s.clone(),
            })
            .collect();
        // Still open now: counted up to this copy, whatever the earlier one had.
        let open_ns = self
            .open_ns
            .min(self.wall_ns.saturating_sub(earlier.wall_ns));
        NodeStats {
            frame: self.frame,
            parent: self.parent,
            episodes: self.episodes.saturating_sub(earlier.episodes),
            wall_ns: self.wall_ns.saturating_sub(earlier.wall_ns),
            open_ns,
            open_split_ns: self.open_split_ns.min(open_ns),
            suspended_ns: self.suspended_ns.saturating_sub(earlier.suspended_ns),
            profiler_ns: self.profiler_ns.saturating_sub(earlier.profiler_ns),
            gap_ns: self.gap_ns.saturating_sub(earlier.gap_ns),
            gap_switched_ns: self.gap_switched_ns.saturating_sub(earlier.gap_switched_ns),
            durations: self.durations.minus(&earlier.durations),
            counts: self.counts.minus(&earlier.counts),
            slots,
        }
    }
}

impl ThreadProfile {
    /// This copy with its switch totals zeroed: the base a forked child subtracts, whose
    /// kernel counts the child's switches from the fork.
    pub(crate) fn without_switches(mut self) -> ThreadProfile {
        self.nodes[0].counts.forget_switches();
        self
    }

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
            site_durations: self
                .site_durations
                .iter()
                .map(|(key, h)| {
                    let old = earlier.site_durations.iter().find(|(k, _)| k == key);
                    (*key, old.map_or_else(|| h.clone(), |(_, o)| h.minus(o)))
                })
                .collect(),
            unwaited: self
                .unwaited
                .iter()
                .map(|&(frame, n)| {
                    let old = earlier.unwaited.iter().find(|(f, _)| *f == frame);
                    (frame, n.saturating_sub(old.map_or(0, |(_, o)| *o)))
                })
                .collect(),
            overflowed: self.overflowed.saturating_sub(earlier.overflowed),
            reentries_skipped: self
                .reentries_skipped
                .saturating_sub(earlier.reentries_skipped),
            entries_after_exit: self
                .entries_after_exit
                .saturating_sub(earlier.entries_after_exit),
            counters: self.counters.minus(&earlier.counters),
            timeline: self.timeline.since(&earlier.timeline),
            // A merged profile of exited threads grows: the window holds those since.
            threads: match self.threads > earlier.threads {
                true => self.threads - earlier.threads,
                false => self.threads,
            },
            ..self.clone()
        }
    }
}
