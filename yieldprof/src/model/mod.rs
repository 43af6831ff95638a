//! A read-only model of what was recorded: per-thread tree copies and timelines,
//! histograms, and the
//! per-site and per-thread views computed from them. Knows nothing of how it was
//! recorded or where it is written.

pub(crate) mod histogram;
pub(crate) mod own;
pub(crate) mod profile;
pub(crate) mod timeline;
pub(crate) mod tree;
