//! Number, time and line formatting shared by every text the crate writes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Columns every text report stays within.
pub(crate) const WIDTH: usize = 100;

/// A name the host chose (a thread's, a frame's) as reports show it; `None` when
/// blank. yieldprof's own frames are written `[...]` (`[work]`, `[spin]`,
/// `[overflow]`, ...), so a name of that form has its brackets turned into
/// parentheses: it never passes for one of them.
pub(crate) fn host_name(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return None;
    }
    Some(
        match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            Some(inner) => format!("({inner})"),
            None => name.to_string(),
        },
    )
}

/// `1234567` ns as `1.23 ms`: three significant figures, the unit the reports use.
///
/// ```
/// use yieldprof::report::text::duration;
/// assert_eq!(duration(1_234_567), "1.23 ms");
/// assert_eq!(duration(850), "850 ns");
/// ```
pub fn duration(ns: u64) -> String {
    let ns = ns as f64;
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `1 thread`, `2 threads`: a count with its noun.
pub(crate) fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// A watched line as a budget violation names it:
/// ``FALSE line 0x7f00 (`head` +0, `tail` +8; 120 invalidations)``.
pub fn shared_line<'a>(
    verdict: impl std::fmt::Display,
    address: impl std::fmt::LowerHex,
    words: impl Iterator<Item = (&'a str, u64)>,
    invalidations: u64,
) -> String {
    let fields: Vec<String> = words
        .map(|(name, offset)| format!("`{name}` +{offset}"))
        .collect();
    format!(
        "{verdict} line {address:#x} ({}; {invalidations} invalidations)",
        fields.join(", ")
    )
}

/// `part / whole`, with an empty whole counted as one.
pub(crate) fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

/// `part` as a percentage of `whole`; 0 when `whole` is 0.
pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * share(part, whole)
    }
}

/// `text` as lines of at most 100 columns (the width of every text report), broken at
/// spaces: the first starts with `first`, the rest with `rest`. No trailing newline.
///
/// ```
/// let text = "word ".repeat(30);
/// let lines = yieldprof::report::text::wrap(text.trim_end(), "  fix: ", "    ");
/// assert_eq!(lines.lines().count(), 2);
/// assert!(lines.lines().all(|l| l.chars().count() <= 100));
/// ```
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = first.to_string();
    let mut col = first.chars().count();
    for (j, word) in text.split(' ').enumerate() {
        let len = word.chars().count();
        if j > 0 && col + 1 + len > WIDTH {
            out.push('\n');
            out.push_str(rest);
            col = rest.chars().count();
        } else if j > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
    }
    out
}

/// The first `max` characters of `s`, marked with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let kept: String = s.chars().take(max - 1).collect();
        format!("{kept}…")
    }
}

/// The last `max` characters of `s`, marked with `…` when cut: the end of a path
/// or of a `module::function` name is the part that tells them apart.
///
/// ```
/// assert_eq!(yieldprof::report::text::tail("app::queue::pop", 8), "…ue::pop");
/// ```
pub fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let kept: String = s.chars().skip(n - max + 1).collect();
        format!("…{kept}")
    }
}

/// `t` in UTC as `20261202T151023.120Z`.
pub(crate) fn stamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        since.subsec_millis()
    )
}

/// Unix seconds as a UTC date and minute, e.g. `2026-12-03 02:58 UTC`.
///
/// ```
/// assert_eq!(yieldprof::report::text::date_time(1_796_266_680), "2026-12-03 02:58 UTC");
/// ```
pub fn date_time(unix_s: u64) -> String {
    let (y, m, d) = civil_from_days((unix_s / 86_400) as i64);
    let s = unix_s % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        s / 3600,
        s / 60 % 60
    )
}

/// The proleptic Gregorian date of a count of days since 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A text file read whole; one that is not UTF-8 is an `InvalidData` error naming the
/// first line that is not, and the byte in the file where it goes wrong (std's error
/// names neither).
#[cfg(feature = "enabled")]
pub fn read_utf8(path: &std::path::Path) -> std::io::Result<String> {
    String::from_utf8(std::fs::read(path)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line {line} is not UTF-8 (byte {at})"),
        )
    })
}

/// Every `a::b::C` inside `<..>` cut to `C` (`<m::R as m::H>::f` → `<R as H>::f`);
/// the path outside them (`outer::inner`, `Ring<..>::push`) stays.
pub(crate) fn last_segments(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut start = 0;
    let mut depth = 0u32;
    let mut rest = path;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("::") {
            if depth > 0 && !out[start..].is_empty() {
                out.truncate(start);
            } else {
                out.push_str("::");
                start = out.len();
            }
            rest = after;
            continue;
        }
        out.push(c);
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !(c.is_alphanumeric() || c == '_') {
            start = out.len();
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_within_width() {
        let text = "word ".repeat(60);
        let w = wrap(text.trim_end(), "  - ", "    ");
        assert!(w.lines().all(|l| l.chars().count() <= WIDTH), "{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("    word")), "{w}");
        assert_eq!(w.split_whitespace().filter(|&x| x == "word").count(), 60);
    }

    #[test]
    fn cut_and_tail_keep_max_characters() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(tail("abcdef", 4), "…def");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(duration(1_234_567), "1.23 ms");
        assert_eq!(percent(1, 0), 0.0);
        assert_eq!(share(3, 0), 3.0);
        assert_eq!(
            shared_line(
                "FALSE",
                0x7f00u64,
                [("head", 0), ("tail", 8)].into_iter(),
                120
            ),
            "FALSE line 0x7f00 (`head` +0, `tail` +8; 120 invalidations)"
        );
        assert_eq!(
            (count(1u64, "thread"), count(2u64, "core")),
            ("1 thread".into(), "2 cores".into())
        );
    }

    #[test]
    fn stamps_are_utc_calendar_times() {
        let at = |secs: u64, millis: u64| {
            stamp(
                UNIX_EPOCH
                    + std::time::Duration::from_secs(secs)
                    + std::time::Duration::from_millis(millis),
            )
        };
        assert_eq!(at(0, 0), "19700101T000000.000Z");
        assert_eq!(at(1_700_000_000, 7), "20231114T221320.007Z");
        // 2024-02-29, a leap day, and the last second of 1999.
        assert_eq!(at(1_709_164_800, 999), "20240229T000000.999Z");
        assert_eq!(at(946_684_799, 0), "19991231T235959.000Z");
    }

    #[test]
    fn dates_are_utc_to_the_minute() {
        assert_eq!(date_time(1_709_164_800 + 3_723), "2024-02-29 01:02 UTC");
    }

    #[test]
    fn inner_paths_keep_their_last_segment() {
        assert_eq!(
            last_segments("<m::chan::Recv as m::chan::Handle>::try_select"),
            "<Recv as Handle>::try_select"
        );
        assert_eq!(last_segments("Ring<_>::push"), "Ring<_>::push");
        assert_eq!(last_segments("outer::inner"), "outer::inner");
        assert_eq!(
            last_segments("G<m::A, core::option::Option<u8>>::f"),
            "G<A, Option<u8>>::f"
        );
    }
}
