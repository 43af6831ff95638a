//! The watchpoint rotator: a background thread that moves every watched thread's
//! hardware breakpoints over the lines of the plain-data regions, one window at a time,
//! and turns the hits into line histories.
//!
//! Each window, for every thread of the process (listed from `/proc/self/task`, the
//! first [`MAX_THREADS`]), it parks the thread's breakpoints, reads their hits, and arms
//! them on the next targets with a budget of hits each. All threads watch the same
//! targets, so two threads writing one line are seen together. Of four windows, three
//! focus when there is a line to focus on, and the fourth surveys:
//!
//! - **survey**: [`SLOTS`] lines, one word each, alternating between the halves of a
//!   line on its visits. Half of them are *boundary* lines when there are any: a line
//!   seen written by one thread next to a line seen written by another, where per-thread
//!   blocks meet (Phoenix's layouts), so the line two blocks straddle is found after one
//!   sweep instead of many; the rest go round robin over all lines;
//! - **focus**, when some line has been seen written by two threads: one such line,
//!   [`SLOTS`] of its words at random, so the writes of both land in one history. A
//!   thread spends its budget within ~100 µs of being armed, and arming the threads one
//!   after the other takes longer, so a focus window yields one or two invalidations:
//!   the 6 a verdict needs at least take well under a second of focus, a firm one more.
//!
//! Hits from all threads are merged by time and fed to the detector as writes of their
//! threads ([`feed`]). A window lasts 20 times the CPU time the rotation itself took
//! (so the rotator uses at most 5 % of one core), 50 to 400 ms; the budget caps the hits
//! of a thread at the configured rate.
//!
//! Costs, measured on the 2-core build VM (`benches/sharing.rs`): a hit ~8 µs of CPU; a
//! window ~400 µs with two running threads (moving a breakpoint of a running thread
//! interrupts it to rewrite its debug registers, which a VM makes slow). So windows are
//! long and budgets large: each window yields up to 20 hits per thread at the default
//! rate, enough for many invalidations on a line two threads write.

use super::*;
use crate::base::fork::{ForkMutex, Locked};
use crate::counters::{breakpoint_reason, Hit, Reason, Target, Watchpoints, SLOTS};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Threads given breakpoints at once: each holds 5 fds (4 breakpoints and the ring's).
pub(crate) const MAX_THREADS: usize = 32;
/// A watched thread's serial in line histories is this plus its kernel thread id:
/// apart from yieldprof's serials, which count from 1.
pub(super) const TID_SERIAL: u64 = 1 << 48;
/// Windows between two listings of the process's threads.
const RESCAN: u64 = 8;
/// What one watchpoint covers: an aligned 8-B word, the widest x86 debug registers
/// watch.
const WORD: usize = 8;
const WORDS: usize = LINE / WORD;
const MIN_WINDOW: Duration = Duration::from_millis(50);
const MAX_WINDOW: Duration = Duration::from_millis(400);
/// A window lasts this many times what its rotation took: the rotator's duty cycle.
const DUTY: u32 = 20;

struct Armed {
    tid: i32,
    serial: u64,
    /// Its id in line histories, lent while it is watched.
    hid: u16,
    wp: Watchpoints,
}

/// A plain-data region being watched, by the id its guard holds.
#[derive(Clone, Copy)]
struct Range {
    id: u64,
    addr: usize,
    size: usize,
}

/// What the rotator did in the latest session, for the report.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub(super) threads: usize,
    /// Threads given breakpoints in the session.
    pub(super) watched: usize,
    /// Threads left without, past [`MAX_THREADS`], at the last listing.
    pub(super) over_cap: usize,
    pub(super) refused: usize,
    pub(super) hits: u64,
    pub(super) lost: u64,
    pub(super) windows: u64,
    pub(super) window: Duration,
}

pub(super) struct Plain {
    ranges: Vec<Range>,
    next_id: u64,
    threads: Vec<Armed>,
    /// Threads whose breakpoints failed to open: not tried again.
    refused: Vec<i32>,
    /// Why the first refused thread was refused.
    pub(super) reason: Option<Reason>,
    /// Names of the watched threads, by their serial.
    pub(super) names: BTreeMap<u64, String>,
    /// Per line, the first two history ids seen writing it: two make it a focus line.
    writers: BTreeMap<usize, [u16; 2]>,
    /// Survey visits per line: odd ones watch its upper half.
    visits: BTreeMap<usize, u32>,
    survey: usize,
    boundary: usize,
    focus: usize,
    rng: u32,
    pub(super) counts: Counts,
    rotator: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

pub(super) fn plain() -> Locked<Plain> {
    static PLAIN: ForkMutex<Plain> = ForkMutex::new(
        Plain {
            ranges: Vec::new(),
            next_id: 0,
            threads: Vec::new(),
            refused: Vec::new(),
            reason: None,
            names: BTreeMap::new(),
            writers: BTreeMap::new(),
            visits: BTreeMap::new(),
            survey: 0,
            boundary: 0,
            focus: 0,
            rng: 0x9e37_79b9,
            counts: Counts {
                threads: 0,
                watched: 0,
                over_cap: 0,
                refused: 0,
                hits: 0,
                lost: 0,
                windows: 0,
                window: MIN_WINDOW,
            },
            rotator: None,
        },
        in_child,
    );
    PLAIN.lock()
}

/// A child made by `fork()` has none of the parent's threads or its rotator: it
/// watches nothing until its next `watch_plain`.
fn in_child(p: &mut Plain) {
    if let Some((_, handle)) = p.rotator.take() {
        // The thread does not exist here: nothing to join or detach.
        std::mem::forget(handle);
    }
    // The fds are the child's own copies; its rings were not copied (never unmapped).
    p.threads.clear();
    p.refused.clear();
    p.ranges.clear();
    p.counts.threads = 0;
}

fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

impl Plain {
    /// Adds a region; returns its id. Starts the rotator, after arming the threads
    /// alive now, so that a refusal is known when this returns.
    pub(super) fn add(&mut self, addr: usize, size: usize) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.ranges.push(Range { id, addr, size });
        if self.rotator.is_none() {
            // A new session: threads refused before are tried again, and the counts
            // start afresh.
            self.refused.clear();
            self.reason = None;
            self.counts = Counts {
                window: MIN_WINDOW,
                ..Counts::default()
            };
            self.scan(0);
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let spawned = std::thread::Builder::new()
                .name("yieldprof-watchpoints".into())
                .spawn(move || run(&flag));
            match spawned {
                Ok(handle) => self.rotator = Some((stop, handle)),
                Err(e) => eprintln!("yieldprof: watch_plain: no rotator thread ({e})"),
            }
        }
        id
    }

    /// Removes region `id`; when it was the last, returns the rotator to stop (outside
    /// the lock: it takes the lock to finish).
    pub(super) fn remove(&mut self, id: u64) -> Option<(Arc<AtomicBool>, JoinHandle<()>)> {
        self.ranges.retain(|r| r.id != id);
        if self.ranges.is_empty() {
            self.writers.clear();
            self.visits.clear();
            self.rotator.take()
        } else {
            None
        }
    }

    pub(super) fn watching(&self) -> bool {
        !self.ranges.is_empty() || self.counts.windows > 0 || self.reason.is_some()
    }

    /// The watched lines (those the detector's table holds) with the 8-B words of each
    /// that the regions cover, as a bit mask.
    fn lines(&self) -> Vec<(usize, u8)> {
        let mut out: BTreeMap<usize, u8> = BTreeMap::new();
        for r in &self.ranges {
            for line in lines_of(r.addr, r.size).filter(|&l| lookup(l).is_some()) {
                let words = (0..WORDS).filter(|w| {
                    let at = line + w * WORD;
                    at < r.addr + r.size && r.addr < at + WORD
                });
                *out.entry(line).or_default() |= words.fold(0, |m, w| m | 1 << w);
            }
        }
        out.into_iter().collect()
    }

    fn random(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }

    /// Up to `n` distinct words of `mask`, at random.
    fn pick(&mut self, line: usize, mask: u8, n: usize) -> Vec<Target> {
        let mut words: Vec<usize> = (0..WORDS).filter(|w| mask & 1 << w != 0).collect();
        let mut out = Vec::new();
        while !words.is_empty() && out.len() < n {
            let w = words.swap_remove(self.random() as usize % words.len());
            out.push(Target {
                addr: line + w * WORD,
                len: WORD,
            });
        }
        out
    }

    /// The targets of the next window.
    fn plan(&mut self) -> Vec<Target> {
        let lines = self.lines();
        if lines.is_empty() {
            return Vec::new();
        }
        let seen = |l: usize| self.writers.get(&l).copied().unwrap_or_default();
        let focus: Vec<usize> = lines
            .iter()
            .map(|&(l, _)| l)
            .filter(|&l| seen(l)[1] != 0)
            .collect();
        if self.counts.windows % 4 != 0 && !focus.is_empty() {
            self.focus = (self.focus + 1) % focus.len();
            let line = focus[self.focus];
            let mask = lines
                .iter()
                .find(|(l, _)| *l == line)
                .map_or(0, |&(_, m)| m);
            return self.pick(line, mask, SLOTS);
        }
        let addrs: Vec<usize> = lines.iter().map(|&(l, _)| l).collect();
        let boundary = boundary_lines(&addrs, seen);
        let mut chosen: Vec<usize> = Vec::new();
        for k in 0..SLOTS.min(lines.len()) {
            let line = if k % 2 == 0 && !boundary.is_empty() {
                self.boundary = (self.boundary + 1) % boundary.len();
                boundary[self.boundary]
            } else {
                self.survey = (self.survey + 1) % lines.len();
                lines[self.survey].0
            };
            if !chosen.contains(&line) {
                chosen.push(line);
            }
        }
        let mut out = Vec::new();
        for line in chosen {
            let mask = lines
                .iter()
                .find(|(l, _)| *l == line)
                .map_or(0, |&(_, m)| m);
            let visits = self.visits.entry(line).or_default();
            *visits += 1;
            let half: u8 = if *visits % 2 == 0 { 0x0f } else { 0xf0 };
            // A half the region does not cover: the other one.
            let words = if mask & half != 0 { mask & half } else { mask };
            out.extend(self.pick(line, words, 1));
        }
        out
    }

    /// Gives breakpoints to the threads that appeared since the last listing and lets
    /// go of those that exited. `me`: the rotator, never watched (0: none yet).
    fn scan(&mut self, me: i32) {
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        let tids: Vec<i32> = dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        self.threads.retain(|a| {
            let alive = tids.contains(&a.tid);
            if !alive {
                ids::give_back(a.hid);
            }
            alive
        });
        self.refused.retain(|t| tids.contains(t));
        let Some(first) = self.lines().first().map(|&(line, _)| Target {
            addr: line,
            len: WORD,
        }) else {
            return;
        };
        self.counts.over_cap = 0;
        for tid in tids {
            let known = self.threads.iter().any(|a| a.tid == tid) || self.refused.contains(&tid);
            if tid == me || known {
                continue;
            }
            if self.threads.len() >= MAX_THREADS {
                self.counts.over_cap += 1;
                continue;
            }
            match Watchpoints::open(tid, SLOTS, first) {
                Ok(wp) => {
                    // Named by the kernel's thread id and name, whether or not it
                    // recorded: the rotator does not wait on the thread registry.
                    let serial = TID_SERIAL + tid as u64;
                    self.names.insert(serial, thread_name(tid));
                    let hid = ids::lend();
                    self.counts.watched += 1;
                    self.threads.push(Armed {
                        tid,
                        serial,
                        hid,
                        wp,
                    });
                }
                // Exited meanwhile.
                Err(libc::ESRCH) => {}
                Err(e) => {
                    self.refused.push(tid);
                    self.reason.get_or_insert(breakpoint_reason(e));
                    self.counts.refused += 1;
                }
            }
        }
        self.counts.threads = self.threads.len();
    }

    /// One window: the hits of the last one into `out` (with their threads' serial and
    /// history id, by time), the breakpoints moved to the next targets.
    /// `on`: whether recording is on (read outside the lock: under it, the thread
    /// counts as inside yieldprof, and the first read would be skipped).
    fn window(&mut self, me: i32, on: bool, budget: u32, out: &mut Vec<(Hit, u64, u16)>) {
        if self.counts.windows % RESCAN == 0 {
            self.scan(me);
        }
        self.counts.windows += 1;
        let targets = if on { self.plan() } else { Vec::new() };
        let mut hits = Vec::new();
        let mut lost = 0;
        for a in &mut self.threads {
            hits.clear();
            a.wp.park(&mut hits);
            out.extend(hits.iter().map(|&h| (h, a.serial, a.hid)));
            let mut i = 0;
            while i < targets.len().min(a.wp.len()) {
                // A failed arming leaves that breakpoint parked until the next window.
                let _ = a.wp.arm(i, targets[i], budget);
                i += 1;
            }
            lost += a.wp.lost();
        }
        out.sort_by_key(|(h, _, _)| h.time_ns);
        for &(h, _, hid) in out.iter() {
            let w = self.writers.entry(h.addr & !(LINE - 1)).or_default();
            if w[0] == 0 {
                w[0] = hid;
            } else if w[0] != hid && w[1] == 0 {
                w[1] = hid;
            }
        }
        self.counts.hits += out.len() as u64;
        self.counts.lost = lost;
    }

    /// Parks and closes every breakpoint: the rotator is finishing.
    fn release(&mut self) {
        for a in self.threads.drain(..) {
            ids::give_back(a.hid);
        }
        self.counts.threads = 0;
    }
}

/// Of `lines` (ascending), those next to a line seen written by another thread, and
/// not yet seen written by two: where per-thread blocks meet. `seen`: the first two
/// history ids seen writing a line (0: none).
fn boundary_lines(lines: &[usize], seen: impl Fn(usize) -> [u16; 2]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for pair in lines.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (wa, wb) = (seen(a), seen(b));
        if b == a + LINE && wa[0] != 0 && wb[0] != 0 && wa[0] != wb[0] {
            out.extend([a, b].into_iter().filter(|&l| seen(l)[1] == 0));
        }
    }
    out.dedup();
    out
}

/// `comm` of thread `tid`: the name its creator gave it (15 bytes at most).
fn thread_name(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|n| format!("{} (tid {tid})", n.trim_end()))
        .unwrap_or_else(|_| format!("tid {tid}"))
}

/// Every hit, in order, into the line histories as a write of its thread. The one
/// place watchpoint hits enter the detector.
fn feed(hits: &[(Hit, u64, u16)]) {
    for &(h, serial, hid) in hits {
        detector::track_write_of(h.addr, WORD, serial, hid);
    }
}

/// The hits a thread's breakpoint may take in a window of `window`, from the
/// configured rate per thread and second, spread over the breakpoints.
fn budget(rate: u32, window: Duration) -> u32 {
    let per_window = rate as f64 * window.as_secs_f64() / SLOTS as f64;
    (per_window.round() as u32).max(1)
}

/// This thread's CPU time: what a rotation cost, whatever else the machine runs.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn run(stop: &AtomicBool) {
    let me = gettid();
    let rate = crate::config::settings().watchpoint_rate.unwrap_or(0);
    let mut hits = Vec::new();
    let mut window = MIN_WINDOW;
    while !stop.load(Relaxed) {
        let start = cpu_time();
        let on = crate::config::enabled();
        plain().window(me, on, budget(rate, window), &mut hits);
        feed(&hits);
        hits.clear();
        window = (cpu_time().saturating_sub(start) * DUTY).clamp(MIN_WINDOW, MAX_WINDOW);
        plain().counts.window = window;
        std::thread::park_timeout(window);
    }
    plain().release();
}

/// Stops a rotator `remove` handed back and waits for it to let go of every
/// breakpoint.
pub(super) fn stop(rotator: (Arc<AtomicBool>, JoinHandle<()>)) {
    let (flag, handle) = rotator;
    flag.store(true, Relaxed);
    handle.thread().unpark();
    let _ = handle.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_the_lines_where_two_threads_blocks_meet() {
        // Thread 1 wrote lines 0..3, thread 2 lines 3..6; line 7 is not adjacent.
        let lines: Vec<usize> = [0, 1, 2, 3, 4, 5, 7].iter().map(|l| l * LINE).collect();
        let seen = |l: usize| match l / LINE {
            0..=2 => [1, 0],
            3..=5 => [2, 0],
            _ => [1, 0],
        };
        assert_eq!(boundary_lines(&lines, seen), [2 * LINE, 3 * LINE]);
        // Seen written by both already: a focus line, no longer a boundary.
        let both = |l: usize| if l == 2 * LINE { [1, 2] } else { seen(l) };
        assert_eq!(boundary_lines(&lines, both), [3 * LINE]);
        // Lines not yet seen written are no evidence either way.
        assert!(boundary_lines(&lines, |l| if l < 3 * LINE { [0, 0] } else { [2, 0] }).is_empty());
    }

    #[test]
    fn the_budget_follows_the_rate_and_is_never_zero() {
        assert_eq!(budget(400, Duration::from_millis(50)), 5);
        assert_eq!(budget(400, Duration::from_millis(400)), 40);
        assert_eq!(budget(1, Duration::from_millis(50)), 1);
    }
}
