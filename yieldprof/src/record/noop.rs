//! The hot path with the `enabled` feature off: the same entry points as `episode.rs`,
//! returning zero-sized guards, so an annotated function compiles to its own body and
//! no static is touched.

use crate::base::site::{CallSite, EpisodeSite, Kind, WorkSite};
use std::future::Future;
use std::panic::Location;

/// Records nothing.
#[doc(hidden)]
pub struct EpisodeGuard;

/// Records nothing.
#[doc(hidden)]
pub struct WaitGuard;

/// Records nothing.
#[doc(hidden)]
pub struct CallGuard;

/// The future itself: nothing to time.
#[doc(hidden)]
pub type Instrumented<F> = F;

#[doc(hidden)]
#[inline(always)]
pub fn enter(_: &'static EpisodeSite) -> WaitGuard {
    WaitGuard
}

#[doc(hidden)]
#[inline(always)]
pub fn enter_work(_: &'static WorkSite) -> EpisodeGuard {
    EpisodeGuard
}

#[doc(hidden)]
#[inline(always)]
pub fn enter_nested(_: &'static EpisodeSite) -> WaitGuard {
    WaitGuard
}

#[inline(always)]
pub(crate) fn call(_: &'static CallSite) -> CallGuard {
    CallGuard
}

#[doc(hidden)]
#[inline(always)]
pub fn count(_: &'static CallSite) {}

#[doc(hidden)]
#[inline(always)]
pub fn wake_start() -> u64 {
    0
}

#[doc(hidden)]
#[inline(always)]
pub fn woke<T>(_: u64, value: T) -> T {
    value
}

#[inline(always)]
pub(crate) fn call_at(_: Kind, _: &'static Location<'static>) -> CallGuard {
    CallGuard
}

#[doc(hidden)]
#[inline(always)]
pub fn instrument<F: Future>(_: &'static EpisodeSite, inner: F) -> Instrumented<F> {
    inner
}

#[doc(hidden)]
#[inline(always)]
pub fn framed<F: Future>(_: &'static WorkSite, inner: F) -> Instrumented<F> {
    inner
}

#[doc(hidden)]
#[inline(always)]
pub fn nested<F: Future>(_: &'static EpisodeSite, inner: F) -> Instrumented<F> {
    inner
}
