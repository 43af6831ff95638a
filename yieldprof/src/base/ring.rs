//! A bounded ring of the last episodes one thread closed: the owner writes, any thread
//! copies it while the owner goes on.
//!
//! The cells are allocated once, zeroed, when the ring is made (a thread's first
//! entry); a push then stores four words and two counters: no lock, no allocation,
//! no division. A reader copies the newest cells and drops any a write may have
//! overwritten while it read (seqlock-style, with two counters instead of a sequence
//! per cell): the copy holds only whole episodes, in the order they closed.
//!
//! The protocol is checked with loom (`RUSTFLAGS="--cfg loom" cargo test -p yieldprof
//! --lib --target-dir target/loom loom_models`): under `cfg(loom)` the atomics and
//! fences are loom's.

#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// One closed wait episode. Times are clock ticks in the ring and in a thread's copy
/// until a report scales them: then `start` is `CLOCK_MONOTONIC` ns and `duration` ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Episode {
    /// When it opened.
    pub(crate) start: u64,
    /// How long it lasted.
    pub(crate) duration: u64,
    /// The frame id of its site.
    pub(crate) frame: u32,
    /// Bit `1 << kind` per kind of wait call made in it (`Kind as u16`).
    pub(crate) kinds: u16,
    /// Wait calls made in it, counted and timed.
    pub(crate) calls: u32,
    /// Context switches during it (0 where the thread cannot count them exactly).
    pub(crate) switches: u32,
}

/// An episode in four words, each read and written whole.
#[derive(Default)]
struct Cell {
    start: AtomicU64,
    duration: AtomicU64,
    /// `frame << 32 | kinds`.
    site: AtomicU64,
    /// `calls << 32 | switches`.
    counts: AtomicU64,
}

/// The last `capacity` episodes of one thread and how many it ever pushed.
pub(crate) struct Ring {
    cells: Cells,
    /// Owner only: the cell the next push writes (`done % capacity`, kept so a push
    /// needs no division).
    next: AtomicU32,
    /// Pushes begun: a push announces itself here before it touches its cell.
    started: AtomicU64,
    /// Pushes finished: the cells of episodes below it are whole.
    done: AtomicU64,
}

impl Ring {
    /// A ring of `capacity` episodes; 0 makes one that keeps nothing and allocates
    /// nothing. The cells are zeroed pages: untouched ones cost no memory.
    pub(crate) fn new(capacity: u32) -> Ring {
        let cells = zeroed(capacity as usize);
        // The first page's fault here, at the thread's first wait, not at its first
        // close: the end of a wait (a lock's acquire) is on the user's critical path.
        if let Some(first) = cells.first() {
            first.start.store(0, Ordering::Relaxed);
        }
        Ring {
            cells,
            next: AtomicU32::new(0),
            started: AtomicU64::new(0),
            done: AtomicU64::new(0),
        }
    }

    /// Episodes it keeps at most.
    pub(crate) fn capacity(&self) -> u32 {
        self.cells.len() as u32
    }

    /// Owner only: keeps `e`, in place of the oldest episode once full.
    #[inline(always)]
    pub(crate) fn push(&self, e: &Episode) {
        let Some(cell) = self.cells.get(self.next.load(Ordering::Relaxed) as usize) else {
            return;
        };
        let i = self.done.load(Ordering::Relaxed);
        self.started.store(i + 1, Ordering::Relaxed);
        // A reader that sees any word stored below also sees `started` above (its
        // acquire fence pairs with this one), so it knows this cell was being rewritten.
        fence(Ordering::Release);
        cell.start.store(e.start, Ordering::Relaxed);
        cell.duration.store(e.duration, Ordering::Relaxed);
        cell.site.store(
            u64::from(e.frame) << 32 | u64::from(e.kinds),
            Ordering::Relaxed,
        );
        cell.counts.store(
            u64::from(e.calls) << 32 | u64::from(e.switches),
            Ordering::Relaxed,
        );
        let next = self.next.load(Ordering::Relaxed) + 1;
        self.next.store(
            if next == self.capacity() { 0 } else { next },
            Ordering::Relaxed,
        );
        self.done.store(i + 1, Ordering::Release);
    }

    /// The episodes kept, oldest first, and how many were ever pushed: the ones
    /// pushed and not returned were overwritten (or were being, while this read).
    pub(crate) fn read(&self) -> (Vec<Episode>, u64) {
        let n = self.cells.len() as u64;
        if n == 0 {
            return (Vec::new(), self.done.load(Ordering::Acquire));
        }
        let done = self.done.load(Ordering::Acquire);
        let first = done.saturating_sub(n);
        let copied: Vec<Episode> = (first..done)
            .map(|i| {
                let c = &self.cells[(i % n) as usize];
                let site = c.site.load(Ordering::Relaxed);
                let counts = c.counts.load(Ordering::Relaxed);
                Episode {
                    start: c.start.load(Ordering::Relaxed),
                    duration: c.duration.load(Ordering::Relaxed),
                    frame: (site >> 32) as u32,
                    kinds: site as u16,
                    calls: (counts >> 32) as u32,
                    switches: counts as u32,
                }
            })
            .collect();
        fence(Ordering::Acquire);
        // A push begun as `started - 1` (or earlier) may have rewritten every cell of
        // an episode below `started - n` while they were copied.
        let whole_from = self.started.load(Ordering::Relaxed).saturating_sub(n);
        let torn = whole_from.saturating_sub(first).min(copied.len() as u64) as usize;
        (copied[torn..].to_vec(), done)
    }
}

/// `n` cells of zero bytes, in pages mapped for the ring alone: a page costs nothing
/// until its first episode is pushed. `alloc_zeroed` gave no such pages: on a thread
/// other than main, glibc serves 128 KiB (the default ring) from the thread's arena
/// and clears it, ~100 µs of page faults and `memset` at every thread's first episode
/// (`perf record` of a pool's start, 2026-12-04). A ring the system cannot map keeps
/// nothing, which a report shows as a timeline of capacity 0.
#[cfg(not(loom))]
fn zeroed(n: usize) -> Cells {
    let bytes = n.saturating_mul(std::mem::size_of::<Cell>());
    if bytes == 0 {
        return Cells::EMPTY;
    }
    // SAFETY: an anonymous private mapping at an address the kernel chooses touches
    // no existing memory; the result is checked before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Cells::EMPTY;
    }
    std::ptr::NonNull::new(p.cast::<Cell>()).map_or(Cells::EMPTY, |ptr| Cells { ptr, len: n })
}

/// The ring's cells, in their own anonymous mapping.
#[cfg(not(loom))]
struct Cells {
    ptr: std::ptr::NonNull<Cell>,
    len: usize,
}

#[cfg(not(loom))]
impl Cells {
    const EMPTY: Cells = Cells {
        ptr: std::ptr::NonNull::dangling(),
        len: 0,
    };
}

// SAFETY: the cells are atomics, shared between threads like any `[Cell]`.
#[cfg(not(loom))]
unsafe impl Send for Cells {}
// SAFETY: as above.
#[cfg(not(loom))]
unsafe impl Sync for Cells {}

#[cfg(not(loom))]
impl std::ops::Deref for Cells {
    type Target = [Cell];

    fn deref(&self) -> &[Cell] {
        // SAFETY: `ptr` holds `len` cells of zero bytes or as pushes left them (a
        // `Cell` of zero bytes is four atomics holding 0), or is dangling with `len` 0.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl Drop for Cells {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping was made by `zeroed` with this length, and no
            // reference into it outlives `self`.
            unsafe {
                libc::munmap(
                    self.ptr.as_ptr().cast(),
                    self.len * std::mem::size_of::<Cell>(),
                )
            };
        }
    }
}

/// Loom's atomics are not plain memory: made one by one.
#[cfg(loom)]
type Cells = Box<[Cell]>;

#[cfg(loom)]
fn zeroed(n: usize) -> Cells {
    (0..n).map(|_| Cell::default()).collect()
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;

    fn episode(i: u64) -> Episode {
        Episode {
            start: i,
            duration: i + 100,
            frame: i as u32,
            kinds: 0,
            calls: i as u32 + 7,
            switches: 0,
        }
    }

    #[test]
    fn a_reader_racing_the_owner_copies_only_whole_consecutive_episodes() {
        // Every interleaving of 33 writes and 11 reads is out of reach; three
        // preemptions cover a read that spans a whole overwrite.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            // Three pushes into two cells: the third overwrites the first.
            let ring = Arc::new(Ring::new(2));
            let r = ring.clone();
            let reader = loom::thread::spawn(move || {
                let (kept, pushed) = r.read();
                assert!(kept.len() <= 2 && kept.len() as u64 <= pushed);
                for (k, e) in kept.iter().enumerate() {
                    let i = pushed - kept.len() as u64 + k as u64;
                    assert_eq!(*e, episode(i), "episode {i} of {pushed}");
                }
            });
            for i in 0..3 {
                ring.push(&episode(i));
            }
            reader.join().unwrap();
            assert_eq!(ring.read(), (vec![episode(1), episode(2)], 3));
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn episode(i: u64) -> Episode {
        Episode {
            start: i * 10,
            duration: i * 3 + 1,
            frame: i as u32,
            kinds: (i % 7) as u16,
            calls: (i * 5) as u32,
            switches: (i * 2) as u32,
        }
    }

    #[test]
    fn keeps_every_episode_until_full_then_the_newest_n() {
        let ring = Ring::new(4);
        assert_eq!(ring.read(), (vec![], 0));
        for i in 0..4 {
            ring.push(&episode(i));
        }
        assert_eq!(ring.read(), ((0..4).map(episode).collect(), 4));
        // The fifth push wraps: the oldest gives way, exactly one.
        ring.push(&episode(4));
        assert_eq!(ring.read(), ((1..5).map(episode).collect(), 5));
        for i in 5..11 {
            ring.push(&episode(i));
        }
        let (kept, pushed) = ring.read();
        assert_eq!(kept, (7..11).map(episode).collect::<Vec<_>>());
        assert_eq!(pushed - kept.len() as u64, 7, "dropped");
    }

    #[test]
    fn a_ring_of_one_keeps_the_last_and_of_none_keeps_nothing_but_the_count() {
        let one = Ring::new(1);
        for i in 0..3 {
            one.push(&episode(i));
        }
        assert_eq!(one.read(), (vec![episode(2)], 3));
        let none = Ring::new(0);
        none.push(&episode(1));
        assert_eq!(none.capacity(), 0);
        // Off means not counted either: no push begins.
        assert_eq!(none.read(), (vec![], 0));
    }

    #[test]
    fn fields_keep_their_full_width() {
        let ring = Ring::new(2);
        let big = Episode {
            start: u64::MAX,
            duration: u64::MAX - 1,
            frame: u32::MAX,
            kinds: u16::MAX,
            calls: u32::MAX,
            switches: u32::MAX - 2,
        };
        ring.push(&big);
        assert_eq!(ring.read(), (vec![big], 1));
    }

    #[test]
    fn a_reader_racing_the_owner_copies_only_whole_consecutive_episodes() {
        let ring = Ring::new(64);
        let total = 200_000u64;
        std::thread::scope(|s| {
            s.spawn(|| (0..total).for_each(|i| ring.push(&episode(i))));
            let mut reads = 0;
            loop {
                let (kept, pushed) = ring.read();
                assert!(kept.len() <= 64 && kept.len() as u64 <= pushed);
                // Consecutive, the newest ending at `pushed`, each one whole.
                for (k, e) in kept.iter().enumerate() {
                    let i = pushed - kept.len() as u64 + k as u64;
                    assert_eq!(*e, episode(i), "episode {i} of {pushed}");
                }
                reads += 1;
                if pushed == total {
                    assert_eq!(kept.len(), 64);
                    break;
                }
            }
            assert!(reads > 0);
        });
    }
}
