//! Drop-in `Mutex`, `RwLock` and `Condvar` that say who makes a thread wait.
//!
//! Replace `use std::sync::Mutex;` by `use yieldprof::sync::Mutex;`: the API is std's
//! (poisoning, guards, `try_lock`, `into_inner`, `get_mut`, ...), and each lock records
//! at the caller's line of every acquisition:
//!
//! - **Acquisitions**, counted per thread without a clock read: a lock is first *tried*;
//!   only a failed try starts timing. The holder's site is one word in the lock.
//! - **Holders**: a contended acquisition's wait is split by the sites that held the
//!   lock meanwhile (`[held by worker.rs:88]`), the share of the time the lock was
//!   free while the waiter woke up is its *handoff*; hold times per site are sampled
//!   (the first acquisition at a site on a thread, then one in
//!   [`HOLD_SAMPLE_EVERY`]) and labelled so.
//! - **Lock order**: a lock's class is the line that created it (`Mutex::new`). Taking
//!   a class while holding another adds an edge, once per pair; an edge that closes a
//!   cycle is reported once, with the acquisition sites of every edge, like lockdep:
//!   a potential deadlock, whether or not this run deadlocked. Two locks of one class
//!   (made at one line, e.g. in a loop) taken together add no edge.
//! - **Wakers** ([`Condvar`]): the notifying site of each wake, the time from the
//!   notify until the waiter runs again with its lock, spurious wakes, and timed-out
//!   waits that a notify reached too late.
//!
//! A lock type of one's own is recorded the same way once it implements [`Lockable`]
//! and is wrapped in [`Tracked`].
//!
//! [`Profile::locks`](crate::Profile::locks) reads what was recorded. Without the
//! `enabled` feature these names are std's own types.
//!
//! ```
//! use yieldprof::sync::Mutex;
//!
//! let m = Mutex::new(1);
//! *m.lock().unwrap() += 1;
//! assert_eq!(m.into_inner().unwrap(), 2);
//! ```

#[cfg(feature = "enabled")]
mod acquire;
#[cfg(feature = "enabled")]
mod condvar;
#[cfg(feature = "enabled")]
mod contention;
#[cfg(feature = "enabled")]
mod local;
#[cfg(feature = "enabled")]
mod mutex;
#[cfg(feature = "enabled")]
mod order;
#[cfg(feature = "enabled")]
pub(crate) mod report;
#[cfg(feature = "enabled")]
mod rwlock;
#[cfg(feature = "enabled")]
mod state;
mod tracked;

#[cfg(feature = "enabled")]
pub use condvar::Condvar;
#[cfg(feature = "enabled")]
pub use local::HOLD_SAMPLE_EVERY;
#[cfg(feature = "enabled")]
pub use mutex::{Mutex, MutexGuard};
#[cfg(feature = "enabled")]
pub use report::{HeldBy, LockCycle, LockReport, LockSite, OrderEdge, Wakes};
#[cfg(feature = "enabled")]
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use tracked::{Lockable, Tracked, TrackedGuard};

#[cfg(not(feature = "enabled"))]
pub use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult, WaitTimeoutResult};
