//! Spins counted in the episode's own stack frame and added to its node once, when
//! the episode ends.
//!
//! A `spin_loop()` is one PAUSE, about 10 ns; the per-call probe (thread-local access,
//! slot lookup, two relaxed load/stores) costs more than the PAUSE itself. So each spin
//! call written directly in an annotated body gets an index into a [`SpinCounts`] that
//! lives next to the episode guard, and counting it is one add on a `Cell` the
//! optimiser keeps in a register. Spins in closures and async blocks keep the probe:
//! those may run after the episode, or on another thread.

#[cfg(feature = "enabled")]
pub use counting::SpinCounts;
#[cfg(not(feature = "enabled"))]
pub use off::SpinCounts;

#[cfg(feature = "enabled")]
mod counting {
    use crate::base::site::CallSite;
    use crate::record::lazy::{self, WaitGuard};
    use crate::record::thread;
    use std::cell::Cell;
    use std::marker::PhantomData;

    /// The direct spin calls of one episode: `N` counters over `N` call sites.
    #[doc(hidden)]
    #[must_use = "the counts are recorded when this drops"]
    pub struct SpinCounts<const N: usize> {
        // The episode's place on the thread's stack of entered episodes (`WaitGuard`).
        place: (u32, u32),
        sites: &'static [CallSite; N],
        counts: [Cell<u64>; N],
        // Whether a spin was counted: the first one opens the episode's frame.
        spun: Cell<bool>,
        // The node belongs to this thread's tree.
        _not_send: PhantomData<*const ()>,
    }

    impl<const N: usize> SpinCounts<N> {
        /// Counts for `episode`'s node. Declared after the guard, so it drops first.
        #[inline(always)]
        pub fn new(episode: &WaitGuard, sites: &'static [CallSite; N]) -> Self {
            SpinCounts {
                place: episode.place(),
                sites,
                counts: [const { Cell::new(0) }; N],
                // An episode that records nothing has nothing to open.
                spun: Cell::new(!episode.active()),
                _not_send: PhantomData,
            }
        }

        /// One call at site `i`.
        #[inline(always)]
        pub fn hit(&self, i: usize) {
            if !self.spun.get() {
                // The episode's first wait: it is timed from here (`record::lazy`).
                lazy::began_waiting();
                self.spun.set(true);
            }
            let c = &self.counts[i];
            c.set(c.get().wrapping_add(1));
        }
    }

    impl<const N: usize> Drop for SpinCounts<N> {
        #[inline]
        fn drop(&mut self) {
            if !self.spun.get() || !WaitGuard::active_at(self.place) {
                return;
            }
            // Only the counts' values leave this frame, never their address: with
            // every access at a constant index, the counters then live in registers
            // for the whole loop instead of being stored at each PAUSE.
            let counts: [u64; N] = std::array::from_fn(|i| self.counts[i].get());
            // One site: kept with the entry until it closes (in its record, if it is
            // on the fast path).
            if N == 1 && lazy::spun(self.place.0, &self.sites[0], counts[0]) {
                return;
            }
            record(self.place, self.sites, &counts);
        }
    }

    #[inline(never)]
    fn record(place: (u32, u32), sites: &'static [CallSite], counts: &[u64]) {
        thread::with(|l| {
            // `None`: the episode records nothing (recording off, thread state gone).
            let Some(node) = lazy::node_of(l, place.0, place.1) else {
                return;
            };
            for (site, &n) in sites.iter().zip(counts) {
                if n > 0 {
                    // Before the episode closes (this drops first).
                    l.add_spins(node, site, n);
                }
            }
        });
    }
}

#[cfg(not(feature = "enabled"))]
mod off {
    use crate::base::site::CallSite;
    use crate::record::episode::WaitGuard;

    /// Counts nothing: the `enabled` feature is off.
    #[doc(hidden)]
    pub struct SpinCounts<const N: usize>;

    impl<const N: usize> SpinCounts<N> {
        #[inline(always)]
        pub fn new(_: &WaitGuard, _: &'static [CallSite; N]) -> Self {
            SpinCounts
        }

        #[inline(always)]
        pub fn hit(&self, _: usize) {}
    }
}
