//! Runs a role of the current test binary in a child process, for what a test must
//! not do to its own process: exit, fork, lower limits, install seccomp, die mid-write.
//!
//! Each test file using it has one dispatcher test (`child`), which does nothing unless
//! [`ROLE`] is set: then it plays that role, as a host program would, and exits.

#![allow(dead_code)] // each test binary uses part of it

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The role the child plays.
pub const ROLE: &str = "YIELDPROF_TEST_ROLE";

/// The role this process was started for, if it is a child.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// What a child did.
#[derive(Debug)]
pub struct Exit {
    /// Exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The command that runs `role` in the dispatcher test, with no `YIELDPROF_*` variable
/// inherited but `env`.
pub fn command(role: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"]);
    for (k, _) in std::env::vars() {
        if k.starts_with("YIELDPROF") {
            cmd.env_remove(k);
        }
    }
    cmd.env(ROLE, role).envs(env.iter().copied());
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs `role` to its end.
pub fn run(role: &str, env: &[(&str, &str)]) -> Exit {
    let out = command(role, env).output().unwrap();
    Exit {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fresh, empty folder for one test of this process.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yieldprof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// File names in `dir`, sorted.
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Sum of the counts of the folded lines whose stack ends with `tail`.
pub fn folded_total(text: &str, tail: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.ends_with(tail))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}
