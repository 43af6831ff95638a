//! One record per episode closed on the hot path (`record::lazy`), folded into the
//! thread's tree in batches (`record::fold`): the owner writes, any thread copies the
//! records not folded yet while the owner goes on.
//!
//! A push stores six words and one counter: no lock, no allocation, no lookup. The
//! owner folds every record before the buffer would wrap, so none is ever lost. A fold
//! announces itself (`folding`) before it touches the tree, so a reader that copied the
//! tree and then the records counts a record once at most: one whose fold may have
//! reached the tree copy, or whose cell may have been rewritten, is left out (that copy
//! misses it; the next one has it in the tree), as the ring in `base::ring` does.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Records kept before a fold: a fold then costs its fixed part once per this many
/// episodes, and a report sees them all whatever the fold's timing.
pub(crate) const RECORDS: usize = 64;

/// One episode closed on the hot path. Times are clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    /// When its frame opened (its first wait) and how long it lasted.
    pub(crate) start: u64,
    pub(crate) duration: u64,
    /// Its node in the thread's tree.
    pub(crate) node: u32,
    /// Its direct spins, and the address of their `CallSite` (0 for none).
    pub(crate) spins: u32,
    pub(crate) spin_site: usize,
    /// Its timed calls on the fast path, all at one site: the address of its
    /// `CallSite` (0 for none), the last call's length (the others were added to the
    /// tree as the next one opened), and how many (0 for none).
    pub(crate) call_site: usize,
    pub(crate) call_ticks: u64,
    pub(crate) calls: u32,
}

/// The longest call and the most calls a record holds: its calls' count shares a word
/// with the last one's length (2^48 ticks: a day and more at 3 GHz).
pub(crate) const MAX_CALL_TICKS: u64 = (1 << CALLS_SHIFT) - 1;
pub(crate) const MAX_CALLS: u32 = u16::MAX as u32;
const CALLS_SHIFT: u32 = 48;

/// A record in six words, each read and written whole.
#[derive(Default)]
struct Cell {
    start: AtomicU64,
    duration: AtomicU64,
    /// `node << 32 | spins`.
    node: AtomicU64,
    spin_site: AtomicU64,
    call_site: AtomicU64,
    /// `calls << CALLS_SHIFT | call_ticks`.
    call_ticks: AtomicU64,
}

/// A thread's records not folded yet, at most [`RECORDS`].
pub(crate) struct Records {
    cells: [Cell; RECORDS],
    /// Records ever pushed; the cells below it are whole.
    written: AtomicU64,
    /// Records ever folded or being folded: a fold stores it before touching the tree.
    folding: AtomicU64,
    /// The episode open on the hot path: its start tick (0: none), node and the
    /// thread's off-CPU clock at its mark (0: not known). A report counts it open up to
    /// the copy, as it counts an open frame on its node.
    open_start: AtomicU64,
    open_node: AtomicU32,
    open_off: AtomicU64,
}

impl Default for Records {
    fn default() -> Self {
        Records {
            cells: std::array::from_fn(|_| Cell::default()),
            written: AtomicU64::new(0),
            folding: AtomicU64::new(0),
            open_start: AtomicU64::new(0),
            open_node: AtomicU32::new(0),
            open_off: AtomicU64::new(0),
        }
    }
}

impl Records {
    /// Owner only: whether a push needs a fold first.
    #[inline(always)]
    pub(crate) fn full(&self) -> bool {
        let unfolded = self.written.load(Ordering::Relaxed) - self.folding.load(Ordering::Relaxed);
        unfolded >= RECORDS as u64
    }

    /// Owner only, when not [`full`](Records::full): keeps `r`.
    #[inline(always)]
    pub(crate) fn push(&self, r: &Record) {
        let i = self.written.load(Ordering::Relaxed);
        let c = &self.cells[i as usize % RECORDS];
        // A reader that sees a word stored below sees the `folding` that freed the cell
        // (its acquire fence pairs with this one), so it drops the record it had there.
        fence(Ordering::Release);
        c.start.store(r.start, Ordering::Relaxed);
        c.duration.store(r.duration, Ordering::Relaxed);
        c.node.store(
            u64::from(r.node) << 32 | u64::from(r.spins),
            Ordering::Relaxed,
        );
        c.spin_site.store(r.spin_site as u64, Ordering::Relaxed);
        c.call_site.store(r.call_site as u64, Ordering::Relaxed);
        c.call_ticks.store(
            u64::from(r.calls) << CALLS_SHIFT | r.call_ticks,
            Ordering::Relaxed,
        );
        self.written.store(i + 1, Ordering::Release);
    }

    /// Owner only: an episode on `node` opened on the hot path at tick `start`, the
    /// thread's off-CPU clock `off` at its mark (0: not known).
    #[inline(always)]
    pub(crate) fn opened(&self, node: u32, start: u64, off: u64) {
        self.open_node.store(node, Ordering::Relaxed);
        self.open_off.store(off, Ordering::Relaxed);
        // A reader that sees the start sees its node and clock.
        self.open_start.store(start.max(1), Ordering::Release);
    }

    /// Owner only: the open episode closed (before its record is pushed: a reader
    /// that counts the record then never counts it open too), or became a frame.
    #[inline(always)]
    pub(crate) fn closed(&self) {
        self.open_start.store(0, Ordering::Relaxed);
    }

    /// Any thread, after [`Records::written`]: the episode open on the hot path, its
    /// node, start tick and off-CPU clock at its mark (0: not known); `None` when none
    /// is, or it changed during the read.
    pub(crate) fn open(&self) -> Option<(u32, u64, u64)> {
        let start = self.open_start.load(Ordering::Acquire);
        // Acquire: the start's re-read below comes after them. A later open's node
        // and clock stored in between make that re-read differ.
        let node = self.open_node.load(Ordering::Relaxed);
        let off = self.open_off.load(Ordering::Acquire);
        (start != 0 && self.open_start.load(Ordering::Relaxed) == start)
            .then_some((node, start, off))
    }

    /// Owner only: hands every record not folded yet to `fold`, oldest first, after
    /// announcing them as folded (before `fold` touches the tree).
    pub(crate) fn fold(&self, mut fold: impl FnMut(Record)) {
        let written = self.written.load(Ordering::Relaxed);
        let from = self.folding.load(Ordering::Relaxed);
        if from == written {
            return;
        }
        self.folding.store(written, Ordering::Relaxed);
        // A reader that sees a tree write made below sees this `folding` too.
        fence(Ordering::Release);
        for i in from..written {
            fold(self.read(i));
        }
    }

    /// Any thread: how many records were ever pushed. Read before copying the tree:
    /// records pushed later may already show there as a frame still open.
    pub(crate) fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Any thread, after copying the tree: the records below `written` (from
    /// [`Records::written`], read before the copy) that no fold had reached when the
    /// copy ended, oldest first.
    pub(crate) fn unfolded(&self, written: u64) -> Vec<Record> {
        let first = written.saturating_sub(RECORDS as u64);
        let copied: Vec<(u64, Record)> = (first..written).map(|i| (i, self.read(i))).collect();
        fence(Ordering::Acquire);
        let folded = self.folding.load(Ordering::Relaxed);
        copied
            .into_iter()
            .filter(|(i, _)| *i >= folded)
            .map(|(_, r)| r)
            .collect()
    }

    fn read(&self, i: u64) -> Record {
        let c = &self.cells[i as usize % RECORDS];
        let node = c.node.load(Ordering::Relaxed);
        let calls = c.call_ticks.load(Ordering::Relaxed);
        Record {
            start: c.start.load(Ordering::Relaxed),
            duration: c.duration.load(Ordering::Relaxed),
            node: (node >> 32) as u32,
            spins: node as u32,
            spin_site: c.spin_site.load(Ordering::Relaxed) as usize,
            call_site: c.call_site.load(Ordering::Relaxed) as usize,
            call_ticks: calls & MAX_CALL_TICKS,
            calls: (calls >> CALLS_SHIFT) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: u64) -> Record {
        Record {
            start: i,
            duration: 10 + i,
            node: 2 + i as u32,
            spins: i as u32,
            spin_site: 8 * i as usize,
            // Every other one with calls.
            call_site: (i % 2 * 16 * i) as usize,
            call_ticks: i % 2 * (3 + i),
            calls: (i % 2 * i) as u32,
        }
    }

    #[test]
    fn a_fold_hands_over_every_record_pushed_once_in_order() {
        let r = Records::default();
        let mut folded = Vec::new();
        for round in 0..5u64 {
            for i in 0..RECORDS as u64 {
                assert!(!r.full());
                r.push(&record(round * 100 + i));
            }
            assert!(r.full());
            r.fold(|x| folded.push(x));
            assert!(r.unfolded(r.written()).is_empty());
        }
        let expected: Vec<Record> = (0..5u64)
            .flat_map(|round| (0..RECORDS as u64).map(move |i| record(round * 100 + i)))
            .collect();
        assert_eq!(folded, expected);
    }

    #[test]
    fn a_reader_sees_only_the_records_no_fold_reached() {
        let r = Records::default();
        for i in 0..10 {
            r.push(&record(i));
        }
        r.fold(|_| {});
        for i in 10..13 {
            r.push(&record(i));
        }
        let w = r.written();
        // Pushed after the reader's count: left to the next copy.
        r.push(&record(13));
        assert_eq!(r.unfolded(w), vec![record(10), record(11), record(12)]);
        r.fold(|_| {});
        assert!(r.unfolded(r.written()).is_empty());
    }
}
