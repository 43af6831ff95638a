//! Findings: what the figures say to change, each with its evidence and a fix.
//!
//! Every rule compares a site's or thread's figures with what waiting costs on this
//! machine ([`Costs`]): a PAUSE, a `sched_yield`, a context switch, the timer slack.
//!
//! **Fragmentation.** A wait episode is *fragmented* when it is shorter than one
//! context switch: blocking would have cost more than the wait lasted, and thousands
//! of them are the thin, broken towers of a flame graph. Fragmentation is reported as
//! episodes per second and the share of wait time spent in fragmented episodes, for
//! each site and each thread; the summary, JSON and budgets all use this definition.

use crate::analysis::costs::Costs;
use crate::analysis::false_sharing::shared_spins;
use crate::analysis::oversubscribed::{oversubscribed, MachineLoad, Preempted};
use crate::analysis::pools::{pool_findings, Cause};
use crate::base::site::Kind;
use crate::base::text::duration;
use crate::model::profile::{Profile, SiteStats, ThreadStats};
use std::cmp::Reverse;
use std::fmt;

/// Which rule a finding comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// `std::thread::sleep(Duration::ZERO)` returns at once: the loop never yields.
    SleepZeroIsNoOp,
    /// Short sleeps (`nanosleep(0)`, `usleep(0)`, `park_timeout(ZERO)`) last the timer slack.
    SleepRoundedToSlack,
    /// Yields that switch nothing: a pure syscall cost.
    YieldWithoutSwitch,
    /// Spin-only episodes much longer than a yield, measured on the CPU: a core burnt.
    LongSpin,
    /// Many involuntary switches: more runnable threads than cores.
    Oversubscribed,
    /// Spinning (measured on the CPU) on a single core, where the awaited thread
    /// cannot run meanwhile.
    SingleCoreSpin,
    /// A wait site spins on a falsely shared cache line.
    FalseSharing,
    /// A backoff whose counter is not reset between waits.
    BackoffNeverResets,
    /// A call that blocks its thread, made from async code without `.await`: every
    /// task on that executor thread waits with it.
    BlockingInAsync,
    /// CPU time inside a wait site's episodes outside any wait call or nested frame:
    /// work done while waiting (a pool worker's jobs), counted as waiting until marked.
    WorkInsideWait,
    /// A pool's jobs ran on fewer workers at a time than it has (and cores allow).
    LowParallelism,
    /// A pool worker started its phases' jobs late: the others ran them meanwhile.
    LateWake,
    /// A pool's workers burnt CPU in their idle rounds (spins, yields, polling
    /// outside jobs), a material share of their time.
    IdleRounds,
    /// Nearly every episode switched out and waited to be woken (a rendezvous channel):
    /// each pays a switch each way, whatever it waited for.
    Handoff,
}

impl Rule {
    /// A short stable name, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Rule::SleepZeroIsNoOp => "sleep-zero-is-no-op",
            Rule::SleepRoundedToSlack => "sleep-rounded-to-timer-slack",
            Rule::YieldWithoutSwitch => "yield-without-switch",
            Rule::LongSpin => "long-spin",
            Rule::Oversubscribed => "oversubscribed",
            Rule::SingleCoreSpin => "single-core-spin",
            Rule::FalseSharing => "false-sharing",
            Rule::BackoffNeverResets => "backoff-never-resets",
            Rule::BlockingInAsync => "blocking-call-in-async",
            Rule::WorkInsideWait => "work-inside-wait",
            Rule::LowParallelism => "pool-low-parallelism",
            Rule::LateWake => "pool-late-wake",
            Rule::IdleRounds => "pool-idle-rounds",
            Rule::Handoff => "handoff",
        }
    }
}

/// One thing to change.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Finding {
    /// The rule that fired.
    pub rule: Rule,
    /// The site (`module::fn`) or thread concerned.
    pub subject: String,
    /// `file:line`, where there is one.
    pub location: Option<String>,
    /// The figures behind it.
    pub evidence: String,
    /// What to do.
    pub fix: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.rule.name(), self.subject)?;
        if let Some(l) = &self.location {
            write!(f, " ({l})")?;
        }
        write!(f, "\n  evidence: {}\n  fix: {}", self.evidence, self.fix)
    }
}

/// Fewer calls than this say too little to act on.
const MIN_CALLS: u64 = 10;
/// Fewer episodes than this say too little about a site's typical episode.
const MIN_EPISODES: u64 = 20;
/// A spin finding needs the site's episodes measured on the CPU at least this share
/// of their time: a thread blocked off the CPU is not spinning, whatever its calls.
const SPIN_ON_CPU_SHARE: f64 = 0.5;
/// Spin-only episodes longer than this many yields should back off.
const LONG_SPIN_YIELDS: f64 = 10.0;
/// Yields with fewer switches per call than this gave nothing back.
const NO_SWITCH_PER_YIELD: f64 = 0.05;
/// A wait site whose episodes spent this share of their time on the CPU in stretches
/// of 10 µs or more between their waits (`[unmarked work]`, `record::gaps`) ran work
/// that no frame names: a pool worker's wait loop running jobs read 18–50 % (18 % with
/// the build VM loaded, its jobs preempted), a condvar or channel wait none.
const WORK_INSIDE_WAIT_SHARE: f64 = 0.1;
/// ... and at least this much of it: a short run's one slow stretch (a first episode's
/// set-up, a preemption) is no pool's jobs.
const WORK_INSIDE_WAIT_MIN_NS: u64 = 1_000_000;

/// A finding about a cost below this share of the threads' time (summed over
/// threads) is not worth a change: 100 bare yields in a 0.5 s run are 0.01 %.
const MATERIAL_SHARE: f64 = 0.01;
/// Threads the oversubscribed finding names one by one; a process of hundreds of
/// preempted threads gets the rest as one sum.
const OVERSUBSCRIBED_NAMED: usize = 5;

fn per_call(ns: u64, calls: u64) -> f64 {
    ns as f64 / calls.max(1) as f64
}

/// `threads_ns`: the threads' time summed, what [`MATERIAL_SHARE`] is a share of.
fn site_findings(site: &SiteStats, costs: &Costs, threads_ns: u64, out: &mut Vec<Finding>) {
    let mut add = |rule, location: String, evidence: String, fix: String| {
        out.push(Finding {
            rule,
            subject: site.name.clone(),
            location: Some(location),
            evidence,
            fix,
        })
    };
    for c in site.calls.iter().filter(|c| c.calls >= MIN_CALLS) {
        let at = format!("{}:{}", c.site.file, c.site.line);
        // The median call where known: one call preempted for milliseconds under load
        // must not hide (or make) the finding, as it would move a mean.
        let typical = super::slack::typical(site, c);
        match c.site.kind {
            Kind::Sleep if typical < 1_000 => add(
                Rule::SleepZeroIsNoOp,
                at,
                format!(
                    "{} sleep calls took {} typically (median, or mean where the site has \
                     several sleep lines): a real sleep lasts at least the timer slack ({}); \
                     std's sleep(Duration::ZERO) returns without a syscall",
                    c.calls,
                    duration(typical),
                    duration(costs.timer_slack_ns)
                ),
                "this loop never gives the core up: call std::thread::yield_now() to let \
                 others run, or wait for the event with park/unpark or a Condvar"
                    .into(),
            ),
            Kind::Sleep | Kind::Park => {
                if let Some((evidence, fix)) = super::slack::rounded_to_slack(site, c, costs) {
                    add(Rule::SleepRoundedToSlack, at, evidence, fix);
                }
            }
            _ => {}
        }
    }
    for (at, evidence, fix) in super::blocking::blocking_in_async(site) {
        add(Rule::BlockingInAsync, at, evidence, fix);
    }
    let work = site.own.unmarked_work_ns;
    if work >= WORK_INSIDE_WAIT_MIN_NS
        && work as f64 >= WORK_INSIDE_WAIT_SHARE * site.wall_ns as f64
        && work as f64 >= MATERIAL_SHARE * threads_ns as f64
    {
        add(
            Rule::WorkInsideWait,
            site_at(site),
            format!(
                "{} of its episodes' {} ({:.0}%) ran on the CPU in stretches of 10 µs or \
                 more between its waits, outside any frame, {:.1}% of the threads' time: \
                 the report counts it as work done while waiting (`[unmarked work]`), not as \
                 waiting",
                duration(work),
                duration(site.wall_ns),
                100.0 * work as f64 / site.wall_ns.max(1) as f64,
                100.0 * work as f64 / threads_ns.max(1) as f64
            ),
            "if it is jobs the wait runs (a pool worker's), open `yieldprof::frame!(\"job\")` \
             around each: they show under their own name, and a job's time off the CPU is \
             counted as the pool's scheduling; if it is the wait's own polling (checks that \
             long), block instead (park, Condvar, a channel)"
                .into(),
        );
    }
    if let Some((kind, evidence, fix)) =
        super::handoff::handoff(site, costs, MIN_EPISODES, threads_ns, MATERIAL_SHARE)
    {
        add(Rule::Handoff, call_at(site, kind), evidence, fix);
    }
    let yields = site.calls_of(Kind::Yield);
    let yield_ns = site.ns_of(Kind::Yield);
    if yields >= MIN_CALLS * 10 && yield_ns as f64 >= MATERIAL_SHARE * threads_ns as f64 {
        let at = call_at(site, Kind::Yield);
        let switches = site.counters.switches().value();
        let mean = per_call(yield_ns, yields);
        let no_switch = match switches {
            Some(s) => (s as f64 / yields as f64) < NO_SWITCH_PER_YIELD,
            // Without counters: a yield that switched lasts at least a switch.
            None => mean < costs.switch_ns,
        };
        if no_switch {
            let seen = match switches {
                Some(s) => format!(
                    "{s} context switches ({:.3} per yield)",
                    s as f64 / yields as f64
                ),
                None => "no switch counters, but".into(),
            };
            add(
                Rule::YieldWithoutSwitch,
                at,
                format!(
                    "{yields} yields, {seen} each {} (a switch costs ~{}), {} in all ({:.1}% \
                     of the threads' time): nothing else was runnable, every yield was a bare \
                     syscall",
                    duration(mean as u64),
                    duration(costs.switch_ns as u64),
                    duration(yield_ns),
                    100.0 * yield_ns as f64 / threads_ns.max(1) as f64
                ),
                format!(
                    "spin_loop() about {} times (one yield's worth) before yielding, then \
                     block (park/Condvar); yield helps only when a thread waits for this core",
                    costs.spins_per_yield()
                ),
            );
        }
    }
    let spins = site.calls_of(Kind::Spin);
    // Calls that yield, back off or block: the site does more than spin.
    let slow: u64 = Kind::ALL
        .iter()
        .filter(|k| !matches!(k, Kind::Spin | Kind::AsyncYield))
        .map(|&k| site.calls_of(k))
        .sum();
    // Spinning is judged on the CPU only: the measured on-CPU share of the episodes.
    let on_cpu = site
        .time
        .on_cpu_share()
        .filter(|&share| share >= SPIN_ON_CPU_SHARE);
    // Judged on the median episode, with enough of them: one long wait among many short
    // ones is not a habit, and a mean pulled up by it would flip between runs.
    let median = site.durations.quantile(0.5);
    // Counted over the timed episodes, the ones the median is of: a consumer's checks
    // that found a message at once return without waiting and have no duration.
    let timed = site.timed_episodes();
    let enough = spins > 0 && slow == 0 && timed >= MIN_EPISODES && site.spin_ns() >= 1_000_000;
    if let (Some(on_cpu), Some(median), true) = (on_cpu, median, enough) {
        let yields_worth = median as f64 / costs.yield_ns;
        if yields_worth >= LONG_SPIN_YIELDS {
            add(
                Rule::LongSpin,
                call_at(site, Kind::Spin),
                format!(
                    "{timed} spin-only episodes that waited{}, median {} ({:.0}× a {} yield), \
                     p90 {}, burnt {} of CPU ({:.0}% of their time on the CPU)",
                    match site.returned_without_waiting {
                        0 => String::new(),
                        n => format!(" ({n} more returned without waiting)"),
                    },
                    duration(median),
                    yields_worth,
                    duration(costs.yield_ns as u64),
                    duration(site.durations.quantile(0.9).unwrap_or(median)),
                    duration(site.spin_ns()),
                    100.0 * on_cpu
                ),
                format!(
                    "back off in layers: spin_loop() ×{} → yield_now() ×{} → park/sleep \
                     (thresholds from this machine's costs)",
                    costs.spins_per_yield(),
                    costs.yields_per_sleep().min(64)
                ),
            );
        }
    }
    if let (Some(on_cpu), true) = (on_cpu, spins >= 1_000 && costs.cores == 1) {
        add(
            Rule::SingleCoreSpin,
            call_at(site, Kind::Spin),
            format!(
                "{spins} spins on a machine with one core, {:.0}% of the episodes' time on \
                 the CPU",
                100.0 * on_cpu
            ),
            "on one core the thread you wait for cannot run while you spin: skip the spin \
             phase when available_parallelism() is 1 and yield or block at once"
                .into(),
        );
    }
    // With a reset every episode that reaches the slow phase spins first, so spins
    // outnumber episodes; fewer spins than episodes while most episodes yield or sleep
    // means the spin phase ran in the first waits only.
    if spins > 0 && site.episodes >= MIN_CALLS && spins < site.episodes && slow >= site.episodes {
        add(
            Rule::BackoffNeverResets,
            site_at(site),
            format!(
                "{} episodes made {spins} spins in all ({:.2} per episode) but {:.1} yields or \
                 sleeps per episode: the spin phase ran in the first waits only",
                site.episodes,
                spins as f64 / site.episodes as f64,
                slow as f64 / site.episodes as f64
            ),
            "reset the backoff counter at the start of every wait (as .NET's SpinWait.Reset); \
             a counter kept across waits sends every later wait straight to sleep"
                .into(),
        );
    }
}

fn site_at(site: &SiteStats) -> String {
    format!("{}:{}", site.file, site.line)
}

/// The line of the site's call of `kind` that made the most calls: where a finding
/// about those calls points (the fn's line when the site made none).
fn call_at(site: &SiteStats, kind: Kind) -> String {
    site.calls
        .iter()
        .filter(|c| c.site.kind == kind)
        .max_by_key(|c| c.calls)
        .map_or_else(
            || site_at(site),
            |c| format!("{}:{}", c.site.file, c.site.line),
        )
}

/// One finding for every oversubscribed thread: the cause is the process's. Its
/// evidence names the threads preempted most, the rest in one sum.
fn thread_findings(threads: &[ThreadStats], costs: &Costs, out: &mut Vec<Finding>) {
    let mut found: Vec<(&ThreadStats, Preempted)> = threads
        .iter()
        .filter_map(|t| Some((t, oversubscribed(t)?)))
        .collect();
    if found.is_empty() {
        return;
    }
    found.sort_by_key(|(_, p)| Reverse((p.queued_ns, p.preempted)));
    let least_blocked = found
        .iter()
        .map(|(_, p)| p.blocked)
        .try_fold(1.0f64, |min, b| b.map(|b| min.min(b)));
    // Where other processes alone fill the cores, fewer threads here would not help.
    let machine = MachineLoad::current();
    let queued: u64 = threads.iter().filter_map(|t| t.run_queue_ns).sum();
    let others = machine
        .as_ref()
        .is_some_and(|m| m.others_fill(found.len() as u64, queued, costs.cores as u64));
    let fix = match least_blocked {
        _ if others => "the run queue is mostly other processes': this process's threads \
             would be preempted with fewer of them too; measure on a quieter machine, or give \
             it cores of its own (taskset, a cgroup cpuset); its waits need no change for this"
            .into(),
        Some(share) if share >= 1.0 - SPIN_ON_CPU_SHARE => format!(
            "run fewer busy threads than cores; their waits already block ({:.0}% or more of \
             their time blocked off the CPU), so the run queue is their work's",
            100.0 * share
        ),
        Some(_) => "run fewer busy threads than cores, and make waiters block (park, Condvar) \
              instead of spinning or yielding so they leave the run queue"
            .into(),
        // An episode still open at this report has no blocked share yet.
        None => "run fewer busy threads than cores; where their waits spin or yield (not \
              known yet for waits still open at this report), make them block (park, Condvar) \
              so they leave the run queue"
            .into(),
    };
    let subject = match &found[..] {
        [(t, _)] => format!("thread {}", t.name),
        _ => format!("{} threads", found.len()),
    };
    let named = found.len().min(OVERSUBSCRIBED_NAMED);
    let mut evidence: Vec<String> = found[..named]
        .iter()
        .map(|(_, p)| p.evidence.clone())
        .collect();
    let rest = &found[named..];
    if !rest.is_empty() {
        let queued: Option<u64> = rest.iter().map(|(_, p)| p.queued_ns).sum();
        let preempted: u64 = rest.iter().map(|(_, p)| p.preempted).sum();
        evidence.push(format!(
            "and {} more threads{}, {preempted} involuntary switches outside yields in all",
            rest.len(),
            queued.map_or(String::new(), |q| format!(
                ": {} runnable for a CPU",
                duration(q)
            ))
        ));
    }
    out.push(Finding {
        rule: Rule::Oversubscribed,
        subject,
        location: None,
        evidence: match machine {
            Some(m) => format!(
                "{}; {}",
                evidence.join("; "),
                m.describe(costs.cores as u64)
            ),
            None => format!("{}; {} cores", evidence.join("; "), costs.cores),
        },
        fix,
    });
}

impl Profile {
    /// Every finding for this profile, sites first (costliest first), then threads.
    ///
    /// ```
    /// #[yieldprof::instrument_wait]
    /// fn nap() {
    ///     for _ in 0..100 {
    ///         std::thread::sleep(std::time::Duration::ZERO);
    ///     }
    /// }
    /// let session = yieldprof::Session::this_thread();
    /// nap();
    /// let findings = session.finish().findings(&yieldprof::report::Costs::current());
    /// assert_eq!(findings[0].rule, yieldprof::report::Rule::SleepZeroIsNoOp);
    /// ```
    pub fn findings(&self, costs: &Costs) -> Vec<Finding> {
        let mut out = Vec::new();
        let sites = self.site_views();
        let threads_ns = self.thread_views().iter().map(|t| t.wall_ns).sum();
        for site in sites {
            site_findings(site, costs, threads_ns, &mut out);
        }
        out.extend(shared_spins(self).into_iter().map(|s| Finding {
            rule: Rule::FalseSharing,
            location: sites.iter().find(|x| x.name == s.subject).map(site_at),
            subject: s.subject,
            evidence: s.evidence,
            fix: s.fix,
        }));
        spin_after_sharing(&mut out);
        thread_findings(self.thread_views(), costs, &mut out);
        out.extend(pool_findings(self, costs).into_iter().map(|f| Finding {
            rule: match f.cause {
                Cause::LateWake => Rule::LateWake,
                Cause::LowParallelism => Rule::LowParallelism,
                Cause::IdleRounds => Rule::IdleRounds,
            },
            subject: f.subject,
            location: None,
            evidence: f.evidence,
            fix: f.fix.into(),
        }));
        out
    }
}

/// A long-spin finding on a site that spins on a falsely shared line says its spin is
/// worth tuning only once the line stops ping-ponging (else the fixes contradict).
fn spin_after_sharing(out: &mut [Finding]) {
    let shared: Vec<String> = out
        .iter()
        .filter(|f| f.rule == Rule::FalseSharing)
        .map(|f| f.subject.clone())
        .collect();
    for f in out.iter_mut() {
        if f.rule == Rule::LongSpin && shared.contains(&f.subject) {
            f.fix = format!("first remove the false sharing below; then {}", f.fix);
        }
    }
}

/// The least time a rate or share is taken over: below 1 ms of thread or wait time, a
/// few timer ticks or counter reads decide it (a thread that waited 3 µs and spent 12 µs
/// reading counters is not "400 % overhead"; 4 million calls that never waited, over
/// no timed thread time, are not "4·10¹⁵ episodes/s").
pub const RATE_FLOOR_NS: u64 = 1_000_000;

/// Fragmentation of a set of episodes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fragmentation {
    /// Timed episodes per second of the wall time of the threads that ran them; `None`
    /// when those threads ran under [`RATE_FLOOR_NS`] in all (none, when no episode
    /// waited).
    pub episodes_per_s: Option<f64>,
    /// Share (0..=1) of episode time in episodes shorter than one context switch;
    /// `None` when no episode was timed.
    pub short_share: Option<f64>,
}

impl Profile {
    /// Fragmentation of a wait site's timed episodes (those that returned without
    /// waiting have no duration and ran in no timed thread time).
    pub fn site_fragmentation(&self, site: &SiteStats, costs: &Costs) -> Fragmentation {
        Fragmentation::of(
            site.timed_episodes(),
            self.wall_of_threads_running(site),
            &site.durations,
            costs,
        )
    }

    /// Fragmentation of each thread's outermost wait episodes, in [`Profile::threads`]
    /// order.
    pub fn thread_fragmentation(&self, costs: &Costs) -> Vec<Fragmentation> {
        self.threads
            .iter()
            .map(|t| {
                let mut h = crate::model::histogram::Histogram::default();
                let mut episodes = 0;
                for n in t.outermost_waits(&t.in_wait(&self.frames)) {
                    h.add(&n.durations);
                    episodes += n.episodes;
                }
                Fragmentation::of(episodes, t.nodes[0].wall_ns, &h, costs)
            })
            .collect()
    }
}

impl Fragmentation {
    pub(crate) fn of(
        episodes: u64,
        thread_wall_ns: u64,
        h: &crate::model::histogram::Histogram,
        costs: &Costs,
    ) -> Self {
        let timed_ns = h.total_ns();
        Fragmentation {
            episodes_per_s: (thread_wall_ns >= RATE_FLOOR_NS)
                .then(|| episodes as f64 / (thread_wall_ns as f64 / 1e9)),
            short_share: (episodes > 0 && timed_ns > 0)
                .then(|| h.ns_below(costs.switch_ns as u64) as f64 / timed_ns as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::histogram::Histogram;

    #[test]
    fn rates_over_too_little_time_are_not_given() {
        let costs = Costs::current();
        let none = Histogram::default();
        // 4 million calls over no timed thread time: no rate, no share.
        let f = Fragmentation::of(4_009_256, 0, &none, &costs);
        assert_eq!((f.episodes_per_s, f.short_share), (None, None));
        // Just under the floor: no rate; at it, 1000 episodes in 1 ms are 1 000 000/s.
        let f = Fragmentation::of(1000, RATE_FLOOR_NS - 1, &none, &costs);
        assert_eq!(f.episodes_per_s, None);
        let f = Fragmentation::of(1000, RATE_FLOOR_NS, &none, &costs);
        assert_eq!(f.episodes_per_s, Some(1e6));
    }

    #[test]
    fn a_long_spin_on_a_falsely_shared_site_is_tuned_after_the_line() {
        let finding = |rule, subject: &str| Finding {
            rule,
            subject: subject.into(),
            location: None,
            evidence: String::new(),
            fix: "fix".into(),
        };
        let mut out = vec![
            finding(Rule::LongSpin, "a::spin"),
            finding(Rule::LongSpin, "b::spin"),
            finding(Rule::FalseSharing, "a::spin"),
        ];
        spin_after_sharing(&mut out);
        let fixes: Vec<&str> = out.iter().map(|f| f.fix.as_str()).collect();
        assert_eq!(
            fixes,
            [
                "first remove the false sharing below; then fix",
                "fix",
                "fix"
            ]
        );
    }
}
