//! `init`, its [`Guard`] and `flush` in a build without the `enabled` feature: the same
//! calls as `init.rs` and `flush.rs`, and nothing to write, so no file is written.

use crate::model::profile::Profile;
use crate::output::files::WriteError;
use crate::output::options::Options;
use std::path::PathBuf;
use std::time::Duration;

/// Starts profiling: in this build (no `enabled` feature) it returns a guard that
/// writes nothing.
pub fn init() -> Guard {
    Options::from_env().init()
}

/// The guard [`init`] returns; with the `enabled` feature off it writes nothing.
#[must_use = "the profile is written when the guard drops; bind it with `let _guard = ...`"]
#[derive(Debug)]
pub struct Guard {
    opts: Options,
}

impl Guard {
    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Writes nothing: nothing was recorded.
    pub fn write(&self) -> Result<Vec<PathBuf>, WriteError> {
        Ok(Vec::new())
    }

    /// Keeps the interval in the options; no snapshot is written.
    pub fn snapshot_every(mut self, every: Duration) -> Guard {
        self.opts.snapshot_every = Some(every);
        self
    }
}

impl Options {
    /// The guard for these options; it writes nothing.
    pub fn init(self) -> Guard {
        Guard { opts: self }
    }
}

/// Writes nothing: nothing was recorded.
pub fn flush() -> Result<Vec<PathBuf>, WriteError> {
    Ok(Vec::new())
}

impl Profile {
    /// Writes nothing: the profile is empty.
    pub fn write(&self, _dir: impl Into<PathBuf>, _name: &str) -> Result<Vec<PathBuf>, WriteError> {
        Ok(Vec::new())
    }
}
