//! A thread's tree of nodes: the child for a site under a node, found or added (the
//! only allocation of an entry, its first time), and the frames open on each node.

use super::thread::{Node, ThreadData, EPISODES, OVERFLOW, ROOT};
use crate::base::arena::bump;
use crate::base::clock;
use crate::base::site::{self, FrameInfo};
use std::sync::atomic::Ordering::Relaxed;

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
    /// A frame on it opened at tick `start`, its switch mark with the thread's off-CPU
    /// clock at `off` (`Mark::off_clock`): what a report counts it from while it stays
    /// open (the first of several open at once).
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
