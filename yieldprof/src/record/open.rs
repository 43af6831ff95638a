//! What an open frame keeps off its guard: its switch mark, what closed guards had
//! claimed when it opened, and its counter sample. The guard lives in the stack frame
//! of the annotated function, which a deep recursion pays for at every level; this
//! lives in one list per thread instead.

use crate::counters::Mark;
use std::cell::RefCell;

/// Wall ticks and off-CPU ns that closed guards have accounted for on this thread:
/// a timed call subtracts what guards nested in it took (a lock taken in the argument
/// of a condvar wait), so no time counts twice.
#[derive(Clone, Copy)]
pub(crate) struct Claimed {
    pub(crate) ticks: u64,
    pub(crate) off_ns: u64,
}

impl Claimed {
    pub(crate) const ZERO: Claimed = Claimed {
        ticks: 0,
        off_ns: 0,
    };
}

/// The wait calls made on this thread since the innermost open wait frame opened: a
/// closing wait frame's calls and kinds of wait, for its timeline entry. Nested
/// frames' calls count in the frames around them too.
#[derive(Clone, Copy, Default)]
pub(crate) struct Tally {
    pub(crate) calls: u32,
    /// Bit per kind (`Kind::bit`).
    pub(crate) kinds: u16,
}

impl Tally {
    pub(crate) const ZERO: Tally = Tally { calls: 0, kinds: 0 };

    /// Both tallies together.
    #[inline(always)]
    pub(crate) fn plus(self, other: Tally) -> Tally {
        Tally {
            calls: self.calls.saturating_add(other.calls),
            kinds: self.kinds | other.kinds,
        }
    }
}

/// One open frame's state.
#[derive(Clone, Copy)]
pub(crate) struct Opened {
    /// The thread's switch figures when it opened (wait frames; `Mark::ZERO` else).
    pub(crate) mark: Mark,
    /// What closed guards had claimed when it opened.
    pub(crate) claimed: Claimed,
    /// Its opening counter reading, when it is sampled.
    pub(crate) sample: u32,
    /// The thread's tally when it opened (wait frames, which start their own at
    /// zero; `Tally::ZERO` else).
    pub(crate) tally: Tally,
}

/// This thread's open frames in the order they opened, each with whether it closed.
#[derive(Default)]
pub(crate) struct OpenFrames(RefCell<Vec<(Opened, bool)>>);

impl OpenFrames {
    /// A frame opened: its slot.
    #[inline]
    pub(crate) fn push(&self, opened: Opened) -> u32 {
        let mut frames = self.0.borrow_mut();
        frames.push((opened, false));
        frames.len() as u32 - 1
    }

    /// The frame in `slot` closed: its state. Slots are freed from the top only, so a
    /// frame still open above one closed out of order (frames held across `.await`)
    /// keeps its slot.
    #[inline]
    pub(crate) fn pop(&self, slot: u32) -> Option<Opened> {
        let mut frames = self.0.borrow_mut();
        let (opened, closed) = frames.get_mut(slot as usize)?;
        *closed = true;
        let opened = *opened;
        while frames.last().is_some_and(|(_, closed)| *closed) {
            frames.pop();
        }
        Some(opened)
    }
}
