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

use crate::profile::{Profile, SiteStats, ThreadStats};
use crate::site::Kind;
use crate::summary::duration;
use std::fmt;
use std::sync::OnceLock;

/// What waiting costs on this machine, as the rules use it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Costs {
    /// One `spin_loop()` (PAUSE), ns.
    pub spin_ns: f64,
    /// One `sched_yield()` with nothing else runnable, ns.
    pub yield_ns: f64,
    /// One context switch, ns.
    pub switch_ns: f64,
    /// The timer slack every sleep is rounded up by, ns.
    pub timer_slack_ns: u64,
    /// Cores the process may run on.
    pub cores: usize,
    /// Where the figures come from: `"probe"` or `"quick estimate"`.
    pub source: &'static str,
}

/// A context switch when nothing has measured one: the probe measured 0.5–0.9 µs on
/// the build machine; with the cache refill that follows, 1 µs is the round figure.
const DEFAULT_SWITCH_NS: f64 = 1_000.0;

static PROBED: OnceLock<Costs> = OnceLock::new();

impl Costs {
    /// Costs for reports: the probe's if [`crate::probe::run`] ran in this process,
    /// else a quick estimate (≈0.2 ms of spins and yields, made once).
    pub fn current() -> Costs {
        if let Some(c) = PROBED.get() {
            return *c;
        }
        static QUICK: OnceLock<Costs> = OnceLock::new();
        *QUICK.get_or_init(Costs::quick)
    }

    /// Makes `self` what later reports use (the probe calls this).
    pub fn remember(self) {
        let _ = PROBED.set(self);
    }

    /// The costs the probe measured.
    pub fn from_machine(m: &crate::probe::Machine) -> Costs {
        let quick = Costs::quick();
        let alone = |name| m.primitive(name).map(|p| p.alone.ns_per_call);
        Costs {
            spin_ns: alone("spin_loop").unwrap_or(quick.spin_ns).max(0.1),
            yield_ns: alone("sched_yield").unwrap_or(quick.yield_ns).max(1.0),
            switch_ns: m.switch_ns.unwrap_or(DEFAULT_SWITCH_NS),
            timer_slack_ns: m.timer_slack_ns.unwrap_or(quick.timer_slack_ns),
            cores: m.cores,
            source: "probe",
        }
    }

    fn quick() -> Costs {
        // The 10th percentile of 20 batches: what a call costs when nothing else gets
        // the core meanwhile (a yield that hands it over costs a whole time slice).
        let per_call = |n: u32, f: &dyn Fn()| {
            let mut batches: Vec<f64> = (0..20)
                .map(|_| {
                    let t = std::time::Instant::now();
                    (0..n).for_each(|_| f());
                    t.elapsed().as_nanos() as f64 / n as f64
                })
                .collect();
            batches.sort_by(f64::total_cmp);
            batches[2]
        };
        Costs {
            spin_ns: per_call(100, &std::hint::spin_loop).max(0.1),
            yield_ns: per_call(10, &std::thread::yield_now).max(1.0),
            switch_ns: DEFAULT_SWITCH_NS,
            timer_slack_ns: timer_slack_ns().unwrap_or(50_000),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            source: "quick estimate",
        }
    }

    /// Spins that cost about one yield (seed 000 §5.4).
    pub fn spins_per_yield(&self) -> u64 {
        (self.yield_ns / self.spin_ns).round().clamp(1.0, 1e6) as u64
    }

    /// The same costs on a machine with `cores` cores (e.g. to check a single-core
    /// deployment).
    pub fn with_cores(mut self, cores: usize) -> Self {
        self.cores = cores;
        self
    }

    /// The same costs with this `sched_yield` cost, ns (e.g. from a probe run saved
    /// earlier).
    pub fn with_yield_ns(mut self, ns: f64) -> Self {
        self.yield_ns = ns.max(1.0);
        self
    }

    /// The same costs with this context-switch cost, ns.
    pub fn with_switch_ns(mut self, ns: f64) -> Self {
        self.switch_ns = ns;
        self
    }

    /// Yields that cost about one timer-slack sleep.
    pub fn yields_per_sleep(&self) -> u64 {
        (self.timer_slack_ns as f64 / self.yield_ns)
            .round()
            .clamp(1.0, 1e6) as u64
    }
}

/// The calling thread's timer slack (`prctl(PR_GET_TIMERSLACK)`), ns.
pub(crate) fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(slack).ok()
}

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
    /// Spin-only episodes much longer than a yield: a core burnt.
    LongSpin,
    /// Many involuntary switches: more runnable threads than cores.
    Oversubscribed,
    /// Spinning on a single core, where the awaited thread cannot run meanwhile.
    SingleCoreSpin,
    /// A wait site spins on a falsely shared cache line.
    FalseSharing,
    /// A backoff whose counter is not reset between waits.
    BackoffNeverResets,
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
        }
    }
}

/// One thing to change.
#[derive(Clone, Debug, PartialEq)]
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
/// Spin-only episodes longer than this many yields should back off.
const LONG_SPIN_YIELDS: f64 = 10.0;
/// Yields with fewer switches per call than this gave nothing back.
const NO_SWITCH_PER_YIELD: f64 = 0.05;
/// Share of a thread's time spent runnable but waiting for a CPU that means
/// oversubscription: ~0 for two busy threads on the build VM's two cores, ~2/3 for
/// three busy threads sharing one.
const OVERSUBSCRIBED_QUEUE_SHARE: f64 = 0.10;
/// Without the kernel's run-queue figure: involuntary switches per second of thread
/// time that mean oversubscription: a
/// thread alone on its core sees ~0; three busy threads sharing one core see ~70
/// each on the build machine (the scheduler's slices are ~13 ms there).
const OVERSUBSCRIBED_PER_S: f64 = 20.0;

fn per_call(ns: u64, calls: u64) -> f64 {
    ns as f64 / calls.max(1) as f64
}

fn site_findings(site: &SiteStats, costs: &Costs, out: &mut Vec<Finding>) {
    let mut add = |rule, location: String, evidence: String, fix: String| {
        out.push(Finding {
            rule,
            subject: site.name.clone(),
            location: Some(location),
            evidence,
            fix,
        })
    };
    let slack = costs.timer_slack_ns as f64;
    for c in site.calls.iter().filter(|c| c.calls >= MIN_CALLS) {
        let at = format!("{}:{}", c.site.file, c.site.line);
        let mean = per_call(c.ns, c.calls);
        match c.site.kind {
            Kind::Sleep if mean < 1_000.0 => add(
                Rule::SleepZeroIsNoOp,
                at,
                format!(
                    "{} sleep calls took {} each: a real sleep lasts at least the timer slack \
                     ({}); std's sleep(Duration::ZERO) returns without a syscall",
                    c.calls,
                    duration(mean as u64),
                    duration(costs.timer_slack_ns)
                ),
                "this loop never gives the core up: call std::thread::yield_now() to let \
                 others run, or wait for the event with park/unpark or a Condvar"
                    .into(),
            ),
            Kind::Sleep | Kind::Park
                if slack > 0.0 && mean >= 0.5 * slack && mean <= 2.5 * slack =>
            {
                add(
                    Rule::SleepRoundedToSlack,
                    at,
                    format!(
                        "{} {} calls took {} each, within 2.5× the timer slack ({}): a zero or \
                         short sleep is rounded up by the slack",
                        c.calls,
                        c.site.kind.name(),
                        duration(mean as u64),
                        duration(costs.timer_slack_ns)
                    ),
                    "wake on the event instead (park/unpark, Condvar, futex), or lower the \
                     slack with prctl(PR_SET_TIMERSLACK, 1) (~9 µs per sleep on the build \
                     machine)"
                        .into(),
                )
            }
            _ => {}
        }
    }
    let yields = site.calls_of(Kind::Yield);
    if yields >= MIN_CALLS * 10 {
        let at = site_at(site);
        let switches = site.counters.switches().value();
        let mean = per_call(site.ns_of(Kind::Yield), yields);
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
                    "{yields} yields, {seen} each {} (a switch costs ~{}): nothing else was \
                     runnable, every yield was a bare syscall",
                    duration(mean as u64),
                    duration(costs.switch_ns as u64)
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
    let slow = site.calls_of(Kind::Yield) + site.calls_of(Kind::Sleep) + site.calls_of(Kind::Park);
    let mean_episode = per_call(site.wall_ns, site.episodes);
    if spins > 0 && slow == 0 && site.episodes > 0 {
        let yields_worth = mean_episode / costs.yield_ns;
        if yields_worth > LONG_SPIN_YIELDS && site.spin_ns() >= 1_000_000 {
            add(
                Rule::LongSpin,
                site_at(site),
                format!(
                    "{} spin-only episodes of {} on average ({:.0}× a {} yield) burnt {} of CPU",
                    site.episodes,
                    duration(mean_episode as u64),
                    yields_worth,
                    duration(costs.yield_ns as u64),
                    duration(site.spin_ns())
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
    if spins >= 1_000 && costs.cores == 1 {
        add(
            Rule::SingleCoreSpin,
            site_at(site),
            format!("{spins} spins on a machine with one core"),
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

fn thread_findings(t: &ThreadStats, costs: &Costs, out: &mut Vec<Finding>) {
    let Some(invol) = t.counters.involuntary_switches.value() else {
        return;
    };
    let per_s = invol as f64 / (t.wall_ns.max(1) as f64 / 1e9);
    // Where the kernel says how long the thread waited for a CPU, that decides: a
    // preemption now and then (a kernel thread, a timer) costs nothing, a run queue
    // longer than the cores does.
    let queued = t.run_queue_ns.map(|q| q as f64 / t.wall_ns.max(1) as f64);
    let oversubscribed = match queued {
        Some(share) => invol >= 10 && share >= OVERSUBSCRIBED_QUEUE_SHARE,
        None => invol >= 10 && per_s >= OVERSUBSCRIBED_PER_S,
    };
    if oversubscribed {
        let waited = match (t.run_queue_ns, queued) {
            (Some(q), Some(share)) => format!(
                "waited {} ({:.0}% of its time) runnable for a CPU, ",
                duration(q),
                100.0 * share
            ),
            _ => String::new(),
        };
        out.push(Finding {
            rule: Rule::Oversubscribed,
            subject: format!("thread {}", t.name),
            location: None,
            evidence: format!(
                "{waited}{invol} involuntary switches ({per_s:.0}/s): the thread was runnable \
                 but preempted; {} cores",
                costs.cores
            ),
            fix: "run fewer busy threads than cores, and make waiters block (park, Condvar) \
                  instead of spinning or yielding so they leave the run queue"
                .into(),
        });
    }
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
    /// let findings = session.finish().findings(&yieldprof::Costs::current());
    /// assert_eq!(findings[0].rule, yieldprof::Rule::SleepZeroIsNoOp);
    /// ```
    pub fn findings(&self, costs: &Costs) -> Vec<Finding> {
        let mut out = Vec::new();
        let sites = self.sites();
        for site in &sites {
            site_findings(site, costs, &mut out);
        }
        for line in self.sharing().iter().filter(|l| l.verdict.is_suspicious()) {
            let fields: Vec<String> = line
                .words
                .iter()
                .map(|w| format!("`{}` +{}", w.name, w.offset))
                .collect();
            for spinner in &line.wait_sites {
                out.push(Finding {
                    rule: Rule::FalseSharing,
                    subject: spinner.name.clone(),
                    location: sites.iter().find(|s| s.name == spinner.name).map(site_at),
                    evidence: format!(
                        "spins on the {}-B line at {:#x} ({}), {}: {} invalidations, {} between \
                         different words; {} reads inside its episodes",
                        line.size,
                        line.address,
                        fields.join(", "),
                        line.verdict,
                        line.invalidations,
                        line.false_invalidations,
                        spinner.reads
                    ),
                    fix: format!(
                        "{}; tuning this site's spin is useless while its line ping-pongs",
                        line.fix
                    ),
                });
            }
        }
        for t in self.threads() {
            thread_findings(&t, costs, &mut out);
        }
        out
    }
}

/// Fragmentation of a set of episodes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fragmentation {
    /// Episodes per second of the wall time of the threads that ran them.
    pub episodes_per_s: f64,
    /// Share (0..=1) of episode time in episodes shorter than one context switch.
    pub short_share: f64,
}

impl Profile {
    /// Fragmentation of a wait site's episodes.
    pub fn site_fragmentation(&self, site: &SiteStats, costs: &Costs) -> Fragmentation {
        Fragmentation::of(
            site.episodes,
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
                let mut h = crate::Histogram::default();
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
        h: &crate::Histogram,
        costs: &Costs,
    ) -> Self {
        Fragmentation {
            episodes_per_s: episodes as f64 / (thread_wall_ns.max(1) as f64 / 1e9),
            short_share: h.ns_below(costs.switch_ns as u64) as f64 / h.total_ns().max(1) as f64,
        }
    }
}
