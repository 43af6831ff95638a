//! CPU a pool worker burns in its idle rounds: on the CPU inside its wait frames but
//! outside any job (a business frame opened inside the wait), in spins, in yields that
//! found nothing else to run, and in the loop's own checks between them.

use crate::base::site::{FrameKind, Kind};
use crate::model::profile::Profile;
use crate::model::tree::ThreadProfile;

/// One thread's CPU time in idle rounds, ns, by what it went to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct IdleCpu {
    /// `[spin]` own time of its wait frames.
    pub(super) spin_ns: u64,
    /// The on-CPU part of its yield and backoff calls (where measured per call), at
    /// most one yield's and one switch's cost per call.
    pub(super) yield_ns: u64,
    /// Those calls.
    pub(super) yields: u64,
    /// `[on-cpu]` own time of its wait frames: the loop's checks between waits.
    pub(super) loop_ns: u64,
    /// `[off-cpu]` own time of its wait frames that ran jobs: jobs carry no switch
    /// figures of their own, so a preempted job's time off the CPU lands here, and the
    /// loop's CPU time may be up to this much more than the figures above.
    pub(super) unsplit_ns: u64,
    /// The thread's life.
    pub(super) life_ns: u64,
}

impl IdleCpu {
    pub(super) fn total_ns(&self) -> u64 {
        self.spin_ns + self.yield_ns + self.loop_ns
    }

    pub(super) fn add(&mut self, o: &IdleCpu) {
        self.spin_ns += o.spin_ns;
        self.yield_ns += o.yield_ns;
        self.yields += o.yields;
        self.loop_ns += o.loop_ns;
        self.unsplit_ns += o.unsplit_ns;
        self.life_ns += o.life_ns;
    }
}

/// The idle-round CPU of thread `t` of `p`. A wait nested in a job (a work-stealing
/// join waiting for its stolen half) is idle too: the job's own time is not.
/// `yield_cap_ns`: the most a yield call can hold on the CPU, its syscall and a switch.
pub(super) fn idle_cpu(p: &Profile, t: &ThreadProfile, yield_cap_ns: f64) -> IdleCpu {
    let own = t.own_times(&p.frames, &p.calls);
    let mut jobs = vec![false; t.nodes.len()];
    for n in t.nodes.iter().skip(1) {
        if p.frames[n.frame as usize].kind == FrameKind::Work {
            jobs[n.parent as usize] = true;
        }
    }
    let mut idle = IdleCpu {
        life_ns: t.nodes[0].wall_ns,
        ..IdleCpu::default()
    };
    for (i, n) in t.nodes.iter().enumerate().skip(1) {
        if p.frames[n.frame as usize].kind != FrameKind::Wait {
            continue;
        }
        if let Some(o) = own[i] {
            idle.spin_ns += o.spin_ns;
            idle.loop_ns += o.on_cpu_ns;
            if jobs[i] {
                idle.unsplit_ns += o.off_cpu_ns;
            }
        }
        // A yield's off-CPU time is known per call only where every episode's
        // switches are seen; elsewhere its on-CPU part is not counted.
        if !n.counts.calls_split {
            continue;
        }
        for s in &n.slots {
            if matches!(p.calls[s.call as usize].kind, Kind::Yield | Kind::Backoff) {
                // Inside a yield the thread runs the syscall, then is switched out or
                // not: a longer stay is off the CPU, also where a call's off-CPU time
                // was apportioned, not read (switched again before its read), and came
                // out short (seen: "2.22 ms each" on the CPU, on a machine at load 17).
                let cap = (yield_cap_ns * s.calls as f64) as u64;
                idle.yield_ns += s.ns.saturating_sub(s.off_ns).min(cap);
                idle.yields += s.calls;
            }
        }
    }
    idle
}
