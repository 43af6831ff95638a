//! The evidence of the oversubscribed finding: threads that waited runnable for a
//! CPU, told apart from the switches and run-queue time their own yields took.

use crate::base::text::duration;
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

/// Why a thread looks oversubscribed, if it does: its evidence, and the share of its
/// waits' time measured blocked off the CPU.
pub(super) fn oversubscribed(t: &ThreadStats) -> Option<(String, Option<f64>)> {
    let invol = t.counters.involuntary_switches.value()?;
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
    Some((
        format!(
            "thread {}: {waited}{preempted} involuntary switches{yielded} ({per_s:.0}/s): \
             runnable but preempted",
            t.name
        ),
        blocked,
    ))
}
