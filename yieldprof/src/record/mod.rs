//! The hot path: per-thread trees, the registry that keeps them after a thread exits
//! (`exited`: how), episode guards (a wait episode opens its frame at its first wait:
//! `lazy`, the hot path, which closes a common episode with one record that `fold`
//! adds to the tree in batches; `frame` opens and closes one), counted spins and the
//! public wait helpers.
//! Takes no lock after a thread's first episode at a site and never formats text.

// Without the `enabled` feature the hot path is a set of no-ops with the same names.
pub(crate) mod asked;
#[cfg(feature = "enabled")]
mod closing;
#[cfg(feature = "enabled")]
mod copy;
#[cfg(feature = "enabled")]
pub(crate) mod deferred;
#[cfg_attr(not(feature = "enabled"), path = "noop.rs")]
pub(crate) mod episode;
#[cfg(feature = "enabled")]
pub(crate) mod exited;
#[cfg(feature = "enabled")]
mod fold;
#[cfg(feature = "enabled")]
mod frame;
#[cfg(feature = "enabled")]
mod gaps;
#[cfg(feature = "enabled")]
mod lazy;
#[cfg(feature = "enabled")]
mod nodes;
#[cfg(feature = "enabled")]
pub(crate) mod open;
pub(crate) mod outlined;
#[cfg(feature = "enabled")]
mod records;
#[cfg(feature = "enabled")]
pub(crate) mod snooze;
pub(crate) mod spins;
#[cfg_attr(not(feature = "enabled"), path = "nothreads.rs")]
pub(crate) mod thread;
#[cfg(feature = "tracing")]
pub mod tracing_bridge;
#[cfg(feature = "enabled")]
mod unwaited;
pub(crate) mod wait;
#[cfg(feature = "enabled")]
pub(crate) mod woken;
