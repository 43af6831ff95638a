//! Number and line formatting shared by every text the crate writes.

/// Columns every text report stays within.
pub(crate) const WIDTH: usize = 100;

/// `1234567` ns as `1.23 ms`.
pub(crate) fn duration(ns: u64) -> String {
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

/// `text` as lines of at most [`WIDTH`] columns, broken at spaces: the first starts
/// with `first`, the rest with `rest`. No trailing newline.
pub(crate) fn wrap(text: &str, first: &str, rest: &str) -> String {
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

/// The last `max` characters of `s`, marked with `…` when cut.
pub(crate) fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let kept: String = s.chars().skip(n - max + 1).collect();
        format!("…{kept}")
    }
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
    }
}
