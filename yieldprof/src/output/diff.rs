//! Differential flame graphs of two folded files (e.g. the demo unpadded vs padded),
//! and the strict folded-file reader behind them.

use crate::output::flamegraph;
use crate::output::fold::Metric;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A line of a folded file that is not `stack count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Reads folded stacks: `frame;frame;... <count>` per line; blank lines are skipped.
/// Identical stacks are summed. Every malformed line is reported, with its number.
///
/// ```
/// let ok = yieldprof::report::parse_folded("main;[work] 5\nmain;[work] 2\n").unwrap();
/// assert_eq!(ok, vec![("main;[work]".to_string(), 7)]);
/// let bad = yieldprof::report::parse_folded("main;[work] 5\nno-count\n;x 1\n").unwrap_err();
/// assert_eq!(bad.iter().map(|m| m.line).collect::<Vec<_>>(), vec![2, 3]);
/// ```
pub fn parse_folded(text: &str) -> Result<Vec<(String, u64)>, Vec<Malformed>> {
    let mut stacks = BTreeMap::new();
    let mut bad = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let reason = match line.rsplit_once(' ') {
            None => Some("no space before the count"),
            Some((stack, count)) => match count.parse::<u64>() {
                Err(_) => Some("the count is not a whole number"),
                Ok(_) if stack.is_empty() => Some("the stack is empty"),
                Ok(_) if stack.split(';').any(str::is_empty) => Some("an empty frame (`;;`)"),
                Ok(n) => {
                    let total: &mut u64 = stacks.entry(stack.to_string()).or_insert(0);
                    *total = total.saturating_add(n);
                    None
                }
            },
        };
        if let Some(reason) = reason {
            bad.push(Malformed {
                line: i + 1,
                reason,
            });
        }
    }
    if bad.is_empty() {
        Ok(stacks.into_iter().collect())
    } else {
        Err(bad)
    }
}

/// Why [`diff`] could not make its graph.
#[derive(Debug)]
pub enum DiffError {
    /// A file could not be read or written.
    Io(PathBuf, io::Error),
    /// A folded file has malformed lines.
    Malformed(PathBuf, Vec<Malformed>),
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            DiffError::Malformed(p, lines) => {
                write!(f, "{}: {} malformed line(s):", p.display(), lines.len())?;
                for m in lines.iter().take(20) {
                    write!(f, " line {}: {};", m.line, m.reason)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DiffError {}

fn read(path: &Path) -> Result<Vec<(String, u64)>, DiffError> {
    let text = crate::base::text::read_utf8(path).map_err(|e| DiffError::Io(path.into(), e))?;
    parse_folded(&text).map_err(|m| DiffError::Malformed(path.into(), m))
}

/// Lines `stack before after`, the input of a differential flame graph.
fn differential(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<String> {
    let mut both: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (s, n) in before {
        both.entry(s).or_default().0 += n;
    }
    for (s, n) in after {
        both.entry(s).or_default().1 += n;
    }
    both.into_iter()
        .map(|(s, (b, a))| format!("{s} {b} {a}"))
        .collect()
}

/// Writes a differential flame graph of `before` → `after` (two `.folded` files) as
/// SVG into `out`: frame widths are the *after* profile; red frames grew, blue shrank.
///
/// ```no_run
/// let mut svg = Vec::new();
/// yieldprof::report::diff(
///     "target/yieldprof/spsc-packed-spin.folded".as_ref(),
///     "target/yieldprof/spsc-padded-spin.folded".as_ref(),
///     &mut svg,
/// )
/// .unwrap();
/// ```
pub fn diff(before: &Path, after: &Path, out: impl Write) -> Result<(), DiffError> {
    let lines = differential(&read(before)?, &read(after)?);
    let title = format!(
        "yieldprof diff: {} → {}",
        before.file_stem().unwrap_or_default().to_string_lossy(),
        after.file_stem().unwrap_or_default().to_string_lossy()
    );
    flamegraph::write_diff_svg(&lines, Metric::Wall, &title, out)
        .map_err(|e| DiffError::Io(PathBuf::from("<svg output>"), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_only_in_one_profile_gets_zero_in_the_other() {
        let before = vec![("t;a;[spin]".to_string(), 10), ("t;[work]".to_string(), 5)];
        let after = vec![("t;[work]".to_string(), 7), ("t;b;[yield]".to_string(), 3)];
        assert_eq!(
            differential(&before, &after),
            vec!["t;[work] 5 7", "t;a;[spin] 10 0", "t;b;[yield] 0 3"]
        );
    }

    #[test]
    fn malformed_lines_are_each_reported() {
        let bad = parse_folded("a 1\nb x\n\nc;;d 2\n 3\nfine 4\nnospace").unwrap_err();
        let lines: Vec<(usize, &str)> = bad.iter().map(|m| (m.line, m.reason)).collect();
        assert_eq!(
            lines,
            vec![
                (2, "the count is not a whole number"),
                (4, "an empty frame (`;;`)"),
                (5, "the stack is empty"),
                (7, "no space before the count"),
            ]
        );
    }
}
