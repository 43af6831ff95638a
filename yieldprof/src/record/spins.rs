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
    use crate::base::arena::bump;
    use crate::base::site::CallSite;
    use crate::record::episode::EpisodeGuard;
    use crate::record::open::Tally;
    use crate::record::thread;
    use std::cell::Cell;
    use std::marker::PhantomData;

    /// The direct spin calls of one episode: `N` counters over `N` call sites.
    #[doc(hidden)]
    #[must_use = "the counts are recorded when this drops"]
    pub struct SpinCounts<const N: usize> {
        // `None`: the episode records nothing (recording off, thread shutting down).
        node: Option<u32>,
        sites: &'static [CallSite; N],
        counts: [Cell<u64>; N],
        // The node belongs to this thread's tree.
        _not_send: PhantomData<*const ()>,
    }

    impl<const N: usize> SpinCounts<N> {
        /// Counts for `episode`'s node. Declared after the guard, so it drops first.
        #[inline(always)]
        pub fn new(episode: &EpisodeGuard, sites: &'static [CallSite; N]) -> Self {
            SpinCounts {
                node: episode.node(),
                sites,
                counts: [const { Cell::new(0) }; N],
                _not_send: PhantomData,
            }
        }

        /// One call at site `i`.
        #[inline(always)]
        pub fn hit(&self, i: usize) {
            let c = &self.counts[i];
            c.set(c.get().wrapping_add(1));
        }
    }

    impl<const N: usize> Drop for SpinCounts<N> {
        #[inline]
        fn drop(&mut self) {
            let Some(node) = self.node else {
                return;
            };
            // Only the counts' values leave this frame, never their address: with
            // every access at a constant index, the counters then live in registers
            // for the whole loop instead of being stored at each PAUSE.
            for (site, count) in self.sites.iter().zip(&self.counts) {
                let n = count.get();
                if n > 0 {
                    record(node, site, n);
                }
            }
        }
    }

    #[inline(never)]
    fn record(node: u32, site: &'static CallSite, n: u64) {
        thread::with(|l| {
            let d = &l.data;
            let key = site as *const CallSite as usize;
            bump(&d.slot_of(node, key, || site.info()).calls, n);
            // Before the episode closes (this drops first), so its timeline entry
            // counts them.
            let t = l.tally.get();
            l.tally.set(t.plus(Tally {
                calls: u32::try_from(n).unwrap_or(u32::MAX),
                kinds: site.kind.bit(),
            }));
        });
    }
}

#[cfg(not(feature = "enabled"))]
mod off {
    use crate::base::site::CallSite;
    use crate::record::episode::EpisodeGuard;

    /// Counts nothing: the `enabled` feature is off.
    #[doc(hidden)]
    pub struct SpinCounts<const N: usize>;

    impl<const N: usize> SpinCounts<N> {
        #[inline(always)]
        pub fn new(_: &EpisodeGuard, _: &'static [CallSite; N]) -> Self {
            SpinCounts
        }

        #[inline(always)]
        pub fn hit(&self, _: usize) {}
    }
}
