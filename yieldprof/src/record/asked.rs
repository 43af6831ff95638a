//! The macro's way to record what a sleep-like call asked for: each function takes the
//! call's argument as the user wrote it, evaluated once, notes the duration, and
//! returns the argument unchanged for the call.

use crate::base::asked::AskedSite;
use std::time::Duration;

/// `sleep(d)`, `park_timeout(d)`: `d`.
#[doc(hidden)]
#[inline]
pub fn asked(site: &'static AskedSite, d: Duration) -> Duration {
    note(site, u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    d
}

/// `usleep(us)`: `us` microseconds.
#[doc(hidden)]
#[inline]
pub fn asked_micros<T: Copy + Into<u64>>(site: &'static AskedSite, us: T) -> T {
    note(site, us.into().saturating_mul(1_000));
    us
}

/// `nanosleep(&req, rem)`: what `req` holds. The macro passes only a shared reference
/// here: a raw pointer may be one the kernel would refuse (`EFAULT`), which reading
/// would crash on, so such a call's request is not recorded.
#[doc(hidden)]
#[inline]
pub fn asked_timespec<'a, T: Timespec>(site: &'static AskedSite, req: &'a T) -> &'a T {
    if let Some(ns) = req.ns() {
        note(site, ns);
    }
    req
}

/// A `nanosleep` request.
#[doc(hidden)]
pub trait Timespec {
    /// The duration it asks for; `None` when negative (the call fails).
    fn ns(&self) -> Option<u64>;
}

#[cfg(feature = "enabled")]
impl Timespec for libc::timespec {
    fn ns(&self) -> Option<u64> {
        let (s, n) = (
            u64::try_from(self.tv_sec).ok()?,
            u64::try_from(self.tv_nsec).ok()?,
        );
        Some(s.saturating_mul(1_000_000_000).saturating_add(n))
    }
}

/// Nothing is recorded without the `enabled` feature: any request passes.
#[cfg(not(feature = "enabled"))]
impl<T> Timespec for T {
    fn ns(&self) -> Option<u64> {
        None
    }
}

/// Out of line: inlined, its atomics and the site's first listing were compiled into
/// every annotated fn that sleeps, for a call that then sleeps for µs at least.
#[inline(never)]
fn note(site: &'static AskedSite, ns: u64) {
    #[cfg(feature = "enabled")]
    if crate::config::enabled() {
        site.add(ns);
    }
    #[cfg(not(feature = "enabled"))]
    let _ = (site, ns);
}
