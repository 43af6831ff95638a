//! The sharing part of a report: verdicts over the model, the frames to mark, the text.

use super::*;
use crate::base::site::{self};
use crate::base::text::{count, cut, percent, wrap, WIDTH};
use crate::counters::Count;
use crate::model::profile::Profile;

impl Profile {
    /// Every watched line with its verdict, suspicious ones (FALSE, MIXED,
    /// ADJACENT-RISK) first, then by invalidations. The detector's counters are read
    /// live, without stopping any thread; lines whose `Watched` values were dropped keep
    /// their last counts. [`Verdict`] states the rule and its thresholds.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use yieldprof::Watched;
    /// use yieldprof::sharing::Verdict;
    ///
    /// let counter: Box<Watched<AtomicU64>> = Box::new(Watched::new(0));
    /// yieldprof::watch(&*counter, "counter");
    /// counter.fetch_add(1, Ordering::Relaxed);
    /// let lines = yieldprof::snapshot().sharing();
    /// let line = lines.iter().find(|l| l.words.iter().any(|w| w.name == "counter")).unwrap();
    /// assert_eq!(line.verdict, Verdict::Quiet); // one thread: nothing is shared
    /// assert_eq!(line.words[0].threads[0].writes, 1);
    /// ```
    pub fn sharing(&self) -> Vec<LineVerdict> {
        let recs = records();
        let names = Names {
            profile: self,
            frames: if recs.is_empty() {
                Vec::new()
            } else {
                site::tables().0
            },
        };
        let mut out: Vec<LineVerdict> = recs.iter().map(|r| line_verdict(r, &names)).collect();
        for even in recs.iter().filter(|r| r.line % BLOCK == 0) {
            let odd = recs.iter().find(|o| {
                o.line == even.line + LINE && o.since < even.until && even.since < o.until
            });
            let Some(odd) = odd else { continue };
            let flagged = |line: usize| {
                out.iter().any(|v| {
                    v.address == line && matches!(v.verdict, Verdict::False | Verdict::Mixed)
                })
            };
            if flagged(even.line) || flagged(odd.line) {
                continue;
            }
            if let Some(v) = block_verdict(even, odd, &names) {
                out.push(v);
            }
        }
        out.sort_by_key(|v| {
            (
                !v.verdict.is_suspicious(),
                std::cmp::Reverse(v.invalidations),
            )
        });
        out
    }

    /// Frame ids of wait sites that spin on a FALSE or MIXED line.
    pub(crate) fn false_sharing_frames(&self) -> Vec<u32> {
        let recs = records();
        let mut ids: Vec<u32> = recs
            .iter()
            .filter(|r| matches!(classify(&r.hot), Verdict::False | Verdict::Mixed))
            .flat_map(|r| r.frames.iter().map(|&(f, _)| f))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The "False sharing" section of the summary; empty when nothing is watched.
    pub(crate) fn write_sharing(&self, s: &mut String) {
        use std::fmt::Write;
        let lines = self.sharing();
        if lines.is_empty() {
            return;
        }
        let every = lines.iter().map(|l| l.sample_every).max().unwrap_or(1);
        let _ = writeln!(
            s,
            "\nFalse sharing ({}, {})",
            count(
                lines.iter().filter(|l| l.size == LINE).count() as u64,
                "watched line"
            ),
            if every <= 1 {
                "every access tracked".to_string()
            } else {
                format!("1 in {every} accesses tracked")
            }
        );
        let _ = writeln!(
            s,
            "  rule: FALSE when >= {MIN_INVALIDATIONS} invalidations and >= 1/{SHARE_DIVISOR} \
             of them between different bytes, at 95% confidence"
        );
        let plain = watchpoints();
        if plain.state != WatchpointState::Unused {
            let _ = writeln!(s, "{}", wrap(&plain.to_string(), "  ", "    "));
        }
        let sites = self.site_views();
        // Quiet lines say only that nothing happened there, untracked ones that nothing
        // reached them: one line for all of each.
        for (verdict, why) in [
            (
                Verdict::Quiet,
                format!("each < {MIN_INVALIDATIONS} invalidations"),
            ),
            (
                Verdict::Untracked,
                "nothing tracked: 0 accesses through Watched on each".to_string(),
            ),
        ] {
            let folded: Vec<&LineVerdict> = lines.iter().filter(|l| l.verdict == verdict).collect();
            if folded.is_empty() {
                continue;
            }
            // An array's elements as one name: `plain[..]`, not `plain[0], plain[1], …`.
            let mut fields: Vec<String> = Vec::new();
            for w in folded.iter().flat_map(|l| &l.words) {
                let name = match w.name.split_once('[') {
                    Some((array, _)) if w.name.ends_with(']') => format!("{array}[..]"),
                    _ => w.name.clone(),
                };
                if !fields.contains(&name) {
                    fields.push(name);
                }
            }
            let _ = writeln!(
                s,
                "{}",
                cut(
                    &format!(
                        "  {:<13} {}, {why}: {}",
                        verdict,
                        count(folded.len() as u64, "line"),
                        fields.join(", ")
                    ),
                    WIDTH
                )
            );
        }
        let folded = |v: Verdict| matches!(v, Verdict::Quiet | Verdict::Untracked);
        for l in lines.iter().filter(|l| !folded(l.verdict)) {
            let pct = percent(l.false_invalidations, l.invalidations);
            let _ = writeln!(
                s,
                "  {:<13} {} B at {:#x}: {} invalidations, {:.0}% false, {} contended",
                l.verdict, l.size, l.address, l.invalidations, pct, l.contended_invalidations
            );
            match &l.note {
                Some(note) => {
                    let _ = writeln!(s, "{}", wrap(note, "    note: ", "          "));
                }
                None => {
                    let _ = writeln!(
                        s,
                        "{}",
                        wrap(&l.evidence, "    evidence: ", "              ")
                    );
                }
            }
            if !l.verdict.is_suspicious() {
                let names: Vec<&str> = l.words.iter().map(|w| w.name.as_str()).collect();
                let _ = writeln!(
                    s,
                    "{}",
                    cut(&format!("    fields: {}", names.join(", ")), WIDTH)
                );
                continue;
            }
            let _ = writeln!(
                s,
                "    {:>6}  {:<24} {:<24} {:>12} {:>12}",
                "offset", "field", "thread", "reads", "writes"
            );
            for w in &l.words {
                for (i, t) in w.threads.iter().enumerate() {
                    let (off, name) = if i == 0 {
                        (format!("+{}", w.offset), cut(&w.name, 24))
                    } else {
                        (String::new(), String::new())
                    };
                    let _ = writeln!(
                        s,
                        "    {:>6}  {:<24} {:<24} {:>12} {:>12}",
                        off,
                        name,
                        cut(&t.thread, 24),
                        t.reads,
                        t.writes
                    );
                }
                if w.threads.is_empty() {
                    let _ = writeln!(
                        s,
                        "    {:>6}  {:<24} (no tracked accesses)",
                        format!("+{}", w.offset),
                        cut(&w.name, 24)
                    );
                }
            }
            if l.wait_sites.is_empty() {
                let _ = writeln!(s, "    no wait site spins on it");
            }
            for w in &l.wait_sites {
                let rest = format!(
                    " ({} reads); cache misses there: {}",
                    w.reads,
                    misses_text(site_cache_misses(sites, &w.name))
                );
                let room = WIDTH.saturating_sub("    spun on by ".len() + rest.chars().count());
                let _ = writeln!(s, "    spun on by {}{rest}", cut(&w.name, room.max(8)));
            }
            let _ = writeln!(s, "{}", wrap(&l.fix, "    fix: ", "         "));
        }
    }
}

/// Hardware cache misses counted in the wait site's episodes; `None` without a PMU.
pub(super) fn site_cache_misses(
    sites: &[crate::model::profile::SiteStats],
    name: &str,
) -> Option<Count> {
    sites
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.counters.cache_misses)
        .filter(|c| c.value().is_some())
}

/// A wait site's hardware cache misses as the report shows them (`~` when estimated).
pub(super) fn misses_text(misses: Option<Count>) -> String {
    match misses {
        Some(n) => n.to_string(),
        None => "n/a (no PMU)".into(),
    }
}
