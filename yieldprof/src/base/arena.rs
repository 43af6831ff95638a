//! A bounded, append-only store that one thread writes and any thread reads.
//!
//! The owner thread appends; readers (a report taken while the thread runs) see every
//! element below [`Arena::len`], and every element reached through a [`Link`].
//! Segments are allocated once, when first needed, and never move, so an index stays
//! valid for the arena's life and only a push into a new segment allocates.
//!
//! The protocol is checked with loom (`RUSTFLAGS="--cfg loom" cargo test -p yieldprof
//! --lib --target-dir target/loom arena::loom_models`): under `cfg(loom)` the atomics
//! and the segment cells are loom's, and the first segment holds 2 elements so the
//! models cross segment boundaries. Nothing else works in such a build: loom's atomics panic outside a model.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, Ordering};
#[cfg(not(loom))]
use std::sync::OnceLock;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, Ordering};
#[cfg(loom)]
use loom_cell::OnceLock;

/// Elements in the first segment; segment `k` holds `CHUNK << k`.
#[cfg(not(loom))]
const CHUNK: usize = 8;
#[cfg(loom)]
const CHUNK: usize = 2;
/// Segments enough for every `u32` index: they hold `CHUNK × (2^SEGMENTS − 1)`.
const SEGMENTS: usize = 33 - CHUNK.trailing_zeros() as usize;

/// Storage in segments that double in size, each allocated when the first element in
/// it is pushed: an arena costs its fixed header until used, whatever its cap, and at
/// most twice what it holds after (never more than the cap).
pub(crate) struct Arena<T> {
    segments: [OnceLock<Box<[T]>>; SEGMENTS],
    len: AtomicU32,
    cap: u32,
}

/// The segment of element `i` and its place there.
#[inline(always)]
fn locate(i: u32) -> (usize, usize) {
    // Segment `k` starts at `CHUNK × (2^k − 1)`: `i / CHUNK + 1` lies in `2^k..2^(k+1)`.
    let n = i as usize / CHUNK + 1;
    let k = (usize::BITS - 1 - n.leading_zeros()) as usize;
    (k, i as usize - CHUNK * ((1 << k) - 1))
}

impl<T: Default> Arena<T> {
    pub(crate) fn new(cap: u32) -> Self {
        Arena {
            segments: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicU32::new(0),
            cap,
        }
    }

    /// Elements published so far.
    pub(crate) fn len(&self) -> u32 {
        self.len.load(Ordering::Acquire)
    }

    /// Element `i`, which must be below `len()`, reached through a [`Link`], or be the
    /// owner's own.
    #[inline(always)]
    pub(crate) fn get(&self, i: u32) -> &T {
        let (k, at) = locate(i);
        let segment = self.segments[k]
            .get()
            .expect("arena index below len has its segment");
        &segment[at]
    }

    /// Owner only: reserves the next element, lets `init` fill it, then publishes it.
    /// `None` when the cap is reached.
    pub(crate) fn push(&self, init: impl FnOnce(&T)) -> Option<u32> {
        let i = self.len.load(Ordering::Relaxed);
        if i >= self.cap {
            return None;
        }
        let (k, at) = locate(i);
        let segment = self.segments[k].get_or_init(|| {
            // The last segment stops at the cap.
            let size = (CHUNK << k).min(self.cap as usize - (i as usize - at));
            (0..size).map(|_| T::default()).collect()
        });
        init(&segment[at]);
        self.len.store(i + 1, Ordering::Release);
        Some(i)
    }
}

/// An index into an [`Arena`] that another thread may follow (a child or sibling list).
///
/// The owner stores it with release and a reader loads it with acquire, so a reader
/// that sees index `i` also sees `i`'s segment and everything `init` wrote into it. With
/// relaxed on both sides a reader on a weakly ordered CPU (aarch64) could find the
/// segment not yet there and panic, or read the element's fields as zeros; on x86 both
/// orderings compile to plain moves.
#[derive(Default)]
pub(crate) struct Link(AtomicU32);

impl Link {
    /// Owner only: points the link at `i`, which `push` returned.
    pub(crate) fn set(&self, i: u32) {
        self.0.store(i, Ordering::Release);
    }

    /// The owner reading its own link: no ordering needed.
    #[inline(always)]
    pub(crate) fn own(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Any other thread reading the link.
    pub(crate) fn read(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
}

/// `OnceLock` for loom models. The arena calls `get_or_init` from its owner only, so a
/// pointer published with release is the whole protocol.
#[cfg(loom)]
mod loom_cell {
    use loom::sync::atomic::{AtomicPtr, Ordering};

    pub(crate) struct OnceLock<T>(AtomicPtr<T>);

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            OnceLock(AtomicPtr::new(std::ptr::null_mut()))
        }

        pub(crate) fn get(&self) -> Option<&T> {
            // SAFETY: a non-null pointer came from `Box::into_raw` below and lives
            // until `drop`, which takes `&mut self`.
            unsafe { self.0.load(Ordering::Acquire).as_ref() }
        }

        pub(crate) fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
            if let Some(v) = self.get() {
                return v;
            }
            self.0
                .store(Box::into_raw(Box::new(f())), Ordering::Release);
            self.get().expect("just stored")
        }
    }

    impl<T> Drop for OnceLock<T> {
        fn drop(&mut self) {
            let p = self.0.with_mut(|p| *p);
            if !p.is_null() {
                // SAFETY: `p` came from `Box::into_raw` and is dropped once.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn push_stops_at_the_cap_and_keeps_what_it_has() {
        let a: Arena<AtomicU64> = Arena::new(100);
        for n in 0..100 {
            assert_eq!(a.push(|v| v.store(n, Ordering::Relaxed)), Some(n as u32));
        }
        assert_eq!(a.push(|_| ()), None);
        assert_eq!(a.len(), 100);
        assert_eq!(a.get(99).load(Ordering::Relaxed), 99);
        assert_eq!(a.get(56).load(Ordering::Relaxed), 56);
    }

    #[test]
    fn any_cap_allocates_only_the_segments_pushed_into_and_none_past_the_cap() {
        let sizes = |a: &Arena<AtomicU64>| -> Vec<usize> {
            a.segments
                .iter()
                .map_while(|s| s.get().map(|s| s.len()))
                .collect()
        };
        let a: Arena<AtomicU64> = Arena::new(u32::MAX);
        assert_eq!(sizes(&a), [0usize; 0]);
        for n in 0..200 {
            a.push(|v| v.store(n, Ordering::Relaxed));
        }
        assert_eq!(sizes(&a), [8, 16, 32, 64, 128]);
        assert_eq!(a.get(119).load(Ordering::Relaxed), 119);
        assert_eq!(a.get(120).load(Ordering::Relaxed), 120);
        assert_eq!(a.get(199).load(Ordering::Relaxed), 199);
        let capped: Arena<AtomicU64> = Arena::new(100);
        while capped.push(|_| ()).is_some() {}
        assert_eq!(sizes(&capped), [8, 16, 32, 44]);
        // The last index a `u32` cap allows is in the last segment.
        assert_eq!(locate(u32::MAX - 1).0, SEGMENTS - 1);
    }

    #[test]
    fn a_reader_on_another_thread_sees_published_elements() {
        let a: std::sync::Arc<Arena<AtomicU64>> = std::sync::Arc::new(Arena::new(4096));
        let w = a.clone();
        let writer = std::thread::spawn(move || {
            for n in 0..4096u64 {
                w.push(|v| v.store(n + 1, Ordering::Relaxed));
            }
        });
        let mut seen = 0;
        while seen < 4096 {
            let len = a.len();
            for i in seen..len {
                assert_eq!(a.get(i).load(Ordering::Relaxed), i as u64 + 1);
            }
            seen = len;
        }
        writer.join().unwrap();
    }
}

/// Models of the owner appending while a report reads, explored by loom under every
/// interleaving and every weak-memory outcome it knows. The reader is spawned before
/// the owner appends, so the spawn orders none of the appends before its reads.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicU64;
    use loom::sync::Arc;

    /// A list element: a value and the index of the next element (0: none).
    #[derive(Default)]
    struct Item {
        value: AtomicU64,
        next: Link,
    }

    #[test]
    fn a_reader_sees_every_element_below_len_across_chunks() {
        loom::model(|| {
            let a: Arc<Arena<AtomicU64>> = Arc::new(Arena::new(3));
            let r = a.clone();
            let reader = loom::thread::spawn(move || {
                let len = r.len();
                for i in 0..len {
                    assert_eq!(r.get(i).load(Ordering::Relaxed), u64::from(i) + 1);
                }
            });
            for n in 0..3u64 {
                a.push(|v| v.store(n + 1, Ordering::Relaxed));
            }
            reader.join().unwrap();
            assert_eq!(a.len(), 3);
        });
    }

    #[test]
    fn a_reader_following_links_finds_initialised_elements() {
        loom::model(|| {
            // Element 0 is the list head, as a thread's root node is; 1 and 2 are
            // pushed and linked in front (the newest first), across a chunk boundary.
            let a: Arc<Arena<Item>> = Arc::new(Arena::new(3));
            a.push(|_| ());
            let r = a.clone();
            let reader = loom::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut i = r.get(0).next.read();
                while i != 0 {
                    let item = r.get(i);
                    seen.push(item.value.load(Ordering::Relaxed));
                    i = item.next.read();
                }
                assert!(
                    seen.is_empty() || seen == [10] || seen == [20, 10],
                    "{seen:?}"
                );
            });
            for n in 1..3u64 {
                let head = &a.get(0).next;
                let i = a
                    .push(|item| {
                        item.value.store(n * 10, Ordering::Relaxed);
                        item.next.set(head.own());
                    })
                    .unwrap();
                head.set(i);
            }
            reader.join().unwrap();
        });
    }
}

/// Adds to a counter that only the calling thread writes.
#[inline(always)]
pub(crate) fn bump(a: &std::sync::atomic::AtomicU64, by: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    // Only the owner writes, so load+store is exact and cheaper than fetch_add.
    a.store(a.load(Relaxed).wrapping_add(by), Relaxed);
}
