//! Verdicts: what each line's history says (false, true, mixed sharing) and the fix that follows.

use super::evidence::{self, Judgement, CONFIDENCE, FIRM};
use super::fields::Part;
use super::rows::{rows_of, Row};
use super::*;
use crate::base::clock;
use crate::base::text::{duration, percent};
use crate::model::profile::Profile;
use std::collections::BTreeMap;
use std::fmt;

/// How a watched line (or 128-B block) is shared.
///
/// Each watched 64-B line keeps a two-entry history of the threads that touched it since
/// its last write, with the bytes each read and wrote. A tracked write by thread `T` to
/// bytes `w` while the history holds another thread `U` is an *invalidation*: *false*
/// when no such `U` touched a byte of `w` (padding would remove it; a reader spinning on
/// other bytes is such a victim), else *true*, and also *contended* when a `U` wrote a
/// byte of `w`. Tracked invalidations are a sample, so a line is judged with confidence
/// bounds: with `N` invalidations, it is [`Quiet`](Verdict::Quiet) below 6 (as many as
/// hand-offs between phases make); [`False`](Verdict::False) when the false share is
/// at least 1/4 with 95 % confidence; [`Mixed`](Verdict::Mixed) when the contended share
/// is too; [`True`](Verdict::True) when the false share is below 1/4 with 95 %
/// confidence; [`Uncertain`](Verdict::Uncertain) when neither holds.
/// [`LineVerdict::confidence`] says how sure, [`LineVerdict::evidence`] why and how much
/// longer a run needs for 99 %. Two watched lines of one 128-B block keep the same
/// history with the line as the byte: [`AdjacentRisk`](Verdict::AdjacentRisk) when the
/// block is FALSE by the same rule and neither line is FALSE or MIXED.
///
/// A line that would be quiet says why the evidence is thin instead:
/// [`Untracked`](Verdict::Untracked) when no access to it was tracked at all,
/// [`Uncertain`](Verdict::Uncertain) when two writers, or a writer and a reader at the
/// same time, used it together for less than 10 ms. A line one thread uses, or whose
/// reader came after its only writer, is quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Verdict {
    /// Threads invalidate each other's copies of the line while touching different
    /// words: padding the fields apart removes those misses.
    False,
    /// False sharing, and one word written by several threads as well.
    Mixed,
    /// The two 64-B lines of one 128-B block ping-pong through the adjacent-line
    /// prefetcher: each line alone is fine, the pair is not.
    AdjacentRisk,
    /// Invalidations between threads that use the same word: communication or
    /// contention, which no layout removes.
    True,
    /// Fewer than 6 invalidations: no more than hand-offs between phases make.
    Quiet,
    /// Fewer than 6 invalidations, but two threads used the line at the same time for
    /// too short a while to tell; or enough of them, with a false share that is neither
    /// clearly above nor clearly below 1/4 ([`LineVerdict::note`] says which).
    Uncertain,
    /// No access to the line was tracked: nothing reached it through `Watched`.
    Untracked,
}

impl Verdict {
    /// Whether padding would help: FALSE, MIXED and ADJACENT-RISK.
    pub fn is_suspicious(self) -> bool {
        matches!(
            self,
            Verdict::False | Verdict::Mixed | Verdict::AdjacentRisk
        )
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::False => "FALSE",
            Verdict::Mixed => "MIXED",
            Verdict::AdjacentRisk => "ADJACENT-RISK",
            Verdict::True => "TRUE",
            Verdict::Quiet => "quiet",
            Verdict::Uncertain => "uncertain",
            Verdict::Untracked => "untracked",
        })
    }
}

/// One thread's tracked accesses to one row of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadAccess {
    /// Thread name (`thread-<n>` if unnamed; `other threads` for the pooled set).
    pub thread: String,
    /// Tracked reads (loads, failed compare-exchanges).
    pub reads: u64,
    /// Tracked writes (stores, swaps, `fetch_*`, successful compare-exchanges).
    pub writes: u64,
}

/// One row of a line (or block) and who used it: a watched field, an array element, a
/// 4-B granule of a larger watched value, or one accessed outside every watched value.
/// Accesses are counted per 4-B granule, so fields that share one (two `u8` flags) make
/// one row; verdicts compare exact bytes all the same.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WordAccess {
    /// Offset from the start of the line (of the block for ADJACENT-RISK).
    pub offset: usize,
    /// Its bytes on this line.
    pub size: usize,
    /// The watched field(s) or element(s) in the row, e.g. `tail`, `locks[3]`,
    /// `flag_a/flag_b`, or `counters+8` inside a larger watched value (`?` outside
    /// every watched one).
    pub name: String,
    /// Per-thread counts, most accesses first.
    pub threads: Vec<ThreadAccess>,
    /// Invalidations caused by writes that start in this row.
    pub invalidations: u64,
}

/// A wait site that read the line inside its episodes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpinningSite {
    /// The wait site's frame name.
    pub name: String,
    /// Tracked reads of the line inside its episodes.
    pub reads: u64,
}

/// The detector's finding for one watched line, or for a 128-B block with
/// [`Verdict::AdjacentRisk`]. [`Verdict`] states the rule.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LineVerdict {
    /// What the counts say.
    pub verdict: Verdict,
    /// Start of the line (of the block for ADJACENT-RISK).
    pub address: usize,
    /// 64, or 128 for a block.
    pub size: usize,
    /// Rows that are watched or were accessed, by offset.
    pub words: Vec<WordAccess>,
    /// Tracked writes that took the line from another thread.
    pub invalidations: u64,
    /// Those of them whose victims had touched only other bytes.
    pub false_invalidations: u64,
    /// Those whose victims had written some of the same bytes.
    pub contended_invalidations: u64,
    /// Wait sites that spin on the line, most reads first.
    pub wait_sites: Vec<SpinningSite>,
    /// What to do about it.
    pub fix: String,
    /// Why the evidence is thin, for [`Verdict::Uncertain`] and [`Verdict::Untracked`]:
    /// `verdict uncertain: the two writers overlapped 3.0 ms (a verdict needs 10.0 ms)`.
    pub note: Option<String>,
    /// 1 when every access was tracked, else the sampling rate.
    pub sample_every: u32,
    /// How sure the verdict is, 0.95 to 1, for FALSE, MIXED, ADJACENT-RISK and TRUE; for
    /// an uncertain line with enough invalidations, how sure the likelier of FALSE and
    /// TRUE is (below 0.95); `None` otherwise.
    pub confidence: Option<f64>,
    /// The evidence in words: `26 of 26 invalidations false (95% interval 87–100%) in
    /// 950.00 ms together: 100.0% sure`, and how much longer a run needs for a firmer
    /// verdict; for a quiet line, what was seen (`no invalidation in 1.00 s together`).
    pub evidence: String,
}

pub(super) fn classify(h: &HotRecord) -> Verdict {
    judge(h).verdict
}

fn judge(h: &HotRecord) -> Judgement {
    evidence::judge(h.invalidations, h.false_inv, h.contended)
}

/// The evidence behind a line's verdict in words, with `ns` the time a writer and
/// another thread used it together (0: unknown or none).
fn evidence_text(h: &HotRecord, j: Judgement, ns: u64, sample_every: u32) -> String {
    let n = h.invalidations;
    let together = if ns > 0 {
        format!(" in {} together", duration(ns))
    } else {
        String::new()
    };
    let tracked = if sample_every > 1 {
        format!(" (1 in {sample_every} accesses tracked)")
    } else {
        String::new()
    };
    // How long at the rate seen until `more` invalidations.
    let longer = |more: u64| {
        if ns == 0 || n == 0 {
            format!("~{more} more invalidations")
        } else {
            format!(
                "~{} more at this rate",
                duration(ns.saturating_mul(more) / n)
            )
        }
    };
    let Some(confidence) = j.confidence else {
        if n == 0 {
            return match ns {
                0 => "no invalidation: one thread at a time used the line".into(),
                // The rule of three: no event in `t` bounds the rate below 3 / t at 95 %.
                _ => format!(
                    "no invalidation{together}{tracked}: fewer than {:.1}/s at 95% confidence",
                    3e9 / ns as f64
                ),
            };
        }
        return format!(
            "{n} invalidations{together}{tracked}: no more than hand-offs between phases make              (sharing shows from {MIN_INVALIDATIONS}; {} would tell)",
            longer(MIN_INVALIDATIONS - n)
        );
    };
    let (lo, hi) = evidence::wilson(h.false_inv, n);
    let mut text = format!(
        "{} of {n} invalidations false (95% interval {:.0}–{:.0}%){together}{tracked}: ",
        h.false_inv,
        lo * 100.0,
        hi * 100.0
    );
    let target = if j.verdict == Verdict::Uncertain {
        text += &format!(
            "share neither clearly above nor below 1/{SHARE_DIVISOR} ({:.0}% sure of {})",
            confidence * 100.0,
            if h.false_inv * SHARE_DIVISOR >= n {
                "FALSE"
            } else {
                "TRUE"
            }
        );
        CONFIDENCE
    } else {
        text += &if confidence >= 0.999 {
            "> 99.9% sure".to_string()
        } else {
            format!("{:.1}% sure", (confidence * 1000.0).floor() / 10.0)
        };
        FIRM
    };
    if confidence < target {
        text += &match evidence::needed(n, h.false_inv, target) {
            Some(m) => format!(
                "; {} for {:.0}%",
                longer(m.saturating_sub(n)),
                target * 100.0
            ),
            None => format!("; no run length decides: the share sits at 1/{SHARE_DIVISOR}"),
        };
    }
    text
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
pub(super) fn name_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    and_list(&quoted)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items.split_last() {
        None => "the fields".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// How padding fixes a falsely shared line, and why 128 B.
const PADDING: &str = "`crossbeam_utils::CachePadded` or a `#[repr(align(128))]` wrapper \
    (128 B, not 64: the adjacent-line prefetcher moves 64-B lines in pairs)";

/// What to pad: each element of one array, or the fields (with type, size and offset).
fn pad_subject(parts: &[&Part]) -> String {
    let array = parts.first().and_then(|p| p.array.clone());
    if let Some((array, stride)) = array {
        if parts.len() > 1
            && parts
                .iter()
                .all(|p| p.array.as_ref().map(|a| &a.0) == Some(&array))
        {
            let names: Vec<String> = parts.iter().map(|p| p.name.clone()).collect();
            return format!(
                "align each element of `{array}` (`{}`, stride {stride} B; {} share this line) \
                 to 128 B",
                parts[0].ty,
                name_list(&names)
            );
        }
    }
    let described: Vec<String> = parts
        .iter()
        .map(|p| {
            if p.opaque {
                format!("`{}`", p.name)
            } else {
                format!("`{}` (`{}`, {} B at {:+})", p.name, p.ty, p.size, p.offset)
            }
        })
        .collect();
    format!("pad {} to 128 B each", and_list(&described))
}

/// The fix for a line with `verdict`: `parts` are the accessed fields or elements,
/// `contended` the rows several threads wrote.
pub(super) fn fix_text(
    verdict: Verdict,
    parts: &[&Part],
    contended: &[String],
    counts: (u64, u64),
) -> String {
    let (false_inv, invalidations) = counts;
    let pad = format!(
        "{}: {PADDING}; expected: the {false_inv} false invalidations ({:.0}% of the {}'s) \
         go away",
        pad_subject(parts),
        percent(false_inv, invalidations),
        if verdict == Verdict::AdjacentRisk {
            "block"
        } else {
            "line"
        },
    );
    match verdict {
        Verdict::False => pad,
        Verdict::Mixed => format!(
            "{pad}; {} written by several threads: shard it per thread or batch updates",
            name_list(contended)
        ),
        Verdict::AdjacentRisk => {
            format!("the adjacent-line prefetcher pairs these 64-B lines: {pad}")
        }
        Verdict::True => format!(
            "same-bytes sharing ({} used by several threads): padding cannot help; write less \
             often (batch, shard)",
            name_list(contended)
        ),
        Verdict::Quiet => "nothing to do".into(),
        Verdict::Uncertain => {
            "run longer, with the threads on different cores, to see whether they share it".into()
        }
        Verdict::Untracked => {
            "access it through `Watched` atomics, or check that the program uses this value".into()
        }
    }
}

pub(super) struct Names<'a> {
    pub(super) profile: &'a Profile,
    pub(super) frames: Vec<crate::base::site::FrameInfo>,
}

impl Names<'_> {
    fn thread(&self, serial: u64) -> String {
        self.profile
            .threads
            .iter()
            .find(|t| t.serial == serial)
            .map(|t| t.name.clone())
            .or_else(|| super::plain::thread_name(serial))
            .unwrap_or_else(|| format!("thread-{serial}"))
    }

    fn frame(&self, id: u32) -> Option<&crate::base::site::FrameInfo> {
        self.profile
            .frames
            .get(id as usize)
            .or_else(|| self.frames.get(id as usize))
    }
}

pub(super) fn word_of(row: &Row, rec: &LineRecord, base: usize, names: &Names) -> WordAccess {
    let mut threads: Vec<ThreadAccess> = row
        .blocks
        .iter()
        .map(|&(b, reads, writes)| ThreadAccess {
            thread: match rec.owners.get(b) {
                Some(&s) => names.thread(s),
                None => "other threads".into(),
            },
            reads,
            writes,
        })
        .collect();
    threads.sort_by_key(|t| std::cmp::Reverse(t.reads + t.writes));
    WordAccess {
        offset: row.start - base,
        size: row.end - row.start,
        name: row.name(),
        threads,
        invalidations: row.invalidations,
    }
}

/// How long a writer and another thread both used the line, at best, and whether the
/// other wrote too; `None` unless two threads used it and one wrote.
fn overlap(rec: &LineRecord) -> Option<(u64, bool)> {
    let used: Vec<(bool, u64, u64)> = (0..BLOCKS)
        .filter(|&b| rec.times[b].0 != 0)
        .map(|b| {
            let writes = rec.rw[b].iter().any(|g| g[1] > 0);
            (writes, rec.times[b].0, rec.times[b].1)
        })
        .collect();
    let mut best: Option<(u64, bool)> = None;
    for (i, a) in used.iter().enumerate().filter(|(_, a)| a.0) {
        for (_, b) in used.iter().enumerate().filter(|&(j, _)| j != i) {
            let ticks = a.2.min(b.2).saturating_sub(a.1.max(b.1));
            if best.map_or(true, |(t, _)| ticks > t) {
                best = Some((ticks, b.0));
            }
        }
    }
    best.map(|(ticks, both)| (clock::Scale::current().ns(ticks), both))
}

/// Untracked or Uncertain with its note, for a line whose counts say quiet.
fn thin_evidence(rec: &LineRecord) -> Option<(Verdict, String)> {
    if rec.rw.iter().flatten().flatten().all(|&n| n == 0) {
        let what = if rec.sample_every <= 1 {
            "accesses"
        } else {
            "tracked accesses"
        };
        return Some((
            Verdict::Untracked,
            format!("nothing tracked: 0 {what} through Watched on this range"),
        ));
    }
    let (ns, both) = overlap(rec)?;
    // A reader that came after the only writer collected a result: nothing was shared.
    let concurrent = both || ns > 0;
    (concurrent && ns < MIN_OVERLAP_NS).then(|| {
        (
            Verdict::Uncertain,
            format!(
                "verdict uncertain: {} overlapped {} (a verdict needs {})",
                if both {
                    "the two writers"
                } else {
                    "the writer and the reader"
                },
                duration(ns),
                duration(MIN_OVERLAP_NS)
            ),
        )
    })
}

pub(super) fn wait_sites(recs: &[&LineRecord], names: &Names) -> Vec<SpinningSite> {
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for (frame, reads) in recs.iter().flat_map(|r| r.frames.iter()) {
        if let Some(f) = names.frame(*frame) {
            *by_name.entry(f.name.clone()).or_default() += reads;
        }
    }
    let mut sites: Vec<SpinningSite> = by_name
        .into_iter()
        .map(|(name, reads)| SpinningSite { name, reads })
        .collect();
    sites.sort_by_key(|s| std::cmp::Reverse(s.reads));
    sites
}

/// The accessed fields or elements of `rows`, and the names of rows that more than one
/// thread wrote (or, for a TRUE line, used).
fn involved(rows: &[Row], verdict: Verdict) -> (Vec<&Part>, Vec<String>) {
    let parts = rows
        .iter()
        .filter(|r| r.accessed())
        .flat_map(|r| &r.parts)
        .collect();
    let shared = rows
        .iter()
        .filter(|r| {
            let writers = r.blocks.iter().filter(|b| b.2 > 0).count();
            writers > 1 || (verdict == Verdict::True && writers > 0 && r.blocks.len() > 1)
        })
        .map(Row::name)
        .collect();
    (parts, shared)
}

pub(super) fn line_verdict(rec: &LineRecord, names: &Names) -> LineVerdict {
    let judgement = judge(&rec.hot);
    let mut verdict = judgement.verdict;
    let together = overlap(rec).map_or(0, |(ns, _)| ns);
    let evidence = evidence_text(&rec.hot, judgement, together, rec.sample_every);
    let mut note = None;
    if verdict == Verdict::Quiet {
        if let Some((v, n)) = thin_evidence(rec) {
            verdict = v;
            note = Some(n);
        }
    } else if verdict == Verdict::Uncertain {
        note = Some(format!("verdict uncertain: {evidence}"));
    }
    let rows = rows_of(rec);
    let (parts, shared) = involved(&rows, verdict);
    let counts = (rec.hot.false_inv, rec.hot.invalidations);
    LineVerdict {
        verdict,
        address: rec.line,
        size: LINE,
        fix: fix_text(verdict, &parts, &shared, counts),
        words: rows
            .iter()
            .map(|r| word_of(r, rec, rec.line, names))
            .collect(),
        invalidations: rec.hot.invalidations,
        false_invalidations: rec.hot.false_inv,
        contended_invalidations: rec.hot.contended,
        wait_sites: wait_sites(&[rec], names),
        note,
        sample_every: rec.sample_every,
        confidence: judgement.confidence,
        evidence,
    }
}

pub(super) fn block_verdict(
    even: &LineRecord,
    odd: &LineRecord,
    names: &Names,
) -> Option<LineVerdict> {
    let h = HotRecord {
        contended: 0,
        ..even.pair
    };
    let judgement = judge(&h);
    if judgement.verdict != Verdict::False {
        return None;
    }
    let together = [even, odd]
        .iter()
        .filter_map(|r| overlap(r).map(|(ns, _)| ns))
        .max()
        .unwrap_or(0);
    let (even_rows, odd_rows) = (rows_of(even), rows_of(odd));
    let mut words: Vec<WordAccess> = even_rows
        .iter()
        .map(|r| word_of(r, even, even.line, names))
        .chain(odd_rows.iter().map(|r| word_of(r, odd, even.line, names)))
        .collect();
    for w in &mut words {
        // Per-row invalidations mean little across two lines: show the block's, by line.
        w.invalidations = even.pair.by_granule[w.offset / LINE];
    }
    let rows: Vec<Row> = even_rows.into_iter().chain(odd_rows).collect();
    let (parts, _) = involved(&rows, Verdict::AdjacentRisk);
    Some(LineVerdict {
        verdict: Verdict::AdjacentRisk,
        address: even.line,
        size: BLOCK,
        fix: fix_text(
            Verdict::AdjacentRisk,
            &parts,
            &[],
            (h.false_inv, h.invalidations),
        ),
        words,
        invalidations: h.invalidations,
        false_invalidations: h.false_inv,
        contended_invalidations: 0,
        wait_sites: wait_sites(&[even, odd], names),
        note: None,
        sample_every: even.sample_every,
        confidence: judgement.confidence,
        evidence: evidence_text(&h, judgement, together, even.sample_every),
    })
}
