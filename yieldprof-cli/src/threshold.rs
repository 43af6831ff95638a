//! `--fail-if` expressions: `<figure><+|-><percent>%`, checked on every wait site of
//! a [`Comparison`].

use std::fmt;
use std::str::FromStr;
use yieldprof::report::{Comparison, Row};
use yieldprof::Kind;

/// One `--fail-if`: a figure may not grow (`+`) or fall (`-`) by more than `percent`.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As the user wrote it, for the violation list.
    text: String,
    /// `episodes`, `episodes_per_s`, `wall`, `switches`, `p50`, `p99`, `calls` or
    /// `<kind>-calls`.
    figure: String,
    grows: bool,
    percent: f64,
}

/// The figures of [`yieldprof::report::compare`]'s rows, as `--fail-if` names them.
fn figures() -> Vec<String> {
    let mut names: Vec<String> = [
        "episodes",
        "episodes_per_s",
        "wall",
        "switches",
        "p50",
        "p99",
        "calls",
    ]
    .map(String::from)
    .to_vec();
    names.extend(Kind::ALL.iter().map(|k| format!("{}-calls", k.name())));
    names
}

/// A row's figure as `--fail-if` names it: `wall_ns` → `wall`, `yield calls` →
/// `yield-calls`.
fn figure_of(row: &Row) -> String {
    row.figure.trim_end_matches("_ns").replace(' ', "-")
}

impl FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Threshold, String> {
        let usage = || {
            format!(
                "`{text}` is not <figure>+<percent>% or <figure>-<percent>% \
                 (e.g. p99+10%, wall+5%, switches+0%, episodes-20%)"
            )
        };
        let body = text.trim().strip_suffix('%').ok_or_else(usage)?;
        // The sign is the last `+` or `-`: kind names hold `-` (`async-yield-calls`).
        let at = body.rfind(['+', '-']).ok_or_else(usage)?;
        let (figure, number) = (&body[..at], &body[at + 1..]);
        let percent: f64 = number.parse().map_err(|_| usage())?;
        if !percent.is_finite() || percent < 0.0 {
            return Err(usage());
        }
        let known = figures();
        if !known.iter().any(|f| f == figure) {
            return Err(format!(
                "`{text}`: `{figure}` is not a figure of the comparison ({})",
                known.join(", ")
            ));
        }
        Ok(Threshold {
            text: text.trim().to_string(),
            figure: figure.to_string(),
            grows: &body[at..=at] == "+",
            percent,
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Threshold {
    fn applies_to(&self, row: &Row) -> bool {
        let figure = figure_of(row);
        figure == self.figure || (self.figure == "calls" && figure.ends_with("-calls"))
    }

    /// Whether `row` broke this threshold. A site in only one run is not compared; a
    /// figure that grew from 0 has grown by more than any percentage.
    fn broken_by(&self, row: &Row) -> bool {
        let (Some(before), Some(after)) = (row.change.before, row.change.after) else {
            return false;
        };
        match row.change.percent() {
            Some(p) if self.grows => p > self.percent,
            Some(p) => -p > self.percent,
            None => self.grows && before == 0 && after > 0,
        }
    }
}

/// One line per site and figure that broke a threshold: site, figure, before → after,
/// change, and the threshold.
pub fn violations(thresholds: &[Threshold], comparison: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for t in thresholds {
        for row in comparison.rows.iter().filter(|r| t.applies_to(r)) {
            if !t.broken_by(row) {
                continue;
            }
            let figure = figure_of(row);
            let value = |v: Option<u64>| match v {
                Some(ns) if row.figure.ends_with("_ns") => yieldprof::report::text::duration(ns),
                Some(n) => n.to_string(),
                None => "-".into(),
            };
            let change = row
                .change
                .percent()
                .map_or("from 0".into(), |p| format!("{p:+.1}%"));
            out.push(format!(
                "site `{}`: {figure} {} → {} ({change}), over --fail-if {t}",
                row.site,
                value(row.change.before),
                value(row.change.after)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_name_a_figure_a_sign_and_a_percentage() {
        let t: Threshold = "p99+10%".parse().unwrap();
        assert_eq!((t.figure.as_str(), t.grows, t.percent), ("p99", true, 10.0));
        let t: Threshold = "async-yield-calls-2.5%".parse().unwrap();
        assert_eq!(
            (t.figure.as_str(), t.grows, t.percent),
            ("async-yield-calls", false, 2.5)
        );
        let t: Threshold = "switches+0%".parse().unwrap();
        assert_eq!(
            (t.figure.as_str(), t.grows, t.percent),
            ("switches", true, 0.0)
        );
        // The rate of a site entered once per unit of work: a throughput drop.
        let t: Threshold = "episodes_per_s-20%".parse().unwrap();
        assert_eq!(
            (t.figure.as_str(), t.grows, t.percent),
            ("episodes_per_s", false, 20.0)
        );
    }

    #[test]
    fn malformed_expressions_say_what_is_expected() {
        for bad in ["p99", "p99+10", "p99*10%", "p99+ten%", "p99+-1%", "+10%"] {
            let e = bad.parse::<Threshold>().unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
        let e = "latency+10%".parse::<Threshold>().unwrap_err();
        assert!(e.contains("`latency` is not a figure"), "{e}");
    }
}
