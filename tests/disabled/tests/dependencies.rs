//! A build with `default-features = false` compiles the macro crate and nothing else:
//! yieldprof's normal dependencies are then exactly yieldprof-macros and its own
//! (the proc-macro support crates). Read with `cargo tree --offline` on this crate's
//! lock file, which the build of this test has fetched.

use std::collections::BTreeSet;
use std::process::Command;

/// The crates `cargo tree -e normal -p <package>` lists, as `name vversion`, without
/// the package itself.
fn tree(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args([
            "--format",
            "{p}",
            "--manifest-path",
            manifest,
            "-p",
            package,
        ])
        .output()
        .expect("cargo runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `proc-macro2 v1.0.107 (*)`, `yieldprof-macros v0.1.0 (proc-macro) (/path)`:
    // the name and version only.
    text.lines()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .filter(|c| !c.is_empty() && !c.starts_with(&format!("{package} ")))
        .collect()
}

#[test]
fn disabled_build_depends_on_the_macro_crate_and_its_dependencies_only() {
    let disabled = tree("yieldprof");
    let macro_crate = disabled
        .iter()
        .find(|c| c.starts_with("yieldprof-macros v"))
        .cloned()
        .unwrap_or_else(|| panic!("no yieldprof-macros in {disabled:?}"));
    let mut expected = tree("yieldprof-macros");
    expected.insert(macro_crate);
    let extra: Vec<&String> = disabled.difference(&expected).collect();
    assert!(
        extra.is_empty(),
        "the disabled build compiles {extra:?} beyond yieldprof-macros and its dependencies"
    );
    assert_eq!(disabled, expected);
    println!("{} crates besides yieldprof: {disabled:?}", disabled.len());
}
