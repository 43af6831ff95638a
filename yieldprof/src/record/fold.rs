//! The tree brought up to date with the hot path (`record::lazy`), off the episodes'
//! own path: the records of episodes it closed are folded in (counts, wall time,
//! durations, spins, timeline), and an episode it has open becomes an open frame like
//! any other. Every other entry into the thread's state does this first
//! (`thread::with`, `thread::enter`), so the rest of the recording layer sees the tree
//! as if each episode had been recorded in place; so does the thread's exit, and a
//! full record buffer. Reports from other threads add the records not folded yet to
//! their copy (`record::copy`).

use crate::base::arena::bump;
use crate::base::clock;
use crate::base::ring::Episode;
use crate::base::site::{CallInfo, CallSite, Kind};
use crate::counters::Mark;
use crate::model::histogram::Batch;
use crate::record::frame::NO_SAMPLE;
use crate::record::open::{Lazy, Opened, Tally, IN_CALL, LAZY, NO_FAST};
use crate::record::records::Record;
use crate::record::thread::{Local, Node, Slot};
use std::sync::atomic::Ordering::Relaxed;

/// The call site at `address` (a record's `spin_site` or `call_site`, a fast entry's).
pub(crate) fn site_at(address: usize) -> Option<&'static CallSite> {
    // SAFETY: `record::lazy` stores only the address of a `&'static CallSite` there,
    // or 0.
    (address != 0).then(|| unsafe { &*(address as *const CallSite) })
}

/// Records of one node, spin site and call site in a row, being folded.
struct Run<'l> {
    node: u32,
    spin_site: usize,
    call_site: usize,
    n: &'l Node,
    /// The site's fine histogram, its buckets found once for the run.
    fine: Option<Batch<'l>>,
    slot: Option<&'l Slot>,
    call_slot: Option<&'l Slot>,
    frame: u32,
    /// The kind bits of its spins and its call.
    kinds: u16,
    episodes: u64,
    wall: u64,
    spins: u64,
    /// Its calls, those added to the tree as the next opened included.
    calls: u64,
    call_ticks: u64,
}

/// The slot of `site`'s calls in the frame of `node`.
fn slot_of<'l>(l: &'l Local, node: u32, site: &'static CallSite) -> &'l Slot {
    l.data
        .slot_of(node, site as *const CallSite as usize, || site.info())
}

impl<'l> Run<'l> {
    fn new(l: &'l Local, r: &Record) -> Run<'l> {
        let d = &l.data;
        let n = d.node(r.node);
        let site = site_at(r.spin_site);
        let call = site_at(r.call_site);
        Run {
            node: r.node,
            spin_site: r.spin_site,
            call_site: r.call_site,
            n,
            fine: d.fine_durations(n).map(|f| f.batch()),
            slot: site.map(|s| slot_of(l, r.node, s)),
            call_slot: call.map(|s| slot_of(l, r.node, s)),
            frame: n.frame.load(Relaxed),
            kinds: site.map_or(0, |s| s.kind.bit()) | call.map_or(0, |s| s.kind.bit()),
            episodes: 0,
            wall: 0,
            spins: 0,
            calls: 0,
            call_ticks: 0,
        }
    }

    /// Its counts, into the tree; its time to `claimed` (nothing was nested in its
    /// episodes: all their time is their own claim) and its calls to `tally`.
    fn add(self, claimed: &mut u64, tally: &mut Tally) {
        bump(&self.n.episodes, self.episodes);
        bump(&self.n.wall_ns, self.wall);
        if let Some(slot) = self.slot {
            bump(&slot.calls, self.spins);
        }
        // Each record's last call; the ones before it are in the tree already.
        if let Some(slot) = self.call_slot {
            bump(&slot.calls, self.episodes);
            bump(&slot.ns, self.call_ticks);
        }
        *claimed = claimed.wrapping_add(self.wall);
        *tally = tally.plus(Tally {
            calls: u32::try_from(self.spins + self.calls).unwrap_or(u32::MAX),
            kinds: self.kinds,
        });
    }
}

impl Local {
    /// Adds one call at `key` to the current frame: `ns` of its own time, and its whole
    /// length `ticks` to its kind's durations when it was timed; its slot (its off-CPU
    /// time is added when read, `record::deferred`).
    #[inline(always)]
    pub(crate) fn add_call(
        &self,
        key: usize,
        kind: Kind,
        info: impl FnOnce() -> CallInfo,
        ns: u64,
        ticks: Option<u64>,
    ) -> u32 {
        let t = self.tally.get();
        self.tally.set(Tally {
            calls: t.calls.saturating_add(1),
            kinds: t.kinds | kind.bit(),
        });
        self.add_to_slot(self.current.get(), key, info, ns, ticks)
    }

    /// As [`Local::add_call`], to `node`'s slot only (not the tally).
    #[inline(always)]
    pub(crate) fn add_to_slot(
        &self,
        node: u32,
        key: usize,
        info: impl FnOnce() -> CallInfo,
        ns: u64,
        ticks: Option<u64>,
    ) -> u32 {
        let d = &self.data;
        let i = d.slot_index(node, key, info);
        let s = d.slot(i);
        bump(&s.calls, 1);
        bump(&s.ns, ns);
        if let Some(t) = ticks {
            d.record_call_duration(s, t);
        }
        i
    }

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

    /// Folds the full record buffer at a fast close (one in `RECORDS`), timed and
    /// charged whole to the frame around, less what it charged itself (nodes made),
    /// where the thread was not switched in it: its ticks. Only sampled with the hot
    /// path, a fold counted 256 times where it was due at a sampled close, and the
    /// periods align (256 = 4 × 64): a spin lock's workers showed more `[profiler]`
    /// time than their CPU time (2026-12-06).
    #[cold]
    #[inline(never)]
    pub(crate) fn fold_timed(&self) -> u64 {
        let at = self.counters.switches();
        let charged = self.data.profiler_ticks.load(Relaxed);
        let t0 = clock::now();
        self.fold_records();
        let ticks = clock::now().saturating_sub(t0);
        if self.counters.switches() == at {
            let itself = self.data.profiler_ticks.load(Relaxed).wrapping_sub(charged);
            self.charge(ticks.saturating_sub(itself));
        }
        ticks
    }

    /// Folds every record into the tree, in the order the episodes closed. A hot loop
    /// closes runs of episodes of one node and spin site: each run finds its node,
    /// histograms and slot once and adds its counts and its tally once.
    pub(crate) fn fold_records(&self) {
        let d = &self.data;
        let (mut claimed, mut tally) = (0u64, Tally::ZERO);
        let mut run: Option<Run> = None;
        d.records.fold(|r| {
            let x = match run.as_mut() {
                Some(x)
                    if x.node == r.node
                        && x.spin_site == r.spin_site
                        && x.call_site == r.call_site =>
                {
                    x
                }
                _ => {
                    if let Some(done) = run.take() {
                        done.add(&mut claimed, &mut tally);
                    }
                    run.insert(Run::new(self, &r))
                }
            };
            x.n.durations.record(r.duration);
            if let Some(fine) = x.fine.as_mut() {
                fine.record(r.duration);
            }
            // A run's records all made calls, or none did.
            if let Some(slot) = x.call_slot {
                d.record_call_duration(slot, r.call_ticks);
                x.call_ticks = x.call_ticks.wrapping_add(r.call_ticks);
                x.calls += u64::from(r.calls);
            }
            let calls = r.spins.saturating_add(r.calls);
            d.timeline.push(&Episode {
                start: r.start,
                duration: r.duration,
                frame: x.frame,
                kinds: x.kinds,
                calls,
                switches: 0,
            });
            x.episodes += 1;
            x.wall = x.wall.wrapping_add(r.duration);
            x.spins += u64::from(r.spins);
        });
        if let Some(done) = run {
            done.add(&mut claimed, &mut tally);
        }
        let c = self.claimed.get();
        self.claim_ticks(c.ticks, claimed);
        self.tally.set(self.tally.get().plus(tally));
    }

    /// The fast entry, if one is open, becomes an open frame (its slot in the entry),
    /// with the start and switch mark it opened at. Its spins stay with the entry; its
    /// call, if it closed, is added as its close would have (one still running closes
    /// as any call).
    fn promote(&self, z: &Lazy) {
        let at = z.fast.get();
        if at == NO_FAST {
            return;
        }
        z.fast.set(NO_FAST);
        let (node, start) = (z.fast_node.get(), z.fast_start.get());
        // No read of the figures since it opened (any would have come here first), and
        // none was due then: the last mark is its mark.
        let mark = self.counters.last().unwrap_or(Mark::ZERO);
        // Its open count and the current node, as `frame::open` makes them; no longer
        // counted open in the records first, so no report counts it twice.
        self.data.records.closed();
        self.data.node(node).opened_at(start, mark.off_clock());
        let prev = self.current.replace(node);
        // It spun: no stretch of the frame around it runs on (`record::gaps`).
        self.spun_here();
        let (call, ticks) = (z.call.get(), z.call_ticks.get());
        let ours = call != 0 && z.call_at.get() == at;
        // Its calls added to the tree as the next opened: in its tally now.
        let flushed = match site_at(call).filter(|_| ours) {
            Some(site) => Tally {
                calls: z.flushed.replace(0),
                kinds: site.kind.bit(),
            },
            None => Tally::ZERO,
        };
        let slot = self.open.push(Opened {
            node,
            prev,
            start,
            wait: true,
            count: true,
            job: false,
            mark,
            claimed: self.claimed.get(),
            sample: NO_SAMPLE,
            tally: self.tally.replace(flushed),
        });
        z.slots[at as usize].set(slot);
        if !ours {
            return;
        }
        if ticks == IN_CALL {
            // Nothing moved these since it opened: every change comes through here.
            let profiled = self.data.profiler_ticks.load(Relaxed);
            self.open.call_began((mark, self.claimed.get(), profiled));
            return;
        }
        z.call.set(0);
        if let Some(site) = site_at(call) {
            let key = site as *const CallSite as usize;
            let charged = self.data.profiler_ticks.load(Relaxed);
            self.claim_ticks(self.claimed.get().ticks, ticks);
            self.add_call(key, site.kind, || site.info(), ticks, Some(ticks));
            self.gap_from(
                z.call_start.get() + ticks,
                Some(z.fast_switches.get()),
                charged,
            );
        }
    }

    /// `n` spins at `site` in the frame of `node`, which is open: its slot's calls and
    /// the thread's tally (its timeline entry counts them when it closes).
    pub(crate) fn add_spins(&self, node: u32, site: &'static CallSite, n: u64) {
        bump(&slot_of(self, node, site).calls, n);
        self.tally.set(self.tally.get().plus(Tally {
            calls: u32::try_from(n).unwrap_or(u32::MAX),
            kinds: site.kind.bit(),
        }));
    }
}
