//! The tree brought up to date with the hot path (`record::lazy`), off the episodes'
//! own path: the records of episodes it closed are folded in (counts, wall time,
//! durations, spins, timeline), and an episode it has open becomes an open frame like
//! any other. Every other entry into the thread's state does this first
//! (`thread::with`, `thread::enter`), so the rest of the recording layer sees the tree
//! as if each episode had been recorded in place; so does the thread's exit, and a
//! full record buffer. Reports from other threads add the records not folded yet to
//! their copy (`record::copy`).

use crate::base::arena::bump;
use crate::base::ring::Episode;
use crate::base::site::CallSite;
use crate::counters::Mark;
use crate::record::frame::NO_SAMPLE;
use crate::record::open::{Lazy, Opened, Tally, LAZY, NO_FAST};
use crate::record::thread::Local;
use std::sync::atomic::Ordering::Relaxed;

/// The call site of spins at `address` (a record's `spin_site`, a fast entry's).
pub(crate) fn spin_site(address: usize) -> Option<&'static CallSite> {
    // SAFETY: `record::lazy` stores only the address of a `&'static CallSite` there,
    // or 0.
    (address != 0).then(|| unsafe { &*(address as *const CallSite) })
}

impl Local {
    /// Brings the tree up to date with the hot path, if it is behind.
    #[inline(always)]
    pub(crate) fn catch_up(&self) {
        if crate::record::open::behind() {
            LAZY.with(|z| self.catch_up_now(z));
        }
    }

    /// Records first: they closed before the open fast entry's frame opened or inside
    /// none of it, and what they claimed is what that frame finds claimed at its open.
    #[cold]
    #[inline(never)]
    fn catch_up_now(&self, z: &Lazy) {
        self.fold_records();
        self.promote(z);
        z.behind.set(false);
    }

    /// Folds every record into the tree, in the order the episodes closed.
    pub(crate) fn fold_records(&self) {
        let d = &self.data;
        let (mut claimed, mut tally) = (0u64, Tally::ZERO);
        d.records.fold(|r| {
            let n = d.node(r.node);
            bump(&n.episodes, 1);
            bump(&n.wall_ns, r.duration);
            d.record_duration_of(n, r.duration);
            let mut mine = Tally::ZERO;
            if let Some(site) = spin_site(r.spin_site) {
                let key = site as *const CallSite as usize;
                bump(&d.slot_of(r.node, key, || site.info()).calls, u64::from(r.spins));
                mine = Tally {
                    calls: r.spins,
                    kinds: site.kind.bit(),
                };
            }
            d.timeline.push(&Episode {
                start: r.start,
                duration: r.duration,
                frame: n.frame.load(Relaxed),
                kinds: mine.kinds,
                calls: mine.calls,
                switches: 0,
            });
            // Nothing was nested in it: all its time is its own claim.
            claimed = claimed.wrapping_add(r.duration);
            tally = tally.plus(mine);
        });
        let c = self.claimed.get();
        self.claim_ticks(c.ticks, claimed);
        self.tally.set(self.tally.get().plus(tally));
    }

    /// The fast entry, if one is open, becomes an open frame (its slot in the entry),
    /// with the start and switch mark it opened at and the spins it has counted.
    fn promote(&self, z: &Lazy) {
        let at = z.fast.get();
        if at == NO_FAST {
            return;
        }
        z.fast.set(NO_FAST);
        let node = z.fast_node.get();
        // No read of the figures since it opened (any would have come here first), and
        // none was due then: the last mark is its mark.
        let mark = self.counters.last().unwrap_or(Mark::ZERO);
        let slot = self.open.push(Opened {
            node,
            prev: z.fast_prev.get(),
            start: z.fast_start.get(),
            wait: true,
            count: true,
            job: false,
            mark,
            claimed: self.claimed.get(),
            sample: NO_SAMPLE,
            tally: self.tally.replace(Tally::ZERO),
        });
        z.slots[at as usize].set(slot);
        let (site, spins) = z.fast_spins.replace((0, 0));
        if let Some(site) = spin_site(site).filter(|_| spins > 0) {
            let key = site as *const CallSite as usize;
            bump(&self.data.slot_of(node, key, || site.info()).calls, spins);
            self.tally.set(self.tally.get().plus(Tally {
                calls: u32::try_from(spins).unwrap_or(u32::MAX),
                kinds: site.kind.bit(),
            }));
        }
    }
}
