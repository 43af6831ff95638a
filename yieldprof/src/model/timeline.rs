//! A thread's timeline as copied out: its last wait episodes (and the jobs run straight
//! inside them, business frames) in the order they closed,
//! and how many it recorded in all.

use crate::base::clock;
pub(crate) use crate::base::ring::Episode;

/// Exited threads' timelines keep at most this many episodes in all (32 MiB); past
/// it the oldest exited threads' timelines are dropped (and counted as dropped), so
/// a program that starts a thread per request keeps bounded memory.
pub(crate) const MAX_EXITED_EPISODES: usize = 1 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timeline {
    /// The episodes kept, oldest closed first (a frame nested in another closes
    /// before it).
    pub(crate) episodes: Vec<Episode>,
    /// Every wait episode the thread recorded with the timeline on: kept or dropped.
    pub(crate) recorded: u64,
    /// Episodes the thread keeps at most; 0 with the timeline off.
    pub(crate) capacity: u32,
    /// Whether `switches` are counted (the thread reads the exact switch counter).
    pub(crate) switches_counted: bool,
}

impl Timeline {
    /// Episodes recorded and not kept: overwritten by newer ones, being overwritten
    /// while the copy was read, or dropped to bound exited threads' memory.
    pub(crate) fn dropped(&self) -> u64 {
        self.recorded.saturating_sub(self.episodes.len() as u64)
    }

    /// Forgets the kept episodes (they count as dropped); returns how many there were.
    pub(crate) fn forget(&mut self) -> usize {
        std::mem::take(&mut self.episodes).len()
    }

    /// What was recorded after `earlier`, a copy of the same thread's timeline.
    pub(crate) fn since(&self, earlier: &Timeline) -> Timeline {
        let recorded = self.recorded.saturating_sub(earlier.recorded);
        let keep = (recorded.min(self.episodes.len() as u64)) as usize;
        Timeline {
            episodes: self.episodes[self.episodes.len() - keep..].to_vec(),
            recorded,
            ..self.clone()
        }
    }

    /// Threads record clock ticks; reports speak `CLOCK_MONOTONIC` ns. A frame's
    /// end is converted, not its length, so a nested frame ends inside its parent.
    pub(crate) fn scale_to_ns(&mut self, scale: clock::Scale) {
        for e in &mut self.episodes {
            let start = scale.monotonic_ns(e.start);
            let end = scale.monotonic_ns(e.start.saturating_add(e.duration));
            (e.start, e.duration) = (start, end.saturating_sub(start));
        }
    }
}

/// How many episodes the exited threads' timelines hold, and how many of those
/// threads (the oldest) have had theirs dropped.
#[derive(Debug, Default)]
pub(crate) struct ExitedTimelines {
    held: usize,
    forgotten: usize,
}

impl ExitedTimelines {
    /// None held (a `const fn`: the registry is a static).
    pub(crate) const fn new() -> Self {
        ExitedTimelines {
            held: 0,
            forgotten: 0,
        }
    }

    /// `new` is about to join `kept`, the exited threads oldest first: drops whole
    /// timelines, the oldest first (`new`'s last), until at most `max` episodes are
    /// held. Each thread is looked at once over the registry's life.
    pub(crate) fn make_room<T>(
        &mut self,
        kept: &mut [T],
        new: &mut Timeline,
        timeline: impl Fn(&mut T) -> &mut Timeline,
        max: usize,
    ) {
        self.held += new.episodes.len();
        while self.held > max {
            match kept.get_mut(self.forgotten) {
                Some(t) => {
                    self.held -= timeline(t).forget();
                    self.forgotten += 1;
                }
                None => self.held -= new.forget(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(starts: std::ops::Range<u64>, recorded: u64) -> Timeline {
        Timeline {
            episodes: starts
                .map(|start| Episode {
                    start,
                    duration: 1,
                    ..Episode::default()
                })
                .collect(),
            recorded,
            capacity: 4,
            switches_counted: true,
        }
    }

    #[test]
    fn since_keeps_only_the_episodes_recorded_after_the_earlier_copy() {
        // Recorded 10, kept the last 4 (6..10); earlier copy had recorded 8.
        let now = timeline(6..10, 10);
        let since = now.since(&timeline(4..8, 8));
        assert_eq!(since, timeline(8..10, 2));
        assert_eq!(since.dropped(), 0);
        // Earlier than the ring reaches: every kept one is new, the rest dropped.
        let since = now.since(&timeline(0..1, 1));
        assert_eq!((since.episodes.len(), since.dropped()), (4, 5));
    }

    #[test]
    fn exited_timelines_past_the_bound_drop_the_oldest_whole() {
        let mut exited = ExitedTimelines::new();
        let mut kept: Vec<Timeline> = Vec::new();
        for start in [0, 10, 20] {
            let mut new = timeline(start..start + 4, 4);
            exited.make_room(&mut kept, &mut new, |t| t, 10);
            kept.push(new);
        }
        // 12 held past a bound of 10: the oldest thread's 4 give way, and count.
        let lens: Vec<(usize, u64)> = kept
            .iter()
            .map(|t| (t.episodes.len(), t.dropped()))
            .collect();
        assert_eq!(lens, [(0, 4), (4, 0), (4, 0)]);
        // A timeline longer than the bound on its own: everything goes, itself last.
        let mut huge = timeline(0..11, 11);
        exited.make_room(&mut kept, &mut huge, |t| t, 10);
        assert!(kept.iter().all(|t| t.episodes.is_empty()));
        assert_eq!(huge.dropped(), 11);
        kept.push(huge);
        let mut next = timeline(0..3, 3);
        exited.make_room(&mut kept, &mut next, |t| t, 10);
        assert_eq!(next.episodes.len(), 3);
    }

    #[test]
    fn forgotten_episodes_count_as_dropped() {
        let mut t = timeline(6..10, 10);
        assert_eq!(t.dropped(), 6);
        assert_eq!(t.forget(), 4);
        assert_eq!((t.episodes.len(), t.dropped()), (0, 10));
    }
}
