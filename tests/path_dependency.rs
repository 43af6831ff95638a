//! `yieldprof` builds as a path dependency of another workspace, e.g. a monorepo that
//! vendors its crates. There the nearest `[workspace]` above each crate is the
//! monorepo's, so a field the crates inherited from this workspace would not resolve.
//! A dependency on this checkout's own path would not show it: above the crates there,
//! cargo finds this workspace. The client also renames the dependency (`yp = { package =
//! "yieldprof" }`): the attribute finds it under that name without `crate = ...`.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

const MANIFEST: &str = r#"[package]
name = "client"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
yp = { package = "yieldprof", path = "vendor/yieldprof" }
"#;

const MAIN: &str = r#"#[yp::instrument_wait]
fn wait_once() {
    std::thread::yield_now();
}

fn main() {
    wait_once();
}
"#;

#[test]
fn vendored_into_another_workspace_and_renamed_it_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("path-dependency");
    let client = dir.join("client");
    // An earlier run's links would make `symlink` fail.
    if client.exists() {
        fs::remove_dir_all(&client).unwrap();
    }
    fs::create_dir_all(client.join("src")).unwrap();
    fs::create_dir_all(client.join("vendor")).unwrap();
    // Links rather than copies: cargo looks for a crate's workspace from the path as
    // written, so the crates count as inside the client's tree, while their files keep
    // the mtimes that spare a rebuild on the next run.
    for krate in ["yieldprof", "yieldprof-macros"] {
        symlink(root.join(krate), client.join("vendor").join(krate)).unwrap();
    }
    fs::write(client.join("Cargo.toml"), MANIFEST).unwrap();
    fs::write(client.join("src/main.rs"), MAIN).unwrap();
    // This workspace's versions, which building this test has already downloaded:
    // `--offline` then needs no network.
    fs::copy(root.join("Cargo.lock"), client.join("Cargo.lock")).unwrap();

    let out = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet"])
        .current_dir(&client)
        // Kept between runs, so that a later run checks only what changed.
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`cargo check` in {} exited with {}:\n{}",
        client.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
