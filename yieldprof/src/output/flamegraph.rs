//! Flame graphs (SVG, by inferno) with wait kinds in fixed colours.

use crate::base::site::Kind;
use crate::base::text::{count, duration};
use crate::model::profile::Profile;
use crate::output::fold::{clean, Folded, Metric};
use crate::output::narrow::Drawn;
use inferno::flamegraph::color::{BasicPalette, Palette, PaletteMap};
use inferno::flamegraph::{self, Options};
use std::io::{self, Write};

/// Fixed colours, so a glance tells spinning (hot red) and other time on the CPU
/// (warm: yield, backoff, unexplained on-CPU time) from blocking (blues and violets:
/// sleep, park, lock, condvar, channel, join, barrier, unexplained off-CPU time) and
/// work (green). Other frames take inferno's aqua palette.
fn palette() -> PaletteMap {
    let mut map = PaletteMap::default();
    let rgb = |r, g, b| inferno::flamegraph::color::Color { r, g, b };
    for (frame, colour) in [
        (Kind::Spin.frame(), rgb(0xe0, 0x20, 0x20)),
        (Kind::Yield.frame(), rgb(0xf0, 0x90, 0x20)),
        (Kind::AsyncYield.frame(), rgb(0xf0, 0xb0, 0x40)),
        (Kind::Backoff.frame(), rgb(0xe0, 0x70, 0x30)),
        ("[on-cpu]", rgb(0xe0, 0x90, 0x90)),
        (Kind::Sleep.frame(), rgb(0x30, 0x70, 0xe0)),
        (Kind::Park.frame(), rgb(0x50, 0x90, 0xf0)),
        (Kind::Lock.frame(), rgb(0x50, 0x50, 0xc0)),
        (Kind::Condvar.frame(), rgb(0x70, 0x60, 0xd0)),
        (Kind::Channel.frame(), rgb(0x30, 0xa0, 0xc0)),
        (Kind::Join.frame(), rgb(0x40, 0x80, 0xb0)),
        (Kind::Barrier.frame(), rgb(0x60, 0x90, 0xd0)),
        ("[off-cpu]", rgb(0x80, 0x90, 0xa0)),
        ("[unexplained]", rgb(0xc0, 0xc0, 0xa0)),
        ("[work]", rgb(0x40, 0xb0, 0x40)),
        ("[overflow]", rgb(0x90, 0x90, 0x90)),
    ] {
        map.insert(frame, colour);
    }
    map
}

/// What a flame graph shows beside frame names, keyed by name: marks travel beside a
/// name, never in it, so a frame's name stays its identity across runs.
#[derive(Default)]
pub(crate) struct FrameNotes {
    /// Wait sites spinning on a falsely shared line: drawn purple.
    pub(crate) falsely_shared: Vec<String>,
    /// Text added to a frame's hover title (episodes, mean, p99, calls).
    pub(crate) hover: Vec<(String, String)>,
}

/// The legend of the graphs `write_profile` draws.
pub(crate) const LEGEND: &str =
    "spin red, yield orange, sleep/park blue, work green, false sharing purple";

/// Renders folded `stacks` as an SVG flame graph, and `notes` colour and annotate
/// frames. Frames too narrow to draw are kept (inferno's search finds and highlights
/// them) up to [`MAX_FRAMES`](crate::output::narrow::MAX_FRAMES); past that the
/// narrowest are merged into their parents, and the subtitle says how many.
pub(crate) fn write_svg<W: Write>(
    stacks: &Folded,
    metric: Metric,
    title: &str,
    subtitle: Option<String>,
    notes: &FrameNotes,
    mut out: W,
) -> io::Result<()> {
    let mut palette = palette();
    for frame in &notes.falsely_shared {
        palette.insert(
            frame,
            inferno::flamegraph::color::Color {
                r: 0xa0,
                g: 0x40,
                b: 0xe0,
            },
        );
    }
    let drawn = Drawn::of(stacks);
    let mut opts = options(metric, title);
    opts.palette_map = Some(&mut palette);
    // The merge comes first: a long subtitle is cut at the right edge.
    opts.subtitle = match (drawn.note(), subtitle) {
        (Some(note), Some(subtitle)) => Some(format!("{note}; {subtitle}")),
        (note, subtitle) => note.or(subtitle),
    };
    opts.min_width = 0.0;
    let mut svg = Vec::new();
    render(&mut opts, &drawn.lines, &mut svg)?;
    add_hover(&svg, &notes.hover, &mut out)
}

/// Copies inferno's `svg` to `out` with each site's figures after its name in the hover
/// titles (inferno's is `name (value, share)`), in one pass.
fn add_hover(svg: &[u8], hover: &[(String, String)], out: &mut impl Write) -> io::Result<()> {
    let hover: Vec<(String, String)> = hover
        .iter()
        .map(|(name, text)| (format!("{} (", xml_escape(name)), xml_escape(text)))
        .collect();
    const TITLE: &[u8] = b"<title>";
    let mut rest = svg;
    while let Some(at) = find(rest, TITLE) {
        let (head, title) = rest.split_at(at + TITLE.len());
        out.write_all(head)?;
        // The longest name that fits wins: `a (x)` before `a`.
        let site = hover
            .iter()
            .filter(|(name, _)| title.starts_with(name.as_bytes()))
            .max_by_key(|(name, _)| name.len());
        rest = title;
        if let Some((name, text)) = site {
            let name = &name.as_bytes()[..name.len() - 2];
            out.write_all(name)?;
            write!(out, " [{text}]")?;
            rest = &title[name.len()..];
        }
    }
    out.write_all(rest)
}

/// Text as inferno escapes it inside the SVG.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
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
    write_svg(&stacks, metric, title, Some(LEGEND.into()), &notes, out)
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
    /// FALSE or MIXED line, and each site's figures for its hover text.
    pub(crate) fn frame_notes(&self) -> FrameNotes {
        let falsely_shared = self
            .false_sharing_frames()
            .into_iter()
            .map(|f| clean(&self.frames[f as usize].name))
            .collect();
        let hover = self
            .site_views()
            .iter()
            .map(|s| {
                let h = &s.durations;
                let q = |x: Option<u64>| x.map_or("-".into(), duration);
                let calls: Vec<String> = Kind::ALL
                    .iter()
                    .map(|&k| (k, s.calls_of(k)))
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| format!("{} {n}", k.name()))
                    .collect();
                let text = format!(
                    "{}, mean {}, p99 {}{}{}",
                    count(s.episodes, "episode"),
                    duration(s.wall_ns / s.episodes.max(1)),
                    q(h.quantile(0.99)),
                    if calls.is_empty() { "" } else { "; calls: " },
                    calls.join(", ")
                );
                (clean(&s.name), text)
            })
            .collect();
        FrameNotes {
            falsely_shared,
            hover,
        }
    }
}
