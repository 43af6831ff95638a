//! Budgets, built in the test or declared on the attribute: a limit that holds passes,
//! one exceeded by one fails naming the site, its source line, the measured value and
//! the limit; unknown names are errors; tests running in parallel on different sites
//! do not see each other.

use yieldprof::budget::{Budget, Limit};
use yieldprof::{Kind, Session};

/// Exactly `n` yields per episode.
#[yieldprof::instrument_wait]
fn yields(n: u32) {
    for _ in 0..n {
        std::thread::yield_now();
    }
}

#[test]
fn a_budget_that_holds_passes() {
    let session = Session::this_thread();
    for _ in 0..10 {
        yields(16);
    }
    let report = session.finish();
    let budget = Budget::new().site("yields", |s| {
        s.max_episodes(10)
            .max_calls(Kind::Yield, 160)
            .max_calls_per_episode(Kind::Yield, 16.0)
            .max_calls(Kind::Sleep, 0)
    });
    assert_eq!(report.check(&budget).map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn a_budget_exceeded_by_one_names_site_line_measured_and_limit() {
    let session = Session::this_thread();
    for _ in 0..10 {
        yields(16);
    }
    let err = session
        .finish()
        .check(&Budget::new().site("yields", |s| s.max_calls(Kind::Yield, 159).max_episodes(10)))
        .expect_err("160 yields exceed 159");
    assert_eq!(err.violations.len(), 1, "{err}");
    assert_eq!(err.violations[0].measured, 160.0);
    let msg = err.to_string();
    assert!(msg.contains("site `budget::yields`"), "{msg}");
    let line = include_str!("budget.rs")
        .lines()
        .position(|l| l.starts_with("fn yields("))
        .unwrap()
        + 1;
    let at = [line - 1, line].map(|l| format!("tests/budget.rs:{l})"));
    assert!(
        at.iter().any(|a| msg.contains(a)),
        "{msg} should name {at:?}"
    );
    assert!(msg.contains("max_yields = 159, measured 160"), "{msg}");
}

#[test]
fn every_violated_limit_is_listed() {
    let session = Session::this_thread();
    yields(3);
    let err = session
        .finish()
        .check(&Budget::new().site("budget::yields", |s| {
            s.max_episodes(0).max_calls_per_episode(Kind::Yield, 2.5)
        }))
        .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.violations.len(), 2, "{msg}");
    assert!(msg.contains("max_episodes = 0, measured 1"), "{msg}");
    assert!(
        msg.contains("max_yields_per_episode = 2.5, measured 3"),
        "{msg}"
    );
}

#[test]
fn an_unknown_site_is_an_error_not_a_silent_pass() {
    let session = Session::this_thread();
    yields(1);
    let err = session
        .finish()
        .check(&Budget::new().site("no_such_site", |s| s.max_episodes(100)))
        .unwrap_err();
    assert_eq!(err.unknown.len(), 1);
    assert!(
        err.to_string()
            .contains("site `no_such_site` is not in the report"),
        "{err}"
    );
}

#[yieldprof::instrument_wait]
fn parallel_a() {
    std::thread::yield_now();
}

#[yieldprof::instrument_wait]
fn parallel_b() {
    std::thread::yield_now();
}

/// Two tests at once (plain `cargo test` runs them on separate threads), each with a
/// whole-process session, each checking its own site's exact count.
fn hammer(site: fn(), name: &str, rounds: u64) {
    let session = Session::start();
    for _ in 0..rounds {
        site();
    }
    let report = session.finish();
    let budget = Budget::new().site(name, |s| {
        s.max_episodes(rounds).max_calls(Kind::Yield, rounds)
    });
    report.check(&budget).unwrap();
    assert_eq!(report.site(name).unwrap().episodes, rounds);
}

#[test]
fn parallel_test_a_sees_only_its_site() {
    hammer(parallel_a, "parallel_a", 20_000);
}

#[test]
fn parallel_test_b_sees_only_its_site() {
    hammer(parallel_b, "parallel_b", 30_000);
}

#[test]
fn a_thread_budget_limits_the_wait_share() {
    let session = Session::this_thread();
    std::thread::sleep(std::time::Duration::from_millis(1));
    yields(1);
    let report = session.finish();
    let me = std::thread::current().name().unwrap().to_string();
    assert!(report
        .check(&Budget::new().thread(&me, |t| t.max_wait_share(1.0)))
        .is_ok());
    let err = report
        .check(&Budget::new().thread(&me, |t| t.max_wait_share(0.0)))
        .unwrap_err();
    assert!(err.to_string().contains("max_wait_share"), "{err}");
    let err = report
        .check(&Budget::new().thread("nobody", |t| t.max_wait_share(0.5)))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("thread `nobody` is not in the report"),
        "{err}"
    );
}

#[test]
fn assert_budget_saves_the_failing_run_before_it_panics() {
    // Where `assert_budget!` saves: the environment's output folder, read once.
    let dir = yieldprof::Options::from_env().out_dir;
    let session = Session::this_thread();
    yields(2);
    let report = session.finish();
    let panic = std::panic::catch_unwind(|| {
        yieldprof::assert_budget!(
            report,
            Budget::new().site("yields", |s| s.max_calls(Kind::Yield, 1))
        );
    })
    .expect_err("2 yields exceed 1");
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(msg.contains("max_yields = 1, measured 2"), "{msg}");
    let saved = dir
        .join("budget-failures")
        .join("assert_budget_saves_the_failing_run_before_it_panics.folded");
    assert!(msg.contains("profile of the failing run"), "{msg}");
    let folded = std::fs::read_to_string(&saved).expect("the folded file was written first");
    assert!(folded.contains("budget::yields;[yield] "), "{folded}");
}

/// Declares its budget on the attribute: `Profile::check_declared` checks it. The last key
/// keeps its old spelling (`max_yields_per_episode` now), which still means the same limit.
#[yieldprof::instrument_wait(budget(max_episodes = 10, max_yields = 160, yields_per_episode = 16))]
fn declared_yields(n: u32) {
    for _ in 0..n {
        std::thread::yield_now();
    }
}

#[test]
fn a_declared_budget_that_holds_passes() {
    let session = Session::this_thread();
    for _ in 0..10 {
        declared_yields(16);
    }
    let report = session.finish();
    let site = report.site("declared_yields").unwrap();
    assert_eq!((site.episodes, site.calls_of(Kind::Yield)), (10, 160));
    assert_eq!(
        site.budget,
        [
            Limit::Episodes(10),
            Limit::Calls(Kind::Yield, 160),
            Limit::CallsPerEpisode(Kind::Yield, 16.0)
        ]
    );
    assert_eq!(report.check_declared().map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn a_declared_budget_exceeded_by_one_names_site_line_measured_and_limit() {
    let session = Session::this_thread();
    for i in 0..10 {
        declared_yields(if i == 0 { 17 } else { 16 });
    }
    let err = session
        .finish()
        .check_declared()
        .expect_err("161 yields exceed 160");
    let msg = err.to_string();
    assert_eq!(err.violations.len(), 2, "{msg}");
    let line = include_str!("budget.rs")
        .lines()
        .position(|l| l.starts_with("fn declared_yields("))
        .unwrap()
        + 1;
    let site = format!("site `budget::declared_yields` (tests/budget.rs:{line})");
    assert!(
        msg.contains(&format!("{site}: max_yields = 160, measured 161")),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "{site}: max_yields_per_episode = 16, measured 16.1"
        )),
        "{msg}"
    );
}

#[test]
fn a_report_without_declared_budgets_is_an_error_not_a_silent_pass() {
    let session = Session::this_thread();
    yields(1);
    let err = session.finish().check_declared().unwrap_err();
    assert_eq!((err.violations.len(), err.unknown.len()), (0, 1));
    assert!(
        err.to_string()
            .contains("no site in the report declares a budget"),
        "{err}"
    );
}
