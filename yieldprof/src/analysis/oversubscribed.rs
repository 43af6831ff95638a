//! The evidence of the oversubscribed finding: threads that waited runnable for a
//! CPU, told apart from the switches and run-queue time their own yields took.

use crate::base::host::process_age;
use crate::base::text::duration;
use crate::counters::try_clock_ns;
use crate::model::profile::ThreadStats;

/// Share of a thread's time spent runnable but waiting for a CPU that means
/// oversubscription: ~0 for two busy threads on the build VM's two cores, ~2/3 for
/// three busy threads sharing one.
const OVERSUBSCRIBED_QUEUE_SHARE: f64 = 0.10;
/// Without the kernel's run-queue figure: involuntary switches per second of thread
/// time that mean oversubscription: a
/// thread alone on its core sees ~0; three busy threads sharing one core see ~70
/// each on the build machine (the scheduler's slices are ~13 ms there).
const OVERSUBSCRIBED_PER_S: f64 = 20.0;

/// A thread that looks oversubscribed: why, and how much.
pub(super) struct Preempted {
    /// The thread's evidence, one clause.
    pub(super) evidence: String,
    /// The share of its waits' time measured blocked off the CPU.
    pub(super) blocked: Option<f64>,
    /// Time runnable for a CPU outside its yields, where the kernel says.
    pub(super) queued_ns: Option<u64>,
    /// Involuntary switches less at most one per yield.
    pub(super) preempted: u64,
}

/// Why a thread looks oversubscribed, if it does.
pub(super) fn oversubscribed(t: &ThreadStats) -> Option<Preempted> {
    // Over the thread's recorded life, as its wall time and run-queue wait are.
    let before = t.counters_before_recording.involuntary_switches.value();
    let invol = t.counters.involuntary_switches.value()? - before.unwrap_or(0);
    // A yield that hands the core over is counted as involuntary, and the thread waits
    // runnable inside it: those are the yield's, not preemption. Each yield switches at
    // most once and queues at most for the call's length, so what is left is at least
    // the preemption.
    let preempted = invol.saturating_sub(t.yields);
    let wall_s = t.wall_ns.max(1) as f64 / 1e9;
    let per_s = preempted as f64 / wall_s;
    // Where the kernel says how long the thread waited for a CPU, that decides: a
    // preemption now and then (a kernel thread, a timer) costs nothing, a run queue
    // longer than the cores does.
    let queued = t.run_queue_ns.map(|q| q.saturating_sub(t.yield_ns));
    let share = queued.map(|q| q as f64 / t.wall_ns.max(1) as f64);
    let fires = match share {
        Some(share) => preempted >= 10 && share >= OVERSUBSCRIBED_QUEUE_SHARE,
        None => preempted >= 10 && per_s >= OVERSUBSCRIBED_PER_S,
    };
    if !fires {
        return None;
    }
    let waited = match (queued, share) {
        (Some(q), Some(share)) => format!(
            "waited {} ({:.0}% of its time) runnable for a CPU outside yields, ",
            duration(q),
            100.0 * share
        ),
        _ => String::new(),
    };
    let yielded = if t.yields > 0 {
        format!(
            " ({invol} in all, less at most one for each of its {} yields)",
            t.yields
        )
    } else {
        String::new()
    };
    // Advice to block only where the waits were not measured blocked already.
    let w = &t.time_in_wait;
    let blocked = match (
        w.blocked_ns.value(),
        w.on_cpu_ns.value(),
        w.off_cpu_ns.value(),
    ) {
        (Some(b), Some(on), Some(off)) => Some(b as f64 / (on + off).max(1) as f64),
        _ => None,
    };
    Some(Preempted {
        evidence: format!(
            "thread {}: {waited}{preempted} involuntary switches{yielded} ({per_s:.0}/s): \
             runnable but preempted",
            t.name
        ),
        blocked,
        queued_ns: queued,
        preempted,
    })
}

/// The machine's run queue beside the process's: the load average over the last
/// minute (runnable and running tasks, every process's), the tasks runnable right now,
/// and how many of those are this process's threads.
pub(super) struct MachineLoad {
    pub(super) load_1min: f64,
    pub(super) runnable_now: u64,
    pub(super) ours_now: u64,
    /// This process's CPU time (every thread, exited ones too) and age, ns.
    pub(super) cpu_ns: u64,
    pub(super) age_ns: u64,
}

impl MachineLoad {
    /// Read from `/proc/loadavg`, `/proc/self/task/*/stat`, the process's age
    /// (`/proc/self/stat`) and CPU clock; `None` where any cannot be read.
    pub(super) fn current() -> Option<MachineLoad> {
        let text = std::fs::read_to_string("/proc/loadavg").ok()?;
        let (load_1min, runnable_now) = parse_loadavg(&text)?;
        let ours_now = std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
            .filter(|stat| task_state(stat) == Some('R'))
            .count() as u64;
        Some(MachineLoad {
            load_1min,
            runnable_now,
            ours_now,
            cpu_ns: try_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)?,
            age_ns: process_age()?.as_nanos() as u64,
        })
    }

    /// Whether other processes alone keep the cores busy: the minute's load less this
    /// process's part is at least the cores. Its part: the threads it kept runnable on
    /// average over its life (its CPU time and its threads' time queued, `queued_ns`,
    /// over its age), and at least the `busy` threads seen preempted. Judged on the
    /// minute's average, not one instant, so one busy moment does not flip it. Counting
    /// only the threads seen preempted, flume's test of 100 yielding senders, gone by
    /// the report, read load 10.5 as other processes' (2026-12-06).
    pub(super) fn others_fill(&self, busy: u64, queued_ns: u64, cores: u64) -> bool {
        let ours = self.cpu_ns.saturating_add(queued_ns) as f64 / self.age_ns.max(1) as f64;
        self.load_1min - ours.max(busy as f64) >= cores as f64
    }

    /// `machine load 5.12 (1-min average) on 2 cores; 6 tasks runnable at the report,
    /// 1 of them this process's`.
    pub(super) fn describe(&self, cores: u64) -> String {
        format!(
            "machine load {:.2} (1-min average, every process) on {cores} cores; {} tasks \
             runnable at the report, {} of them this process's",
            self.load_1min, self.runnable_now, self.ours_now
        )
    }
}

/// `0.52 0.58 0.59 2/345 12345` → (0.52, 2).
fn parse_loadavg(text: &str) -> Option<(f64, u64)> {
    let mut fields = text.split_whitespace();
    let load = fields.next()?.parse().ok()?;
    let runnable = fields.nth(2)?.split('/').next()?.parse().ok()?;
    Some((load, runnable))
}

/// The state letter of a `/proc/.../stat` line: the field after the `)` closing the
/// command name (which may itself hold spaces and parentheses).
fn task_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_and_stat_lines_parse() {
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 2/345 12345\n"),
            Some((0.52, 2))
        );
        assert_eq!(parse_loadavg("junk"), None);
        assert_eq!(task_state("123 (a) b) (c) R 1 2 3"), Some('R'));
        assert_eq!(task_state("7 (sleepy) S 1"), Some('S'));
        let here = MachineLoad::current().expect("Linux has /proc/loadavg");
        // This thread is running while it reads.
        assert!(here.ours_now >= 1 && here.runnable_now >= 1);
    }

    #[test]
    fn the_queue_is_others_only_when_their_load_alone_fills_the_cores() {
        // A process 10 s old that used 10 s of CPU: one busy thread on average.
        let load = |load_1min| MachineLoad {
            load_1min,
            runnable_now: 0,
            ours_now: 0,
            cpu_ns: 10_000_000_000,
            age_ns: 10_000_000_000,
        };
        // 3 busy threads of ours on 2 cores, idle otherwise: ours.
        assert!(!load(3.1).others_fill(3, 0, 2));
        // The same 3 threads beside 4 busy loops elsewhere: the others'.
        assert!(load(7.0).others_fill(3, 0, 2));
        // 1 thread of ours preempted on a machine at load 2.5: others hold 1.5 of 2.
        assert!(!load(2.5).others_fill(1, 0, 2));
        // 100 threads of ours that queued 80 s in those 10 s, gone by the report, and
        // one seen preempted: load 10.5 is theirs (flume's test, read as others').
        assert!(!load(10.5).others_fill(1, 80_000_000_000, 2));
        // The same load with nothing of ours queued: the others'.
        assert!(load(10.5).others_fill(1, 0, 2));
    }
}
