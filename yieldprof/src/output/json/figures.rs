//! Figures read off a [`Document`], named once for every tool that reads the file: the
//! site-by-site comparison and the `yieldprof` command (`show`, `diff`, `check`).

use super::{Count, Counters, Document, Site};
use crate::base::site::{names_site, Kind};
use crate::counters::CounterEvent;

impl Document {
    /// The wait site `name` names: its frame name, its full path, or a `::` tail of the
    /// path (as for [`Budget::site`](crate::budget::Budget::site)).
    ///
    /// ```
    /// #[yieldprof::instrument_wait]
    /// fn take() {
    ///     std::thread::yield_now();
    /// }
    ///
    /// let session = yieldprof::Session::this_thread();
    /// take();
    /// let doc = session.finish().json(&yieldprof::report::Costs::current());
    /// let site = doc.site("take").unwrap();
    /// assert_eq!((site.episodes, site.calls_of(yieldprof::Kind::Yield)), (1, 1));
    /// ```
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.sites.iter().find(|s| s.matches(name))
    }
}

impl Site {
    /// Whether `name` is this site's frame name, full path, or a `::` tail of the path.
    pub fn matches(&self, name: &str) -> bool {
        names_site(&self.name, &self.path, name)
    }

    /// Calls of `kind` at every call site of the function.
    pub fn calls_of(&self, kind: Kind) -> u64 {
        let of_kind = self.calls.iter().filter(|c| c.kind == kind.name());
        of_kind.map(|c| c.calls).sum()
    }

    /// Wait calls of every kind at every call site of the function.
    pub fn calls_total(&self) -> u64 {
        self.calls.iter().map(|c| c.calls).sum()
    }

    /// Time the site's episodes ran on a CPU (nested frames included): what it cost the
    /// cores; `None` where it was not measured.
    pub fn on_cpu_ns(&self) -> Option<u64> {
        self.time.on_cpu_ns.map(|c| c.value)
    }

    /// Voluntary plus involuntary context switches in the site's episodes; `None`
    /// where either is not counted.
    pub fn switches(&self) -> Option<u64> {
        let get = |e| self.counters.get(e).map(|c| c.value);
        Some(get(CounterEvent::VoluntarySwitches)? + get(CounterEvent::InvoluntarySwitches)?)
    }
}

impl Counters {
    /// The count of `event`; `None` where it was not counted (the document's
    /// `capabilities` say why).
    pub fn get(&self, event: CounterEvent) -> Option<Count> {
        self.events.get(event.name()).copied().flatten()
    }
}
