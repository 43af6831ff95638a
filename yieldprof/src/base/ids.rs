//! The ids the site table has given, read without its lock: a thread's first node or
//! call slot of a site that another thread has recorded takes no lock. Threads starting
//! together queued on that lock, and a switch in the wait (or in the wake of the
//! thread queued) fell between an episode's end and the reading of its figures.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicUsize};

/// Entries: each table has this many places, 12 bytes each.
const PLACES: usize = 1024;
/// Places looked at from a key's own: past them the table's lock answers.
const PROBES: usize = 8;

/// Keys (a static's address, never 0) and their ids. Written only under the table's
/// lock, read by any thread.
pub(crate) struct Ids {
    keys: [AtomicUsize; PLACES],
    ids: [AtomicU32; PLACES],
}

impl Ids {
    pub(crate) const fn new() -> Self {
        Ids {
            keys: [const { AtomicUsize::new(0) }; PLACES],
            ids: [const { AtomicU32::new(0) }; PLACES],
        }
    }

    /// The places `key` may be in, from its own (a multiplicative hash of its address).
    fn places(key: usize) -> impl Iterator<Item = usize> {
        const BITS: u32 = PLACES.trailing_zeros();
        let own = ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BITS)) as usize;
        (0..PROBES).map(move |i| (own + i) % PLACES)
    }

    /// The id given to `key`, if it is here.
    pub(crate) fn get(&self, key: usize) -> Option<u32> {
        for at in Self::places(key) {
            match self.keys[at].load(Acquire) {
                0 => return None,
                k if k == key => return Some(self.ids[at].load(Relaxed)),
                _ => {}
            }
        }
        None
    }

    /// Keeps `id` for `key`, under the table's lock; where its places are all taken it
    /// is not kept, and the lock answers for it.
    pub(crate) fn put(&self, key: usize, id: u32) {
        if let Some(at) = Self::places(key).find(|&at| self.keys[at].load(Relaxed) == 0) {
            self.ids[at].store(id, Relaxed);
            // Published after its id: a reader that sees the key sees the id.
            self.keys[at].store(key, Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_put_is_found_by_its_key_only() {
        let ids = Ids::new();
        assert_eq!(ids.get(0x1000), None);
        ids.put(0x1000, 7);
        ids.put(0x2000, 9);
        assert_eq!(ids.get(0x1000), Some(7));
        assert_eq!(ids.get(0x2000), Some(9));
        assert_eq!(ids.get(0x3000), None);
    }

    #[test]
    fn keys_past_their_places_are_not_kept() {
        let ids = Ids::new();
        // Addresses that share their own place: the first PROBES fill the places from
        // it on, the next is not kept.
        let own = |k: usize| Ids::places(k).next();
        let same: Vec<usize> = (1..)
            .map(|i: usize| i * 8)
            .filter(|&k| own(k) == own(8))
            .take(PROBES + 1)
            .collect();
        for (id, &k) in same.iter().enumerate() {
            ids.put(k, id as u32);
        }
        for (id, &k) in same.iter().enumerate() {
            let want = (id < PROBES).then_some(id as u32);
            assert_eq!(ids.get(k), want, "key {k:#x}");
        }
    }
}
