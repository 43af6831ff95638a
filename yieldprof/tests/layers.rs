//! The layer rule of ARCHITECTURE.md: a folder of `src/` names only itself and the
//! folders below it, sibling files do not import each other in a circle, and no
//! source file grows past 600 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top. `lib.rs` is the facade over all of them and is not ranked.
const LAYERS: [&str; 9] = [
    "base", "config", "counters", "model", "record", "sync", "sharing", "analysis", "output",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The code of a file, unit tests and comments left out.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What follows each `prefix` in `code` up to the next non-identifier character.
fn names_after<'a>(code: &'a str, prefix: &str) -> BTreeSet<&'a str> {
    code.match_indices(prefix)
        .filter(|(i, _)| {
            !code[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
        })
        .map(|(i, _)| {
            let rest = &code[i + prefix.len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

/// The layer a file belongs to: its folder under `src/`.
fn layer_of(path: &Path) -> Option<usize> {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    LAYERS
        .iter()
        .position(|l| *l == first.trim_end_matches(".rs"))
}

#[test]
fn every_file_belongs_to_a_layer_or_is_the_facade() {
    for f in files(&src()) {
        let rel = f.strip_prefix(src()).unwrap();
        assert!(
            layer_of(&f).is_some() || rel == Path::new("lib.rs"),
            "{} is in no layer of {LAYERS:?}",
            rel.display()
        );
    }
}

#[test]
fn layers_import_only_themselves_and_layers_below() {
    let mut wrong = Vec::new();
    for f in files(&src()) {
        let Some(mine) = layer_of(&f) else { continue };
        for name in names_after(&code(&f), "crate::") {
            match LAYERS.iter().position(|l| *l == name) {
                Some(theirs) if theirs <= mine => {}
                Some(_) => wrong.push(format!(
                    "{} ({}) names crate::{name}, a higher layer",
                    f.strip_prefix(src()).unwrap().display(),
                    LAYERS[mine]
                )),
                // A root re-export hides which layer an item lives in.
                None => wrong.push(format!(
                    "{} names crate::{name}: name the item by its layer",
                    f.strip_prefix(src()).unwrap().display()
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn sibling_files_import_each_other_without_a_circle() {
    // Edges between the files of one folder (mod.rs, which declares them, left out).
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files(&src()) {
        let (Some(layer), Some(stem)) = (layer_of(&f), f.file_stem().and_then(|s| s.to_str()))
        else {
            continue;
        };
        if stem == "mod" {
            continue;
        }
        let folder = LAYERS[layer];
        let code = code(&f);
        let mut to: BTreeSet<String> = names_after(&code, &format!("crate::{folder}::"))
            .into_iter()
            .chain(names_after(&code, "super::"))
            .filter(|n| *n != stem)
            .map(|n| format!("{folder}/{n}"))
            .collect();
        to.retain(|t| src().join(format!("{t}.rs")).exists());
        edges.insert(format!("{folder}/{stem}"), to);
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut circle = path[i..].to_vec();
            circle.push(n.to_string());
            return Some(circle);
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, &edges, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = files(&src())
        .into_iter()
        .map(|f| (fs::read_to_string(&f).unwrap().lines().count(), f))
        .filter(|(n, _)| *n > 600)
        .map(|(n, f)| format!("{}: {n} lines", f.strip_prefix(src()).unwrap().display()))
        .collect();
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn the_crate_root_has_at_most_25_public_items() {
    // Root declarations start in column 0; the facade modules' `pub use`s are indented.
    let lib = code(&src().join("lib.rs"));
    let mut items: Vec<&str> = Vec::new();
    for line in lib.lines() {
        if let Some(path) = line.strip_prefix("pub use ") {
            let path = path.trim_end_matches(';');
            match path.split_once('{') {
                Some((_, names)) => items.extend(names.trim_end_matches('}').split(", ")),
                None => items.push(path.rsplit("::").next().unwrap()),
            }
        }
        for prefix in ["pub mod ", "macro_rules! "] {
            if let Some(rest) = line.strip_prefix(prefix) {
                items.push(rest.split([' ', ';', '{']).next().unwrap());
            }
        }
    }
    items.retain(|n| *n != "__private");
    items.sort();
    items.dedup();
    assert!(items.len() <= 25, "{} root items: {items:?}", items.len());
    // What the facade must keep: the attribute, the guard, the recording.
    for needed in [
        "instrument_wait",
        "init",
        "Guard",
        "Profile",
        "snapshot",
        "Session",
    ] {
        assert!(items.contains(&needed), "{needed} missing from {items:?}");
    }
}
