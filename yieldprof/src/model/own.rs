//! What a wait frame's own time was, where no recognised call explains it: its time
//! outside nested frames and timed calls, named by what was measured.
//!
//! - `[spin]`: on the CPU (or not measured) in a frame that counted `spin_loop()`
//!   calls: the spin loop is the recognised call that explains it;
//! - `[on-cpu]`: measured on the CPU, with no spin call counted (a busy loop without
//!   `spin_loop()`, the checks between waits, work done while waiting);
//! - `[off-cpu]`: measured off the CPU outside any recognised call (a blocking call
//!   the macro cannot see: mark it with `yieldprof::wait!`);
//! - `[unexplained]`: not measured (counters off, or switches seen only on sampled
//!   episodes) and no spin call counted;
//! - `[unmarked work]`: stretches of 10 µs or more between its waits, on the CPU, in
//!   a frame that counted no spin: jobs a pool worker runs inside its wait loop, where
//!   no `frame!` names them (`record::gaps`). Work, not waiting: the thread's wait %
//!   leaves it out.
//!
//! The split comes from the off-CPU time of the frame's episodes less that of its
//! nested wait frames and of its timed calls, each measured on every episode and
//! call through the perf user page (see `counters`). Where the calls' own off-CPU time
//! is unknown (switches seen only on sampled episodes, or on getrusage while a thread's
//! counters are deferred), the frame's off-CPU time that its calls (their wall) and
//! nested frames (their wall, less their time on the CPU where every episode of theirs
//! was read) cannot hold is `[off-cpu]`, the rest `[spin]` or `[unexplained]`, so that
//! no part exceeds the site's own on- or off-CPU figure.

use crate::base::site::{CallInfo, FrameInfo, FrameKind, Kind};
use crate::model::tree::ThreadProfile;

/// The leaf of a wait site's work done while waiting, with no frame of its own.
pub(crate) const UNMARKED_WORK: &str = "[unmarked work]";

/// A wait frame's own time outside nested frames and timed calls, ns, by what was
/// measured (see [`Profile::folded`](crate::Profile::folded)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct OwnTime {
    /// `[spin]`: on the CPU in a frame that counted spin calls.
    pub spin_ns: u64,
    /// `[on-cpu]`: on the CPU, no spin call counted.
    pub on_cpu_ns: u64,
    /// `[off-cpu]`: off the CPU outside any recognised call.
    pub off_cpu_ns: u64,
    /// `[unexplained]`: not measured, no spin call counted.
    pub unexplained_ns: u64,
    /// `[unmarked work]`: on the CPU in stretches of 10 µs or more between its waits:
    /// work done while waiting that no business frame names. Not waiting.
    pub unmarked_work_ns: u64,
}

impl OwnTime {
    /// The leaf frames and their times, in a fixed order.
    pub(crate) fn leaves(&self) -> [(&'static str, u64); 5] {
        [
            (Kind::Spin.frame(), self.spin_ns),
            ("[on-cpu]", self.on_cpu_ns),
            ("[off-cpu]", self.off_cpu_ns),
            ("[unexplained]", self.unexplained_ns),
            (UNMARKED_WORK, self.unmarked_work_ns),
        ]
    }

    pub(crate) fn add(&mut self, o: &OwnTime) {
        self.spin_ns += o.spin_ns;
        self.on_cpu_ns += o.on_cpu_ns;
        self.off_cpu_ns += o.off_cpu_ns;
        self.unexplained_ns += o.unexplained_ns;
        self.unmarked_work_ns += o.unmarked_work_ns;
    }

    /// All of it.
    pub fn total_ns(&self) -> u64 {
        self.spin_ns
            + self.on_cpu_ns
            + self.off_cpu_ns
            + self.unexplained_ns
            + self.unmarked_work_ns
    }

    /// The long stretches between waits become `[unmarked work]`: all of those the
    /// thread was not switched in (`gap_ns`: on the CPU throughout; taken from
    /// `[on-cpu]`, then `[unexplained]`, then `[off-cpu]`, which such a stretch proves
    /// too large where it was apportioned), and of the others (`switched_ns`:
    /// preempted) all but the time queued (`queued_ns`, the frame's or else its
    /// thread's, at most the frame's own off-CPU time: a job preempted waits in the run
    /// queue, the pool's scheduling, as in a framed job), at most what is left of
    /// `[on-cpu]` and `[unexplained]`.
    fn take_unmarked_work(&mut self, gap_ns: u64, switched_ns: u64, queued_ns: Option<u64>) {
        let queued = queued_ns.map_or(self.off_cpu_ns, |q| q.min(self.off_cpu_ns));
        let sure = gap_ns.min(self.total_ns());
        let from_on = sure.min(self.on_cpu_ns);
        let from_unexplained = (sure - from_on).min(self.unexplained_ns);
        self.on_cpu_ns -= from_on;
        self.unexplained_ns -= from_unexplained;
        self.off_cpu_ns -= sure - from_on - from_unexplained;
        let preempted = switched_ns
            .saturating_sub(queued)
            .min(self.on_cpu_ns + self.unexplained_ns);
        let from_on = preempted.min(self.on_cpu_ns);
        self.on_cpu_ns -= from_on;
        self.unexplained_ns -= preempted - from_on;
        self.unmarked_work_ns = sure + preempted;
    }
}

impl ThreadProfile {
    /// Each node's own time split as above; `None` for frames that are not wait frames
    /// (their own time is `[work]`, or `[overflow]`'s).
    pub(crate) fn own_times(
        &self,
        frames: &[FrameInfo],
        calls: &[CallInfo],
    ) -> Vec<Option<OwnTime>> {
        let child_wall = self.child_wall();
        let child_off = self.child_off();
        let child_on = self.child_on();
        // The part of each node's children still open at the copy, unmeasured.
        let mut child_open = vec![0u64; self.nodes.len()];
        for n in self.nodes.iter().skip(1) {
            child_open[n.parent as usize] += n.open_unsplit_ns();
        }
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if i == 0 || frames[n.frame as usize].kind != FrameKind::Wait {
                    return None;
                }
                // An episode still open at the copy whose off-CPU time was not read
                // there has no switch figures yet: its own part is `[unexplained]` (or
                // `[spin]`), the rest split as measured.
                let all = n.rest_ns(child_wall[i]);
                let open = n.open_unsplit_ns().saturating_sub(child_open[i]).min(all);
                let rest = all - open;
                let spins = n
                    .slots
                    .iter()
                    .any(|s| s.calls > 0 && calls[s.call as usize].kind == Kind::Spin);
                let off = n.counts.off_cpu_ns(n.split_ns()).map(|off| {
                    let outside = if n.counts.calls_split {
                        let in_calls: u64 = n.slots.iter().map(|s| s.off_ns).sum();
                        off.saturating_sub(child_off[i] + in_calls)
                    } else {
                        // The calls' own off-CPU time was not measured: at least the
                        // part of the frame's that the calls (their wall), the
                        // profiler and the nested frames (their wall less their time
                        // measured on the CPU) could not hold was its own. So the
                        // rest, named on the CPU, never exceeds the frame's on-CPU
                        // time.
                        let others = n.split_ns().saturating_sub(rest);
                        off.saturating_sub(others.saturating_sub(child_on[i]))
                    };
                    outside.min(rest)
                });
                let calls_split = n.counts.calls_split;
                let mut own = match (off, spins) {
                    (Some(off), false) if !calls_split => OwnTime {
                        unexplained_ns: rest - off,
                        off_cpu_ns: off,
                        ..OwnTime::default()
                    },
                    (Some(off), true) => OwnTime {
                        spin_ns: rest - off,
                        off_cpu_ns: off,
                        ..OwnTime::default()
                    },
                    (Some(off), false) => OwnTime {
                        on_cpu_ns: rest - off,
                        off_cpu_ns: off,
                        ..OwnTime::default()
                    },
                    (None, true) => OwnTime {
                        spin_ns: rest,
                        ..OwnTime::default()
                    },
                    (None, false) => OwnTime {
                        unexplained_ns: rest,
                        ..OwnTime::default()
                    },
                };
                if spins {
                    own.spin_ns += open;
                } else {
                    own.unexplained_ns += open;
                    own.take_unmarked_work(
                        n.gap_ns,
                        n.gap_switched_ns,
                        n.counts
                            .queued_ns(n.split_ns())
                            .or(self.counters.run_queue_ns),
                    );
                }
                Some(own)
            })
            .collect()
    }

    /// The `[unmarked work]` of all its wait frames: time each counts as waiting
    /// (`ThreadProfile::wait_ns`), all of it work.
    pub(crate) fn unmarked_work(&self, frames: &[FrameInfo], calls: &[CallInfo]) -> u64 {
        self.unmarked_works(frames, calls).iter().sum()
    }

    /// Each node's `[unmarked work]` (0 for frames that are not wait frames).
    pub(crate) fn unmarked_works(&self, frames: &[FrameInfo], calls: &[CallInfo]) -> Vec<u64> {
        self.own_times(frames, calls)
            .iter()
            .map(|o| o.map_or(0, |o| o.unmarked_work_ns))
            .collect()
    }

    /// Its stretches replaced by the `[unmarked work]` they make: the same figure
    /// again from here, and one that adds up when threads merge.
    pub(crate) fn settle_unmarked_work(&mut self, frames: &[FrameInfo], calls: &[CallInfo]) {
        let works = self.unmarked_works(frames, calls);
        for (n, w) in self.nodes.iter_mut().zip(works) {
            n.gap_ns = w;
            n.gap_switched_ns = 0;
        }
    }

    /// Off-CPU time of each node's nested frames, where measured: wait frames, and
    /// jobs (business frames opened inside a wait, which take switch marks).
    fn child_off(&self) -> Vec<u64> {
        let mut child_off = vec![0u64; self.nodes.len()];
        for n in self.nodes.iter().skip(1) {
            child_off[n.parent as usize] += n.counts.off_cpu_ns(n.split_ns()).unwrap_or(0);
        }
        child_off
    }

    /// Per node: its children's time measured on the CPU (the wall their figures
    /// cover less their off-CPU time), where every episode of theirs was read; a child
    /// read only on some of them counts none (its estimate can fall short, and then
    /// all its wall may have been off the CPU).
    fn child_on(&self) -> Vec<u64> {
        let mut on = vec![0u64; self.nodes.len()];
        let read = self.nodes.iter().skip(1);
        for n in read.filter(|n| n.counts.every_read(n.episodes)) {
            if let Some(off) = n.counts.off_cpu_ns(n.split_ns()) {
                on[n.parent as usize] += n.split_ns().saturating_sub(off);
            }
        }
        on
    }

    /// Each job's own off-CPU time, ns (a business frame opened inside a wait: a pool
    /// worker's job; see `record::frame`): off the CPU inside it, outside its nested
    /// frames and timed calls, at most its own time. Preempted or queued inside a job
    /// is the pool's scheduling, not business: its `[off-cpu]`, and wait time
    /// ([`ThreadProfile::wait_ns`]). 0 for every other node.
    pub(crate) fn jobs_off(&self, frames: &[FrameInfo]) -> Vec<u64> {
        let child_wall = self.child_wall();
        let child_off = self.child_off();
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if i == 0 || frames[n.frame as usize].kind != FrameKind::Work {
                    return 0;
                }
                let Some(off) = n.counts.off_cpu_ns(n.split_ns()) else {
                    return 0;
                };
                let in_calls: u64 = n.slots.iter().map(|s| s.off_ns).sum();
                off.saturating_sub(child_off[i] + in_calls)
                    .min(n.rest_ns(child_wall[i]))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "own_tests.rs"]
mod tests;
