//! The floor every other layer stands on: the clock, the single-writer arena, the
//! per-site statics the macro emits, and text formatting. Imports nothing of the crate.

pub(crate) mod arena;
pub(crate) mod clock;
pub(crate) mod host;
pub(crate) mod site;
pub(crate) mod text;
