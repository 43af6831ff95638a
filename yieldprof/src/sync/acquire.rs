//! One acquisition, for every lock type: tried first, timed only when the try fails.

use crate::base::clock;
use crate::base::site::Kind;
use crate::config;
use crate::record::episode::call_at;
use crate::sync::contention;
use crate::sync::local::{self, How, Token};
use crate::sync::state::{key_of, LockState};
use std::panic::Location;
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

/// A blocking acquisition at `site`, its guard made by `wrap`: `try_acquire` first,
/// and `block` only if the lock stays held through a short spin of tries. A free lock
/// is counted, not timed; one taken in the spin is timed; a blocked one is also timed
/// as a `[lock]` wait and its wait charged to the sites that hold the lock meanwhile.
/// The guard is made in place on the free path (a `(result, token)` pair mapped
/// afterwards cost ~35 moves per acquisition).
#[inline(always)]
pub(crate) fn blocking<G, W>(
    lock: &LockState,
    site: &'static Location<'static>,
    try_acquire: impl Fn() -> TryLockResult<G>,
    block: impl FnOnce() -> LockResult<G>,
    wrap: impl Fn(G, Token) -> W,
) -> LockResult<W> {
    if !config::enabled() {
        return map_lock(block(), |g| wrap(g, Token::OFF));
    }
    match try_acquire() {
        Ok(g) => Ok(wrap(g, local::acquired(lock, site, How::Free))),
        Err(TryLockError::Poisoned(p)) => Err(PoisonError::new(wrap(
            p.into_inner(),
            local::acquired(lock, site, How::Free),
        ))),
        Err(TryLockError::WouldBlock) => {
            let (r, token) = contended(lock, site, try_acquire, block);
            map_lock(r, |g| wrap(g, token))
        }
    }
}

/// Tries made, a PAUSE apart, before a contended acquisition opens the lock's books:
/// most holds are shorter than this spin (~2 µs at ~35 ns a PAUSE), and std's own
/// `lock` spins as long before it sleeps.
const SPIN_TRIES: u32 = 64;

#[cold]
#[inline(never)]
fn contended<G>(
    lock: &LockState,
    site: &'static Location<'static>,
    try_acquire: impl Fn() -> TryLockResult<G>,
    block: impl FnOnce() -> LockResult<G>,
) -> (LockResult<G>, Token) {
    let spun = clock::now();
    for _ in 0..SPIN_TRIES {
        std::hint::spin_loop();
        let r = match try_acquire() {
            Ok(g) => Ok(g),
            Err(TryLockError::Poisoned(p)) => Err(p),
            Err(TryLockError::WouldBlock) => continue,
        };
        // Waited, but briefly: timed, not split by holder.
        let waited = clock::now().saturating_sub(spun);
        return (r, local::acquired(lock, site, How::Waited(waited)));
    }
    contention::arrive(lock, key_of(site));
    let call = call_at(Kind::Lock, site);
    let r = block();
    drop(call);
    let end = contention::leave(lock, key_of(site));
    let waited = end.saturating_sub(spun);
    (r, local::acquired(lock, site, How::Waited(waited)))
}

/// A `try_lock` at `site`, its guard made by `wrap`: counted when it succeeds, and
/// adds no lock-order edge.
#[inline(always)]
pub(crate) fn tried<G, W>(
    lock: &LockState,
    site: &'static Location<'static>,
    try_acquire: impl FnOnce() -> TryLockResult<G>,
    wrap: impl FnOnce(G, Token) -> W,
) -> TryLockResult<W> {
    let r = try_acquire();
    let token = match (&r, config::enabled()) {
        (Err(TryLockError::WouldBlock), _) | (_, false) => Token::OFF,
        _ => local::acquired(lock, site, How::Tried),
    };
    map_try(r, |g| wrap(g, token))
}

/// `r` with its guard (poisoned or not) turned into `wrap(guard)`.
pub(crate) fn map_lock<G, W>(r: LockResult<G>, wrap: impl FnOnce(G) -> W) -> LockResult<W> {
    match r {
        Ok(g) => Ok(wrap(g)),
        Err(p) => Err(PoisonError::new(wrap(p.into_inner()))),
    }
}

/// `r` with its guard (poisoned or not) turned into `wrap(guard)`.
fn map_try<G, W>(r: TryLockResult<G>, wrap: impl FnOnce(G) -> W) -> TryLockResult<W> {
    match r {
        Ok(g) => Ok(wrap(g)),
        Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(wrap(
            p.into_inner(),
        )))),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
    }
}
