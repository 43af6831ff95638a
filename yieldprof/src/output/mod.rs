//! The top floor: `init` and its guard, files written atomically, folded stacks, flame
//! graphs, diff, pprof, JSON, the timeline's trace events, the text summary, snapshots,
//! the exit flush and the live view (feature `http`).

#[cfg(feature = "enabled")]
pub(crate) mod compare;
#[cfg(feature = "enabled")]
pub(crate) mod diff;
pub(crate) mod files;
#[cfg(feature = "enabled")]
pub(crate) mod flamegraph;
#[cfg(feature = "enabled")]
pub(crate) mod flush;
#[cfg(feature = "enabled")]
pub(crate) mod fold;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg_attr(not(feature = "enabled"), path = "unwritten.rs")]
pub(crate) mod init;
#[cfg(feature = "enabled")]
pub mod json;
#[cfg(feature = "enabled")]
pub(crate) mod narrow;
pub(crate) mod options;
#[cfg(feature = "enabled")]
pub(crate) mod palette;
#[cfg(feature = "enabled")]
pub(crate) mod pprof;
#[cfg(feature = "enabled")]
pub(crate) mod snapshots;
#[cfg(feature = "enabled")]
pub(crate) mod subtitle;
#[cfg(feature = "enabled")]
pub(crate) mod summary;
#[cfg(feature = "enabled")]
pub(crate) mod titles;
#[cfg(feature = "enabled")]
pub(crate) mod trace;
