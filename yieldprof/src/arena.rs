//! A bounded, append-only store that one thread writes and any thread reads.
//!
//! The owner thread appends; readers (a report taken while the thread runs) see every
//! element below [`Arena::len`]. Chunks are allocated once and never move, so an index
//! stays valid for the arena's life and warm-up is the only time it allocates.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

const CHUNK: usize = 64;

pub(crate) struct Arena<T> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    len: AtomicU32,
    cap: u32,
}

impl<T: Default> Arena<T> {
    pub(crate) fn new(cap: u32) -> Self {
        let chunks = (0..(cap as usize).div_ceil(CHUNK))
            .map(|_| OnceLock::new())
            .collect();
        Arena {
            chunks,
            len: AtomicU32::new(0),
            cap,
        }
    }

    /// Elements published so far.
    pub(crate) fn len(&self) -> u32 {
        self.len.load(Ordering::Acquire)
    }

    /// Element `i`, which must be below `len()` (or be the owner's own, just reserved).
    pub(crate) fn get(&self, i: u32) -> &T {
        let chunk = self.chunks[i as usize / CHUNK]
            .get()
            .expect("arena index below len has its chunk");
        &chunk[i as usize % CHUNK]
    }

    /// Owner only: reserves the next element, lets `init` fill it, then publishes it.
    /// `None` when the cap is reached.
    pub(crate) fn push(&self, init: impl FnOnce(&T)) -> Option<u32> {
        let i = self.len.load(Ordering::Relaxed);
        if i >= self.cap {
            return None;
        }
        let chunk = self.chunks[i as usize / CHUNK]
            .get_or_init(|| (0..CHUNK).map(|_| T::default()).collect());
        init(&chunk[i as usize % CHUNK]);
        self.len.store(i + 1, Ordering::Release);
        Some(i)
    }
}

#[cfg(test)]
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
        assert_eq!(a.get(64).load(Ordering::Relaxed), 64);
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
