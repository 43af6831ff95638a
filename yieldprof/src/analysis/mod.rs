//! Reading the model: machine costs, findings, budgets, sessions and the machine probe.
//! Computes verdicts; writes no files.

#[cfg(feature = "enabled")]
pub(crate) mod blocking;
pub(crate) mod budget;
#[cfg(feature = "enabled")]
pub(crate) mod costs;
pub(crate) mod declared;
#[cfg(feature = "enabled")]
pub(crate) mod false_sharing;
#[cfg(feature = "enabled")]
pub(crate) mod findings;
#[cfg(feature = "enabled")]
pub(crate) mod handoff;
#[cfg(feature = "enabled")]
pub(crate) mod idle;
#[cfg(feature = "enabled")]
pub(crate) mod oversubscribed;
#[cfg(feature = "enabled")]
pub(crate) mod pools;
#[cfg(feature = "enabled")]
pub mod probe;
pub(crate) mod session;
#[cfg(feature = "enabled")]
pub(crate) mod slack;
