//! Reading the model: machine costs, findings, budgets, sessions and the machine probe.
//! Computes verdicts; writes no files.

pub(crate) mod budget;
pub(crate) mod costs;
pub(crate) mod findings;
pub mod probe;
pub(crate) mod session;
