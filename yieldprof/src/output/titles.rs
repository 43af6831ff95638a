//! What a drawn flame graph says on each frame, rewritten after inferno drew it: a
//! frame's own figures (its path's, from the thread up) in its hover title, and a label
//! cut so the function's name survives.
//!
//! inferno writes each frame as `<g><title>name (value unit, share)</title><rect … y=".."
//! … fg:x=".." fg:w=".."/><text …>label</text></g>`; its script, on zoom, draws a label
//! from the title minus its last `(…)` group, so the figures go inside that group (with no
//! `(` of their own) and never show as a label.

use crate::base::site::Kind;
use crate::base::text::{count, duration};
use crate::model::histogram::Histogram;
use std::collections::HashMap;
use std::io::{self, Write};

/// Wait frames' own figures by their path from the thread, as in the folded stacks
/// (`thread;frame;…;frame`). The paths are a tree of numbered names, not strings, and
/// text is made only for the frames a graph draws: a profile of 100 000 stacks draws
/// at most 8 192.
#[derive(Default)]
pub(crate) struct Hover {
    /// Each frame name once, thread roots among them.
    names: HashMap<String, u32>,
    /// The paths: (parent path, or `ROOT`; name) → path.
    paths: HashMap<(u32, u32), u32>,
    /// Per path: a wait frame's figures there and its site's index in `sites`.
    figures: Vec<Option<(Here, usize)>>,
    /// Per site (a thread name and a wait frame): its paths there, and the fine
    /// durations of its episodes there.
    pub(crate) sites: Vec<(usize, Histogram)>,
}

/// The parent of a thread root's path.
pub(crate) const ROOT: u32 = u32::MAX;

impl Hover {
    /// `name`'s number.
    pub(crate) fn name(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.insert(name.to_string(), id);
        id
    }

    /// The path of frame `name` (numbered) under `parent`.
    pub(crate) fn path(&mut self, parent: u32, name: u32) -> u32 {
        let next = self.figures.len() as u32;
        let id = *self.paths.entry((parent, name)).or_insert(next);
        if id == next {
            self.figures.push(None);
        }
        id
    }

    /// The figures of the wait frame at `path`; `site` gives its site's index the
    /// first time the path is seen, which counts as one more of the site's paths.
    pub(crate) fn figures(
        &mut self,
        path: u32,
        site: impl FnOnce(&mut Self) -> usize,
    ) -> &mut Here {
        if self.figures[path as usize].is_none() {
            let site = site(self);
            self.sites[site].0 += 1;
            self.figures[path as usize] = Some((Here::default(), site));
        }
        &mut self.figures[path as usize].as_mut().unwrap().0
    }

    /// The hover text of the frame at `path`, if it is a wait frame's.
    fn text(&self, path: &str) -> Option<String> {
        let mut at = ROOT;
        for name in path.split(';') {
            at = *self.paths.get(&(at, *self.names.get(name)?))?;
        }
        let (here, site) = self.figures[at as usize].as_ref()?;
        let (paths, fine) = &self.sites[*site];
        // The site's fine figure where this is its only path there.
        let p99 = if *paths == 1 {
            fine.quantile(0.99)
        } else {
            None
        };
        Some(here.text(p99))
    }
}

/// A wait frame's own figures: one path of one thread (threads of one frame name
/// together), not the site's totals in it.
#[derive(Default)]
pub(crate) struct Here {
    pub(crate) episodes: u64,
    pub(crate) wall_ns: u64,
    /// The nodes' coarse durations: a p99 within a factor of two.
    pub(crate) durations: Histogram,
    pub(crate) calls: [u64; Kind::ALL.len()],
}

impl Here {
    /// `p99` is the thread's fine figure for the site when this is its only path there.
    fn text(&self, p99: Option<u64>) -> String {
        let calls: Vec<String> = Kind::ALL
            .iter()
            .filter(|&&k| self.calls[k as usize] > 0)
            .map(|&k| format!("{} {}", k.name(), self.calls[k as usize]))
            .collect();
        let p99 = match p99 {
            Some(ns) => duration(ns),
            None => self
                .durations
                .coarse_quantile(0.99)
                .map_or("-".into(), |ns| format!("~{}", duration(ns))),
        };
        format!(
            "this thread, this path: {}, mean {}, p99 {p99}{}{}",
            count(self.episodes, "episode"),
            duration(self.wall_ns / self.episodes.max(1)),
            if calls.is_empty() { "" } else { "; calls: " },
            calls.join(", ")
        )
    }
}

/// One frame of the SVG: where its parts are in the text, and what they hold.
struct Frame {
    /// The frame name, unescaped.
    name: String,
    /// Where `)</title>` is, and where the label's text starts and ends.
    title_end: usize,
    label: (usize, usize),
    y: u64,
    x: u64,
    width: u64,
}

const G: &str = "<g><title>";

/// Parses the frame whose `<g><title>` starts at `at`.
fn frame(svg: &str, at: usize) -> Option<Frame> {
    let start = at + G.len();
    let title_end = start + svg[start..].find(")</title>")?;
    let title = &svg[start..title_end];
    let name = unescape(&title[..title.rfind(" (")?]);
    let end = title_end + svg[title_end..].find("</g>")?;
    let body = &svg[title_end..end];
    let attr = |key: &str| -> Option<u64> {
        let from = body.find(key)? + key.len();
        body[from..].split('"').next()?.parse().ok()
    };
    let text = body.find("<text")?;
    let label_start = title_end + text + body[text..].find('>')? + 1;
    let label_end = title_end + body.find("</text>")?;
    Some(Frame {
        name,
        title_end,
        label: (label_start, label_end),
        y: attr(" y=\"")?,
        x: attr(" fg:x=\"")?,
        width: attr(" fg:w=\"")?,
    })
}

/// Each frame's path from its thread, `thread;…;name`, by index in `frames`: its
/// parent is the frame of the row below whose span holds its start. The root row
/// (`all`) is in no path.
fn paths(frames: &[Frame]) -> Vec<Option<String>> {
    // Rows bottom up, each sorted by start.
    let mut rows: Vec<u64> = frames.iter().map(|f| f.y).collect();
    rows.sort_unstable_by(|a, b| b.cmp(a));
    rows.dedup();
    let mut by_row: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, f) in frames.iter().enumerate() {
        by_row.entry(f.y).or_default().push(i);
    }
    for row in by_row.values_mut() {
        row.sort_by_key(|&i| frames[i].x);
    }
    let mut paths: Vec<Option<String>> = vec![None; frames.len()];
    for (depth, y) in rows.iter().enumerate().skip(1) {
        for &i in &by_row[y] {
            let f = &frames[i];
            if depth == 1 {
                paths[i] = Some(f.name.clone());
                continue;
            }
            let below = &by_row[&rows[depth - 1]];
            let at = below.partition_point(|&p| frames[p].x <= f.x);
            let parent = at.checked_sub(1).map(|p| below[p]);
            paths[i] = parent
                .filter(|&p| f.x < frames[p].x + frames[p].width.max(1))
                .and_then(|p| paths[p].as_ref())
                .map(|p| format!("{p};{}", f.name));
        }
    }
    paths
}

/// The figures for a frame at `path`; in the split view (`thread;wait;…`) a path is
/// also looked up without its `wait` or `work` frame.
fn figures(hover: &Hover, path: &str) -> Option<String> {
    hover.text(path).or_else(|| {
        let (thread, rest) = path.split_once(';')?;
        let (half, rest) = rest.split_once(';')?;
        let split = half == "wait" || half == "work";
        split.then(|| hover.text(&format!("{thread};{rest}")))?
    })
}

/// Copies inferno's `svg` to `out` with each frame's own figures in its hover title
/// and every cut label cut in the module path, not the function's name.
pub(crate) fn rewrite(svg: &[u8], hover: &Hover, out: &mut impl Write) -> io::Result<()> {
    let Ok(svg) = std::str::from_utf8(svg) else {
        return out.write_all(svg);
    };
    let frames: Vec<Frame> = svg
        .match_indices(G)
        .filter_map(|(at, _)| frame(svg, at))
        .collect();
    let paths = paths(&frames);
    let mut copied = 0;
    for (f, path) in frames.iter().zip(&paths) {
        let figures = path.as_ref().and_then(|p| figures(hover, p));
        out.write_all(&svg.as_bytes()[copied..f.title_end])?;
        if let Some(text) = figures {
            write!(
                out,
                "; {}",
                escape(&text.replace('(', "[").replace(')', "]"))
            )?;
        }
        out.write_all(&svg.as_bytes()[f.title_end..f.label.0])?;
        let label = unescape(&svg[f.label.0..f.label.1]);
        out.write_all(escape(&cut(&f.name, &label)).as_bytes())?;
        copied = f.label.1;
    }
    out.write_all(&svg.as_bytes()[copied..])
}

/// The label for `name` where inferno drew `label`: inferno keeps a prefix and adds
/// `..`; this keeps the function's name (after the last `::`) and as much of the path
/// before it as fits, or the name's start when the name alone does not fit.
fn cut(name: &str, label: &str) -> String {
    let Some(kept) = label.strip_suffix("..") else {
        return label.to_string();
    };
    let Some((_, function)) = name.rsplit_once("::") else {
        return label.to_string();
    };
    let room = kept.chars().count();
    let chars = name.chars().count();
    if function.chars().count() <= room {
        let tail: String = name.chars().skip(chars - room).collect();
        format!("..{tail}")
    } else {
        let head: String = function.chars().take(room).collect();
        format!("{head}..")
    }
}

/// Text as inferno escapes it inside the SVG.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_cut_label_keeps_the_function_name() {
        // inferno kept 10 characters and added `..`.
        assert_eq!(
            cut("server::queue::wait_ready", "server::qu.."),
            "..wait_ready"
        );
        assert_eq!(
            cut("server::queue::wait_ready", "server::queue.."),
            "..e::wait_ready"
        );
        // The name alone is too long: its start, not the path's.
        assert_eq!(cut("server::queue::wait_ready", "serv.."), "wait..");
        // Not cut, or no path to cut: as inferno drew it.
        assert_eq!(cut("a::b", "a::b"), "a::b");
        assert_eq!(cut("worker (tid 7)", "worker.."), "worker..");
    }
}
