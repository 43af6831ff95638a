//! A thread's tree of nodes: the child for a site under a node, found or added (the
//! only allocation of an entry, its first time), and the frames open on each node.

use super::thread::{Node, ThreadData, EPISODES, OVERFLOW, ROOT};
use crate::base::arena::bump;
use crate::base::clock;
use crate::base::site::{self, FrameInfo};
use std::hint::spin_loop;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{fence, AtomicU32, AtomicU64};

/// Tries a copy makes at a node's wall and open tick while closes run on its thread.
const TRIES: u32 = 64;

impl ThreadData {
    /// The child of `parent` for the frame whose static lives at `key`.
    #[inline]
    pub(crate) fn child(&self, parent: u32, key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
        if parent == OVERFLOW {
            bump(&self.overflowed, 1);
            return OVERFLOW;
        }
        self.find_child(parent, key)
            .unwrap_or_else(|| self.new_child(parent, key, info))
    }

    /// Owner only: the child of `parent` (not `OVERFLOW`) for `key`, if it has one.
    #[inline]
    pub(crate) fn find_child(&self, parent: u32, key: usize) -> Option<u32> {
        let mut c = self.node(parent).first_child.own();
        while c != ROOT {
            let n = self.node(c);
            if n.key.load(Relaxed) == key {
                return Some(c);
            }
            c = n.next_sibling.own();
        }
        None
    }

    #[cold]
    fn new_child(&self, parent: u32, key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
        let t0 = clock::now();
        let i = self.push_child(parent, key, info);
        // Inside the parent's time: the profiler's, not the parent's own.
        let ticks = clock::now().saturating_sub(t0);
        bump(&self.node(parent).profiler_ticks, ticks);
        bump(&self.profiler_ticks, ticks);
        i
    }

    fn push_child(&self, parent: u32, key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
        let frame = site::frame_id(key, info);
        let durations = self.site_durations_of(frame, EPISODES);
        let p = self.node(parent);
        let pushed = self.nodes.push(|n| {
            n.key.store(key, Relaxed);
            n.frame.store(frame, Relaxed);
            n.site_durations.store(durations, Relaxed);
            n.parent.store(parent, Relaxed);
            n.next_sibling.set(p.first_child.own());
        });
        match pushed {
            Some(i) => {
                p.first_child.set(i);
                i
            }
            None => {
                bump(&self.overflowed, 1);
                OVERFLOW
            }
        }
    }

    /// A frame on `node` (`n`), opened under `prev`, closed while `current` was this thread's
    /// current node: the current node after it. In order, the innermost frame still
    /// open above `node`. Out of order (a frame held across `.await`, closed while a
    /// frame another task opened inside it is still open) the current node stays:
    /// that frame is still running, and restoring `prev` would leave a closed frame
    /// current on the thread for good.
    #[inline(always)]
    pub(crate) fn closed(&self, n: &Node, node: u32, prev: u32, current: u32) -> u32 {
        let open = n.open.load(Relaxed).saturating_sub(1);
        n.open.store(open, Relaxed);
        if open == 0 {
            n.open_since.store(0, Relaxed);
            n.open_off.store(0, Relaxed);
        }
        if current != node {
            return current;
        }
        let mut i = prev;
        while i != ROOT && self.node(i).open.load(Relaxed) == 0 {
            i = self.node(i).parent.load(Relaxed);
        }
        i
    }
}

impl Node {
    /// A frame on it opened at tick `start`: what a report counts it from while it
    /// stays open (the first of several open at once).
    #[inline(always)]
    pub(crate) fn opened(&self, start: u64) {
        self.opened_at(start, None);
    }

    /// As [`Node::opened`], for a frame whose switch mark had the thread's off-CPU
    /// clock at `off` (`Mark::off_clock`).
    #[inline(always)]
    pub(crate) fn opened_at(&self, start: u64, off: Option<u64>) {
        let n = &self.open;
        n.store(n.load(Relaxed).wrapping_add(1), Relaxed);
        if self.open_since.load(Relaxed) == 0 {
            self.open_off.store(off.unwrap_or(0), Relaxed);
            self.open_since.store(start, Relaxed);
        }
    }
}

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
    /// Owner: a close of a frame on `node` (`n`) that adds `elapsed` to its wall begins.
    #[inline]
    pub(crate) fn begin(&self, node: u32, n: &Node, elapsed: u64) {
        self.node.store(node, Relaxed);
        self.wall
            .store(n.wall_ns.load(Relaxed).wrapping_add(elapsed), Relaxed);
        self.seq.store(self.seq.load(Relaxed) + 1, Release);
        // The node's stores below are seen after the odd count.
        fence(Release);
    }

    /// Owner: the close begun last has ended.
    #[inline]
    pub(crate) fn end(&self) {
        self.seq.store(self.seq.load(Relaxed) + 1, Release);
    }

    /// Any thread: node `i`'s (`n`) wall and open tick as one pair, read again while a
    /// close ran in between. A close of this node in progress (its thread perhaps
    /// preempted in it) counts as done: its wall once closed, nothing open (a second
    /// frame open on the same node, async only, is missed by that copy).
    pub(crate) fn read(&self, i: u32, n: &Node) -> (u64, u64) {
        let mut seen = (0, 0);
        for _ in 0..TRIES {
            let s = self.seq.load(Acquire);
            seen = (n.wall_ns.load(Relaxed), n.open_since.load(Relaxed));
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

    /// Episode `k` of node 3 opens at tick `k` and adds 1 to its wall at its close:
    /// a pair read whole is `(k - 1, k)` (open) or `(k, 0)` (closed).
    #[test]
    fn a_copy_sees_each_close_once_while_the_owner_closes_frames() {
        let (n, closing, stop) = (Node::default(), Closing::default(), AtomicBool::new(false));
        std::thread::scope(|s| {
            s.spawn(|| {
                for k in 1..=200_000u64 {
                    n.open_since.store(k, Relaxed);
                    closing.begin(3, &n, 1);
                    n.wall_ns.store(k, Relaxed);
                    // The counters' read between the two stores.
                    for _ in 0..k % 8 {
                        spin_loop();
                    }
                    n.open_since.store(0, Relaxed);
                    closing.end();
                }
                stop.store(true, Relaxed);
            });
            let mut reads = 0u64;
            while !stop.load(Relaxed) || reads == 0 {
                let (wall, since) = closing.read(3, &n);
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
        n.wall_ns.store(50, Relaxed);
        n.open_since.store(7, Relaxed);
        closing.begin(3, &n, 100);
        assert_eq!(closing.read(3, &n), (150, 0));
        assert_eq!(closing.read(4, &n), (50, 7));
        n.wall_ns.store(150, Relaxed);
        n.open_since.store(0, Relaxed);
        closing.end();
        assert_eq!(closing.read(3, &n), (150, 0));
    }
}
