//! How a command fails: its exit code and the message a person reads.

use std::fmt;
use std::process::ExitCode;

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The run broke a `--fail-if` threshold or a budget limit: exit code 1, with every
    /// one listed, so CI shows them all at once.
    Exceeded(String),
    /// A file is missing, unreadable or malformed, or an output cannot be written: exit
    /// code 2, as for the usage errors clap reports.
    Input(String),
}

impl Failure {
    /// 1 for a run that broke its limits, 2 for one that could not be judged.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Exceeded(_) => ExitCode::from(1),
            Failure::Input(_) => ExitCode::from(2),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Exceeded(list) => write!(f, "{}", list.trim_end()),
            Failure::Input(why) => write!(f, "yieldprof: error: {why}"),
        }
    }
}
