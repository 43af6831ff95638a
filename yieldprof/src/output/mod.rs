//! The top floor: `init` and its guard, files written atomically, folded stacks, flame
//! graphs, diff, pprof, JSON, the timeline's trace events, the text summary, snapshots,
//! the exit flush and the live view (feature `http`).

pub(crate) mod compare;
pub(crate) mod diff;
pub(crate) mod files;
pub(crate) mod flamegraph;
pub(crate) mod flush;
pub(crate) mod fold;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod init;
pub mod json;
pub(crate) mod narrow;
pub(crate) mod options;
pub(crate) mod pprof;
pub(crate) mod snapshots;
pub(crate) mod summary;
pub(crate) mod trace;
