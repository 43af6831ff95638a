//! Frame closes seen whole by a copy made on another thread (`record::copy`).

use std::hint::spin_loop;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{fence, AtomicU32, AtomicU64};

/// Tries a copy makes at a node's wall and open tick while closes run on its thread.
const TRIES: u32 = 64;

/// Frame closes on a thread, each seen by a copy as one change (`record::copy`). A close
/// adds its length to its node's wall and clears the node's open tick: read between
/// the two stores (with a counter read between them, and the thread perhaps preempted
/// there) the frame would count twice, as wall and as open part, or not at all.
#[derive(Default)]
pub(crate) struct Closing {
    /// Closes begun and ended: odd while one is in progress.
    seq: AtomicU64,
    /// The node of the close in progress, and its wall once closed.
    node: AtomicU32,
    wall: AtomicU64,
}

impl Closing {
    /// Owner: a close of a frame on `node` that adds `elapsed` to its `wall` begins.
    #[inline]
    pub(crate) fn begin(&self, node: u32, wall: &AtomicU64, elapsed: u64) {
        self.node.store(node, Relaxed);
        self.wall
            .store(wall.load(Relaxed).wrapping_add(elapsed), Relaxed);
        self.seq.store(self.seq.load(Relaxed) + 1, Release);
        // The node's stores below are seen after the odd count.
        fence(Release);
    }

    /// Owner: the close begun last has ended.
    #[inline]
    pub(crate) fn end(&self) {
        self.seq.store(self.seq.load(Relaxed) + 1, Release);
    }

    /// Any thread: node `i`'s `wall` and open tick (`since`) as one pair, read again while a
    /// close ran in between. A close of this node in progress (its thread perhaps
    /// preempted in it) counts as done: its wall once closed, nothing open (a second
    /// frame open on the same node, async only, is missed by that copy).
    pub(crate) fn read(&self, i: u32, wall: &AtomicU64, since: &AtomicU64) -> (u64, u64) {
        let mut seen = (0, 0);
        for _ in 0..TRIES {
            let s = self.seq.load(Acquire);
            seen = (wall.load(Relaxed), since.load(Relaxed));
            fence(Acquire);
            if self.seq.load(Relaxed) == s {
                if s % 2 == 0 || self.node.load(Relaxed) != i {
                    return seen;
                }
                let stuck = (self.wall.load(Relaxed), 0);
                fence(Acquire);
                if self.seq.load(Relaxed) == s {
                    return stuck;
                }
            }
            spin_loop();
        }
        // Closes ran through every try: the last pair read.
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A node's two fields a close changes.
    #[derive(Default)]
    struct Node {
        wall: AtomicU64,
        since: AtomicU64,
    }

    /// Episode `k` of node 3 opens at tick `k` and adds 1 to its wall at its close:
    /// a pair read whole is `(k - 1, k)` (open) or `(k, 0)` (closed).
    #[test]
    fn a_copy_sees_each_close_once_while_the_owner_closes_frames() {
        let (n, closing, stop) = (Node::default(), Closing::default(), AtomicBool::new(false));
        std::thread::scope(|s| {
            s.spawn(|| {
                for k in 1..=200_000u64 {
                    n.since.store(k, Relaxed);
                    closing.begin(3, &n.wall, 1);
                    n.wall.store(k, Relaxed);
                    // The counters' read between the two stores.
                    for _ in 0..k % 8 {
                        spin_loop();
                    }
                    n.since.store(0, Relaxed);
                    closing.end();
                }
                stop.store(true, Relaxed);
            });
            let mut reads = 0u64;
            while !stop.load(Relaxed) || reads == 0 {
                let (wall, since) = closing.read(3, &n.wall, &n.since);
                assert!(
                    since == 0 || since == wall + 1,
                    "wall {wall} with open tick {since}: counted twice or not at all"
                );
                reads += 1;
            }
        });
    }

    #[test]
    fn a_close_in_progress_counts_as_done_on_its_node_only() {
        let (n, closing) = (Node::default(), Closing::default());
        n.wall.store(50, Relaxed);
        n.since.store(7, Relaxed);
        closing.begin(3, &n.wall, 100);
        assert_eq!(closing.read(3, &n.wall, &n.since), (150, 0));
        assert_eq!(closing.read(4, &n.wall, &n.since), (50, 7));
        n.wall.store(150, Relaxed);
        n.since.store(0, Relaxed);
        closing.end();
        assert_eq!(closing.read(3, &n.wall, &n.since), (150, 0));
    }
}
