//! Budgets declared on the attribute, `#[instrument_wait(budget(...))]`: checked in a
//! test by [`Profile::check_declared`], and listed, held or exceeded, wherever the report
//! is written (the summary's "Declared budgets" section and stderr).

use crate::analysis::budget::BudgetExceeded;
#[cfg(feature = "enabled")]
use crate::analysis::budget::{list, num, Checker};
#[cfg(feature = "enabled")]
use crate::base::text::wrap;
use crate::model::profile::Profile;

/// Checks the limits every site of `profile` declared on its attribute. A report in
/// which no site declares any fails: the site that should be checked did not run, or
/// ran outside the session.
#[cfg(feature = "enabled")]
pub(crate) fn check_declared(profile: &Profile) -> Result<(), BudgetExceeded> {
    declared(profile)
        .unwrap_or_else(|| {
            let mut out = Checker::default();
            out.failed.unknown.push(format!(
                "no site in the report declares a budget with `#[instrument_wait(budget(...))]` \
                 (sites: {})",
                list(profile.site_views().iter().map(|s| s.name.as_str()))
            ));
            out
        })
        .into_result()
}

/// Every declared limit compared with the report; `None` when no site declares one.
#[cfg(feature = "enabled")]
fn declared(profile: &Profile) -> Option<Checker> {
    let mut out = Checker::default();
    let mut any = false;
    for site in profile.site_views().iter().filter(|s| !s.budget.is_empty()) {
        any = true;
        out.check_site(site, site.budget, profile);
    }
    any.then_some(out)
}

/// What the summary and stderr say when a report is written: each limit declared with
/// `#[instrument_wait(budget(...))]`, exceeded or held, with its site's `file:line` and
/// the value measured; `None` when no site in the report declares one.
#[cfg(feature = "enabled")]
pub(crate) fn declared_budgets(profile: &Profile) -> Option<String> {
    let out = declared(profile)?;
    let mut text = format!(
        "Declared budgets: {} exceeded, {} held\n",
        out.failed.violations.len(),
        out.held.len()
    );
    let exceeded = out.failed.violations.iter().map(|v| ("EXCEEDED", v));
    for (tag, v) in exceeded.chain(out.held.iter().map(|v| ("held", v))) {
        let line = format!(
            "{}: {}, measured {}",
            v.subject,
            v.limit.written(),
            num(v.measured)
        );
        text.push_str(&wrap(&line, &format!("  {tag:<8}  "), "            "));
        text.push('\n');
    }
    for note in out.failed.unavailable.iter().chain(&out.failed.skipped) {
        text.push_str(&wrap(note, "  not checked: ", "            "));
        text.push('\n');
    }
    Some(text)
}

impl Profile {
    /// Checks the limits declared on the attribute, `#[instrument_wait(budget(...))]`,
    /// of every site in the report; the error, as [`check`](Profile::check)'s, lists each
    /// limit exceeded with the site, its `file:line`, the measured value and the limit.
    ///
    /// | key | limit |
    /// |---|---|
    /// | `max_episodes = n` | [`Limit::Episodes`] |
    /// | `max_<calls> = n` | [`Limit::Calls`], in total |
    /// | `max_<calls>_per_episode = x` | [`Limit::CallsPerEpisode`], on average |
    /// | `max_wall_share = x` (0 to 1) | [`Limit::WallShare`] |
    ///
    /// where `<calls>` is one of `spins`, `yields`, `sleeps`, `parks`, `async_yields`,
    /// `locks`, `condvar_waits`, `channel_waits`, `joins`, `barrier_waits`, `backoffs`.
    ///
    /// Counts are whole numbers; per-episode figures and shares may have a fraction.
    /// The same limits are also checked whenever the report is written (guard drop,
    /// exit hook, [`flush`](crate::flush)): the summary's "Declared budgets" section and
    /// stderr list each one held or exceeded; only this call fails a test.
    /// A report in which no site declares a budget is an error, not a silent pass: the
    /// function did not run, or ran on a thread outside the session.
    ///
    /// ```
    /// #[yieldprof::instrument_wait(budget(max_episodes = 2, max_yields_per_episode = 1))]
    /// fn take() {
    ///     std::thread::yield_now();
    /// }
    ///
    /// let session = yieldprof::Session::this_thread();
    /// take();
    /// take();
    /// session.finish().check_declared().unwrap();
    ///
    /// let session = yieldprof::Session::this_thread();
    /// take();
    /// take();
    /// take();
    /// let err = session.finish().check_declared().unwrap_err();
    /// assert!(err.to_string().contains("max_episodes = 2, measured 3"), "{err}");
    /// ```
    ///
    /// [`Limit::Episodes`]: crate::budget::Limit::Episodes
    /// [`Limit::Calls`]: crate::budget::Limit::Calls
    /// [`Limit::CallsPerEpisode`]: crate::budget::Limit::CallsPerEpisode
    /// [`Limit::WallShare`]: crate::budget::Limit::WallShare
    #[cfg(feature = "enabled")]
    pub fn check_declared(&self) -> Result<(), BudgetExceeded> {
        check_declared(self)
    }

    /// Passes: in a build without the `enabled` feature nothing is measured.
    #[cfg(not(feature = "enabled"))]
    pub fn check_declared(&self) -> Result<(), BudgetExceeded> {
        Ok(())
    }
}
