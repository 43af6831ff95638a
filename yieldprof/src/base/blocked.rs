//! What a blocking call made from async code cost the executor thread it ran on: its
//! longest call, and the polls of annotated async episodes on that thread that were
//! woken but waited for it to return before they could run (`record::woken` measures
//! them). Kept in the call's own static (`CallSite`), shared by threads, as the sleep
//! requests are (`base::asked`): such a call blocks for µs to ms, so an atomic add on
//! it costs nothing that matters, and the figures stay exact without a per-thread table.

#[cfg(feature = "enabled")]
use crate::base::clock::Scale;
#[cfg(feature = "enabled")]
use crate::base::fork::{ForkMutex, Locked};
#[cfg(feature = "enabled")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The figures of one call line made without `.await` in async code, in clock ticks.
#[cfg(feature = "enabled")]
#[doc(hidden)]
#[derive(Debug)]
pub struct Blocked {
    listed: AtomicBool,
    /// The longest call.
    held_max: AtomicU64,
    /// Polls of other annotated async episodes delayed by it, and by how much.
    delayed_polls: AtomicU64,
    delayed: AtomicU64,
    delayed_max: AtomicU64,
}

/// Nothing is recorded without the `enabled` feature.
#[cfg(not(feature = "enabled"))]
#[doc(hidden)]
#[derive(Debug)]
pub struct Blocked;

impl Blocked {
    /// Nothing recorded yet: what the macro's call statics start with. A constant,
    /// which the compiler evaluates once, where five `new`s were interpreted again for
    /// every call site of every annotated fn (docs/cost.md, "Compile time"). Only ever
    /// copied into a static, never used in place.
    #[cfg(feature = "enabled")]
    #[allow(clippy::declare_interior_mutable_const)]
    pub(crate) const NEW: Blocked = Blocked {
        listed: AtomicBool::new(false),
        held_max: AtomicU64::new(0),
        delayed_polls: AtomicU64::new(0),
        delayed: AtomicU64::new(0),
        delayed_max: AtomicU64::new(0),
    };

    /// Nothing recorded, ever.
    #[cfg(not(feature = "enabled"))]
    pub(crate) const NEW: Blocked = Blocked;
}

#[cfg(feature = "enabled")]
impl Blocked {
    /// One call that held its thread `ticks`; the first lists the line for reports.
    /// `at`: the call's location, which reports find it by.
    pub(crate) fn held(&'static self, at: (&'static str, u32, u32), ticks: u64) {
        if !self.listed.load(Relaxed) && !self.listed.swap(true, Relaxed) {
            sites().push((at, self));
        }
        // Read first: the common call is not the longest, and then writes nothing.
        if ticks > self.held_max.load(Relaxed) {
            self.held_max.fetch_max(ticks, Relaxed);
        }
    }

    /// A poll of another annotated async episode, woken before or during a call of
    /// this line on the same thread, that waited `ticks` of that call to run.
    pub(crate) fn delayed(&self, ticks: u64) {
        self.delayed_polls.fetch_add(1, Relaxed);
        self.delayed.fetch_add(ticks, Relaxed);
        if ticks > self.delayed_max.load(Relaxed) {
            self.delayed_max.fetch_max(ticks, Relaxed);
        }
    }
}

/// What the calls of one line made from async code held, over the whole run (like
/// [`crate::report::Asked`], not limited to a session's window).
#[cfg(feature = "enabled")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HeldWorker {
    /// The longest call, ns: how long it held its thread at once.
    pub max_ns: u64,
    /// Polls of other annotated async episodes on the same thread that were woken and
    /// waited while a call of this line blocked (one episode counts once per poll it
    /// waited for).
    pub delayed_polls: u64,
    /// Their wait for it, summed: the part of each one's wake-to-poll time during
    /// which a call of this line held the thread.
    pub delayed_ns: u64,
    /// The longest of those waits.
    pub delayed_max_ns: u64,
}

#[cfg(feature = "enabled")]
type Listed = ((&'static str, u32, u32), &'static Blocked);

#[cfg(feature = "enabled")]
fn sites() -> Locked<Vec<Listed>> {
    static SITES: ForkMutex<Vec<Listed>> = ForkMutex::new(Vec::new(), |_| ());
    SITES.lock()
}

/// What the calls at `file:line:column` held; `None` when none was made from async
/// code.
#[cfg(feature = "enabled")]
pub(crate) fn held_at(file: &str, line: u32, column: u32) -> Option<HeldWorker> {
    let sites = sites();
    let (_, b) = sites.iter().find(|(at, _)| *at == (file, line, column))?;
    let scale = Scale::current();
    Some(HeldWorker {
        max_ns: scale.ns(b.held_max.load(Relaxed)),
        delayed_polls: b.delayed_polls.load(Relaxed),
        delayed_ns: scale.ns(b.delayed.load(Relaxed)),
        delayed_max_ns: scale.ns(b.delayed_max.load(Relaxed)),
    })
}
