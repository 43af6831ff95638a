//! What sleep-like calls asked for: `sleep(d)`, `park_timeout(d)`, `usleep(us)`,
//! `nanosleep(req)`. The macro evaluates the argument once, where the user wrote it,
//! and passes it through a static of this call line, so the report can set what was
//! asked beside what the call took (the timer slack rounds a short sleep up).

#[cfg(feature = "enabled")]
use crate::base::fork::{ForkMutex, Locked};
#[cfg(feature = "enabled")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The durations one sleep-like call line asked for: a field of its function's static
/// of sites, made by the macro. Threads share it: an atomic add costs tens of ns on a
/// call that sleeps for tens of µs at least, and keeps the figures exact without a
/// per-thread table.
#[cfg(feature = "enabled")]
#[doc(hidden)]
#[derive(Debug)]
pub struct AskedSite {
    file: &'static str,
    line: u32,
    column: u32,
    calls: AtomicU64,
    sum_ns: AtomicU64,
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    listed: AtomicBool,
}

#[cfg(feature = "enabled")]
impl AskedSite {
    /// Called by the macro, with the location of the call.
    pub const fn new(file: &'static str, line: u32, column: u32) -> Self {
        AskedSite {
            file,
            line,
            column,
            ..Self::EMPTY
        }
    }

    /// No request yet: a constant, evaluated once, where five `new`s were interpreted
    /// again for every sleep call site (docs/cost.md, "Compile time"). Only copied.
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: AskedSite = AskedSite {
        file: "",
        line: 0,
        column: 0,
        calls: AtomicU64::new(0),
        sum_ns: AtomicU64::new(0),
        min_ns: AtomicU64::new(u64::MAX),
        max_ns: AtomicU64::new(0),
        listed: AtomicBool::new(false),
    };

    /// Adds one call's request; the first one lists the site for the report.
    pub(crate) fn add(&'static self, ns: u64) {
        if !self.listed.load(Relaxed) && !self.listed.swap(true, Relaxed) {
            sites().push(self);
        }
        self.calls.fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(ns, Relaxed);
        // Loads first: a request seldom moves either, and an update is a locked loop
        // on a line every thread asking at this site writes.
        if ns < self.min_ns.load(Relaxed) {
            self.min_ns.fetch_min(ns, Relaxed);
        }
        if ns > self.max_ns.load(Relaxed) {
            self.max_ns.fetch_max(ns, Relaxed);
        }
    }
}

/// Nothing is recorded without the `enabled` feature: the macro's statics hold nothing.
#[cfg(not(feature = "enabled"))]
#[doc(hidden)]
#[derive(Debug)]
pub struct AskedSite;

#[cfg(not(feature = "enabled"))]
impl AskedSite {
    /// Called by the macro, with the location of the call.
    pub const fn new(_file: &'static str, _line: u32, _column: u32) -> Self {
        AskedSite
    }
}

/// What the calls of one line asked for, since the process started.
#[cfg(feature = "enabled")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Asked {
    /// Calls whose request was seen.
    pub calls: u64,
    /// The shortest request, ns.
    pub min_ns: u64,
    /// The longest request, ns.
    pub max_ns: u64,
    /// The mean request, ns.
    pub mean_ns: u64,
}

#[cfg(feature = "enabled")]
fn sites() -> Locked<Vec<&'static AskedSite>> {
    static SITES: ForkMutex<Vec<&'static AskedSite>> = ForkMutex::new(Vec::new(), |_| ());
    SITES.lock()
}

/// What the calls at `file:line:column` asked for; `None` when none was seen (the call
/// takes no duration, or its argument could not be read).
#[cfg(feature = "enabled")]
pub(crate) fn asked_at(file: &str, line: u32, column: u32) -> Option<Asked> {
    let sites = sites();
    let mut found = sites
        .iter()
        .filter(|s| s.file == file && s.line == line && s.column == column);
    let s = found.next()?;
    let calls = s.calls.load(Relaxed);
    (calls > 0).then(|| Asked {
        calls,
        min_ns: s.min_ns.load(Relaxed),
        max_ns: s.max_ns.load(Relaxed),
        mean_ns: s.sum_ns.load(Relaxed) / calls,
    })
}
