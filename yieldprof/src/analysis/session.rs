//! Sessions: what happened between two points, for tests.
//!
//! A [`Session`] copies the profile when it starts; [`Session::finish`] returns the
//! difference, so work done earlier in the same process does not leak into a test.
//!
//! The scope rules are in the docs of [`Session`].

use crate::model::profile::Profile;
use crate::record::thread;
use crate::record::thread::snapshot;
use std::sync::{Arc, Mutex};

/// A measurement window.
///
/// Scope rules:
/// - [`Session::start`] sees every thread of the process. Two tests running at once
///   (plain `cargo test` runs tests on several threads) still do not disturb each
///   other's *site* budgets as long as they use different wait sites; per-thread and
///   whole-process figures do mix.
/// - [`Session::this_thread`] sees only the calling thread, plus threads spawned
///   through [`Session::scope`].
/// - For full isolation run tests with cargo-nextest, which gives each test its own
///   process.
///
/// ```
/// #[yieldprof::instrument_wait]
/// fn wait_twice() {
///     std::thread::yield_now();
///     std::thread::yield_now();
/// }
///
/// let session = yieldprof::Session::this_thread();
/// wait_twice();
/// let report = session.finish();
/// let site = report.site("wait_twice").unwrap();
/// assert_eq!((site.episodes, site.calls_of(yieldprof::Kind::Yield)), (1, 2));
/// ```
#[derive(Debug)]
pub struct Session {
    start: Profile,
    /// `None`: every thread; else the serial numbers of the threads in scope.
    members: Option<Arc<Mutex<Vec<u64>>>>,
}

impl Session {
    /// A session over every thread of the process.
    pub fn start() -> Session {
        Session {
            start: snapshot(),
            members: None,
        }
    }

    /// A session over the calling thread (and threads spawned with [`Session::scope`]).
    pub fn this_thread() -> Session {
        let me = thread::current_serial().into_iter().collect();
        Session {
            start: snapshot(),
            members: Some(Arc::new(Mutex::new(me))),
        }
    }

    /// Runs `f` with a scope whose threads belong to this session
    /// ([`std::thread::scope`] underneath: every thread is joined before it returns).
    ///
    /// ```
    /// let session = yieldprof::Session::this_thread();
    /// session.scope(|s| {
    ///     s.spawn(|| yieldprof::wait::yield_now());
    /// });
    /// assert_eq!(session.finish().threads().len(), 2);
    /// ```
    pub fn scope<'env, F, R>(&self, f: F) -> R
    where
        F: for<'scope> FnOnce(&SessionScope<'scope, 'env>) -> R,
    {
        std::thread::scope(|inner| {
            f(&SessionScope {
                inner,
                members: self.members.clone(),
            })
        })
    }

    /// Ends the session: what was recorded since it started, in its scope.
    pub fn finish(self) -> Profile {
        let mut profile = snapshot().since(&self.start);
        if let Some(members) = &self.members {
            let members = members.lock().unwrap_or_else(|e| e.into_inner()).clone();
            profile.retain_threads(|serial| members.contains(&serial));
        }
        profile
    }
}

/// The scope handed to [`Session::scope`]'s closure.
pub struct SessionScope<'scope, 'env> {
    inner: &'scope std::thread::Scope<'scope, 'env>,
    members: Option<Arc<Mutex<Vec<u64>>>>,
}

impl<'scope> SessionScope<'scope, '_> {
    /// Spawns a scoped thread that belongs to the session.
    pub fn spawn<F, T>(&self, f: F) -> std::thread::ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let members = self.members.clone();
        self.inner.spawn(move || {
            if let (Some(members), Some(me)) = (members, thread::current_serial()) {
                members.lock().unwrap_or_else(|e| e.into_inner()).push(me);
            }
            f()
        })
    }
}
