//! The guards an annotated (non-`async`) fn's expansion holds: its episode and each
//! timed wait call, opened and closed out of line, closed (and a call opened) through
//! calls that cannot unwind.
//!
//! Inlined, the episode's entry and drop (a thread-local look-up with its lazy
//! initialisation, the recording switch, the count of an episode that did not wait,
//! the close of one that did) were compiled into every annotated fn, the drop twice (on
//! return and on the unwinding edge), and every call into the runtime that could unwind
//! gave the fn another landing pad, which dropped whatever the user's code held there
//! (a lock's result, a channel's): most of what the annotation added to a release
//! build (`scripts/compile_time.sh`). Here each is one call, and those made while the
//! user's code holds something are `extern "C"`, which the compiler knows do not
//! unwind, so the only landing pads left are the ones the user's own calls need. The
//! price is a call at entry and one at exit per episode
//! (`cargo bench --bench overhead -- hot`, docs/cost.md "Compile time").
//! A panic inside them aborts, as one raised while unwinding already did. With the
//! `tracing` feature the episode also enters and exits a span, which runs the
//! subscriber's code: those two keep the unwinding ABI.
//!
//! Without the `enabled` feature every guard is empty and these are inlined away.

use crate::base::site::{CallSite, EpisodeSite};
use crate::record::episode::{call, CallGuard};
use std::mem::ManuallyDrop;
use std::ops::Deref;

#[cfg(not(feature = "tracing"))]
use crate::record::episode::enter;
/// What an episode's guard is (the tracing span's with the `tracing` feature).
#[cfg(not(feature = "tracing"))]
pub(crate) use crate::record::episode::WaitGuard as Guard;
#[cfg(feature = "tracing")]
use crate::record::tracing_bridge::enter;
#[cfg(feature = "tracing")]
pub(crate) use crate::record::tracing_bridge::TracedEpisode as Guard;

/// Leaves the episode when dropped: on return, on `?` and during a panic.
#[doc(hidden)]
#[must_use = "the episode ends when this guard drops"]
pub struct FnEpisode(ManuallyDrop<Guard>);

/// Enters the episode of an annotated fn at `site`. Out of line, but in the Rust ABI:
/// the guard comes back in registers, where one written through a pointer by an
/// `extern "C"` entry cost the episode that did not wait 10 ns more. Nothing of the
/// fn's is live yet when it is called, so its unwinding edge drops at most the
/// arguments.
#[doc(hidden)]
#[inline(always)]
pub fn enter_fn(site: &'static EpisodeSite) -> FnEpisode {
    FnEpisode(ManuallyDrop::new(open_episode(site)))
}

#[cfg_attr(feature = "enabled", inline(never))]
#[cfg_attr(not(feature = "enabled"), inline(always))]
fn open_episode(site: &'static EpisodeSite) -> Guard {
    enter(site)
}

/// The guard inside, for `SpinCounts::new`.
impl Deref for FnEpisode {
    type Target = Guard;

    #[inline(always)]
    fn deref(&self) -> &Guard {
        &self.0
    }
}

#[cfg(not(feature = "tracing"))]
impl Drop for FnEpisode {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: taken once, in the guard's drop; the field is never used again.
        leave(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

/// Leaves the episode; the guard comes in a register: passed through a pointer, its
/// store and reload were a store-forwarding stall on every episode's path
/// (docs/cost.md, "The unwaited episode"). `extern "C"` for its no-unwind guarantee
/// only: Rust calls it, with a Rust type. The guard drops at its end.
#[cfg(not(feature = "tracing"))]
#[cfg_attr(feature = "enabled", inline(never))]
#[cfg_attr(not(feature = "enabled"), inline(always))]
#[allow(improper_ctypes_definitions)]
extern "C" fn leave(_guard: Guard) {}

impl FnEpisode {
    /// The guard inside, taken out: whoever takes it leaves the episode by dropping it
    /// (`SpinCounts`, which adds its spins first, in the same call).
    #[cfg(feature = "enabled")]
    #[inline(always)]
    pub(crate) fn into_guard(self) -> Guard {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: taken once; `this` is never dropped.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }
}

#[cfg(feature = "tracing")]
impl Drop for FnEpisode {
    #[inline(always)]
    fn drop(&mut self) {
        leave(&mut self.0);
    }
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn leave(guard: &mut ManuallyDrop<Guard>) {
    // SAFETY: called once, from the guard's drop; the field is never used again.
    unsafe { ManuallyDrop::drop(guard) }
}

/// Times one rewritten wait call until dropped (by [`timed_fn`], or by unwinding).
#[doc(hidden)]
#[must_use = "the call is timed until this guard drops"]
pub struct FnCall(ManuallyDrop<CallGuard>);

/// Opens the timing of one rewritten wait call at `site`.
#[doc(hidden)]
#[inline(always)]
pub fn call_fn(site: &'static CallSite) -> FnCall {
    open_call(site)
}

/// Writes the guard straight into the caller's slot (the C ABI returns it through a
/// pointer), which the guard then never leaves: each move of its 120 bytes was a copy
/// that LLVM had to remove in every annotated fn, and one it could not.
#[cfg_attr(feature = "enabled", inline(never))]
#[cfg_attr(not(feature = "enabled"), inline(always))]
#[allow(improper_ctypes_definitions)]
extern "C" fn open_call(site: &'static CallSite) -> FnCall {
    FnCall(ManuallyDrop::new(call(site)))
}

impl Drop for FnCall {
    #[inline(always)]
    fn drop(&mut self) {
        close_call(&mut self.0);
    }
}

#[cfg_attr(feature = "enabled", inline(never))]
#[cfg_attr(not(feature = "enabled"), inline(always))]
extern "C" fn close_call(guard: &mut ManuallyDrop<CallGuard>) {
    // SAFETY: called once, from the guard's drop or `timed_fn`; the field is never
    // used again.
    unsafe { ManuallyDrop::drop(guard) }
}

/// The value of a wrapped wait call: `guard` was opened before `value` was computed
/// and closes now that it is, where it lies.
#[doc(hidden)]
#[inline(always)]
pub fn timed_fn<T>(mut guard: FnCall, value: T) -> T {
    close_call(&mut guard.0);
    std::mem::forget(guard);
    value
}
