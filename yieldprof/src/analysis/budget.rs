//! Budgets: limits on what wait sites and threads may cost, checked in tests.

use crate::base::site::{Kind, Limit};
#[cfg(feature = "enabled")]
use crate::base::text::{share, shared_line};
#[cfg(feature = "enabled")]
use crate::counters::{capabilities, Availability, Count, CounterEvent};
use crate::model::profile::Profile;
#[cfg(feature = "enabled")]
use crate::model::profile::{SiteStats, ThreadStats};
use std::fmt;

impl Limit {
    /// The limit's name in `#[instrument_wait(budget(...))]`, the `Budget` builder and
    /// every budget message: `max_yields_per_episode`.
    fn key(&self) -> String {
        match self {
            Limit::Episodes(_) => "max_episodes".into(),
            Limit::Calls(k, _) => format!("max_{}", calls(*k)),
            Limit::CallsPerEpisode(k, _) => format!("max_{}_per_episode", calls(*k)),
            Limit::WallShare(_) => "max_wall_share".into(),
            Limit::WaitShare(_) => "max_wait_share".into(),
            Limit::VoluntarySwitchesPerEpisode(_) => "max_voluntary_switches_per_episode".into(),
            Limit::InvoluntarySwitchesPerEpisode(_) => {
                "max_involuntary_switches_per_episode".into()
            }
            Limit::InvoluntarySwitches(_) => "max_involuntary_switches".into(),
            Limit::CacheMissesPerEpisode(_) => "max_cache_misses_per_episode".into(),
            Limit::NoFalseSharing => "no_false_sharing".into(),
            Limit::MaxHoldNs(_) => "max_hold_ns".into(),
            Limit::NoLockOrderCycle => "no_lock_order_cycle".into(),
        }
    }

    /// The limit as it is written: `max_yields_per_episode = 16`, `no_false_sharing`.
    pub(super) fn written(&self) -> String {
        match self {
            Limit::NoFalseSharing | Limit::NoLockOrderCycle => self.key(),
            _ => format!("{} = {}", self.key(), num(self.bound())),
        }
    }

    fn bound(&self) -> f64 {
        match *self {
            Limit::Episodes(n)
            | Limit::Calls(_, n)
            | Limit::InvoluntarySwitches(n)
            | Limit::MaxHoldNs(n) => n as f64,
            Limit::CallsPerEpisode(_, x)
            | Limit::WallShare(x)
            | Limit::WaitShare(x)
            | Limit::VoluntarySwitchesPerEpisode(x)
            | Limit::InvoluntarySwitchesPerEpisode(x)
            | Limit::CacheMissesPerEpisode(x) => x,
            Limit::NoFalseSharing | Limit::NoLockOrderCycle => 0.0,
        }
    }
}

/// The plural a kind's limits are named with (`max_yields`, `max_yields_per_episode`);
/// the attribute's keys are made of the same words (`CALL_KEYS` in the macro crate).
fn calls(kind: Kind) -> &'static str {
    match kind {
        Kind::Spin => "spins",
        Kind::Yield => "yields",
        Kind::Sleep => "sleeps",
        Kind::Park => "parks",
        Kind::AsyncYield => "async_yields",
        Kind::Lock => "locks",
        Kind::Condvar => "condvar_waits",
        Kind::Channel => "channel_waits",
        Kind::Join => "joins",
        Kind::Barrier => "barrier_waits",
        Kind::Backoff => "backoffs",
    }
}

/// Limits for one wait site, built with [`Budget::site`]. Each method is named as the
/// limit is in `#[instrument_wait(budget(...))]` and in messages; the per-kind ones take
/// the kind: `max_calls_per_episode(Kind::Yield, 16.0)` is `max_yields_per_episode = 16`.
#[derive(Clone, Debug, Default)]
pub struct SiteBudget {
    limits: Vec<Limit>,
}

impl SiteBudget {
    /// At most `n` episodes.
    pub fn max_episodes(mut self, n: u64) -> Self {
        self.limits.push(Limit::Episodes(n));
        self
    }

    /// At most `n` calls of `kind` in total.
    pub fn max_calls(mut self, kind: Kind, n: u64) -> Self {
        self.limits.push(Limit::Calls(kind, n));
        self
    }

    /// At most `n` calls of `kind` per episode, on average.
    pub fn max_calls_per_episode(mut self, kind: Kind, n: f64) -> Self {
        self.limits.push(Limit::CallsPerEpisode(kind, n));
        self
    }

    /// At most `share` (0..=1) of the wall time of the threads the site ran on.
    pub fn max_wall_share(mut self, share: f64) -> Self {
        self.limits.push(Limit::WallShare(share));
        self
    }

    /// At most `n` voluntary context switches per episode.
    pub fn max_voluntary_switches_per_episode(mut self, n: f64) -> Self {
        self.limits.push(Limit::VoluntarySwitchesPerEpisode(n));
        self
    }

    /// At most `n` involuntary context switches per episode (e.g. 0.001: fewer than
    /// one per 1000 episodes).
    pub fn max_involuntary_switches_per_episode(mut self, n: f64) -> Self {
        self.limits.push(Limit::InvoluntarySwitchesPerEpisode(n));
        self
    }

    /// At most `n` hardware cache misses per episode. Where the hardware has no
    /// counters the limit is skipped with a note, unless [`Budget::require_counters`].
    pub fn max_cache_misses_per_episode(mut self, n: f64) -> Self {
        self.limits.push(Limit::CacheMissesPerEpisode(n));
        self
    }

    /// Any limit, e.g. one built elsewhere.
    pub fn limit(mut self, limit: Limit) -> Self {
        self.limits.push(limit);
        self
    }
}

/// Limits for the threads of one name, built with [`Budget::thread`].
#[derive(Clone, Debug, Default)]
pub struct ThreadBudget {
    limits: Vec<Limit>,
}

impl ThreadBudget {
    /// At most `n` involuntary context switches in all.
    pub fn max_involuntary_switches(mut self, n: u64) -> Self {
        self.limits.push(Limit::InvoluntarySwitches(n));
        self
    }

    /// At most `share` (0..=1) of the thread's wall time in wait episodes and calls.
    pub fn max_wait_share(mut self, share: f64) -> Self {
        self.limits.push(Limit::WaitShare(share));
        self
    }
}

/// What a test allows its wait sites and threads.
///
/// ```
/// use yieldprof::{Kind, Session};
/// use yieldprof::budget::Budget;
///
/// #[yieldprof::instrument_wait]
/// fn take(ready: &std::sync::atomic::AtomicBool) {
///     while !ready.load(std::sync::atomic::Ordering::Acquire) {
///         std::thread::yield_now();
///     }
/// }
///
/// let session = Session::this_thread();
/// take(&std::sync::atomic::AtomicBool::new(true));
/// let report = session.finish();
/// let budget = Budget::new().site("take", |s| s.max_calls_per_episode(Kind::Yield, 16.0));
/// report.check(&budget).unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct Budget {
    sites: Vec<(String, SiteBudget)>,
    threads: Vec<(String, ThreadBudget)>,
    no_false_sharing: bool,
    require_counters: bool,
    holds: Vec<(String, u64)>,
    no_lock_order_cycle: bool,
}

impl Budget {
    /// A budget with no limits.
    pub fn new() -> Self {
        Budget::default()
    }

    /// No watched line may be falsely shared (FALSE, MIXED or ADJACENT-RISK; see
    /// [`crate::Profile::sharing`]).
    pub fn no_false_sharing(mut self) -> Self {
        self.no_false_sharing = true;
        self
    }

    /// No cycle in the lock-order graph of the `yieldprof::sync` locks (a potential
    /// deadlock, whether or not the run deadlocked; see [`crate::Profile::locks`]).
    pub fn no_lock_order_cycle(mut self) -> Self {
        self.no_lock_order_cycle = true;
        self
    }

    /// No sampled hold of a `yieldprof::sync` lock acquired at `site` (`file:line`, or a
    /// `/`-separated tail of it such as `worker.rs:88`) may last longer than `max`.
    /// Holds are sampled ([`crate::sync::HOLD_SAMPLE_EVERY`]); a site not in the report
    /// fails the check.
    pub fn max_hold(mut self, site: &str, max: std::time::Duration) -> Self {
        self.holds
            .push((site.to_string(), max.as_nanos().min(u64::MAX.into()) as u64));
        self
    }

    /// A limit on a counter this machine cannot count fails the check, instead of
    /// being skipped with a note.
    pub fn require_counters(mut self) -> Self {
        self.require_counters = true;
        self
    }

    /// Limits for the site `name`: its frame name, full path, or a `::` tail of it.
    /// A name no site answers to fails the check.
    pub fn site(mut self, name: &str, f: impl FnOnce(SiteBudget) -> SiteBudget) -> Self {
        self.sites
            .push((name.to_string(), f(SiteBudget::default())));
        self
    }

    /// Limits for every thread called `name`. A name no thread has fails the check.
    pub fn thread(mut self, name: &str, f: impl FnOnce(ThreadBudget) -> ThreadBudget) -> Self {
        self.threads
            .push((name.to_string(), f(ThreadBudget::default())));
        self
    }

    #[cfg(feature = "enabled")]
    pub(crate) fn check(&self, profile: &Profile) -> Result<(), BudgetExceeded> {
        let mut out = Checker::default();
        out.failed.require_counters = self.require_counters;
        let sites = profile.site_views();
        let threads = profile.thread_views();
        for (name, budget) in &self.sites {
            let Some(site) = sites.iter().find(|s| s.matches(name)) else {
                out.failed.unknown.push(format!(
                    "site `{name}` is not in the report (sites: {})",
                    list(sites.iter().map(|s| s.name.as_str()))
                ));
                continue;
            };
            out.check_site(site, &budget.limits, profile);
        }
        for (name, budget) in &self.threads {
            let matching: Vec<&ThreadStats> = threads.iter().filter(|t| &t.name == name).collect();
            if matching.is_empty() {
                out.failed.unknown.push(format!(
                    "thread `{name}` is not in the report (threads: {})",
                    list(threads.iter().map(|t| t.name.as_str()))
                ));
            }
            for t in matching {
                let subject = format!("thread `{}` (tid {})", t.name, t.tid);
                for limit in &budget.limits {
                    out.compare(&subject, limit, thread_value(limit, t));
                }
            }
        }
        self.check_locks(profile, &mut out);
        if self.no_false_sharing {
            for line in profile
                .sharing()
                .iter()
                .filter(|l| l.verdict.is_suspicious())
            {
                let subject = shared_line(
                    line.verdict,
                    line.address,
                    line.words
                        .iter()
                        .map(|w| (w.name.as_str(), w.offset as u64)),
                    line.invalidations,
                );
                out.compare(&subject, &Limit::NoFalseSharing, Measured::Value(1.0));
            }
        }
        out.into_result()
    }
}

#[cfg(feature = "enabled")]
impl Budget {
    fn check_locks(&self, profile: &Profile, out: &mut Checker) {
        if self.holds.is_empty() && !self.no_lock_order_cycle {
            return;
        }
        let locks = profile.locks();
        for (name, max) in &self.holds {
            let named = |s: &&crate::sync::LockSite| {
                let at = format!("{}:{}", s.site.file(), s.site.line());
                at == *name || at.ends_with(&format!("/{name}"))
            };
            let Some(site) = locks.sites.iter().find(named) else {
                out.failed
                    .unknown
                    .push(format!("lock site `{name}` is not in the report"));
                continue;
            };
            let subject = format!("lock site {} (holds sampled)", site.site);
            let longest = site.holds.max().unwrap_or(0);
            out.compare(
                &subject,
                &Limit::MaxHoldNs(*max),
                Measured::Value(longest as f64),
            );
        }
        if self.no_lock_order_cycle {
            for c in &locks.cycles {
                let subject = c
                    .edges
                    .iter()
                    .map(|e| format!("{} taken at {} holding {}", e.taken, e.taken_at, e.held_at))
                    .collect::<Vec<_>>()
                    .join("; ");
                out.compare(&subject, &Limit::NoLockOrderCycle, Measured::Value(1.0));
            }
        }
    }
}

#[cfg(feature = "enabled")]
pub(super) fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The measured value of a site limit; `None` when the limit does not apply to sites.
/// What a limit measured.
#[cfg(feature = "enabled")]
enum Measured {
    Value(f64),
    /// The limit is for threads, not sites, or the other way round.
    NotApplicable,
    /// The counter it needs is not counted here.
    Unavailable(CounterEvent),
}

#[cfg(feature = "enabled")]
fn counted(c: Count, episodes: u64, event: CounterEvent) -> Measured {
    match c.per(episodes) {
        Some(v) => Measured::Value(v),
        None => Measured::Unavailable(event),
    }
}

#[cfg(feature = "enabled")]
fn site_value(limit: &Limit, site: &SiteStats, profile: &Profile) -> Measured {
    let episodes = site.episodes.max(1) as f64;
    let c = &site.counters;
    Measured::Value(match *limit {
        Limit::Episodes(_) => site.episodes as f64,
        Limit::Calls(kind, _) => site.calls_of(kind) as f64,
        Limit::CallsPerEpisode(kind, _) => site.calls_of(kind) as f64 / episodes,
        Limit::WallShare(_) => share(site.wall_ns, profile.wall_of_threads_running(site)),
        Limit::VoluntarySwitchesPerEpisode(_) => {
            return counted(
                c.voluntary_switches,
                site.episodes,
                CounterEvent::VoluntarySwitches,
            )
        }
        Limit::InvoluntarySwitchesPerEpisode(_) => {
            return counted(
                c.involuntary_switches,
                site.episodes,
                CounterEvent::InvoluntarySwitches,
            )
        }
        Limit::CacheMissesPerEpisode(_) => {
            return counted(c.cache_misses, site.episodes, CounterEvent::CacheMisses)
        }
        Limit::WaitShare(_)
        | Limit::InvoluntarySwitches(_)
        | Limit::NoFalseSharing
        | Limit::MaxHoldNs(_)
        | Limit::NoLockOrderCycle => return Measured::NotApplicable,
    })
}

#[cfg(feature = "enabled")]
fn thread_value(limit: &Limit, t: &ThreadStats) -> Measured {
    match *limit {
        Limit::WaitShare(_) => Measured::Value(share(t.wait_ns, t.wall_ns)),
        Limit::InvoluntarySwitches(_) => counted(
            t.counters.involuntary_switches,
            1,
            CounterEvent::InvoluntarySwitches,
        ),
        _ => Measured::NotApplicable,
    }
}

/// One limit compared with what was measured: exceeded, in
/// [`BudgetExceeded::violations`].
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The site or thread, with its source location or tid.
    pub subject: String,
    /// The limit.
    pub limit: Limit,
    /// What was measured.
    pub measured: f64,
}

/// Every limit a report exceeded, and every budget entry that named nothing.
#[derive(Clone, Debug, Default)]
pub struct BudgetExceeded {
    /// Limits exceeded.
    pub violations: Vec<Violation>,
    /// Sites or threads named in the budget but absent from the report.
    pub unknown: Vec<String>,
    /// Limits that do not apply to what they were set on.
    pub skipped: Vec<String>,
    /// Limits on counters not counted here, and why; failures with
    /// [`Budget::require_counters`], notes otherwise.
    pub unavailable: Vec<String>,
    require_counters: bool,
}

/// A check under way: what failed, and what held (the summary's "held" lines).
#[cfg(feature = "enabled")]
#[derive(Default)]
pub(super) struct Checker {
    pub(super) failed: BudgetExceeded,
    pub(super) held: Vec<Violation>,
}

#[cfg(feature = "enabled")]
impl Checker {
    pub(super) fn check_site(&mut self, site: &SiteStats, limits: &[Limit], profile: &Profile) {
        let subject = format!("site `{}` ({}:{})", site.name, site.file, site.line);
        for limit in limits {
            self.compare(&subject, limit, site_value(limit, site, profile));
        }
    }

    pub(super) fn into_result(self) -> Result<(), BudgetExceeded> {
        self.failed.into_result()
    }

    fn compare(&mut self, subject: &str, limit: &Limit, measured: Measured) {
        match measured {
            Measured::Value(m) => {
                let checked = Violation {
                    subject: subject.to_string(),
                    limit: *limit,
                    measured: m,
                };
                match m > limit.bound() {
                    true => self.failed.violations.push(checked),
                    false => self.held.push(checked),
                }
            }
            Measured::NotApplicable => self
                .failed
                .skipped
                .push(format!("{subject}: {} does not apply here", limit.key())),
            Measured::Unavailable(event) => {
                let why = match capabilities().get(event) {
                    Availability::Unavailable(r) => r.to_string(),
                    Availability::Available => "not sampled in this report".into(),
                };
                self.failed.unavailable.push(format!(
                    "{subject}: {} not checked: {} is n/a ({why})",
                    limit.key(),
                    event.name()
                ));
            }
        }
    }
}

#[cfg(feature = "enabled")]
impl BudgetExceeded {
    fn into_result(self) -> Result<(), BudgetExceeded> {
        let missing = self.require_counters && !self.unavailable.is_empty();
        if self.violations.is_empty() && self.unknown.is_empty() && !missing {
            // A passing check still says what it could not check.
            for u in &self.unavailable {
                eprintln!("yieldprof budget note: {u}");
            }
            Ok(())
        } else {
            Err(self)
        }
    }
}

/// Numbers as a person would write them: `17`, `0.25`, `16.5`.
pub(super) fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "wait budget exceeded: {} limit(s) over, {} unknown name(s)",
            self.violations.len(),
            self.unknown.len()
        )?;
        for v in &self.violations {
            writeln!(
                f,
                "  {}: {}, measured {}",
                v.subject,
                v.limit.written(),
                num(v.measured)
            )?;
        }
        for u in &self.unknown {
            writeln!(f, "  {u}")?;
        }
        for u in &self.unavailable {
            let tag = if self.require_counters {
                "required"
            } else {
                "note"
            };
            writeln!(f, "  {tag}: {u}")?;
        }
        for s in &self.skipped {
            writeln!(f, "  note: {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BudgetExceeded {}

impl Profile {
    /// Checks every limit of `budget`; the error lists each one exceeded.
    #[cfg(feature = "enabled")]
    pub fn check(&self, budget: &Budget) -> Result<(), BudgetExceeded> {
        budget.check(self)
    }

    /// Passes: in a build without the `enabled` feature nothing is measured, so a test
    /// that asserts a budget runs as if it were met.
    #[cfg(not(feature = "enabled"))]
    pub fn check(&self, _budget: &Budget) -> Result<(), BudgetExceeded> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The macro crate cannot name the runtime's `Kind`, so it spells the attribute's keys
    /// from its own table; the messages' names must be the same words.
    #[test]
    fn messages_name_each_kind_as_the_attribute_keys_do() {
        let keys = include_str!("../../../yieldprof-macros/src/budget.rs");
        for kind in Kind::ALL {
            let entry = format!("(\"{kind:?}\", \"{}\")", calls(kind));
            assert!(keys.contains(&entry), "CALL_KEYS lacks {entry}");
            let limit = Limit::CallsPerEpisode(kind, 2.5);
            let key = format!("max_{}_per_episode = 2.5", calls(kind));
            assert_eq!(limit.written(), key);
        }
        assert_eq!(Limit::NoFalseSharing.written(), "no_false_sharing");
    }
}
