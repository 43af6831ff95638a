//! Pool findings: how a pool's jobs spread over its workers in time. A job is a
//! business frame opened straight inside a wait frame (`frame!` around each job a
//! worker runs while it waits); each goes into its thread's timeline, so the jobs of
//! one frame across threads show the pool's phases, who ran them, and who came late.

use crate::analysis::costs::Costs;
use crate::analysis::idle::{idle_cpu, IdleCpu};
use crate::base::site::FrameKind;
use crate::base::text::duration;
use crate::model::profile::Profile;
use std::collections::BTreeMap;

/// A stretch this long with no job running on any worker ends a phase: the caller's
/// serial part between parallel steps (the jobs of one step follow each other within
/// microseconds on a busy worker).
const PHASE_GAP_NS: u64 = 1_000_000;
/// Fewer phases than this say too little about a pool's habit.
const MIN_PHASES: usize = 3;
/// Less phase wall than this in all (1 ms) is too little to judge.
const MIN_PHASE_WALL_NS: u64 = 1_000_000;
/// Parallelism below this share of what the pool could reach (its workers, at most
/// the cores) is worth a change.
const LOW_PARALLELISM: f64 = 0.8;
/// A worker whose first job of a phase starts this share of the phase's wall after
/// the phase's first job, on average, woke late.
const LATE_SHARE: f64 = 0.2;
/// Workers that spent this share of their time on the CPU in idle rounds (outside
/// jobs) burnt a material part of a core: a pool that blocks after a few dozen
/// yields, as rayon's does, stays well below it between phases milliseconds apart.
const IDLE_SHARE: f64 = 0.05;
/// Less idle-round CPU than this (1 ms) in all is too little to act on.
const MIN_IDLE_NS: u64 = 1_000_000;

/// What a pool finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    /// Workers that started their phases late.
    LateWake,
    /// Fewer workers busy at a time than the pool could have.
    LowParallelism,
    /// Workers on the CPU in their idle rounds: spinning, yielding, polling.
    IdleRounds,
}

/// One pool finding: its cause, the pool, the evidence and the fix.
pub(super) struct PoolFinding {
    pub(super) cause: Cause,
    pub(super) subject: String,
    pub(super) evidence: String,
    pub(super) fix: &'static str,
}

/// One job: its worker (an index into the pool's workers), start and end, ns.
type Job = (usize, u64, u64);

/// A phase: its first job's start, its last job's end, and its jobs' time, ns.
type Phase = (u64, u64, u64);

/// Per worker over a pool's phases: ns from each phase's first job to its own first
/// (the whole phase where it ran none), and the phases where it ran none.
struct Lag {
    ns: u64,
    absent: usize,
}

/// The phases of `jobs` (sorted by start), and for each worker its [`Lag`] and the jobs others started before its first.
fn phases(jobs: &[Job], workers: usize) -> (Vec<Phase>, Vec<Lag>, Vec<u64>) {
    let mut out = Vec::new();
    let mut lags: Vec<Lag> = (0..workers).map(|_| Lag { ns: 0, absent: 0 }).collect();
    let mut before = vec![0u64; workers];
    let mut i = 0;
    while i < jobs.len() {
        let (start, mut end, mut work) = (jobs[i].1, jobs[i].2, 0);
        let mut j = i;
        while j < jobs.len() && jobs[j].1 <= end + PHASE_GAP_NS {
            end = end.max(jobs[j].2);
            work += jobs[j].2 - jobs[j].1;
            j += 1;
        }
        let phase = &jobs[i..j];
        for (w, lag) in lags.iter_mut().enumerate() {
            match phase.iter().position(|job| job.0 == w) {
                Some(k) => {
                    lag.ns += phase[k].1 - start;
                    before[w] += k as u64;
                }
                None => {
                    lag.ns += end - start;
                    lag.absent += 1;
                    before[w] += phase.len() as u64;
                }
            }
        }
        out.push((start, end, work));
        i = j;
    }
    (out, lags, before)
}

/// One finding per pool and cause: low parallelism over its phases, and workers that
/// started their phases late (a late wake: the others ran the jobs meanwhile).
pub(super) fn pool_findings(p: &Profile, costs: &Costs) -> Vec<PoolFinding> {
    let mut out = Vec::new();
    // Jobs by frame: the pool is the threads that run that frame's jobs.
    let mut pools: BTreeMap<u32, (Vec<&str>, Vec<Job>, u64)> = BTreeMap::new();
    for t in &p.threads {
        // A job run inside another's wait (a work-stealing join waiting for its stolen
        // half) is part of the outer job's time: only the outermost count.
        let mut outer: Vec<_> = t
            .timeline
            .episodes
            .iter()
            .filter(|e| p.frames[e.frame as usize].kind == FrameKind::Work)
            .collect();
        outer.sort_by_key(|e| (e.start, std::cmp::Reverse(e.duration)));
        let mut reach = 0;
        outer.retain(|e| {
            let end = e.start + e.duration;
            let keep = end > reach;
            reach = reach.max(end);
            keep
        });
        for e in outer {
            let (workers, jobs, _) = pools.entry(e.frame).or_default();
            let w = match workers.iter().position(|&n| n == t.name) {
                Some(w) => w,
                None => {
                    workers.push(&t.name);
                    workers.len() - 1
                }
            };
            jobs.push((w, e.start, e.start + e.duration));
        }
        for (workers, _, dropped) in pools.values_mut() {
            if workers.last() == Some(&t.name.as_str()) {
                *dropped += t.timeline.dropped();
            }
        }
    }
    for (frame, (workers, mut jobs, dropped)) in pools {
        if workers.len() < 2 {
            continue;
        }
        let name = &p.frames[frame as usize].name;
        let subject = format!("pool running `{name}` ({} workers)", workers.len());
        if let Some(f) = idle_rounds(p, &workers, &subject, costs) {
            out.push(f);
        }
        jobs.sort_by_key(|j| j.1);
        let (phases, lags, before) = phases(&jobs, workers.len());
        let wall: u64 = phases.iter().map(|ph| ph.1 - ph.0).sum();
        let work: u64 = phases.iter().map(|ph| ph.2).sum();
        if phases.len() < MIN_PHASES || wall < MIN_PHASE_WALL_NS {
            continue;
        }
        let reach = workers.len().min(costs.cores.max(1)) as f64;
        let parallelism = work as f64 / wall as f64;
        let kept = if dropped > 0 {
            format!(
                " (the last jobs kept in the timelines only: {dropped} older ones dropped; \
                 YIELDPROF_TIMELINE keeps more)"
            )
        } else {
            String::new()
        };
        let seen = format!(
            "{} phases of `{name}` jobs ({} jobs, {} of work in {} of phase wall{kept})",
            phases.len(),
            jobs.len(),
            duration(work),
            duration(wall)
        );
        let late: Vec<String> = lags
            .iter()
            .zip(&before)
            .enumerate()
            .filter(|(_, (lag, _))| lag.ns as f64 >= LATE_SHARE * wall as f64)
            .map(|(w, (lag, before))| {
                format!(
                    "{} started its first job {} after the phase's first on average \
                     ({:.0}% of the phase wall; none in {} of {} phases) while the others \
                     ran {:.0}% of the jobs",
                    workers[w],
                    duration(lag.ns / phases.len() as u64),
                    100.0 * lag.ns as f64 / wall as f64,
                    lag.absent,
                    phases.len(),
                    100.0 * *before as f64 / jobs.len() as f64
                )
            })
            .collect();
        if !late.is_empty() {
            out.push(PoolFinding {
                cause: Cause::LateWake,
                subject: subject.clone(),
                evidence: format!("{seen}: {}", late.join("; ")),
                fix: "the late workers were still waking when the jobs came: wake every \
                      worker when a phase's jobs are posted (notify_all, not one at a time), \
                      let idle workers spin or yield a little before they sleep between close \
                      phases, or make the steps coarser so a wake is a small share of one",
            });
        }
        if parallelism < LOW_PARALLELISM * reach {
            let fix = if workers.len() >= costs.cores && late.is_empty() {
                "the workers fill the cores: if the caller computes while the pool runs, \
                 set the pool's thread count below the cores (rayon: \
                 ThreadPoolBuilder::num_threads, RAYON_NUM_THREADS); else make the steps \
                 coarser (fewer, longer jobs per phase)"
            } else {
                "make the steps coarser (fewer, longer jobs per phase) or split the work \
                 more evenly, so every worker has jobs for the whole phase"
            };
            out.push(PoolFinding {
                cause: Cause::LowParallelism,
                subject,
                evidence: format!(
                    "{seen}: achieved parallelism {parallelism:.2} of {reach:.0} ({} \
                     workers, {} cores)",
                    workers.len(),
                    costs.cores
                ),
                fix,
            });
        }
    }
    out
}

/// The finding on the CPU `workers` (thread names) burnt in idle rounds, where material.
fn idle_rounds(p: &Profile, workers: &[&str], subject: &str, costs: &Costs) -> Option<PoolFinding> {
    let yield_cap = costs.yield_ns + costs.switch_ns;
    let per_worker: Vec<(&str, IdleCpu)> = workers
        .iter()
        .map(|&w| {
            let mut idle = IdleCpu::default();
            for t in p.threads.iter().filter(|t| t.name == w) {
                idle.add(&idle_cpu(p, t, yield_cap));
            }
            (w, idle)
        })
        .collect();
    let mut all = IdleCpu::default();
    per_worker.iter().for_each(|(_, i)| all.add(i));
    let burnt = all.total_ns();
    if burnt < MIN_IDLE_NS || (burnt as f64) < IDLE_SHARE * all.life_ns as f64 {
        return None;
    }
    let share = |i: &IdleCpu| 100.0 * i.total_ns() as f64 / i.life_ns.max(1) as f64;
    let each: Vec<String> = per_worker
        .iter()
        .map(|(w, i)| format!("{w} {:.1}%", share(i)))
        .collect();
    let yield_each = all
        .yield_ns
        .checked_div(all.yields)
        .map_or(String::new(), |ns| format!(", {} each", duration(ns)));
    let unsplit = if all.unsplit_ns > 0 {
        format!(
            "; up to {} more, the wait loops' time off the CPU outside calls, which jobs \
             preempted meanwhile share (jobs carry no switch figures of their own)",
            duration(all.unsplit_ns)
        )
    } else {
        String::new()
    };
    Some(PoolFinding {
        cause: Cause::IdleRounds,
        subject: subject.to_string(),
        evidence: format!(
            "its workers were on the CPU at least {} outside jobs, in their wait loops \
             ({:.1}% of their {} of life; {}): {} spinning, {} in {} yield calls{yield_each} \
             (their time off the CPU left out; at most a yield's and a switch's cost, {}, \
             each), {} in the loops' own checks{unsplit}",
            duration(burnt),
            share(&all),
            duration(all.life_ns),
            each.join(", "),
            duration(all.spin_ns),
            duration(all.yield_ns),
            all.yields,
            duration(yield_cap as u64),
            duration(all.loop_ns)
        ),
        fix: "idle workers poll before they sleep, on cores the caller and other \
              processes could use: spin about one yield's worth, yield a few times, then \
              block (a Condvar, park) until jobs are posted; or idle less often: coarser \
              steps, or fewer workers than cores when the caller computes (rayon, whose \
              idle rounds are fixed: ThreadPoolBuilder::num_threads, RAYON_NUM_THREADS)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_of_a_millisecond_ends_a_phase_and_late_workers_are_measured_from_its_start() {
        // Phase 1: worker 0 from 0, worker 1 from 3 ms; phase 2 (after a 5 ms gap):
        // worker 0 alone.
        let ms = 1_000_000;
        let jobs = [
            (0, 0, 4 * ms),
            (1, 3 * ms, 5 * ms),
            (0, 4 * ms, 6 * ms),
            (0, 11 * ms, 12 * ms),
        ];
        let (phases, lags, before) = phases(&jobs, 2);
        assert_eq!(phases, [(0, 6 * ms, 8 * ms), (11 * ms, 12 * ms, ms)]);
        assert_eq!((lags[0].ns, lags[0].absent), (0, 0));
        assert_eq!((lags[1].ns, lags[1].absent), (3 * ms + ms, 1));
        assert_eq!(before, [0, 1 + 1]);
    }
}
