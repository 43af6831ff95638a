//! The flame graphs' fixed colours and the legend of those a graph draws.
//!
//! Colours come from the Okabe–Ito palette and Paul Tol's muted and light palettes,
//! both chosen to stay apart under the common colour-vision deficiencies; every frame
//! below has its own. The grouping still reads at a glance: on the CPU is warm
//! (vermillion spin, orange and yellow yields and backoff, rose and light yellow for a
//! backoff's spins and yields, pink for other on-CPU time),
//! blocked is cool (blues, teal, cyan, indigo, wine), work is green, the profiler's own
//! time olive, what was not measured grey or sand.

use crate::base::site::Kind;
use crate::model::own::UNMARKED_WORK;
use inferno::flamegraph::color::{Color, PaletteMap};

/// The profiler's own time, drawn by the recording layer as its own frame.
pub(crate) const PROFILER: &str = "[profiler]";

/// A backoff call's parts (`output::fold`): the calls that only spun, and those that
/// made a `sched_yield`.
pub(crate) const SPUN: &str = "[spun]";
pub(crate) const YIELDED: &str = "[yielded]";

/// Each coloured frame, its colour and the colour's name in the legend, in legend order.
const COLOURS: [(&str, [u8; 3], &str); 21] = [
    (Kind::Spin.frame(), [0xd5, 0x5e, 0x00], "vermillion"),
    (Kind::Yield.frame(), [0xe6, 0x9f, 0x00], "orange"),
    (Kind::AsyncYield.frame(), [0xf0, 0xe4, 0x42], "yellow"),
    (Kind::Backoff.frame(), [0xee, 0x88, 0x66], "salmon"),
    (SPUN, [0xcc, 0x66, 0x77], "rose"),
    (YIELDED, [0xee, 0xdd, 0x88], "light yellow"),
    ("[on-cpu]", [0xff, 0xaa, 0xbb], "pink"),
    (PROFILER, [0x99, 0x99, 0x33], "olive"),
    (Kind::Sleep.frame(), [0x00, 0x72, 0xb2], "blue"),
    (Kind::Park.frame(), [0x56, 0xb4, 0xe9], "sky blue"),
    (Kind::Lock.frame(), [0x77, 0xaa, 0xdd], "light blue"),
    (Kind::Condvar.frame(), [0x44, 0xaa, 0x99], "teal"),
    (Kind::Channel.frame(), [0x99, 0xdd, 0xff], "light cyan"),
    (Kind::Join.frame(), [0x33, 0x22, 0x88], "indigo"),
    (Kind::Barrier.frame(), [0x88, 0x22, 0x55], "wine"),
    ("[off-cpu]", [0xbb, 0xbb, 0xbb], "grey"),
    ("[unexplained]", [0xdd, 0xcc, 0x77], "sand"),
    ("[work]", [0x00, 0x9e, 0x73], "green"),
    (UNMARKED_WORK, [0x11, 0x77, 0x33], "dark green"),
    ("[overflow]", [0xdd, 0xdd, 0xdd], "pale grey"),
    (FALSE_SHARING, [0xcc, 0x79, 0xa7], "reddish purple"),
];

/// The legend's name for wait sites that spin on a falsely shared line (drawn in their
/// own colour whatever their name).
const FALSE_SHARING: &str = "false sharing";

fn colour([r, g, b]: [u8; 3]) -> Color {
    Color { r, g, b }
}

/// The colour and legend entry of a frame name (a falsely shared site by its mark).
fn entry(frame: &str) -> Option<usize> {
    COLOURS.iter().position(|(name, _, _)| *name == frame)
}

/// What inferno needs to draw frames in their colours: the fixed frames, and the
/// `falsely_shared` sites in the false-sharing colour.
pub(crate) fn palette(falsely_shared: &[String]) -> PaletteMap {
    let mut map = PaletteMap::default();
    for (frame, rgb, _) in &COLOURS[..COLOURS.len() - 1] {
        map.insert(frame, colour(*rgb));
    }
    let shared = colour(COLOURS[COLOURS.len() - 1].1);
    for frame in falsely_shared {
        map.insert(frame, shared);
    }
    map
}

/// The legend of the colours `lines` (folded `stack value`) draw, in a fixed order,
/// e.g. `[spin] vermillion, [work] green; other frames aqua`: exactly the fixed
/// colours present, so a legend never names a colour the graph lacks.
pub(crate) fn legend(lines: &[String], falsely_shared: &[String]) -> String {
    let mut drawn = [false; COLOURS.len()];
    for line in lines {
        let stack = line.rsplit_once(' ').map_or(line.as_str(), |(s, _)| s);
        for frame in stack.split(';') {
            if let Some(i) = entry(frame) {
                drawn[i] = true;
            } else if falsely_shared.iter().any(|f| f == frame) {
                drawn[COLOURS.len() - 1] = true;
            }
        }
    }
    let entries: Vec<String> = COLOURS
        .iter()
        .zip(drawn)
        .filter(|(_, d)| *d)
        .map(|((frame, _, name), _)| format!("{frame} {name}"))
        .collect();
    if entries.is_empty() {
        return "other frames aqua".into();
    }
    format!("{}; other frames aqua", entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_has_its_own_colour_and_name_and_each_kind_is_coloured() {
        for (i, a) in COLOURS.iter().enumerate() {
            for b in &COLOURS[i + 1..] {
                assert!(a.0 != b.0 && a.1 != b.1 && a.2 != b.2, "{a:?} vs {b:?}");
            }
        }
        for kind in Kind::ALL {
            assert!(entry(kind.frame()).is_some(), "{kind:?} has no colour");
        }
    }

    #[test]
    fn the_legend_names_exactly_the_coloured_frames_present() {
        let lines = [
            "main;poll;[spin] 3".to_string(),
            "main;poll;[off-cpu] 1".to_string(),
            "main;shared;[profiler] 1".to_string(),
            "main;[work] 2".to_string(),
        ];
        assert_eq!(
            legend(&lines, &["shared".into()]),
            "[spin] vermillion, [profiler] olive, [off-cpu] grey, [work] green, \
             false sharing reddish purple; other frames aqua"
        );
        assert_eq!(legend(&[], &[]), "other frames aqua");
    }
}
