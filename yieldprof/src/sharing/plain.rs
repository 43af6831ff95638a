//! [`watch_plain`]: false sharing on plain data (a `Vec<u64>` updated through
//! `chunks_mut`, per-thread structs in a `Vec`), seen by sampled hardware watchpoints
//! instead of `Watched` atomics.

use super::rotation::{self, plain};
use crate::counters::Reason;
use std::fmt;
use std::time::Duration;

/// Watches the plain data of `value` under `name`: its lines get the same per-line,
/// per-thread history as [`Watched`](crate::Watched) atomics and the same verdicts in
/// [`Profile::sharing`](crate::Profile::sharing), from hardware watchpoints
/// (`perf_event_open` breakpoints: no PMU needed, so VMs have them) instead of
/// instrumented accesses. Watching ends when the returned guard drops; drop it before
/// the value (the breakpoints watch addresses, not the value).
///
/// How: each thread of the process (the first 32) gets up to 4 write breakpoints of
/// 8 B, all watching the same words; a background thread moves them over the region's
/// lines every 50 ms or more, alternating a survey of the lines with a focus on lines
/// two threads were seen writing, and caps each thread's hits at the rate of
/// `YIELDPROF_WATCHPOINTS` (400 per second by default, ~8 µs each on a VM). So the
/// cost is bounded (a few % of each thread), and a verdict on a region of 100 lines
/// takes a run of a few seconds (a region of a few lines, well under one).
///
/// Not seen: reads (x86 has no read-only breakpoint; a reader spinning on a line the
/// others write is not a victim here), writes inside the kernel (`read()` into the
/// buffer), threads that live shorter than a rescan (~50 ms) or past the 32nd, and
/// bytes within one 8-B word (the word is the unit). Where breakpoints cannot be opened
/// (containers, seccomp, `perf_event_paranoid`, a debugger holding the registers),
/// [`watchpoints`] and the report's sharing section say why, and nothing else changes.
/// Use [`watch`](crate::watch) for `Watched` atomics: there every access is seen.
///
/// ```
/// let mut counts = vec![0u64; 64];
/// let watch = yieldprof::sharing::watch_plain(&counts[..], "counts");
/// std::thread::scope(|s| {
///     for chunk in counts.chunks_mut(32) {
///         s.spawn(move || chunk.iter_mut().for_each(|c| *c += 1));
///     }
/// });
/// // Its lines are in the report while watched (and after, once a write was seen).
/// let lines = yieldprof::snapshot().sharing();
/// assert!(lines.iter().any(|l| l.words.iter().any(|w| w.name.starts_with("counts"))));
/// drop(watch);
/// ```
pub fn watch_plain<T: ?Sized>(value: &T, name: &str) -> PlainWatch {
    let addr = value as *const T as *const u8 as usize;
    let size = std::mem::size_of_val(value).max(1);
    super::register(addr, size, name, std::any::type_name::<T>());
    let on = crate::config::settings().watchpoint_rate.is_some();
    let id = if on { plain().add(addr, size) } else { 0 };
    PlainWatch { id, addr, size }
}

/// The watch of a plain-data region ([`watch_plain`]); dropping it ends the watch (the
/// counts stay in the report).
#[must_use = "the region is watched only while this lives"]
#[derive(Debug)]
pub struct PlainWatch {
    /// 0 when no breakpoints were asked for (turned off).
    id: u64,
    addr: usize,
    size: usize,
}

impl Drop for PlainWatch {
    fn drop(&mut self) {
        if self.id != 0 {
            let last = plain().remove(self.id);
            if let Some(r) = last {
                rotation::stop(r);
            }
        }
        super::forget(self.addr, self.size);
    }
}

/// Whether plain data is being watched, and why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchpointState {
    /// No [`watch_plain`] so far.
    Unused,
    /// `YIELDPROF_WATCHPOINTS=off`.
    Off,
    /// Some threads have breakpoints.
    Armed,
    /// No thread could get one: why (the first refusal).
    Unavailable(Reason),
}

/// What the hardware watchpoints of [`watch_plain`] did in the latest session (from a
/// `watch_plain` while none was live to the drop of the last guard, or now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchpointStatus {
    /// Whether they work here.
    pub state: WatchpointState,
    /// Threads with breakpoints now.
    pub threads: usize,
    /// Threads given breakpoints in the session.
    pub watched: usize,
    /// Threads left without at the last listing: past the first 32.
    pub over_cap: usize,
    /// Threads whose breakpoints could not be opened, and why (the first).
    pub refused: usize,
    /// Why the first refused thread was refused.
    pub refusal: Option<Reason>,
    /// Writes seen, all threads.
    pub hits: u64,
    /// Hits the kernel dropped (a full ring).
    pub lost: u64,
    /// Times the breakpoints moved.
    pub windows: u64,
    /// How long they stay on one target now.
    pub window: Duration,
    /// Most hits per thread and second (`YIELDPROF_WATCHPOINTS`); 0 when off.
    pub rate: u32,
}

/// What the hardware watchpoints of [`watch_plain`] did in the latest session.
///
/// ```
/// use yieldprof::sharing::{watchpoints, WatchpointState};
/// let s = watchpoints();
/// assert!(s.hits >= s.lost);
/// if let WatchpointState::Unavailable(reason) = s.state {
///     println!("plain data is not watched here: {reason}");
/// }
/// ```
pub fn watchpoints() -> WatchpointStatus {
    let rate = crate::config::settings().watchpoint_rate;
    let p = plain();
    let c = p.counts;
    let state = match (rate, p.reason) {
        (None, _) => WatchpointState::Off,
        _ if !p.watching() => WatchpointState::Unused,
        (_, Some(r)) if c.threads == 0 => WatchpointState::Unavailable(r),
        _ => WatchpointState::Armed,
    };
    WatchpointStatus {
        state,
        threads: c.threads,
        watched: c.watched,
        over_cap: c.over_cap,
        refused: c.refused,
        refusal: p.reason,
        hits: c.hits,
        lost: c.lost,
        windows: c.windows,
        window: c.window,
        rate: rate.unwrap_or(0),
    }
}

impl fmt::Display for WatchpointStatus {
    /// One line for the report's sharing section.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state {
            WatchpointState::Unused => write!(f, "plain data: not watched"),
            WatchpointState::Off => write!(
                f,
                "plain data not tracked: hardware watchpoints off (YIELDPROF_WATCHPOINTS=off)"
            ),
            WatchpointState::Unavailable(r) => write!(
                f,
                "plain data not tracked: hardware watchpoints unavailable: {r}"
            ),
            WatchpointState::Armed => {
                write!(
                    f,
                    "plain data: hardware watchpoints on {} threads, {} writes seen \
                     (≤ {}/s per thread, moved every {:.0} ms)",
                    self.watched,
                    self.hits,
                    self.rate,
                    self.window.as_secs_f64() * 1e3
                )?;
                if self.over_cap > 0 {
                    write!(
                        f,
                        "; {} threads past the first 32 not watched",
                        self.over_cap
                    )?;
                }
                match self.refusal {
                    Some(r) if self.refused > 0 => {
                        write!(f, "; {} threads refused: {r}", self.refused)
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The name of a thread a watchpoint saw: its kernel name and thread id.
pub(super) fn thread_name(serial: u64) -> Option<String> {
    if serial < rotation::TID_SERIAL {
        return None;
    }
    plain().names.get(&serial).cloned()
}
