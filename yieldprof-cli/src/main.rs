//! `yieldprof`: reads the files a profiled run writes (`<name>.json`, `<name>.folded`,
//! ...) and says what they mean; the arguments are in `cli`, each command in its own
//! module.

mod budget;
mod cli;
mod diff;
mod failure;
mod flamegraph;
mod merge;
mod probe;
mod run;
mod show;
mod threshold;
mod timeline;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = String::new();
    let result = match cli::Cli::parse().command {
        cli::Command::Show(a) => show::command(&a, &mut out),
        cli::Command::Diff(a) => diff::command(&a, &mut out),
        cli::Command::Flamegraph(a) => flamegraph::command(&a, &mut out),
        cli::Command::Merge(a) => merge::command(&a, &mut out),
        cli::Command::Timeline(a) => timeline::command(&a, &mut out),
        cli::Command::Probe(a) => probe::command(&a, &mut out),
        cli::Command::Check(a) => budget::command(&a, &mut out),
    };
    // What was made before a failure (the diff table above its violations) still
    // shows; a closed pipe (`| head`) is no error of the command's.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
