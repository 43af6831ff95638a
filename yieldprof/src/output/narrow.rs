//! Frames too narrow to see, merged into their parents before inferno draws a graph.
//!
//! A graph of 100k unique stacks has some 200k frames, nearly all far below a pixel of
//! a 1200-pixel-wide image: inferno would parse every line and write every frame (a
//! 50 MB SVG that a browser can hardly open). A graph of more than [`MAX_FRAMES`]
//! frames keeps only its widest ones, whatever their depth: a narrower frame's stack is
//! cut above its parent, whose width, and so every drawn frame's width and the total,
//! stay as they were. Thread roots are frames like the others: a run of 10 000 tiny
//! threads must not crowd out one thread's wide wait sites, so the thread roots too
//! narrow to keep are drawn as one frame, `[N threads ≤ X% each]`. The graph says how many
//! frames were merged and how narrow they were; the folded file keeps every stack.

use crate::base::text::count;
use crate::output::fold::Folded;

/// The most frames a graph draws before its narrowest are merged into their parents:
/// past it, in a 1200-pixel-wide graph, the frames left out are about a tenth of a pixel
/// wide or less (inferno's own cut-off, 0.1 px) unless the graph is very deep.
pub(crate) const MAX_FRAMES: usize = 8_192;

/// The stacks a graph draws: every stack, or those cut above narrow frames.
pub(crate) struct Drawn {
    /// `stack value` lines, in the order of the folded stacks.
    pub(crate) lines: Vec<String>,
    /// Frames merged into their parents, and the widest of them as a share of the total.
    pub(crate) merged: Option<(usize, f64)>,
}

/// A frame of the graph as inferno merges sorted stacks: the frames that neighbouring
/// stacks share from the root are one.
struct Open {
    /// Where its name ends in the stack being walked (at a `;` or the end).
    end: usize,
    start: u64,
    id: usize,
}

/// Walks the stacks in order, calling `each(stack, value, open frames)` once the frames
/// of each stack are open, and returns each frame's width and whether it is a thread
/// root, by id (ids count frames in the order they open).
fn walk<'a>(stacks: &'a Folded, mut each: impl FnMut(&'a str, u64, &[Open])) -> Vec<(u64, bool)> {
    let mut frames: Vec<(u64, bool)> = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let close = |frames: &mut Vec<(u64, bool)>, open: &mut Vec<Open>, from, time: u64| {
        for o in open.drain(from..) {
            frames[o.id].0 = time - o.start;
        }
    };
    let (mut time, mut prev) = (0u64, "");
    for (stack, v) in stacks.iter() {
        let (a, b) = (prev.as_bytes(), stack.as_bytes());
        let common = common_prefix(a, b);
        // A frame stays open if this stack has the same bytes up to its end, and its
        // name ends there too.
        let ends_here = common == b.len() || b[common] == b';';
        let shared = open
            .iter()
            .take_while(|o| o.end < common || (o.end == common && ends_here))
            .count();
        close(&mut frames, &mut open, shared, time);
        let mut at = open.last().map_or(0, |o| o.end + 1);
        while at <= stack.len() {
            let end = stack[at..].find(';').map_or(stack.len(), |i| at + i);
            open.push(Open {
                end,
                start: time,
                id: frames.len(),
            });
            frames.push((0, open.len() == 1));
            at = end + 1;
        }
        each(stack, v, &open);
        time = time.saturating_add(v);
        prev = stack;
    }
    close(&mut frames, &mut open, 0, time);
    frames
}

/// How many bytes `a` and `b` share from the start, compared a word at a time: sorted
/// neighbours share most of their stack.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| u64::from_ne_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 <= n && word(a, i) == word(b, i) {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// A share of the total with two significant digits, however small.
fn share(percent: f64) -> String {
    let decimals = (1.0 - percent.log10().floor()).max(1.0) as usize;
    format!("{percent:.decimals$}%")
}

impl Drawn {
    /// `N frames of at most X % each merged into their parents ...`, when any were.
    pub(crate) fn note(&self) -> Option<String> {
        let (n, widest) = self.merged?;
        Some(format!(
            "{n} frames of at most {} each merged into their parents \
             (every stack is in the folded file)",
            share(widest)
        ))
    }

    /// What a graph of `stacks` draws.
    pub(crate) fn of(stacks: &Folded) -> Drawn {
        let frames = walk(stacks, |_, _, _| {});
        if frames.len() <= MAX_FRAMES {
            return Drawn {
                lines: stacks.lines(),
                merged: None,
            };
        }
        // Kept: wider than the widest frame past the budget, one frame left for the
        // thread roots merged. A frame is never wider than its parent, so what is kept
        // is a tree from the roots.
        let budget = MAX_FRAMES - 1;
        let mut widths: Vec<u64> = frames.iter().map(|(w, _)| *w).collect();
        let (_, cut, _) = widths.select_nth_unstable_by(budget, |a, b| b.cmp(a));
        let cut = *cut;
        let keep = |id: usize| frames[id].0 > cut;
        let merged = (0..frames.len()).filter(|&id| !keep(id)).count();
        let roots = (0..frames.len())
            .filter(|&id| frames[id].1 && !keep(id))
            .count();
        let total: u64 = stacks.iter().map(|(_, v)| v).fold(0, u64::saturating_add);
        let widest = 100.0 * cut as f64 / total.max(1) as f64;
        let mut cuts: Vec<(&str, u64)> = Vec::new();
        let mut in_roots = 0u64;
        walk(stacks, |stack, v, open| {
            // Up to the end of the last kept frame's name.
            let kept = open.iter().take_while(|o| keep(o.id)).count();
            let Some(last) = kept.checked_sub(1) else {
                in_roots = in_roots.saturating_add(v);
                return;
            };
            let cut_stack = &stack[..open[last].end];
            match cuts.last_mut() {
                Some((last, sum)) if *last == cut_stack => *sum = sum.saturating_add(v),
                _ => cuts.push((cut_stack, v)),
            }
        });
        let mut lines: Vec<String> = cuts.iter().map(|(s, v)| format!("{s} {v}")).collect();
        if roots > 0 {
            let threads = count(roots as u64, "thread");
            lines.push(format!("[{threads} ≤ {} each] {in_roots}", share(widest)));
        }
        Drawn {
            lines,
            merged: Some((merged, widest)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(lines: &[String]) -> u64 {
        lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    }

    /// Frames of `lines` (sorted) as inferno merges them.
    fn frames(lines: &[String]) -> usize {
        walk(&Folded::of_lines(lines), |_, _, _| {}).len()
    }

    #[test]
    fn a_graph_within_the_budget_draws_every_stack() {
        let lines: Vec<String> = (0..100)
            .map(|i| format!("t;f{i:03};[spin] {}", i + 1))
            .collect();
        let drawn = Drawn::of(&Folded::of_lines(&lines));
        assert_eq!(drawn.lines, lines);
        assert_eq!(drawn.merged, None);
        assert_eq!(drawn.note(), None);
    }

    #[test]
    fn past_the_budget_the_narrowest_frames_merge_into_their_parents() {
        // One wide stack and 20 000 narrow ones under `many`: 40 004 frames.
        let mut lines = vec!["t;wide;[yield] 1000000".to_string()];
        lines.extend((0..20_000).map(|i| format!("t;many;n{i:05};[spin] {}", 1 + i % 3)));
        let stacks = Folded::of_lines(&lines);
        let all = frames(&stacks.lines());
        assert_eq!(all, 4 + 2 * 20_000);
        let drawn = Drawn::of(&stacks);
        let kept = frames(&drawn.lines);
        assert!(kept <= MAX_FRAMES, "{kept} frames drawn");
        let (merged, share) = drawn.merged.expect("frames merged");
        assert_eq!(merged, all - kept);
        // Every width stays: the total, the wide stack, and `many` as a whole.
        assert_eq!(total(&drawn.lines), total(&lines));
        assert!(drawn.lines.contains(&"t;wide;[yield] 1000000".to_string()));
        let many: u64 = drawn
            .lines
            .iter()
            .filter(|l| l.starts_with("t;many"))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(many, (0..20_000u64).map(|i| 1 + i % 3).sum::<u64>());
        // The narrowest (width 1 and 2) went first; the widest merged is at most 3.
        assert!(share <= 100.0 * 3.0 / total(&lines) as f64, "{share}");
        let note = drawn.note().unwrap();
        assert!(
            note.starts_with(&format!("{merged} frames of at most 0.000")),
            "{note}"
        );
    }

    #[test]
    fn thread_roots_too_narrow_to_keep_are_one_frame_and_wide_sites_stay() {
        // 10 000 threads of one tiny episode each, and two threads that waited long:
        // 30 006 frames. The tiny threads give way, not the wide sites.
        let mut lines: Vec<String> = (0..10_000)
            .map(|i| format!("test-{i:05};tiny;[yield] 1"))
            .collect();
        lines.push("big-a;array::recv;wait_until;[park] 600000".into());
        lines.push("big-a;[work] 100000".into());
        lines.push("big-b;zero::recv;wait_until;[yield] 300000".into());
        let drawn = Drawn::of(&Folded::of_lines(&lines));
        assert!(frames(&drawn.lines) <= MAX_FRAMES);
        let (merged, _) = drawn.merged.expect("frames merged");
        assert_eq!(merged, 30_000);
        for wide in [
            "big-a;array::recv;wait_until;[park] 600000",
            "big-a;[work] 100000",
            "big-b;zero::recv;wait_until;[yield] 300000",
        ] {
            assert!(drawn.lines.contains(&wide.to_string()), "{wide}");
        }
        let threads = drawn.lines.last().unwrap();
        assert!(
            threads.starts_with("[10000 threads ≤ 0.000099% each] 10000"),
            "{threads}"
        );
        assert_eq!(drawn.lines.len(), 4);
        assert_eq!(total(&drawn.lines), total(&lines));
    }
}
