//! The per-site and per-thread views of what was recorded, computed once per profile.

use crate::base::site::Limit;
use crate::base::site::{CallInfo, FrameInfo, FrameKind, Kind};
use crate::counters::{Acc, Count, CounterEvent, CounterSource, Counters, SplitMethod, TimeSplit};
use crate::model::histogram::Histogram;
use crate::model::own::OwnTime;
use crate::model::tree::ThreadProfile;
use std::sync::OnceLock;

/// Everything recorded so far, copied with [`snapshot`](crate::snapshot).
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub(crate) threads: Vec<ThreadProfile>,
    pub(crate) frames: Vec<FrameInfo>,
    pub(crate) calls: Vec<CallInfo>,
    /// In a report's copy, the threads past its count merged into one profile
    /// (`model::merged`); `None` otherwise.
    pub(crate) merged: Option<Merged>,
    /// The per-site and per-thread views, each computed at most once: writing one
    /// report reads them from the summary, the JSON, the findings and the budgets.
    views: Views,
}

/// The threads a report merged into one profile (`model::merged`).
#[derive(Clone, Debug)]
pub(crate) struct Merged {
    /// How many threads it holds.
    pub(crate) threads: u64,
    /// Timeline episodes they had kept, which the trace leaves out (its
    /// `episodes_cut`): a merged profile has no one timeline.
    pub(crate) episodes: u64,
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
    /// What the calls asked to sleep for (`sleep(d)`, `park_timeout(d)`, `usleep`,
    /// `nanosleep` with a reference), over the whole run; `None` for other calls.
    pub asked: Option<crate::base::asked::Asked>,
    /// A call made without `.await` in async code: its longest call, and how long the
    /// annotated async episodes it kept waiting on its thread waited, over the whole
    /// run; `None` for other calls.
    pub held: Option<crate::base::blocked::HeldWorker>,
    /// A backoff call (`Backoff::snooze`): how many of its calls spun and how many
    /// yielded, over the whole run; `None` for other calls.
    pub backoff: Option<crate::base::snoozed::Snoozes>,
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
    /// Calls of the function: the `returned_without_waiting` ones and the timed
    /// ones, which `durations` holds.
    pub episodes: u64,
    /// Calls that returned without having made a wait call (a spin, yield, sleep,
    /// park, a lock that blocked, ...): counted, never timed, in no stack.
    pub returned_without_waiting: u64,
    /// Wall time of the episodes, nested frames included.
    pub wall_ns: u64,
    /// Wall time minus nested frames: the site's own waiting.
    pub self_ns: u64,
    /// `async fn` sites: time their episodes spent suspended between polls. An async
    /// episode lasts from its first poll to its completion; only the polls are wall
    /// time, so `wall_ns + suspended_ns` is the episodes' whole span. 0 for other sites.
    pub suspended_ns: u64,
    /// Of `wall_ns`, the time of episodes still open when the report was read (a pool
    /// worker's life-long wait), counted up to that moment; 0 when none was open.
    pub open_ns: u64,
    /// Durations of the timed episodes, from each one's first wait to its return
    /// (nested frames included); an async episode's is its whole span. Those that
    /// returned without waiting are not in it.
    pub durations: Histogram,
    /// Calls per call site, ordered by line.
    pub calls: Vec<CallStats>,
    /// Durations of the timed calls (yield, sleep, lock, ...) made directly in the
    /// function, one histogram per kind, in [`Kind::ALL`] order.
    pub call_durations: Vec<(Kind, Histogram)>,
    /// Context switches and other counters over the episodes (nested frames included);
    /// `Scaled` where estimated from sampled episodes, `NotAvailable` where not counted.
    pub counters: Counters,
    /// Where the episodes' wall time went: on the CPU, queued for one, or blocked
    /// (nested frames included).
    pub time: TimeSplit,
    /// Own time outside timed calls, by what was measured: `[spin]`, `[on-cpu]`,
    /// `[off-cpu]` or `[unexplained]`.
    pub own: OwnTime,
    /// yieldprof's own time inside the site's frames (nodes created, switch figures
    /// read): its `[profiler]` frame, never in `own`.
    pub profiler_ns: u64,
}

impl SiteStats {
    /// The site of `f`, with nothing recorded yet.
    fn of(f: &FrameInfo) -> SiteStats {
        SiteStats {
            name: f.name.clone(),
            path: f.path.clone(),
            file: f.file,
            line: f.line,
            budget: f.budget,
            episodes: 0,
            returned_without_waiting: 0,
            wall_ns: 0,
            self_ns: 0,
            suspended_ns: 0,
            open_ns: 0,
            durations: Histogram::default(),
            calls: Vec::new(),
            call_durations: Vec::new(),
            counters: Counters::default(),
            time: TimeSplit::default(),
            own: OwnTime::default(),
            profiler_ns: 0,
        }
    }

    /// The episodes that were timed: those that waited.
    pub fn timed_episodes(&self) -> u64 {
        self.episodes - self.returned_without_waiting
    }

    /// Whether `name` names this site: its frame name, its full path, or a tail of
    /// the path that starts at a `::`.
    pub fn matches(&self, name: &str) -> bool {
        crate::base::site::names_site(&self.name, &self.path, name)
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

    /// Own time drawn as `[spin]`: outside timed calls, on the CPU (or not measured)
    /// in episodes that counted `spin_loop()` calls.
    pub fn spin_ns(&self) -> u64 {
        self.own.spin_ns
    }
}

/// One thread at a glance.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// The thread's name, else `thread-<n>` (n counts threads in the order they
    /// first recorded); `[N other threads]` for those a written report merged.
    pub name: String,
    /// How many threads these figures hold: 1, or N in a written report's
    /// `[N other threads]` (the threads past
    /// [`Options::report_threads`](crate::Options::report_threads), summed), and in the
    /// rows that keep threads exited past the first 10 000 merged by name.
    pub threads: u64,
    /// Kernel thread id; 0 for a row of merged threads.
    pub tid: i32,
    /// From the thread's first recorded event to its exit (or now).
    pub wall_ns: u64,
    /// Time in wait episodes and wait calls.
    pub wait_ns: u64,
    /// The rest: `[work]`.
    pub work_ns: u64,
    /// Of `work_ns`, work done inside wait frames where no business frame names it:
    /// their `[unmarked work]` (long stretches between waits, on the CPU).
    pub unmarked_work_ns: u64,
    /// Of `wait_ns`, its jobs' own time off the CPU: business frames opened inside a
    /// wait (a pool worker's jobs) that were preempted or queued, the pool's
    /// scheduling, not business (their `[off-cpu]` in the folded stacks).
    pub jobs_off_cpu_ns: u64,
    /// Whether the thread has exited (its data is kept).
    pub exited: bool,
    /// Frame entries folded into `[overflow]` because the node cap was reached.
    pub overflowed: u64,
    /// Entries (frames and calls) skipped because they interrupted yieldprof's own
    /// code on this thread, as an annotated function called from a signal handler can:
    /// its state was in use, and waiting for it could block forever.
    pub reentries_skipped: u64,
    /// Entries made after the thread's recording was torn down (a thread-local
    /// destructor or `atexit` handler running after yieldprof's), not recorded.
    pub entries_after_exit: u64,
    /// Wait episodes, at every site, that returned without waiting (see
    /// [`SiteStats::returned_without_waiting`]).
    pub returned_without_waiting: u64,
    /// Counter totals over the thread's life. Switches: its whole life's as the kernel
    /// counts them (`/proc/<pid>/task/<tid>/status`), read on the thread at its exit
    /// or at a report it makes, from its status file at a report another thread makes
    /// (estimated, as of its last switch read, where that file cannot be read); so
    /// they include [`ThreadStats::counters_before_recording`]. Migrations from its
    /// first record on; the events of its perf group, which opens at its second
    /// sampled episode, scaled.
    pub counters: Counters,
    /// The part of `counters` spent in wait episodes; the rest is `[work]`'s.
    pub counters_in_wait: Counters,
    /// The part of `counters` from before the thread first recorded (its switches
    /// then, read on it: exact); not available for the events not counted over its
    /// whole life.
    pub counters_before_recording: Counters,
    /// How the thread's counters were read.
    pub counter_source: CounterSource,
    /// Time the thread spent reading its counters.
    pub counter_overhead_ns: u64,
    /// yieldprof's own time on the thread: its set-up (counters opened), nodes
    /// created, switch figures read; the `[profiler]` frames of its stacks.
    pub profiler_ns: u64,
    /// Time it was runnable but waited for a CPU (the kernel's schedstat), since it
    /// first recorded, at most its wall time (the kernel credits a wait when the thread
    /// next runs); `None` where the kernel does not say.
    pub run_queue_ns: Option<u64>,
    /// Its CPU time since it first recorded, at most its wall time (the kernel's
    /// run-time sum); `None` where its clock could not be read.
    pub cpu_ns: Option<u64>,
    /// Where its wait episodes' time went (outermost episodes).
    pub time_in_wait: TimeSplit,
    /// How that split was measured; `None` with counters off.
    pub split_method: Option<SplitMethod>,
    /// Its `yield_now`/`sched_yield` calls, wherever made. Linux counts a yield that
    /// hands the core over as an involuntary switch, and the thread waits runnable
    /// inside the call: at most this many of its involuntary switches, and at most
    /// [`ThreadStats::yield_ns`] of its run-queue time, were yields, not preemption.
    pub yields: u64,
    /// Time inside those calls.
    pub yield_ns: u64,
}

/// How many threads `threads` hold, merged ones counted one by one.
pub(crate) fn thread_count(threads: &[ThreadStats]) -> u64 {
    threads.iter().map(|t| t.threads).sum()
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
            merged: None,
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
            let own = t.own_times(&self.frames, &self.calls);
            for (i, n) in t.nodes.iter().enumerate() {
                let f = &self.frames[n.frame as usize];
                if f.kind != FrameKind::Wait {
                    continue;
                }
                let s = by_frame[n.frame as usize].get_or_insert_with(|| SiteStats::of(f));
                counts[n.frame as usize].add(&n.counts, n.wall_ns);
                if let Some(o) = &own[i] {
                    s.own.add(o);
                }
                s.durations.add(&n.durations);
                s.episodes += n.episodes;
                s.wall_ns += n.wall_ns;
                s.suspended_ns += n.suspended_ns;
                s.profiler_ns += n.profiler_ns;
                s.open_ns += n.open_ns;
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
                            asked: crate::base::asked::asked_at(info.file, info.line, info.column),
                            held: info
                                .in_async
                                .then(|| {
                                    crate::base::blocked::held_at(info.file, info.line, info.column)
                                })
                                .flatten(),
                            backoff: (info.kind == Kind::Backoff)
                                .then(|| {
                                    crate::base::snoozed::snoozes_at(
                                        info.file,
                                        info.line,
                                        info.column,
                                    )
                                })
                                .flatten(),
                        }),
                    }
                }
            }
        }
        for t in &self.threads {
            for &(frame, n) in &t.unwaited {
                let Some(f) = self.frames.get(frame as usize) else {
                    continue;
                };
                let s = by_frame[frame as usize].get_or_insert_with(|| SiteStats::of(f));
                s.episodes += n;
                s.returned_without_waiting += n;
            }
            for ((frame, kind), h) in &t.site_durations {
                let Some(Some(s)) = by_frame.get_mut(*frame as usize) else {
                    continue;
                };
                let Some(kind) = kind else {
                    s.durations.add(h);
                    continue;
                };
                match s.call_durations.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, mine)) => mine.add(h),
                    None => s.call_durations.push((*kind, h.clone())),
                }
            }
        }
        let threads = self.thread_views();
        for (s, c) in by_frame.iter_mut().zip(&counts) {
            if let Some(s) = s {
                s.counters = c.counters();
                cap_estimates(&mut s.counters, threads);
                s.time = c.split();
                s.durations.cap_extremes(s.wall_ns + s.suspended_ns);
            }
        }
        let mut sites: Vec<SiteStats> = by_frame.into_iter().flatten().collect();
        for s in &mut sites {
            s.calls
                .sort_by_key(|c| (c.site.line, c.site.column, c.site.kind));
            s.call_durations.sort_by_key(|(k, _)| *k);
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
    /// 10 000 threads to exit are kept one by one (~1 KiB each, plus their timelines:
    /// 32 B an episode, 2^20 episodes over all exited threads, the oldest threads'
    /// dropped first); later ones are merged per name (up to 256 names; unnamed threads
    /// and the rest as `[exited threads]`, without timelines), so a program that starts
    /// a thread per request keeps bounded memory.
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
                let unmarked_work_ns = t.unmarked_work(&self.frames, &self.calls).min(wall_ns);
                let wait_ns = t.wait_ns(&self.frames, unmarked_work_ns).min(wall_ns);
                let (counters, counters_in_wait, counters_before_recording, time_in_wait) =
                    t.counters(&self.frames);
                let yields: Vec<_> = t
                    .nodes
                    .iter()
                    .flat_map(|n| &n.slots)
                    .filter(|s| self.calls[s.call as usize].kind == Kind::Yield)
                    .collect();
                ThreadStats {
                    name: t.name.clone(),
                    threads: t.threads,
                    tid: t.tid,
                    wall_ns,
                    wait_ns,
                    work_ns: wall_ns - wait_ns,
                    unmarked_work_ns: unmarked_work_ns.min(wall_ns - wait_ns),
                    jobs_off_cpu_ns: t.jobs_off(&self.frames).iter().sum::<u64>().min(wait_ns),
                    exited: t.exited,
                    overflowed: t.overflowed,
                    reentries_skipped: t.reentries_skipped,
                    entries_after_exit: t.entries_after_exit,
                    returned_without_waiting: t.unwaited.iter().map(|(_, n)| n).sum(),
                    counters,
                    counters_in_wait,
                    counters_before_recording,
                    counter_source: t.counters.source,
                    counter_overhead_ns: t.counters.overhead_ns,
                    profiler_ns: t.nodes.iter().map(|n| n.profiler_ns).sum(),
                    // The kernel credits a run-queue wait when the thread next runs, so
                    // a wait begun before the thread's first event can land in its
                    // window (seen: 3.5 ms queued in a 0.2 ms life): never more than
                    // the thread's wall time.
                    run_queue_ns: t.counters.run_queue_ns.map(|q| q.min(wall_ns)),
                    cpu_ns: t.counters.cpu_ns.map(|c| c.min(wall_ns)),
                    time_in_wait,
                    split_method: t.counters.split,
                    yields: yields.iter().map(|s| s.calls).sum(),
                    yield_ns: yields.iter().map(|s| s.ns).sum(),
                }
            })
            .collect()
    }
}

/// A site's figure scaled up from its sampled episodes never exceeds what the threads
/// counted in all (seen: 137 voluntary switches estimated where every thread together
/// made 121): capped there, still marked estimated.
fn cap_estimates(site: &mut Counters, threads: &[ThreadStats]) {
    for e in CounterEvent::ALL {
        let Count::Scaled(v) = site.get(e) else {
            continue;
        };
        let totals: Option<u64> = threads.iter().map(|t| t.counters.get(e).value()).sum();
        if let Some(total) = totals {
            *site.slot(e) = Count::Scaled(v.min(total));
        }
    }
}

impl Profile {
    /// What was recorded between `earlier` and this snapshot: threads are matched by
    /// identity and nodes by position (a thread's tree only grows), so the result is
    /// exact even for threads that exited in between. A thread that had already exited
    /// in `earlier`, with nothing recorded since, is not in it.
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
            .filter_map(
                |t| match earlier.threads.iter().find(|e| e.serial == t.serial) {
                    // Gone before the window (a merged profile of exited threads grows).
                    Some(e) if e.exited && root_wall(e) == root_wall(t) => None,
                    Some(e) => Some(t.since(e)),
                    None => Some(t.clone()),
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

    /// A copy holding `threads`, `merged` among them, in place of these. Its sites
    /// are this profile's: merging threads leaves their sums alone, and what each
    /// node's own time is drawn as is read per thread.
    pub(crate) fn with_threads(&self, threads: Vec<ThreadProfile>, merged: Merged) -> Profile {
        let sites = OnceLock::new();
        let _ = sites.set(self.site_views().to_vec());
        Profile {
            threads,
            frames: self.frames.clone(),
            calls: self.calls.clone(),
            merged: Some(merged),
            views: Views {
                sites,
                threads: OnceLock::new(),
            },
        }
    }

    /// Only the threads `keep` accepts (by serial number).
    pub(crate) fn retain_threads(&mut self, keep: impl Fn(u64) -> bool) {
        self.threads.retain(|t| keep(t.serial));
        self.views = Views::default();
    }
}

/// A thread's whole recorded wall time (its root's), 0 for an empty tree.
fn root_wall(t: &ThreadProfile) -> u64 {
    t.nodes.first().map_or(0, |n| n.wall_ns)
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
