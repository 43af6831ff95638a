//! A trial run in a fresh process: the bench's own binary run as `child VARIANT`, which
//! prints one number (ns) and exits. A fresh process per trial, because what these
//! benches time (a thread's or pool's start) happens once per process.

use std::process::Command;

/// The number the child run as `variant` printed.
pub fn trial(variant: &str) -> f64 {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args(["child", variant])
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().expect("child prints its ns")
}
