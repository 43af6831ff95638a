//! Flame graphs (SVG, by inferno) with wait kinds in fixed colours.

use crate::base::site::Kind;
use crate::output::fold::Metric;
use crate::output::fold::FALSE_SHARING_MARK;
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

/// Renders folded `lines` as an SVG flame graph.
pub(crate) fn write_svg<W: Write>(
    lines: &[String],
    metric: Metric,
    title: &str,
    subtitle: Option<String>,
    out: W,
) -> io::Result<()> {
    let mut palette = palette();
    // Wait sites spinning on a falsely shared line stand out in purple.
    let stacks = lines
        .iter()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(s, _)| s);
    for frame in stacks.flat_map(|s| s.split(';')) {
        if frame.ends_with(FALSE_SHARING_MARK) {
            palette.insert(
                frame,
                inferno::flamegraph::color::Color {
                    r: 0xa0,
                    g: 0x40,
                    b: 0xe0,
                },
            );
        }
    }
    let mut opts = options(metric, title);
    opts.palette_map = Some(&mut palette);
    opts.subtitle = subtitle;
    render(&mut opts, lines, out)
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
    if lines.is_empty() {
        // inferno refuses an empty profile; an empty run still gets a readable file.
        let empty = ["[no samples] 1".to_string()];
        return flamegraph::from_lines(opts, empty.iter().map(String::as_str), out);
    }
    flamegraph::from_lines(opts, lines.iter().map(String::as_str), out)
}
