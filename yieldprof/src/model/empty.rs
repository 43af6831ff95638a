//! The profile of a build without the `enabled` feature: nothing is recorded, so every
//! view of it is empty. The methods a program keeps in production code are here with
//! the signatures of the recording build (`check`, `write` in the layers that define
//! them there); the views that read figures (`sites`, `threads`, findings, JSON,
//! pprof) need the feature.

use crate::config::Metric;

/// Everything recorded so far, copied with [`snapshot`](crate::snapshot): in a build
/// without the `enabled` feature, nothing.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    _private: (),
}

impl Profile {
    /// What was recorded between `earlier` and this snapshot: nothing.
    pub fn since(&self, _earlier: &Profile) -> Profile {
        Profile::default()
    }

    /// Only the threads `keep` accepts: there are none.
    pub(crate) fn retain_threads(&mut self, _keep: impl Fn(u64) -> bool) {}

    /// Folded lines: none.
    pub fn folded(&self, _metric: Metric) -> Vec<String> {
        Vec::new()
    }

    /// Folded lines under `wait` and `work` frames: none.
    pub fn folded_split(&self, _metric: Metric) -> Vec<String> {
        Vec::new()
    }

    /// The totals at a glance: that nothing was recorded, and why.
    pub fn headline(&self) -> String {
        "nothing recorded: yieldprof was built without its `enabled` feature".into()
    }

    /// The text summary: the headline.
    pub fn summary(&self) -> String {
        format!("yieldprof summary: {}\n", self.headline())
    }
}
