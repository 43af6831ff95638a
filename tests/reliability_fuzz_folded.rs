//! Bad input to the folded reader behind `diff`: `parse_folded` and `diff` never panic
//! on any input, and every malformed line is reported with its number. 256 cases per
//! property by default; the long run sets `PROPTEST_CASES=100000` (docs/reliability.md).

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use yieldprof::report::{diff, parse_folded, DiffError};

/// One line of a generated file: well-formed (its stack and count), or malformed.
#[derive(Clone, Debug)]
enum Line {
    Good(String, u64),
    Bad(String),
    Blank(String),
}

fn frame() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_:.\\[\\]-]{1,8}"
}

fn stack() -> impl Strategy<Value = String> {
    prop::collection::vec(frame(), 1..6).prop_map(|f| f.join(";"))
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        4 => (stack(), 0..1_000_000_000_000u64).prop_map(|(s, n)| Line::Good(s, n)),
        1 => stack().prop_map(Line::Bad),                                 // no count
        1 => (stack(), "[a-z+-]{1,3}[0-9]{0,3}").prop_map(|(s, c)| Line::Bad(format!("{s} {c}x"))),
        1 => (0..100u64).prop_map(|n| Line::Bad(format!(" {n}"))),        // no stack
        1 => (stack(), stack()).prop_map(|(a, b)| Line::Bad(format!("{a};;{b} 1"))),
        1 => stack().prop_map(|s| Line::Bad(format!(";{s} 2"))),
        1 => stack().prop_map(|s| Line::Bad(format!("{s}; 3"))),
        1 => stack().prop_map(|s| Line::Bad(format!("{s} 99999999999999999999999"))),
        1 => stack().prop_map(|s| Line::Bad(format!("{s} -1"))),
        1 => "[ \t]{0,3}".prop_map(Line::Blank),
    ]
}

fn text_of(lines: &[Line], crlf: bool) -> String {
    let end = if crlf { "\r\n" } else { "\n" };
    lines
        .iter()
        .map(|l| match l {
            Line::Good(s, n) => format!("{s} {n}{end}"),
            Line::Bad(s) | Line::Blank(s) => format!("{s}{end}"),
        })
        .collect()
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yieldprof-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

proptest! {
    #[test]
    fn any_bytes_parse_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        match parse_folded(&text) {
            Ok(stacks) => {
                // Sorted and summed: each stack once.
                prop_assert!(stacks.windows(2).all(|w| w[0].0 < w[1].0));
            }
            Err(bad) => {
                let n = text.lines().count();
                prop_assert!(!bad.is_empty());
                prop_assert!(bad.windows(2).all(|w| w[0].line < w[1].line));
                prop_assert!(bad.iter().all(|m| m.line >= 1 && m.line <= n));
            }
        }
    }

    #[test]
    fn every_malformed_line_is_reported_with_its_number(
        lines in prop::collection::vec(line(), 0..40),
        crlf in any::<bool>(),
    ) {
        let text = text_of(&lines, crlf);
        let expected_bad: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l, Line::Bad(_)))
            .map(|(i, _)| i + 1)
            .collect();
        match parse_folded(&text) {
            Ok(stacks) => {
                prop_assert!(expected_bad.is_empty());
                let mut sums: BTreeMap<String, u64> = BTreeMap::new();
                for l in &lines {
                    if let Line::Good(s, n) = l {
                        let t = sums.entry(s.clone()).or_insert(0);
                        *t = t.saturating_add(*n);
                    }
                }
                prop_assert_eq!(stacks, sums.into_iter().collect::<Vec<_>>());
            }
            Err(bad) => {
                let got: Vec<usize> = bad.iter().map(|m| m.line).collect();
                prop_assert_eq!(got, expected_bad);
                prop_assert!(bad.iter().all(|m| !m.reason.is_empty()));
            }
        }
    }
}

proptest! {
    #[test]
    fn diff_never_panics_and_names_the_file_and_lines(
        before in prop::collection::vec(line(), 0..20),
        after in prop::collection::vec(line(), 0..20),
        junk in prop::collection::vec(any::<u8>(), 0..64),
        case in 0..3u8,
    ) {
        let a = temp_file("before.folded", text_of(&before, false).as_bytes());
        let b = match case {
            // Not UTF-8 at all: an I/O error, not a panic.
            0 => temp_file("after.folded", &[&[0xff, 0xfe][..], &junk].concat()),
            1 => temp_file("after.folded", &junk),
            _ => temp_file("after.folded", text_of(&after, true).as_bytes()),
        };
        let mut svg = Vec::new();
        let bad_before = before.iter().any(|l| matches!(l, Line::Bad(_)));
        match diff(&a, &b, &mut svg) {
            Ok(()) => {
                prop_assert!(!bad_before);
                prop_assert!(String::from_utf8_lossy(&svg).contains("<svg"));
            }
            Err(DiffError::Malformed(path, lines)) => {
                prop_assert!(!lines.is_empty());
                prop_assert!(path == a || (path == b && !bad_before));
                let shown = DiffError::Malformed(path, lines.clone()).to_string();
                prop_assert!(shown.contains(&format!("line {}", lines[0].line)), "{}", shown);
            }
            Err(DiffError::Io(path, _)) => {
                prop_assert!(path == b && case <= 1 && !bad_before);
            }
        }
    }
}

/// The case the property first found: a profile against an empty one (or one whose
/// counts are all 0) is a graph, not an error from the renderer.
#[test]
fn diff_against_an_empty_profile_is_a_graph() {
    for (before, after) in [("A 5\n", ""), ("A 5\n", "A 0\n"), ("", ""), ("", "B 3\n")] {
        let a = temp_file("empty-before.folded", before.as_bytes());
        let b = temp_file("empty-after.folded", after.as_bytes());
        let mut svg = Vec::new();
        diff(&a, &b, &mut svg).unwrap_or_else(|e| panic!("{before:?} → {after:?}: {e}"));
        assert!(String::from_utf8_lossy(&svg).contains("<svg"));
    }
}
