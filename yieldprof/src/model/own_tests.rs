//! A wait frame's own off-CPU time where its calls have no figures of their own: the
//! bound each case allows, with the numbers of the review of 2026-12-06.

use super::OwnTime;
use crate::base::site::{self, EpisodeSite, FrameInfo};
use crate::counters::NodeSnap;
use crate::model::tree::{NodeStats, ThreadProfile};

const MS: u64 = 1_000_000;

fn profile(nodes: Vec<NodeStats>) -> ThreadProfile {
    ThreadProfile {
        serial: 1,
        tid: 1,
        name: "t".into(),
        threads: 1,
        exited: true,
        overflowed: 0,
        reentries_skipped: 0,
        entries_after_exit: 0,
        nodes,
        site_durations: Vec::new(),
        unwaited: Vec::new(),
        counters: Default::default(),
        timeline: Default::default(),
    }
}

// `..default()`: fields added to the stats later keep their zero here.
#[allow(clippy::needless_update)]
fn node(frame: u32, parent: u32, wall_ns: u64, open_ns: u64, counts: NodeSnap) -> NodeStats {
    NodeStats {
        frame,
        parent,
        episodes: 1,
        wall_ns,
        open_ns,
        counts,
        ..NodeStats::default()
    }
}

/// W (node 2) the outer wait frame, C (node 3) a wait frame nested in it: W's own time.
fn own_of_w(w: NodeStats, c: NodeStats) -> OwnTime {
    let mut frames: Vec<FrameInfo> = site::tables().0[..2].to_vec();
    frames.push(EpisodeSite::new(None, "app", "outer", "src/a.rs", 1).info());
    frames.push(EpisodeSite::new(None, "app", "inner", "src/a.rs", 9).info());
    let root = node(0, 0, 100 * MS, 0, NodeSnap::default());
    let t = profile(vec![root, node(1, 0, 0, 0, NodeSnap::default()), w, c]);
    t.own_times(&frames, &[])[2].unwrap()
}

#[test]
fn a_deferred_frame_takes_its_nested_frames_measured_off_cpu_time_from_its_own() {
    // Every episode read on getrusage: W 10 ms, 6 off the CPU; C 8 ms of it, 5 off.
    // W's own 2 ms: 1 off the CPU (its nested frame's wall left it none).
    let own = own_of_w(
        node(2, 0, 10 * MS, 0, NodeSnap::measured(6 * MS, 10 * MS, true)),
        node(3, 2, 8 * MS, 0, NodeSnap::measured(5 * MS, 8 * MS, true)),
    );
    assert_eq!((own.off_cpu_ns, own.unexplained_ns), (MS, MS), "{own:?}");
}

#[test]
fn a_frame_and_its_nested_one_open_unread_keep_the_bound_of_the_closed_part() {
    // Sampled (open frames unread at the copy): W closed 10 ms (9 off), open 5 ms
    // more, all in C, open too; C closed 1 ms (1 off). W's own time: 9 ms closed,
    // at least 8 off the CPU. Subtracting C's open wall twice read 3 off, 6
    // unexplained, against a site on-CPU figure of 1.5 ms.
    let own = own_of_w(
        node(
            2,
            0,
            15 * MS,
            5 * MS,
            NodeSnap::measured(9 * MS, 10 * MS, false),
        ),
        node(3, 2, 6 * MS, 5 * MS, NodeSnap::measured(MS, MS, false)),
    );
    assert_eq!(
        (own.off_cpu_ns, own.unexplained_ns),
        (8 * MS, MS),
        "{own:?}"
    );
}

#[test]
fn a_nested_frame_read_only_on_sampled_episodes_takes_nothing_from_the_bound() {
    // W's 10 episodes of 1 ms all read, 4.5 ms off the CPU: C (0.9 ms each) blocked in
    // half of them, and was read on the 5 others (0 off). W's own 1 ms ran on the CPU.
    let own = own_of_w(
        node(
            2,
            0,
            10 * MS,
            0,
            NodeSnap::measured(4_500_000, 10 * MS, false),
        ),
        node(3, 2, 9 * MS, 0, NodeSnap::measured(0, 4_500_000, false)),
    );
    assert_eq!((own.off_cpu_ns, own.unexplained_ns), (0, MS), "{own:?}");
}
