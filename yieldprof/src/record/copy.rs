//! A thread's recording copied out while the thread goes on: what a report reads.

use super::thread::*;
use crate::base::clock;
use crate::base::ring::Episode;
use crate::base::site::{self, Kind, OVERFLOW_CALL};
use crate::counters::{off_clock_of, Switches, ThreadSnap};
use crate::model::timeline::Timeline;
use crate::model::tree::{NodeStats, SlotStats, ThreadProfile};
use crate::record::fold::site_at;
use crate::record::records::Record;
use std::sync::atomic::Ordering::Relaxed;

impl ThreadData {
    /// A consistent-enough copy: every counter is read once; a frame still open counts
    /// in its node's wall time up to the copy (`open_ns`), as the thread's own life
    /// does, so a parent's time still holds its children's. A frame closing meanwhile
    /// counts once (`Closing::read`); one closed on the hot path between the count of
    /// records and its node's copy is missed for this copy. `read_switches`: a live thread other than the caller, whose
    /// switch totals are read from its status file now (else they are as the thread
    /// stored them: fresh at its exit and on the caller, refreshed first).
    pub(crate) fn snapshot(&self, exited: bool, read_switches: bool) -> ThreadProfile {
        let read_switches = read_switches && self.counters.counts_switches();
        // Records pushed from here on may show below as frames still open.
        let written = self.records.written();
        let n_nodes = self.nodes.len();
        // Each node's closed frames, and its frame open now: when it opened (0: none)
        // and its off-CPU clock then.
        let mut nodes: Vec<(NodeStats, u64, u64)> = (0..n_nodes)
            .map(|i| {
                let n = self.node(i);
                let (wall, since) = self.closing.read(i, &n.wall_ns, &n.open_since);
                let node = NodeStats {
                    frame: n.frame.load(Relaxed),
                    parent: n.parent.load(Relaxed),
                    episodes: n.episodes.load(Relaxed),
                    wall_ns: wall,
                    open_ns: 0,
                    open_split_ns: 0,
                    suspended_ns: n.suspended_ns.load(Relaxed),
                    profiler_ns: n.profiler_ticks.load(Relaxed),
                    gap_ns: n.gap_ticks.load(Relaxed),
                    gap_switched_ns: n.gap_switched_ticks.load(Relaxed),
                    durations: n.durations.load(),
                    counts: self.counters.node(&n.counts, wall),
                    slots: Vec::new(),
                };
                (node, since, n.open_off.load(Relaxed))
            })
            .collect();
        // The episode open on the hot path, as a frame open on its node: after
        // `written`, so one whose record is counted below was closed before.
        let hot_open = self.records.open();
        // The calls after the nodes (a call is counted before its episode closes, so
        // every closed episode's calls are in), their durations before them (a call
        // is counted, then timed: no kind shows more calls timed than made).
        let site_durations = (0..self.site_durations.len())
            .map(|i| {
                let d = self.site_durations.get(i);
                let kind = code_kind(d.kind.load(Relaxed));
                ((d.frame.load(Relaxed), kind), d.durations.load())
            })
            .collect();
        for i in 0..n_nodes {
            // Links, not `len`, say which slots a reader may touch: see `Link`.
            let mut s = self.node(i).first_slot.read();
            while s != OVERFLOW_SLOT {
                let slot = self.slot(s);
                nodes[i as usize].0.slots.push(SlotStats {
                    call: slot.call.load(Relaxed),
                    calls: slot.calls.load(Relaxed),
                    ns: slot.ns.load(Relaxed),
                    off_ns: slot.off_ns.load(Relaxed),
                });
                s = slot.next.read();
            }
        }
        let lost = self.slot(OVERFLOW_SLOT);
        if lost.calls.load(Relaxed) > 0 {
            nodes[OVERFLOW as usize].0.slots.push(SlotStats {
                call: OVERFLOW_CALL,
                calls: lost.calls.load(Relaxed),
                ns: lost.ns.load(Relaxed),
                off_ns: lost.off_ns.load(Relaxed),
            });
        }
        // After the calls: each ended before it, so an open frame's calls fit in its
        // time so far. An exited thread's copy, made later, ends where its life did.
        let ended = self.ended.load(Relaxed);
        let now = match ended {
            0 => clock::now(),
            ended => ended,
        };
        // The thread's off-CPU clock now, read once where a frame open on it has a
        // mark to count from: a live thread only.
        let mut off_now = None;
        // A frame open on `n` since tick `since`, the thread's off-CPU clock `base` then
        // (0: not known), counts up to the copy.
        let mut add_open = |n: &mut NodeStats, since: u64, base: u64| {
            let open_ns = now.saturating_sub(since);
            // Its open frame's off-CPU time so far: its switch figures come at its
            // close, and a job's would read as business until then.
            let open_off = (open_ns > 0 && base != 0 && ended == 0)
                .then(|| *off_now.get_or_insert_with(|| off_clock_of(self.tid)))
                .flatten()
                .map(|off| {
                    off.saturating_sub(base)
                        .min(clock::Scale::current().ns(open_ns))
                });
            if open_off.is_some_and(|off| n.counts.add_open(off, open_ns)) {
                n.open_split_ns += open_ns;
            }
            n.wall_ns += open_ns;
            n.open_ns += open_ns;
        };
        let mut nodes: Vec<NodeStats> = nodes
            .into_iter()
            .map(|(mut n, since, base)| {
                if since != 0 {
                    add_open(&mut n, since, base);
                }
                n
            })
            .collect();
        // The episode open on the hot path, as a frame open on its node.
        if let Some((node, start, base)) = hot_open {
            if let Some(n) = nodes.get_mut(node as usize) {
                add_open(n, start, base);
            }
        }
        // The stretch between waits running now (a job in progress), up to the copy:
        // whether the thread was switched in it is not known here (`model::own`).
        let from = self.stretch.load(Relaxed);
        if ended == 0 && from != 0 && now.saturating_sub(from) >= super::gaps::gap_ticks() {
            let node = self.stretch_node.load(Relaxed) as usize;
            if let Some(n) = nodes.get_mut(node).filter(|n| n.open_ns > 0) {
                n.gap_switched_ns += now - from;
            }
        }
        // After the nodes: a switch the thread stores between the two reads is then in
        // its totals too (read first, the totals could be below its waits' part).
        let switches = read_switches.then(|| Switches::of(self.tid)).flatten();
        nodes[ROOT as usize].wall_ns = now.saturating_sub(self.start_ns.load(Relaxed));
        nodes[ROOT as usize].episodes = 1;
        nodes[ROOT as usize].counts = self.counters.root(nodes[ROOT as usize].wall_ns, switches);
        let (episodes, recorded) = self.timeline.read();
        let mut t = ThreadProfile {
            serial: self.serial,
            tid: self.tid,
            name: self.name.clone(),
            threads: 1,
            exited,
            overflowed: self.overflowed.load(Relaxed),
            reentries_skipped: self.reentries_skipped.load(Relaxed),
            entries_after_exit: 0,
            nodes,
            site_durations,
            counters: ThreadSnap {
                run_queue_ns: self.counters.run_queue_since_open(self.tid, exited),
                cpu_ns: self.counters.cpu_since_start(self.tid, exited),
                // Unread (the thread exited meanwhile, no procfs): as last stored.
                switches_stale: read_switches && switches.is_none(),
                ..self.counters.snapshot()
            },
            unwaited: self.unwaited.read(),
            timeline: Timeline {
                episodes,
                recorded,
                capacity: self.timeline.capacity(),
                switches_counted: self.counters.switches_exact(),
            },
        };
        for r in self.records.unfolded(written) {
            self.add_record(&mut t, &r);
        }
        // The oldest give way, as in the ring.
        let line = &mut t.timeline;
        let over = line.episodes.len().saturating_sub(line.capacity as usize);
        line.episodes.drain(..over);
        t
    }

    /// Adds a record not folded yet to a copy of the tree, as the fold will
    /// (`record::fold`).
    fn add_record(&self, t: &mut ThreadProfile, r: &Record) {
        let Some(n) = t.nodes.get_mut(r.node as usize) else {
            return;
        };
        n.episodes += 1;
        n.wall_ns += r.duration;
        n.durations.add_one(r.duration, false);
        let site = self.node(r.node).site_durations.load(Relaxed);
        if let Some((_, h)) = t.site_durations.get_mut(site as usize) {
            h.add_one(r.duration, true);
        }
        let mut episode = Episode {
            start: r.start,
            duration: r.duration,
            frame: n.frame,
            ..Episode::default()
        };
        // Its slot gets the last call only: the ones before it are in the tree already.
        for (address, calls, ticks, in_timeline) in [
            (r.spin_site, r.spins, None, r.spins),
            (r.call_site, 1, Some(r.call_ticks), r.calls),
        ] {
            let Some(site) = site_at(address) else {
                continue;
            };
            let call = site::call_id(address, || site.info());
            let at = match n.slots.iter().position(|s| s.call == call) {
                Some(at) => at,
                None => {
                    n.slots.push(SlotStats {
                        call,
                        ..SlotStats::default()
                    });
                    n.slots.len() - 1
                }
            };
            let slot = &mut n.slots[at];
            slot.calls += u64::from(calls);
            if let Some(ticks) = ticks {
                slot.ns += ticks;
                let kind = Some(site.kind);
                let durations = t
                    .site_durations
                    .iter_mut()
                    .find(|(k, _)| *k == (n.frame, kind));
                if let Some((_, h)) = durations {
                    h.add_one(ticks, true);
                }
            }
            episode.kinds |= site.kind.bit();
            episode.calls += in_timeline;
        }
        // With the timeline off the ring counts nothing either.
        if t.timeline.capacity > 0 {
            t.timeline.recorded += 1;
            t.timeline.episodes.push(episode);
        }
    }
}

/// The call kind of a `SiteDurations`; `None` for episodes.
fn code_kind(code: u32) -> Option<Kind> {
    code.checked_sub(1)
        .and_then(|i| Kind::ALL.get(i as usize).copied())
}
