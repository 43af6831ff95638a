//! The README stays short and true: at most 250 lines; its Rust code is the code of
//! `examples/quick_start.rs` (built and tested by `cargo test`); every file it or a page
//! of `docs/` links to exists; its test command is the one `.ci/run` runs.

use std::path::Path;

const README: &str = include_str!("../README.md");

/// The code blocks of `text` whose info string starts with `lang`.
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<&'a str>> = None;
    for line in text.lines() {
        match &mut open {
            None if line
                .strip_prefix("```")
                .is_some_and(|l| l.starts_with(lang)) =>
            {
                open = Some(Vec::new())
            }
            Some(body) if line == "```" => {
                out.push(body.join("\n"));
                open = None;
            }
            Some(body) => body.push(line),
            None => {}
        }
    }
    out
}

#[test]
fn the_readme_has_at_most_250_lines() {
    let n = README.lines().count();
    assert!(n <= 250, "README.md has {n} lines");
}

#[test]
fn every_rust_block_of_the_readme_is_code_of_the_quick_start_example() {
    let example = include_str!("../examples/quick_start.rs");
    let rust = blocks(README, "rust");
    assert_eq!(rust.len(), 2, "the program and its test");
    for block in rust {
        assert!(
            example.contains(&block),
            "not in examples/quick_start.rs:\n{block}"
        );
    }
}

/// `[text](target)` links in `text` that point into the repository.
fn local_links(text: &str) -> Vec<&str> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target))
        .filter(|t| !t.contains("://") && !t.starts_with('#'))
        .map(|t| t.split('#').next().unwrap())
        .collect()
}

#[test]
fn every_local_link_of_the_readme_and_docs_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![(root.join("README.md"), README.to_string())];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).unwrap();
            pages.push((path, text));
        }
    }
    let mut checked = 0;
    for (page, text) in &pages {
        for link in local_links(text) {
            let target = page.parent().unwrap().join(link);
            assert!(
                target.exists(),
                "{}: `{link}` does not exist",
                page.display()
            );
            checked += 1;
        }
    }
    // The README's table of docs alone has more than ten.
    assert!(checked > 10, "only {checked} links found");
}

#[test]
fn the_readme_picture_is_a_flame_graph_yieldprof_wrote() {
    let link = local_links(README)
        .into_iter()
        .find(|l| l.ends_with(".svg"))
        .expect("the README shows an SVG");
    let svg = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(link)).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{link}");
    assert!(
        svg.contains("yieldprof: spsc-"),
        "{link} is not the demo's graph"
    );
}

#[test]
fn the_readme_test_command_is_run_verbatim_by_ci() {
    let ci = include_str!("../.ci/run");
    let command = blocks(README, "sh")
        .iter()
        .flat_map(|b| b.lines().map(str::to_owned).collect::<Vec<_>>())
        .find(|l| l.contains("cargo test"))
        .expect("the README's test command");
    let command = command.split('#').next().unwrap().trim();
    assert!(
        command.ends_with("cargo test --workspace --no-fail-fast"),
        "{command}"
    );
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run lacks `{command}`"
    );
    // A failing test does not hide the others: every cargo test line runs them all.
    for line in ci.lines().filter(|l| l.contains("cargo test")) {
        assert!(line.contains("--no-fail-fast"), ".ci/run: `{line}`");
    }
}
