//! A thread's tree of nodes: the child for a site under a node, found or added (the
//! only allocation of an entry, its first time), a node's slot for a call site, and
//! the frames open on each node.

use super::gaps;
use super::thread::{
    Node, Slot, ThreadData, EPISODES, NO_DURATIONS, OVERFLOW, OVERFLOW_SLOT, ROOT,
};
use crate::base::arena::bump;
use crate::base::clock;
use crate::base::site::{self, CallInfo, FrameInfo, Kind};
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
        // Inside the parent's time: the profiler's, not the parent's own (unless it
        // was interrupted: `gaps::unless_interrupted`).
        let ticks = gaps::unless_interrupted(clock::now().saturating_sub(t0));
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

impl ThreadData {
    /// The slot of `node` for the call site at `key`.
    #[inline]
    pub(crate) fn slot_of(&self, node: u32, key: usize, info: impl FnOnce() -> CallInfo) -> &Slot {
        self.slot(self.slot_index(node, key, info))
    }

    /// The index of [`ThreadData::slot_of`]'s slot.
    #[inline]
    pub(crate) fn slot_index(&self, node: u32, key: usize, info: impl FnOnce() -> CallInfo) -> u32 {
        self.find_slot(node, key)
            .unwrap_or_else(|| self.new_slot(node, key, info))
    }

    /// The index of `node`'s slot for the call site at `key`, if it has one yet.
    #[inline]
    pub(crate) fn find_slot(&self, node: u32, key: usize) -> Option<u32> {
        let mut s = self.node(node).first_slot.own();
        while s != OVERFLOW_SLOT {
            if self.slot(s).key.load(Relaxed) == key {
                return Some(s);
            }
            s = self.slot(s).next.own();
        }
        None
    }

    #[cold]
    fn new_slot(&self, node: u32, key: usize, info: impl FnOnce() -> CallInfo) -> u32 {
        let info = info();
        let call = site::call_id(key, || info);
        let n = self.node(node);
        let durations = if info.kind.timed() {
            let frame = n.frame.load(Relaxed);
            let at = self.site_durations_of(frame, kind_code(info.kind));
            if at == NO_DURATIONS {
                0
            } else {
                at + 1
            }
        } else {
            0
        };
        let pushed = self.slots.push(|s| {
            s.key.store(key, Relaxed);
            s.call.store(call, Relaxed);
            s.durations.store(durations, Relaxed);
            s.next.set(n.first_slot.own());
        });
        match pushed {
            Some(i) => {
                n.first_slot.set(i);
                i
            }
            None => OVERFLOW_SLOT,
        }
    }
}

fn kind_code(kind: Kind) -> u32 {
    Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .map_or(EPISODES, |i| i as u32 + 1)
}
