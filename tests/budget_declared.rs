//! A budget declared on the attribute is checked whenever the report is written, not
//! only by a test that calls `check_declared`: a host program with one declared budget
//! that holds and one that is exceeded, run as a child process, finds both named with
//! their `file:line` in the summary and on stderr, on `flush()` and when the guard drops.

mod child_process;

use child_process::{run, temp_dir};

/// Two yields per call, five calls: within both limits.
#[yieldprof::instrument_wait(budget(max_yields_per_episode = 2, max_episodes = 5))]
fn within() {
    std::thread::yield_now();
    std::thread::yield_now();
}

/// Three yields per call against a limit of one.
#[yieldprof::instrument_wait(budget(max_yields_per_episode = 1))]
fn over() {
    for _ in 0..3 {
        std::thread::yield_now();
    }
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    let guard = yieldprof::Options::from_env().name("host").init();
    for _ in 0..5 {
        within();
        over();
    }
    if role == "flush" {
        yieldprof::flush().unwrap();
        // The drop below writes the same files again; stderr then has the lines twice.
        std::mem::forget(guard);
    }
}

/// `tests/budget_declared.rs:N`, where N is the line of `fn name(`.
fn at(name: &str) -> String {
    let line = include_str!("budget_declared.rs")
        .lines()
        .position(|l| l.starts_with(&format!("fn {name}(")))
        .unwrap()
        + 1;
    format!("tests/budget_declared.rs:{line}")
}

/// Lines may wrap at 100 columns: compared with runs of white space made one space.
fn held_and_exceeded_are_named(text: &str, source: &str) {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let within = format!("site `budget_declared::within` ({})", at("within"));
    let over = format!("site `budget_declared::over` ({})", at("over"));
    let expect = [
        "Declared budgets: 1 exceeded, 2 held".to_string(),
        format!("EXCEEDED {over}: max_yields_per_episode = 1, measured 3"),
        format!("held {within}: max_yields_per_episode = 2, measured 2"),
        format!("held {within}: max_episodes = 5, measured 5"),
    ];
    for line in expect {
        assert!(text.contains(&line), "{source} lacks `{line}`:\n{text}");
    }
}

fn host_reports_both(role: &str) {
    let dir = temp_dir(&format!("budget-declared-{role}"));
    let exit = run(role, &[("YIELDPROF_OUT", dir.to_str().unwrap())]);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    held_and_exceeded_are_named(&exit.stderr, "stderr");
    let summary = std::fs::read_to_string(dir.join("host.txt")).unwrap();
    held_and_exceeded_are_named(&summary, "host.txt");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn declared_budgets_are_reported_when_the_guard_drops() {
    host_reports_both("drop");
}

#[test]
fn declared_budgets_are_reported_on_flush() {
    host_reports_both("flush");
}
