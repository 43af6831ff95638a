//! A written report's threads past a count, merged into one `[N other threads]`
//! profile: a process that ran ten thousand short threads writes a report of a few
//! hundred entries, every total unchanged.

use crate::model::profile::{Merged, Profile};
use crate::model::tree::ThreadProfile;
use std::borrow::Cow;
use std::cmp::Reverse;

/// The merged profile's serial: above those counted up from 1, below the ones the
/// registry gives exited threads it merges per name (the top 256).
const MERGED_SERIAL: u64 = u64::MAX - 1024;

/// The name of the profile that holds a report's `threads` threads past its listing.
pub(crate) fn listed_rest(threads: u64) -> String {
    format!("[{threads} other threads]")
}

impl Profile {
    /// This profile with at most `listed` threads one by one, those that waited
    /// longest (then lived longest) in their order, and the rest merged into one
    /// `[N other threads]` profile, last; itself when it has no more than `listed` + 1.
    pub(crate) fn listing(&self, listed: usize) -> Cow<'_, Profile> {
        if self.threads.len() <= listed.saturating_add(1) {
            return Cow::Borrowed(self);
        }
        let views = self.thread_views();
        let mut order: Vec<usize> = (0..self.threads.len()).collect();
        order.sort_by_key(|&i| Reverse((views[i].wait_ns, views[i].wall_ns)));
        let mut keep = vec![false; self.threads.len()];
        for &i in &order[..listed] {
            keep[i] = true;
        }
        let (kept, rest): (Vec<_>, Vec<_>) = self.threads.iter().zip(keep).partition(|(_, k)| *k);
        let rest: Vec<&ThreadProfile> = rest.into_iter().map(|(t, _)| t).collect();
        let mut merged = rest[0].clone();
        merged.absorb_all_settled(rest[1..].iter().copied(), &self.frames, &self.calls);
        // Their kept episodes are cut, not dropped: `recorded` keeps only those their
        // rings had dropped.
        let episodes: u64 = rest.iter().map(|t| t.timeline.episodes.len() as u64).sum();
        merged.timeline.forget();
        merged.timeline.recorded = merged.timeline.recorded.saturating_sub(episodes);
        merged.timeline.capacity = rest.iter().map(|t| t.timeline.capacity).max().unwrap_or(0);
        merged.name = listed_rest(merged.threads);
        merged.serial = MERGED_SERIAL;
        merged.tid = 0;
        merged.exited = rest.iter().all(|t| t.exited);
        let held = merged.threads;
        let mut threads: Vec<ThreadProfile> = kept.into_iter().map(|(t, _)| t.clone()).collect();
        threads.push(merged);
        let merged = Merged {
            threads: held,
            episodes,
        };
        Cow::Owned(self.with_threads(threads, merged))
    }

    /// This profile as [`listing`](Profile::listing) gives it for `listed` (`None`:
    /// every thread), owned: for a report taken to be shown, not kept.
    pub(crate) fn into_listing(self, listed: Option<usize>) -> Profile {
        let merged = match listed.map(|n| self.listing(n)) {
            Some(Cow::Owned(p)) => Some(p),
            _ => None,
        };
        merged.unwrap_or(self)
    }
}
