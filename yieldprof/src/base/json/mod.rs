//! JSON text for serde types, written and read without `serde_json`.
//!
//! Why not `serde_json`: a crate in a profiler's default dependency graph must not
//! change how its user's code type-checks, and `serde_json` implements
//! `PartialEq<Value>` for `usize`, `f64`, `bool`, …: with it in the graph,
//! `let sum = range.sum(); assert_eq!(count, sum)` stops compiling (E0283).
//! `tests/inference` keeps that true. What the report needs is small: writing any
//! `Serialize` type (compact or indented as `serde_json` does, floats in their
//! shortest round-trip form, non-finite ones as `null`), and reading the saved probe.

mod read;
mod write;

pub(crate) use read::from_str;
pub(crate) use write::{to_string_pretty, to_writer, to_writer_pretty};
