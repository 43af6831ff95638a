//! Flame graphs (SVG, by inferno) with wait kinds in fixed colours.

use crate::base::site::Kind;
use crate::base::text::{count, duration};
use crate::model::profile::Profile;
use crate::output::fold::{clean, Metric};
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

/// Renders folded `lines` as an SVG flame graph. Frames too narrow to draw are kept
/// (inferno's search finds and highlights them), and `notes` colour and annotate frames.
pub(crate) fn write_svg<W: Write>(
    lines: &[String],
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
    let mut opts = options(metric, title);
    opts.palette_map = Some(&mut palette);
    opts.subtitle = subtitle;
    opts.min_width = 0.0;
    let mut svg = Vec::new();
    render(&mut opts, lines, &mut svg)?;
    let mut svg = String::from_utf8(svg).map_err(io::Error::other)?;
    // inferno's hover title is `name (value, share)`; the site's own figures go after
    // the name, on every frame of that name.
    for (name, text) in &notes.hover {
        let name = xml_escape(name);
        svg = svg.replace(
            &format!("<title>{name} ("),
            &format!("<title>{name} [{}] (", xml_escape(text)),
        );
    }
    out.write_all(svg.as_bytes())
}

/// Text as inferno escapes it inside the SVG.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Renders folded lines (e.g. a run's `<name>.folded`, read back with
/// [`parse_folded`](crate::report::parse_folded)) as an SVG flame graph in the colours of
/// the graphs a run writes, with their legend: for tools that draw from the files.
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
    write_svg(lines, metric, title, Some(LEGEND.into()), &notes, out)
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
