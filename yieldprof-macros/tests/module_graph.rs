//! No import circle between the macro's modules, so each stage (parse → validate →
//! expand) can be read without the ones after it. A module that names `crate::x`
//! depends on `x`. The sources are read as tokens: paths in comments and strings
//! don't count.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::BTreeMap;
use std::fs;

/// The names a token stream reaches as `crate::name` or `crate::{name, ..}`.
fn crate_paths(tokens: TokenStream, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = token {
            crate_paths(g.stream(), out);
        }
        let is = |j: usize, text: &str| tokens.get(i + j).is_some_and(|t| t.to_string() == text);
        if !(is(0, "crate") && is(1, ":") && is(2, ":")) {
            continue;
        }
        match tokens.get(i + 3) {
            Some(TokenTree::Ident(name)) => out.push(name.to_string()),
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                // The first name of each item: `crate::{a::X, b}` reaches `a` and `b`.
                let mut first = true;
                for t in g.stream() {
                    if let (TokenTree::Ident(name), true) = (&t, first) {
                        out.push(name.to_string());
                    }
                    first = matches!(&t, TokenTree::Punct(p) if p.as_char() == ',');
                }
            }
            _ => {}
        }
    }
}

/// A module path `a → b → … → a`, if the graph has one.
fn cycle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut cycle = path[start..].to_vec();
            cycle.push(module.to_owned());
            return Some(cycle);
        }
        if done.iter().any(|m| m == module) {
            return None;
        }
        path.push(module.to_owned());
        let found = graph[module]
            .iter()
            .find_map(|next| visit(next, graph, path, done));
        path.pop();
        done.push(module.to_owned());
        found
    }
    let mut done = Vec::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_import_each_other_without_a_cycle() {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut sources = BTreeMap::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let module = path.file_stem().unwrap().to_str().unwrap().to_owned();
            sources.insert(module, fs::read_to_string(&path).unwrap());
        }
    }
    let graph: BTreeMap<String, Vec<String>> = sources
        .iter()
        .map(|(module, text)| {
            let mut names = Vec::new();
            crate_paths(text.parse().unwrap(), &mut names);
            // Anything else at the root (`crate::Item`) lives in lib.rs, which names
            // every module: using it from a module closes a circle through the root.
            let mut deps: Vec<String> = names
                .into_iter()
                .map(|n| {
                    if sources.contains_key(&n) {
                        n
                    } else {
                        "lib".into()
                    }
                })
                .filter(|n| n != module)
                .collect();
            if module == "lib" {
                deps.extend(sources.keys().filter(|m| *m != "lib").cloned());
            }
            deps.sort();
            deps.dedup();
            (module.clone(), deps)
        })
        .collect();
    assert_eq!(cycle(&graph), None, "import graph: {graph:#?}");
}
