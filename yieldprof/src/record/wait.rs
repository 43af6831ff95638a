//! Counted and timed stand-ins for the wait primitives, for code outside an
//! `#[instrument_wait]` function. The caller's source location is the call site.

use crate::base::site::Kind;
use crate::record::episode::call_at;
use std::panic::Location;
use std::time::Duration;

/// `std::hint::spin_loop()`, counted at the caller's line.
///
/// ```
/// yieldprof::wait::spin();
/// ```
#[track_caller]
#[inline(always)]
pub fn spin() {
    let _call = call_at(Kind::Spin, Location::caller());
    std::hint::spin_loop();
}

/// `std::thread::yield_now()`, counted and timed at the caller's line.
///
/// ```
/// yieldprof::wait::yield_now();
/// ```
#[track_caller]
#[inline]
pub fn yield_now() {
    let _call = call_at(Kind::Yield, Location::caller());
    std::thread::yield_now();
}

/// `std::thread::sleep(d)`, counted and timed at the caller's line.
///
/// ```
/// yieldprof::wait::sleep(std::time::Duration::from_micros(1));
/// ```
#[track_caller]
#[inline]
pub fn sleep(d: Duration) {
    let _call = call_at(Kind::Sleep, Location::caller());
    std::thread::sleep(d);
}

/// `std::thread::park()`, counted and timed at the caller's line.
#[track_caller]
#[inline]
pub fn park() {
    let _call = call_at(Kind::Park, Location::caller());
    std::thread::park();
}

/// `std::thread::park_timeout(d)`, counted and timed at the caller's line.
///
/// ```
/// yieldprof::wait::park_timeout(std::time::Duration::from_micros(1));
/// ```
#[track_caller]
#[inline]
pub fn park_timeout(d: Duration) {
    let _call = call_at(Kind::Park, Location::caller());
    std::thread::park_timeout(d);
}
