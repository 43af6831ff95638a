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
    use crate::record::lazy;
    use crate::record::outlined::{FnEpisode, Guard};
    use crate::record::thread;
    use std::cell::Cell;
    use std::marker::PhantomData;
    use std::mem::ManuallyDrop;

    /// The direct spin calls of one episode: `N` counters over `N` call sites. It holds
    /// the episode's guard, so the counts and the close leave the fn in one call.
    #[doc(hidden)]
    #[must_use = "the counts are recorded when this drops"]
    pub struct SpinCounts<const N: usize> {
        episode: ManuallyDrop<FnEpisode>,
        sites: &'static [CallSite; N],
        counts: [Cell<u64>; N],
        // Whether a spin was counted: the first one opens the episode's frame.
        spun: Cell<bool>,
        // The node belongs to this thread's tree.
        _not_send: PhantomData<*const ()>,
    }

    impl<const N: usize> SpinCounts<N> {
        /// Counts for `episode`'s node; the episode ends when this drops.
        #[inline(always)]
        pub fn new(episode: FnEpisode, sites: &'static [CallSite; N]) -> Self {
            // An episode that records nothing has nothing to open.
            let spun = Cell::new(!episode.active());
            SpinCounts {
                episode: ManuallyDrop::new(episode),
                sites,
                counts: [const { Cell::new(0) }; N],
                spun,
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
        // Inlined into every annotated fn that spins, on its return and unwinding
        // edges: only a test and one call each (docs/cost.md, "Compile time").
        #[inline(always)]
        fn drop(&mut self) {
            // SAFETY: taken once, here; the field is never used again.
            let episode = unsafe { ManuallyDrop::take(&mut self.episode) };
            if !self.spun.get() || !episode.active() {
                return;
            }
            // Only the counts' values leave this frame, never their address: with
            // every access at a constant index, the counters then live in registers
            // for the whole loop instead of being stored at each PAUSE.
            if N == 1 {
                return leave_spun(episode.into_guard(), &self.sites[0], self.counts[0].get());
            }
            let mut counts = [0u64; N];
            let mut i = 0;
            while i < N {
                counts[i] = self.counts[i].get();
                i += 1;
            }
            record_all(&episode, self.sites, &counts);
        }
    }

    /// Several sites: out of line, so the fns with one (nearly all) do not carry it.
    #[inline(never)]
    fn record_all<const N: usize>(
        episode: &FnEpisode,
        sites: &'static [CallSite; N],
        counts: &[u64; N],
    ) {
        record(episode.place(), sites, counts);
    }

    /// Adds `n` spins at `site` to the episode, then leaves it (the guard drops at the
    /// end): one call where the spins and the close were two. The spins are kept with
    /// the entry (in its record, if it is on the fast path), else added to its node.
    /// `extern "C"` for its no-unwind guarantee, as `record/outlined.rs`'s `leave`.
    #[cfg(not(feature = "tracing"))]
    #[inline(never)]
    #[allow(improper_ctypes_definitions)]
    extern "C" fn leave_spun(guard: Guard, site: &'static CallSite, n: u64) {
        let place = guard.place();
        if !lazy::spun(place.0, site, n) {
            record(place, std::slice::from_ref(site), &[n]);
        }
    }

    /// With the `tracing` feature the guard's drop runs the subscriber's code, which
    /// may unwind.
    #[cfg(feature = "tracing")]
    #[inline(never)]
    fn leave_spun(guard: Guard, site: &'static CallSite, n: u64) {
        let place = guard.place();
        if !lazy::spun(place.0, site, n) {
            record(place, std::slice::from_ref(site), &[n]);
        }
    }

    /// `extern "C"`, so that the compiler knows it does not unwind: no landing pad in
    /// the annotated fn for it (`record/outlined.rs`).
    #[inline(never)]
    #[allow(improper_ctypes_definitions)]
    extern "C" fn record(place: (u32, u32), sites: &'static [CallSite], counts: &[u64]) {
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
    use crate::record::outlined::FnEpisode;

    /// Counts nothing: the `enabled` feature is off.
    #[doc(hidden)]
    pub struct SpinCounts<const N: usize>(FnEpisode);

    impl<const N: usize> SpinCounts<N> {
        #[inline(always)]
        pub fn new(episode: FnEpisode, _: &'static [CallSite; N]) -> Self {
            SpinCounts(episode)
        }

        #[inline(always)]
        pub fn hit(&self, _: usize) {}
    }
}
