//! The report's `sharing` part: each watched line's verdict, its rows and the wait
//! sites that read it, as in [`crate::Profile::sharing`].

use serde::{Deserialize, Serialize};

/// One watched line (or 128-B block), as in [`crate::sharing::LineVerdict`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Line {
    /// [`crate::sharing::Verdict`] as the summary writes it: `FALSE`, `MIXED`, `ADJACENT-RISK`,
    /// `TRUE`, `quiet`, `uncertain` or `untracked`.
    pub verdict: String,
    /// Start of the line (of the block for `ADJACENT-RISK`).
    pub address: u64,
    /// 64, or 128 for a block.
    pub size: u64,
    /// Tracked writes that took the line from another thread.
    pub invalidations: u64,
    /// Those of them whose victims had touched only other bytes.
    pub false_invalidations: u64,
    /// Those whose victims had written some of the same bytes.
    pub contended_invalidations: u64,
    /// 1 when every access was tracked, else the sampling rate.
    pub sample_every: u32,
    /// Rows (fields, elements) that are watched or were accessed, by offset.
    pub words: Vec<Word>,
    /// Wait sites that spin on the line, most reads first.
    pub wait_sites: Vec<SpinningSite>,
    /// What to do about it.
    pub fix: String,
    /// Why the evidence is thin (`uncertain`, `untracked`), else `null`.
    #[serde(default)]
    pub note: Option<String>,
    /// How sure the verdict is (0.95 to 1; below for `uncertain` with enough
    /// invalidations), as [`crate::sharing::LineVerdict::confidence`]; absent in older
    /// files.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// The evidence in words, as [`crate::sharing::LineVerdict::evidence`]; empty in
    /// older files.
    #[serde(default)]
    pub evidence: String,
}

/// One row of a line (a field, an array element), as in [`crate::sharing::WordAccess`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Word {
    /// Offset from the start of the line (of the block for `ADJACENT-RISK`).
    pub offset: u64,
    /// Its bytes on the line (0 in reports written before byte-precise tracking).
    #[serde(default)]
    pub size: u64,
    /// The watched field(s) or element(s) in the row, e.g. `tail` or `locks[3]`.
    pub name: String,
    /// Invalidations caused by writes that start in this row.
    pub invalidations: u64,
    /// Per-thread counts, most accesses first.
    pub threads: Vec<ThreadAccess>,
}

/// One thread's tracked accesses to one row, as in [`crate::sharing::ThreadAccess`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThreadAccess {
    /// Thread name (`other threads` for the pooled set).
    pub thread: String,
    /// Tracked reads.
    pub reads: u64,
    /// Tracked writes.
    pub writes: u64,
}

/// A wait site that read a line inside its episodes, as in [`crate::sharing::SpinningSite`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpinningSite {
    /// The wait site's frame name.
    pub name: String,
    /// Tracked reads of the line inside its episodes.
    pub reads: u64,
}
