//! `yieldprof check RUN --budget FILE`: limits from a TOML file, checked against the
//! run's `<name>.json`, for CI outside Rust tests (inside them, `yieldprof::budget`).

use crate::cli::CheckArgs;
use crate::failure::Failure;
use crate::run::RunFiles;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use yieldprof::counters::CounterEvent;
use yieldprof::report::json::{Counters, Document, Site, Thread};
use yieldprof::report::text::{duration, shared_line};
use yieldprof::Kind;

/// The schema and an example, shown by `yieldprof check --help` (and in docs/cli.md),
/// with the wait kinds of this yieldprof.
pub fn schema_help() -> String {
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    SCHEMA_HELP.replace("{kinds}", &kinds.join(", "))
}

const SCHEMA_HELP: &str = r#"BUDGET FILE (TOML)
Every key is optional; a run passes when no limit is exceeded.

  require_counters = false  # true: a limit on a counter this machine did not count fails
  no_false_sharing = false  # true: no watched line may be FALSE, MIXED or ADJACENT-RISK

  [site."spsc::spin_for_message"]      # frame name, full path, or a `::` tail of the path
  max_episodes = 2000000
  max_wall_ns = 500000000              # wall time of all its episodes
  max_run_share = 0.30                 # its wall time / the thread time of the whole run
  max_p50_ns = 1000                    # median episode
  max_p99_ns = 50000                   # 99th percentile episode
  max_calls = { yield = 100, sleep = 0 }            # total calls per kind
  max_calls_per_episode = { spin = 64, yield = 16 } # on average
  max_switches_per_episode = 0.01      # voluntary + involuntary
  max_voluntary_switches_per_episode = 0.01
  max_involuntary_switches_per_episode = 0.001

  [thread.consumer]                    # every thread of that name
  max_wait_share = 0.5                 # time in wait episodes / the thread's wall time
  max_voluntary_switches = 100
  max_involuntary_switches = 100

Kinds: {kinds}.
Times in ns, shares from 0 to 1. Sites or threads the run does not have fail the check.
Each exceeded limit is listed with its site or thread, the measured value and the limit
(exit status 1)."#;

/// A budget file. Unknown keys are errors: a misspelt limit must not pass silently.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    #[serde(default)]
    require_counters: bool,
    #[serde(default)]
    no_false_sharing: bool,
    #[serde(default)]
    site: BTreeMap<String, SiteLimits>,
    #[serde(default)]
    thread: BTreeMap<String, ThreadLimits>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct SiteLimits {
    max_episodes: Option<u64>,
    max_wall_ns: Option<u64>,
    max_run_share: Option<f64>,
    max_p50_ns: Option<u64>,
    max_p99_ns: Option<u64>,
    #[serde(default)]
    max_calls: BTreeMap<String, u64>,
    #[serde(default)]
    max_calls_per_episode: BTreeMap<String, f64>,
    max_switches_per_episode: Option<f64>,
    max_voluntary_switches_per_episode: Option<f64>,
    max_involuntary_switches_per_episode: Option<f64>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct ThreadLimits {
    max_wait_share: Option<f64>,
    max_voluntary_switches: Option<u64>,
    max_involuntary_switches: Option<u64>,
}

/// A measured figure, or the counter it needs that the run could not count.
enum Measured {
    Value(f64),
    /// A duration: it and its limit print as `1.23 ms`.
    Ns(u64),
    NotCounted(CounterEvent),
}

/// What checking found: sites, then threads, each by name.
#[derive(Default)]
struct Outcome {
    checked: usize,
    exceeded: Vec<String>,
    unknown: Vec<String>,
    not_counted: Vec<String>,
}

impl Outcome {
    /// Compares one figure with its limit.
    fn limit(
        &mut self,
        doc: &Document,
        subject: &str,
        figure: &str,
        measured: Measured,
        limit: f64,
    ) {
        self.checked += 1;
        // Four decimals at most: 0.25, 16.5, 3.
        let number = |x: f64| ((x * 1e4).round() / 1e4).to_string();
        let (measured, bound) = match measured {
            Measured::Value(m) if m > limit => (number(m), number(limit)),
            Measured::Ns(m) if m as f64 > limit => (duration(m), duration(limit as u64)),
            Measured::Value(_) | Measured::Ns(_) => return,
            Measured::NotCounted(event) => {
                let why = doc
                    .capabilities
                    .events
                    .iter()
                    .find(|e| e.event == event.name())
                    .and_then(|e| e.reason.clone())
                    .unwrap_or_else(|| "not sampled in this run".into());
                self.not_counted.push(format!(
                    "{subject}: {figure} not checked: {} is n/a ({why})",
                    event.name()
                ));
                return;
            }
        };
        let line = format!("{subject}: {figure} measured {measured}, limit {bound}");
        self.exceeded.push(line);
    }
}

pub fn command(args: &CheckArgs, out: &mut String) -> Result<(), Failure> {
    let budget = read_budget(&args.budget)?;
    let run = RunFiles::locate(&args.run);
    let doc = run.document()?;
    let outcome = check(&budget, &doc);
    let failed = !outcome.exceeded.is_empty()
        || !outcome.unknown.is_empty()
        || (budget.require_counters && !outcome.not_counted.is_empty());
    let notes: String = outcome
        .not_counted
        .iter()
        .map(|n| {
            let tag = if budget.require_counters {
                "required"
            } else {
                "note"
            };
            format!("  {tag}: {n}\n")
        })
        .collect();
    if !failed {
        let _ = writeln!(
            out,
            "{}: within budget ({} limit(s) of {})",
            run.name(),
            outcome.checked,
            args.budget.display()
        );
        let _ = write!(out, "{notes}");
        return Ok(());
    }
    let mut list = format!(
        "{}: wait budget exceeded: {} limit(s) over, {} unknown name(s)\n",
        run.name(),
        outcome.exceeded.len(),
        outcome.unknown.len()
    );
    for line in outcome.exceeded.iter().chain(&outcome.unknown) {
        let _ = writeln!(list, "  {line}");
    }
    list.push_str(&notes);
    Err(Failure::Exceeded(list))
}

/// The budget file, parsed and validated: kinds are wait kinds, shares within 0..=1.
fn read_budget(path: &std::path::Path) -> Result<BudgetFile, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let budget: BudgetFile =
        toml::from_str(&text).map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
    let bad = |what: String| Failure::Input(format!("{}: {what}", path.display()));
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    for (name, s) in &budget.site {
        for kind in s.max_calls.keys().chain(s.max_calls_per_episode.keys()) {
            if kind_named(kind).is_none() {
                return Err(bad(format!(
                    "[site.\"{name}\"]: `{kind}` is not a wait kind ({})",
                    kinds.join(", ")
                )));
            }
        }
        if let Some(x) = s.max_run_share.filter(|x| !(0.0..=1.0).contains(x)) {
            return Err(bad(format!(
                "[site.\"{name}\"] max_run_share = {x}: a share is from 0 to 1"
            )));
        }
    }
    for (name, t) in &budget.thread {
        if let Some(x) = t.max_wait_share.filter(|x| !(0.0..=1.0).contains(x)) {
            return Err(bad(format!(
                "[thread.\"{name}\"] max_wait_share = {x}: a share is from 0 to 1"
            )));
        }
    }
    Ok(budget)
}

fn kind_named(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.name() == name)
}

fn check(budget: &BudgetFile, doc: &Document) -> Outcome {
    let mut out = Outcome::default();
    for (name, limits) in &budget.site {
        match doc.site(name) {
            Some(site) => check_site(site, limits, doc, &mut out),
            None => out.unknown.push(format!(
                "site `{name}` is not in the run (sites: {})",
                list(doc.sites.iter().map(|s| s.name.as_str()))
            )),
        }
    }
    for (name, limits) in &budget.thread {
        let threads: Vec<&Thread> = doc.threads.iter().filter(|t| &t.name == name).collect();
        if threads.is_empty() {
            out.unknown.push(format!(
                "thread `{name}` is not in the run (threads: {})",
                list(doc.threads.iter().map(|t| t.name.as_str()))
            ));
        }
        for t in threads {
            check_thread(t, limits, doc, &mut out);
        }
    }
    if budget.no_false_sharing {
        for line in doc
            .sharing
            .iter()
            .filter(|l| matches!(l.verdict.as_str(), "FALSE" | "MIXED" | "ADJACENT-RISK"))
        {
            let subject = shared_line(
                &line.verdict,
                line.address,
                line.words.iter().map(|w| (w.name.as_str(), w.offset)),
                line.invalidations,
            );
            out.limit(
                doc,
                &subject,
                "falsely shared lines",
                Measured::Value(1.0),
                0.0,
            );
        }
    }
    out
}

fn check_site(site: &Site, l: &SiteLimits, doc: &Document, out: &mut Outcome) {
    let subject = format!("site `{}` ({}:{})", site.name, site.file, site.line);
    let episodes = site.episodes.max(1) as f64;
    let value = |v: u64| Measured::Value(v as f64);
    let mut limit = |figure: &str, measured: Measured, bound: Option<f64>| {
        if let Some(bound) = bound {
            out.limit(doc, &subject, figure, measured, bound);
        }
    };
    let as_f64 = |v: Option<u64>| v.map(|v| v as f64);
    limit("episodes", value(site.episodes), as_f64(l.max_episodes));
    limit("wall", Measured::Ns(site.wall_ns), as_f64(l.max_wall_ns));
    let run_share = site.wall_ns as f64 / doc.totals.thread_ns.max(1) as f64;
    limit(
        "share of the run's thread time",
        Measured::Value(run_share),
        l.max_run_share,
    );
    // `null` only without episodes: nothing to exceed.
    let quantile = |q: Option<u64>| Measured::Ns(q.unwrap_or(0));
    limit(
        "p50 episode",
        quantile(site.durations.median_ns),
        as_f64(l.max_p50_ns),
    );
    limit(
        "p99 episode",
        quantile(site.durations.p99_ns),
        as_f64(l.max_p99_ns),
    );
    for (kind, &n) in &l.max_calls {
        let Some(k) = kind_named(kind) else { continue };
        limit(
            &format!("{kind} calls"),
            value(site.calls_of(k)),
            Some(n as f64),
        );
    }
    for (kind, &x) in &l.max_calls_per_episode {
        let Some(k) = kind_named(kind) else { continue };
        let per = site.calls_of(k) as f64 / episodes;
        limit(
            &format!("{kind} calls per episode"),
            Measured::Value(per),
            Some(x),
        );
    }
    let per_episode = |events: &[CounterEvent]| per(&site.counters, events, episodes);
    use CounterEvent::{InvoluntarySwitches as Invol, VoluntarySwitches as Vol};
    limit(
        "switches per episode",
        per_episode(&[Vol, Invol]),
        l.max_switches_per_episode,
    );
    let (vol, invol) = (per_episode(&[Vol]), per_episode(&[Invol]));
    limit(
        "voluntary switches per episode",
        vol,
        l.max_voluntary_switches_per_episode,
    );
    limit(
        "involuntary switches per episode",
        invol,
        l.max_involuntary_switches_per_episode,
    );
}

fn check_thread(t: &Thread, l: &ThreadLimits, doc: &Document, out: &mut Outcome) {
    let subject = format!("thread `{}` (tid {})", t.name, t.tid);
    let mut limit = |figure: &str, measured: Measured, bound: Option<f64>| {
        if let Some(bound) = bound {
            out.limit(doc, &subject, figure, measured, bound);
        }
    };
    limit(
        "wait share",
        Measured::Value(t.wait_share),
        l.max_wait_share,
    );
    let total = |e| per(&t.counters, &[e], 1.0);
    let as_f64 = |v: Option<u64>| v.map(|v| v as f64);
    use CounterEvent::{InvoluntarySwitches, VoluntarySwitches};
    limit(
        "voluntary switches",
        total(VoluntarySwitches),
        as_f64(l.max_voluntary_switches),
    );
    let invol = total(InvoluntarySwitches);
    limit(
        "involuntary switches",
        invol,
        as_f64(l.max_involuntary_switches),
    );
}

/// The sum of `events` divided by `by`; the first event not counted, if any.
fn per(counters: &Counters, events: &[CounterEvent], by: f64) -> Measured {
    let mut sum = 0;
    for &e in events {
        match counters.get(e) {
            Some(c) => sum += c.value,
            None => return Measured::NotCounted(e),
        }
    }
    Measured::Value(sum as f64 / by)
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_in_the_help_is_a_budget_this_command_reads() {
        let example: String = SCHEMA_HELP
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .map(|l| format!("{l}\n"))
            .collect();
        let budget: BudgetFile = toml::from_str(&example).unwrap();
        let site = &budget.site["spsc::spin_for_message"];
        assert_eq!(
            (site.max_calls["yield"], site.max_p99_ns),
            (100, Some(50_000))
        );
        assert_eq!(budget.thread["consumer"].max_wait_share, Some(0.5));
    }
}
