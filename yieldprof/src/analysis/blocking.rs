//! The blocking-call-in-async finding: a call that blocks its thread (a std sleep,
//! lock, channel `recv`, join), made from async code without `.await`, holds the
//! executor's worker thread; every other task woken on that worker waits for it to
//! return before it is polled. The runtime cannot hand the worker's tasks to another
//! thread while it does (the Go runtime does, for a syscall, within ~65 µs), so the
//! fix is to let the runtime see the wait.

use crate::base::blocked::HeldWorker;
use crate::base::site::Kind;
use crate::base::text::duration;
use crate::model::profile::{CallStats, SiteStats};

/// Blocking calls from async code that held their thread this long in all are worth
/// an async replacement: an uncontended `std::sync::Mutex` taken briefly in a task is
/// fine, and stays below it.
const BLOCKING_IN_ASYNC_NS: u64 = 1_000_000;

/// The async form of each blocking kind.
fn async_form(kind: Kind) -> &'static str {
    match kind {
        Kind::Sleep => "`tokio::time::sleep(d).await` (or your runtime's timer)",
        Kind::Yield | Kind::Backoff => "`tokio::task::yield_now().await`",
        Kind::Lock => {
            "an async lock (`tokio::sync::Mutex`/`RwLock`, `.lock().await`), or hold std's \
             lock only briefly and never across contention"
        }
        Kind::Condvar => "`tokio::sync::Notify` (`.notified().await`)",
        Kind::Channel => "an async channel (`tokio::sync::mpsc`, `.recv().await`)",
        Kind::Join => "`.await` the task's `JoinHandle`, or `spawn_blocking(..).await`",
        Kind::Barrier => "`tokio::sync::Barrier` (`.wait().await`)",
        _ => "an awaited future, or `tokio::task::spawn_blocking`",
    }
}

/// `(line, evidence, fix)` for each call line of `site` that blocked its thread from
/// async code long enough to matter.
pub(super) fn blocking_in_async(site: &SiteStats) -> Vec<(String, String, String)> {
    site.calls
        .iter()
        .filter(|c| c.site.in_async && c.site.kind.timed() && c.ns >= BLOCKING_IN_ASYNC_NS)
        .map(|c| {
            (
                format!("{}:{}", c.site.file, c.site.line),
                evidence(c),
                format!(
                    "use {} instead, or move the blocking work to \
                     `tokio::task::spawn_blocking` (`block_in_place` on a multi-threaded \
                     runtime): the runtime then runs the worker's other tasks meanwhile",
                    async_form(c.site.kind)
                ),
            )
        })
        .collect()
}

fn evidence(c: &CallStats) -> String {
    let calls = c.calls.max(1);
    let longest = c.held.map_or(String::new(), |h| {
        format!(", longest {}", duration(h.max_ns))
    });
    let held = format!(
        "{} {} call{} made from async code without .await held the executor's thread {} in \
         all ({} each{longest})",
        c.calls,
        c.site.kind.name(),
        if c.calls == 1 { "" } else { "s" },
        duration(c.ns),
        duration(c.ns / calls),
    );
    let waited = match c.held {
        Some(h) if h.delayed_polls > 0 => format!(
            "{} poll{} of other annotated async episodes woken on that thread waited {} in all \
             for it to return (longest {}): no other task ran on it meanwhile",
            h.delayed_polls,
            if h.delayed_polls == 1 { "" } else { "s" },
            duration(h.delayed_ns),
            duration(h.delayed_max_ns)
        ),
        _ => "no other task ran on it meanwhile (no annotated async episode was woken on \
              that thread while it blocked; unannotated tasks are not seen)"
            .into(),
    };
    format!("{held}: {waited}")
}

/// The summary's line under such a call: `held its thread up to 20.1 ms at once; 3
/// polls of other annotated async episodes waited 60.2 ms for it (longest 20.1 ms)`.
pub(crate) fn held_line(h: &HeldWorker) -> String {
    let waited = if h.delayed_polls == 0 {
        "no annotated async episode woken on its thread waited for it".to_string()
    } else {
        format!(
            "{} poll{} of other annotated async episodes on its thread waited {} for it \
             (longest {})",
            h.delayed_polls,
            if h.delayed_polls == 1 { "" } else { "s" },
            duration(h.delayed_ns),
            duration(h.delayed_max_ns)
        )
    };
    format!(
        "blocked in async code: held its thread up to {} at once; {waited} (whole run)",
        duration(h.max_ns)
    )
}
