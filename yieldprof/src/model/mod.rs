//! A read-only model of what was recorded: per-thread tree copies and timelines,
//! histograms, and the
//! per-site and per-thread views computed from them. Knows nothing of how it was
//! recorded or where it is written.

#[cfg(feature = "enabled")]
pub(crate) mod histogram;
#[cfg(feature = "enabled")]
pub(crate) mod merged;
#[cfg(feature = "enabled")]
pub(crate) mod own;
#[cfg_attr(not(feature = "enabled"), path = "empty.rs")]
pub(crate) mod profile;
#[cfg(feature = "enabled")]
pub(crate) mod timeline;
#[cfg(feature = "enabled")]
pub(crate) mod tree;
