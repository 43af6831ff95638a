//! The floor every other layer stands on: the clock, the single-writer arena and
//! episode ring, locks that survive `fork()`, the per-site statics the macro emits,
//! and text formatting.
//! Imports nothing of the crate above it.

pub(crate) mod arena;
pub(crate) mod clock;
pub(crate) mod fork;
pub(crate) mod host;
pub(crate) mod reentry;
pub(crate) mod ring;
pub(crate) mod site;
pub(crate) mod text;
