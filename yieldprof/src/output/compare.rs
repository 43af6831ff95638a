//! Two runs side by side, site by site: what a change did to each wait site's episodes,
//! rate, calls, wall time, switches, latency and false-sharing mark (the table beside
//! the differential graph).

use crate::base::text::duration;
use crate::output::json::{Document, Site};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Two reports compared site by site, as [`compare`] makes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// Thread time of the whole run, before and after.
    pub thread_ns: Change,
    /// One row per figure of each wait site in either run, costliest (after) first.
    pub rows: Vec<Row>,
}

/// One figure of one site, before and after; `None` where the site did not run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Row {
    /// The wait site.
    pub site: String,
    /// `false_sharing` (1 where the site spins on a falsely shared line, else 0; only
    /// for a site marked in either run), `episodes`, `episodes_per_s` (those that
    /// waited, per second of the wall time of the threads that ran them: a site entered
    /// once per unit of work that always waits gives the throughput; shown as
    /// `waited/s`), `wall_ns`, `switches`, `p50_ns`, `p99_ns`, or `<kind> calls`.
    pub figure: String,
    /// Before and after.
    pub change: Change,
}

/// A figure before and after.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Change {
    /// In the first report; `None` when it has no such figure.
    pub before: Option<u64>,
    /// In the second report.
    pub after: Option<u64>,
}

impl Change {
    /// `after / before - 1` in percent; `None` without both or from zero.
    pub fn percent(&self) -> Option<f64> {
        match (self.before, self.after) {
            (Some(b), Some(a)) if b > 0 => Some(100.0 * (a as f64 / b as f64 - 1.0)),
            _ => None,
        }
    }
}

/// Compares two reports (e.g. the JSON of a packed and a padded run) site by site:
/// whether the site spins on a falsely shared line (where either run says so), episodes
/// and episodes per second, calls per kind, wall time, context switches, p50 and p99 of
/// the episodes.
///
/// ```
/// let costs = yieldprof::report::Costs::current();
/// let doc = yieldprof::snapshot().json(&costs);
/// let same = yieldprof::report::compare(&doc, &doc);
/// assert!(same.rows.iter().all(|r| r.change.percent().unwrap_or(0.0) == 0.0));
/// ```
pub fn compare(before: &Document, after: &Document) -> Comparison {
    let mut names: Vec<&str> = after.sites.iter().map(|s| s.name.as_str()).collect();
    for s in &before.sites {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let find = |doc: &'_ Document, name: &str| doc.sites.iter().find(|s| s.name == name).cloned();
    let mut rows = Vec::new();
    for name in names {
        let (b, a) = (find(before, name), find(after, name));
        let mut add = |figure: String, of: &dyn Fn(&Site) -> Option<u64>| {
            let change = Change {
                before: b.as_ref().and_then(of),
                after: a.as_ref().and_then(of),
            };
            if change.before.is_some() || change.after.is_some() {
                rows.push(Row {
                    site: name.to_string(),
                    figure,
                    change,
                });
            }
        };
        if b.iter().chain(&a).any(|s| s.false_sharing) {
            add("false_sharing".into(), &|s| Some(s.false_sharing.into()));
        }
        add("episodes".into(), &|s| Some(s.episodes));
        add("episodes_per_s".into(), &|s| {
            Some(s.fragmentation.episodes_per_s.round() as u64)
        });
        add("wall_ns".into(), &|s| Some(s.wall_ns));
        add("switches".into(), &Site::switches);
        add("p50_ns".into(), &|s| s.durations.median_ns);
        add("p99_ns".into(), &|s| s.durations.p99_ns);
        let mut kinds: Vec<String> = Vec::new();
        for c in b.iter().chain(&a).flat_map(|s| &s.calls) {
            if !kinds.contains(&c.kind) {
                kinds.push(c.kind.clone());
            }
        }
        for kind in kinds {
            let calls = |s: &Site| {
                let of_kind = s.calls.iter().filter(|c| c.kind == kind);
                Some(of_kind.map(|c| c.calls).sum())
            };
            add(format!("{kind} calls"), &calls);
        }
    }
    Comparison {
        thread_ns: Change {
            before: Some(before.totals.thread_ns),
            after: Some(after.totals.thread_ns),
        },
        rows,
    }
}

impl fmt::Display for Comparison {
    /// The table: site, figure, before, after, change.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cell = |v: Option<u64>, ns: bool| match v {
            None => "-".to_string(),
            Some(v) if ns => duration(v),
            Some(v) => v.to_string(),
        };
        let pct = |c: &Change| c.percent().map_or("-".into(), |p| format!("{p:+.1}%"));
        // The mark is a yes/no, and its change is what the fix did to it.
        let mark = |v: Option<u64>| match v {
            None => "-",
            Some(0) => "no",
            Some(_) => "yes",
        };
        let mark_change = |c: &Change| match (c.before, c.after) {
            (Some(b), Some(a)) if b > 0 && a == 0 => "fixed",
            (Some(0), Some(a)) if a > 0 => "new",
            _ => "-",
        };
        writeln!(
            f,
            "{:<32} {:<14} {:>12} {:>12} {:>9}",
            "site", "figure", "before", "after", "change"
        )?;
        writeln!(
            f,
            "{:<32} {:<14} {:>12} {:>12} {:>9}",
            "(all threads)",
            "thread time",
            cell(self.thread_ns.before, true),
            cell(self.thread_ns.after, true),
            pct(&self.thread_ns)
        )?;
        let mut last = "";
        for r in &self.rows {
            let site = if r.site == last { "" } else { r.site.as_str() };
            last = &r.site;
            let ns = r.figure.ends_with("_ns");
            let (figure, before, after, change) = match r.figure.as_str() {
                "false_sharing" => (
                    "false sharing".to_string(),
                    mark(r.change.before).to_string(),
                    mark(r.change.after).to_string(),
                    mark_change(&r.change).to_string(),
                ),
                // Its episodes that waited (timed), beside all its episodes.
                "episodes_per_s" => (
                    "waited/s".to_string(),
                    cell(r.change.before, false),
                    cell(r.change.after, false),
                    pct(&r.change),
                ),
                figure => (
                    figure.trim_end_matches("_ns").to_string(),
                    cell(r.change.before, ns),
                    cell(r.change.after, ns),
                    pct(&r.change),
                ),
            };
            writeln!(
                f,
                "{:<32} {:<14} {:>12} {:>12} {:>9}",
                crate::base::text::tail(site, 32),
                figure,
                before,
                after,
                change
            )?;
        }
        Ok(())
    }
}
