//! The threads that exited, as the registry keeps them: one by one up to a count, then
//! merged per name, their timelines under a bound of their own.

use crate::model::timeline::{ExitedTimelines, MAX_EXITED_EPISODES};
use crate::model::tree::ThreadProfile;

/// Exited threads kept one by one (~1 KiB each, plus 32 B per timeline episode, at
/// most `MAX_EXITED_EPISODES` over all); later ones are merged per name (up to 256
/// names, unnamed threads and the rest as `[exited threads]`), so a program that
/// starts a thread per request keeps bounded memory.
pub(crate) const MAX_EXITED_THREADS: usize = 10_000;
/// Names kept apart once merging starts; the rest share one profile.
const MAX_MERGED_NAMES: usize = 256;
const MERGED_UNNAMED: &str = "[exited threads]";

#[derive(Default)]
pub(crate) struct Exited {
    threads: Vec<ThreadProfile>,
    /// Threads that exited after `threads` was full, merged per name (see `keep`).
    merged: Vec<ThreadProfile>,
    /// Timeline episodes held by `threads`, at most `MAX_EXITED_EPISODES`.
    timelines: ExitedTimelines,
}

impl Exited {
    /// None yet (a `const fn`: the registry is a static).
    pub(crate) const fn new() -> Self {
        Exited {
            threads: Vec::new(),
            merged: Vec::new(),
            timelines: ExitedTimelines::new(),
        }
    }

    /// Every exited thread as kept: one by one, then the merged ones.
    pub(crate) fn all(&self) -> Vec<ThreadProfile> {
        let mut all = self.threads.clone();
        all.extend(self.merged.iter().cloned());
        all
    }

    /// The exited thread numbered `serial`; `None` once merged (past
    /// `MAX_EXITED_THREADS`), which keeps no serial.
    pub(crate) fn by_serial(&mut self, serial: u64) -> Option<&mut ThreadProfile> {
        self.threads.iter_mut().rev().find(|t| t.serial == serial)
    }

    /// Keeps an exited thread's profile: as it is while there is room, else added into
    /// the merged profile of its name (unnamed threads, and names past the cap, share
    /// one). A session spanning the merge counts the merged thread's earlier
    /// recording again; `MAX_EXITED_THREADS` exits have to come first.
    pub(crate) fn keep(&mut self, mut done: ThreadProfile) {
        if self.threads.len() < MAX_EXITED_THREADS {
            // Past the bound, the oldest exited threads' timelines give way.
            self.timelines.make_room(
                &mut self.threads,
                &mut done.timeline,
                |t| &mut t.timeline,
                MAX_EXITED_EPISODES,
            );
            self.threads.push(done);
            return;
        }
        // A merged profile is many threads: no one timeline (their episodes count as
        // dropped).
        done.timeline.forget();
        let unnamed = done.name == format!("thread-{}", done.serial);
        let mut name = if unnamed {
            MERGED_UNNAMED
        } else {
            done.name.as_str()
        };
        if self.merged.len() >= MAX_MERGED_NAMES && !self.merged.iter().any(|m| m.name == name) {
            name = MERGED_UNNAMED;
        }
        match self.merged.iter_mut().find(|m| m.name == name) {
            Some(m) => m.absorb(&done),
            None => {
                // Serials count up from 1; merged profiles take the top of the range.
                let serial = u64::MAX - self.merged.len() as u64;
                self.merged.push(ThreadProfile {
                    serial,
                    // Many threads: none of theirs.
                    tid: 0,
                    name: name.to_string(),
                    ..done
                });
            }
        }
    }
}
