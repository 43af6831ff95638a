//! Verdicts: what each line's history says (false, true, mixed sharing) and the fix that follows.

use super::*;
use crate::model::profile::Profile;
use std::collections::BTreeMap;
use std::fmt;

/// How a watched line (or 128-B block) is shared.
///
/// Each watched 64-B line keeps a two-entry history of the threads that touched it since
/// its last write, with the 8-B words each read and wrote. A tracked write by thread `T`
/// to word `w` while the history holds another thread `U` is an *invalidation*: *false*
/// when no such `U` touched `w` (padding would remove it; a reader spinning on another
/// word is such a victim), else *true*, and also *contended* when a `U` wrote `w`. With
/// `N` invalidations, a line is [`Quiet`](Verdict::Quiet) below 32;
/// [`False`](Verdict::False) when the false ones reach both 32 and
/// `N /` 4; [`Mixed`](Verdict::Mixed) when the contended ones do too;
/// [`True`](Verdict::True) otherwise. Two watched lines of one 128-B block keep the
/// same history with the line as the word: [`AdjacentRisk`](Verdict::AdjacentRisk)
/// when the block passes the FALSE bounds and neither line is FALSE or MIXED.
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
    /// Fewer than 32 invalidations.
    Quiet,
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
        })
    }
}

/// One thread's tracked accesses to one word.
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

/// One 8-B word of a line (or block) and who used it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WordAccess {
    /// Offset from the start of the line (of the block for ADJACENT-RISK).
    pub offset: usize,
    /// The watched field(s) on the word, e.g. `tail`, or `counters+8` inside a larger
    /// watched value.
    pub name: String,
    /// Per-thread counts, most accesses first.
    pub threads: Vec<ThreadAccess>,
    /// Invalidations caused by writes to this word.
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
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineVerdict {
    /// What the counts say.
    pub verdict: Verdict,
    /// Start of the line (of the block for ADJACENT-RISK).
    pub address: usize,
    /// 64, or 128 for a block.
    pub size: usize,
    /// Words that are watched or were accessed, by offset.
    pub words: Vec<WordAccess>,
    /// Tracked writes that took the line from another thread.
    pub invalidations: u64,
    /// Those of them whose victims had touched only other words.
    pub false_invalidations: u64,
    /// Those whose victims had written the same word.
    pub contended_invalidations: u64,
    /// Wait sites that spin on the line, most reads first.
    pub wait_sites: Vec<SpinningSite>,
    /// What to do about it.
    pub fix: String,
    /// 1 when every access was tracked, else the sampling rate.
    pub sample_every: u32,
}

pub(super) fn classify(h: &HotRecord) -> Verdict {
    let passes = |n: u64| n >= MIN_INVALIDATIONS && n * SHARE_DIVISOR >= h.invalidations;
    if h.invalidations < MIN_INVALIDATIONS {
        Verdict::Quiet
    } else if passes(h.false_inv) && passes(h.contended) {
        Verdict::Mixed
    } else if passes(h.false_inv) {
        Verdict::False
    } else {
        Verdict::True
    }
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
pub(super) fn name_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => "the fields".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

pub(super) fn fix_text(verdict: Verdict, words: &[WordAccess], contended: &[String]) -> String {
    let names: Vec<String> = words
        .iter()
        .filter(|w| !w.threads.is_empty())
        .map(|w| w.name.clone())
        .collect();
    let pad = format!(
        "pad {} to 128 B, e.g. `crossbeam_utils::CachePadded`",
        name_list(&names)
    );
    match verdict {
        Verdict::False => pad,
        Verdict::Mixed => format!(
            "{pad}; {} written by several threads: shard it per thread or batch updates",
            name_list(contended)
        ),
        Verdict::AdjacentRisk => {
            format!("the adjacent-line prefetcher pairs these 64-B lines: {pad} (128-B aligned)")
        }
        Verdict::True => {
            "same-word sharing: padding cannot help; write less often (batch, shard)".into()
        }
        Verdict::Quiet => "nothing to do".into(),
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

pub(super) fn word_name(fields: &[Field], addr: usize) -> String {
    let names: Vec<String> = fields
        .iter()
        .filter(|f| f.overlaps(addr, WORD))
        .map(|f| {
            if f.addr >= addr && f.addr + f.size <= addr + WORD {
                f.name.clone()
            } else {
                format!("{}+{}", f.name, addr.saturating_sub(f.addr))
            }
        })
        .collect();
    if names.is_empty() {
        "?".into()
    } else {
        names.join("/")
    }
}

pub(super) fn words_of(rec: &LineRecord, base: usize, names: &Names) -> Vec<WordAccess> {
    (0..WORDS)
        .filter_map(|w| {
            let addr = rec.line + w * WORD;
            let mut threads: Vec<ThreadAccess> = (0..BLOCKS)
                .filter(|&b| rec.rw[b][w] != [0, 0])
                .map(|b| ThreadAccess {
                    thread: match rec.owners.get(b) {
                        Some(&s) => names.thread(s),
                        None => "other threads".into(),
                    },
                    reads: rec.rw[b][w][0],
                    writes: rec.rw[b][w][1],
                })
                .collect();
            let watched = rec.fields.iter().any(|f| f.overlaps(addr, WORD));
            if threads.is_empty() && !watched {
                return None;
            }
            threads.sort_by_key(|t| std::cmp::Reverse(t.reads + t.writes));
            Some(WordAccess {
                offset: addr - base,
                name: word_name(&rec.fields, addr),
                threads,
                invalidations: rec.hot.by_word[w],
            })
        })
        .collect()
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

pub(super) fn line_verdict(rec: &LineRecord, names: &Names) -> LineVerdict {
    let verdict = classify(&rec.hot);
    let words = words_of(rec, rec.line, names);
    let contended: Vec<String> = words
        .iter()
        .filter(|w| w.threads.iter().filter(|t| t.writes > 0).count() > 1)
        .map(|w| w.name.clone())
        .collect();
    LineVerdict {
        verdict,
        address: rec.line,
        size: LINE,
        fix: fix_text(verdict, &words, &contended),
        words,
        invalidations: rec.hot.invalidations,
        false_invalidations: rec.hot.false_inv,
        contended_invalidations: rec.hot.contended,
        wait_sites: wait_sites(&[rec], names),
        sample_every: rec.sample_every,
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
    if classify(&h) != Verdict::False {
        return None;
    }
    let mut words = words_of(even, even.line, names);
    words.extend(words_of(odd, even.line, names));
    for w in &mut words {
        // Per-word invalidations mean little across two lines: show the block's, by line.
        w.invalidations = even.pair.by_word[w.offset / LINE];
    }
    Some(LineVerdict {
        verdict: Verdict::AdjacentRisk,
        address: even.line,
        size: BLOCK,
        fix: fix_text(Verdict::AdjacentRisk, &words, &[]),
        words,
        invalidations: h.invalidations,
        false_invalidations: h.false_inv,
        contended_invalidations: 0,
        wait_sites: wait_sites(&[even, odd], names),
        sample_every: even.sample_every,
    })
}
