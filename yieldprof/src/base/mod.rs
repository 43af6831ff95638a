//! The floor every other layer stands on: the clock, the single-writer arena and
//! episode ring, locks that survive `fork()`, the per-site statics the macro emits,
//! and text formatting.
//! Imports nothing of the crate above it.

#[cfg(feature = "enabled")]
pub(crate) mod arena;
pub(crate) mod asked;
pub(crate) mod blocked;
#[cfg(feature = "enabled")]
pub(crate) mod clock;
#[cfg(feature = "enabled")]
pub(crate) mod fork;
#[cfg(feature = "enabled")]
pub(crate) mod host;
#[cfg(feature = "enabled")]
pub(crate) mod ids;
#[cfg(feature = "enabled")]
pub(crate) mod json;
#[cfg(feature = "enabled")]
pub(crate) mod reentry;
#[cfg(feature = "enabled")]
pub(crate) mod ring;
pub(crate) mod site;
#[cfg(feature = "enabled")]
pub(crate) mod snoozed;
#[cfg(feature = "enabled")]
pub(crate) mod text;
