//! A flame graph's subtitle on as many lines as it needs.
//!
//! inferno draws its subtitle as one line, centred, cut by the image's edges past about
//! 165 characters of a 1200-pixel graph: the headline at its end was lost behind a long
//! legend. Here the subtitle is cut into lines at its `; ` and `, ` (the separator
//! ends a line), inferno draws the first, and the rest are added under it, with
//! everything below (the frames, the details and match lines, the image) moved down by
//! the room they take.

/// The characters a subtitle line holds: 1180 pixels of 12-pixel text at inferno's
/// 0.59 em per character hold 166; the rest is room for wide letters.
const LINE: usize = 150;

/// `text` cut into lines of at most [`LINE`] characters, after a `; ` or `, ` (or a
/// space, in a piece longer than a line); each line but the last keeps its separator.
pub(crate) fn lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for piece in pieces(text) {
        let (len, piece_len) = (line.chars().count(), piece.trim_end().chars().count());
        if !line.is_empty() && len + piece_len > LINE {
            out.push(line.trim_end().to_string());
            line.clear();
        }
        line.push_str(piece);
    }
    if !line.trim_end().is_empty() || out.is_empty() {
        out.push(line.trim_end().to_string());
    }
    out
}

/// `text` split after each `; ` and `, `, and after spaces in what is still longer
/// than a line.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b' ' && i > 0 && (bytes[i - 1] == b';' || bytes[i - 1] == b',') {
            out.push(&text[start..=i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .flat_map(|p| match p.chars().count() > LINE {
            true => p.split_inclusive(' ').collect(),
            false => vec![p],
        })
        .collect()
}

/// Adds `more` subtitle lines under the one inferno drew in `svg` (text at
/// `font_size` pixels), moving the graph below them down; `svg` as it was when it has
/// no subtitle or `more` is empty.
pub(crate) fn add_lines(svg: String, more: &[String], font_size: usize) -> String {
    let step = font_size * 3 / 2;
    let dy = step * more.len();
    let Some(sub) = svg.find("<text id=\"subtitle\"") else {
        return svg;
    };
    let Some(sub_end) = svg[sub..]
        .find("</text>")
        .map(|i| sub + i + "</text>".len())
    else {
        return svg;
    };
    if more.is_empty() {
        return svg;
    }
    let Some(y) = attr(&svg[sub..sub_end], "y") else {
        return svg;
    };
    let mut out = String::with_capacity(svg.len() + 200 * more.len());
    // Before the subtitle: the image's height, its view box and its background.
    let head = &svg[..sub];
    let height = svg
        .find("<svg ")
        .and_then(|at| attr(&svg[at..], "height"))
        .unwrap_or(0.0);
    let grown = format!("{}", height as usize + dy);
    out.push_str(
        &head
            .replacen(
                &format!("height=\"{height}\""),
                &format!("height=\"{grown}\""),
                2,
            )
            .replacen(&format!(" {height}\""), &format!(" {grown}\""), 1),
    );
    out.push_str(&svg[sub..sub_end]);
    for (i, line) in more.iter().enumerate() {
        out.push_str(&format!(
            "<text id=\"subtitle{}\" x=\"50.0000%\" y=\"{:.2}\">{}</text>",
            i + 2,
            y + (step * (i + 1)) as f64,
            crate::output::titles::escape(line)
        ));
    }
    // After it: the details and match lines at the bottom move down, and the frames.
    let rest = &svg[sub_end..];
    let mut rest = rest.to_string();
    for id in ["details", "matched"] {
        rest = move_text(&rest, id, dy);
    }
    out.push_str(&rest.replacen(
        "<svg id=\"frames\"",
        &format!("<svg id=\"frames\" y=\"{dy}\""),
        1,
    ));
    out
}

/// The number in `key="…"` of the first tag in `tag`.
fn attr(tag: &str, key: &str) -> Option<f64> {
    let end = tag.find('>')?;
    let pat = format!(" {key}=\"");
    let from = tag[..end].find(&pat)? + pat.len();
    tag[from..].split('"').next()?.parse().ok()
}

/// `svg` with the `y` of `<text id="{id}" …>` moved down by `dy`.
fn move_text(svg: &str, id: &str, dy: usize) -> String {
    let tag = format!("<text id=\"{id}\"");
    let Some(at) = svg.find(&tag) else {
        return svg.to_string();
    };
    let Some(y) = attr(&svg[at..], "y") else {
        return svg.to_string();
    };
    let end = at + svg[at..].find('>').unwrap_or(0);
    let old = &svg[at..end];
    let new = old.replacen(
        &format!(" y=\"{y:.2}\""),
        &format!(" y=\"{:.2}\"", y + dy as f64),
        1,
    );
    format!("{}{new}{}", &svg[..at], &svg[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_subtitle_is_cut_after_its_separators_into_lines_that_fit() {
        let legend: Vec<String> = (0..30).map(|i| format!("[kind{i}] colour {i}")).collect();
        let text = format!(
            "12 threads, 3.1 s thread time, 85.1% of it waiting; colours: {}",
            legend.join(", ")
        );
        let lines = lines(&text);
        assert!(lines.len() >= 3, "{lines:#?}");
        assert!(
            lines.iter().all(|l| l.chars().count() <= LINE),
            "{lines:#?}"
        );
        // Nothing lost, nothing cut inside a piece: joined, the text as it was.
        assert_eq!(lines.join(" "), text);
        assert!(lines[0].starts_with("12 threads, 3.1 s thread time, 85.1% of it waiting;"));
        assert_eq!(super::lines("short"), ["short"]);
    }
}
