//! Flame graphs (SVG, by inferno) with wait kinds in fixed colours.

use crate::base::site::FrameKind;
use crate::model::profile::Profile;
use crate::output::fold::{clean, Folded, Metric};
use crate::output::narrow::Drawn;
use crate::output::palette::{legend, palette};
use crate::output::subtitle;
use crate::output::titles::{rewrite, Hover, ROOT};
use inferno::flamegraph::color::{BasicPalette, Palette};
use inferno::flamegraph::{self, Options};
use std::collections::HashMap;
use std::io::{self, Write};

/// What a flame graph shows beside frame names: marks travel beside a name, never in
/// it, so a frame's name stays its identity across runs.
#[derive(Default)]
pub(crate) struct FrameNotes {
    /// Wait sites spinning on a falsely shared line: drawn in their own colour.
    pub(crate) falsely_shared: Vec<String>,
    /// Text added to a frame's hover title, by the frame's path: a wait frame's own
    /// episodes, mean, p99 and calls.
    pub(crate) hover: Hover,
}

/// Renders folded `stacks` as an SVG flame graph, and `notes` colour and annotate
/// frames. Frames too narrow to draw are kept (inferno's search finds and highlights
/// them) up to [`MAX_FRAMES`](crate::output::narrow::MAX_FRAMES); past that the
/// narrowest are merged into their parents, and the subtitle says how many. The
/// subtitle's legend names exactly the fixed colours drawn.
pub(crate) fn write_svg<W: Write>(
    stacks: &Folded,
    metric: Metric,
    title: &str,
    subtitle: Option<String>,
    notes: &FrameNotes,
    mut out: W,
) -> io::Result<()> {
    let mut palette = palette(&notes.falsely_shared);
    let drawn = Drawn::of(stacks);
    let mut opts = options(metric, title);
    opts.palette_map = Some(&mut palette);
    // The headline first, then the merge and the legend, on as many lines as they need.
    let legend = format!("colours: {}", legend(&drawn.lines, &notes.falsely_shared));
    let parts: Vec<String> = [subtitle, drawn.note(), Some(legend)]
        .into_iter()
        .flatten()
        .collect();
    let mut lines = subtitle::lines(&parts.join("; "));
    let more = lines.split_off(1);
    opts.subtitle = lines.pop();
    opts.min_width = 0.0;
    let mut svg = Vec::new();
    render(&mut opts, &drawn.lines, &mut svg)?;
    let svg = match String::from_utf8(svg) {
        Ok(svg) => subtitle::add_lines(svg, &more, opts.font_size).into_bytes(),
        Err(e) => e.into_bytes(),
    };
    rewrite(&svg, &notes.hover, &mut out)
}

/// Renders folded lines (e.g. a run's `<name>.folded`, read back with
/// [`parse_folded`](crate::report::parse_folded)) as an SVG flame graph in the colours of
/// the graphs a run writes, with their legend: for tools that draw from the files.
/// Lines that do not end in a whole count are left out, as inferno leaves them out. As in
/// a run's graphs, a graph of more than 8 192 frames keeps its widest: the narrowest
/// are merged into their parents (every width stays), and the subtitle says how many.
///
/// ```
/// let lines = ["main;poll;[yield] 70".to_string(), "main;[work] 30".to_string()];
/// let mut svg = Vec::new();
/// let title = "yieldprof: poll";
/// yieldprof::report::flamegraph(&lines, yieldprof::report::Metric::Wall, title, &mut svg).unwrap();
/// let svg = String::from_utf8(svg).unwrap();
/// assert!(svg.contains("<svg") && svg.contains("[yield]"));
/// ```
pub fn flamegraph<W: Write>(
    lines: &[String],
    metric: Metric,
    title: &str,
    out: W,
) -> io::Result<()> {
    let notes = FrameNotes::default();
    let stacks = Folded::of_lines(lines);
    write_svg(&stacks, metric, title, None, &notes, out)
}

/// Renders differential lines (`stack before after`): inferno colours each frame by
/// how much it grew (red) or shrank (blue).
pub(crate) fn write_diff_svg<W: Write>(
    lines: &[String],
    metric: Metric,
    title: &str,
    out: W,
) -> io::Result<()> {
    let mut opts = options(metric, title);
    opts.subtitle = Some("width: after; red grew, blue shrank".into());
    render(&mut opts, lines, out)
}

fn options(metric: Metric, title: &str) -> Options<'static> {
    let mut opts = Options::default();
    opts.colors = Palette::Basic(BasicPalette::Aqua);
    opts.title = title.to_string();
    opts.count_name = metric.unit().to_string();
    opts
}

fn render<W: Write>(opts: &mut Options<'_>, lines: &[String], out: W) -> io::Result<()> {
    // The last number of a line is its width (a diff's is the after profile's).
    let width: u64 = lines
        .iter()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    if width == 0 {
        // inferno refuses a profile without samples (no lines, or every width 0); an
        // empty run, or a diff against an empty profile, still gets a readable file.
        let empty = ["[no samples] 1".to_string()];
        return flamegraph::from_lines(opts, empty.iter().map(String::as_str), out);
    }
    flamegraph::from_lines(opts, lines.iter().map(String::as_str), out)
}

impl Profile {
    /// What the flame graphs show beside the frame names: the wait sites that spin on a
    /// FALSE or MIXED line, and each wait frame's own figures (its path's, in its
    /// thread) for its hover text.
    pub(crate) fn frame_notes(&self) -> FrameNotes {
        let falsely_shared = self
            .false_sharing_frames()
            .into_iter()
            .map(|f| clean(&self.frames[f as usize].name))
            .collect();
        let names: Vec<String> = self.frames.iter().map(|f| clean(&f.name)).collect();
        let mut hover = Hover::default();
        let names: Vec<u32> = names.iter().map(|n| hover.name(n)).collect();
        // Per thread frame and site: its index in `hover.sites`.
        let mut sites: HashMap<(u32, u32), usize> = HashMap::new();
        for (t, root) in self.threads.iter().zip(self.thread_frames()) {
            let root = hover.name(&root);
            // Each node's path as in the folded stacks.
            let mut paths: Vec<u32> = Vec::with_capacity(t.nodes.len());
            for (i, n) in t.nodes.iter().enumerate() {
                let path = match i {
                    0 => hover.path(ROOT, root),
                    _ => hover.path(paths[n.parent as usize], names[n.frame as usize]),
                };
                if self.frames[n.frame as usize].kind == FrameKind::Wait {
                    let f = hover.figures(path, |hover| {
                        *sites.entry((root, n.frame)).or_insert_with(|| {
                            hover.sites.push((0, Default::default()));
                            hover.sites.len() - 1
                        })
                    });
                    f.episodes += n.episodes;
                    f.wall_ns += n.wall_ns;
                    f.durations.add(&n.durations);
                    for s in &n.slots {
                        f.calls[self.calls[s.call as usize].kind as usize] += s.calls;
                    }
                }
                paths.push(path);
            }
            for ((frame, kind), h) in &t.site_durations {
                if let (None, Some(&s)) = (kind, sites.get(&(root, *frame))) {
                    hover.sites[s].1.add(h);
                }
            }
        }
        FrameNotes {
            falsely_shared,
            hover,
        }
    }
}
