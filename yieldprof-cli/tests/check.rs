//! `yieldprof check RUN --budget FILE` on a real run's files.

mod common;

use common::{dir, record, yieldprof};
use std::path::Path;

/// The run's stem and a budget file holding `toml`.
fn run_and_budget(dir: &Path, toml: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let budget = dir.join("budget.toml");
    std::fs::write(&budget, toml).unwrap();
    (record(dir, "checked", 10, 3), budget)
}

#[test]
fn a_run_within_its_budget_passes_with_the_limits_counted() {
    let dir = dir("check-pass");
    let (run, budget) = run_and_budget(
        &dir,
        r#"
        [site.poll]
        max_episodes = 10
        max_calls = { yield = 30, spin = 0 }
        max_calls_per_episode = { yield = 3 }
        max_run_share = 1.0

        [site."common::spin"]
        max_calls = { spin = 100 }
        "#,
    );
    let (code, stdout, stderr) = yieldprof(&[&"check", &run, &"--budget", &budget]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "checked: within budget (6 limit(s) of {})",
            budget.display()
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_exceeded_limit_and_unknown_name_is_listed_and_exits_1() {
    let dir = dir("check-fail");
    let (run, budget) = run_and_budget(
        &dir,
        r#"
        [site.poll]
        max_episodes = 9
        max_calls = { yield = 29 }
        max_calls_per_episode = { yield = 2.5 }
        max_p99_ns = 1

        [site.nowhere]
        max_episodes = 1

        [thread.nobody]
        max_wait_share = 0.5
        "#,
    );
    let (code, _, stderr) = yieldprof(&[&"check", &run, &"--budget", &budget]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("checked: wait budget exceeded: 4 limit(s) over, 2 unknown name(s)\n"),
        "{stderr}"
    );
    let site = "site `common::poll` (yieldprof-cli/tests/common/mod.rs:10)";
    for line in [
        format!("{site}: episodes measured 10, limit 9"),
        format!("{site}: yield calls measured 30, limit 29"),
        format!("{site}: yield calls per episode measured 3, limit 2.5"),
        format!("{site}: p99 episode measured "),
        "site `nowhere` is not in the run (sites: common::poll, common::spin)".to_string(),
        "thread `nobody` is not in the run (threads: ".to_string(),
    ] {
        assert!(stderr.contains(&format!("\n  {line}")), "{line}: {stderr}");
    }
    assert!(stderr.contains(", limit 1 ns\n"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_malformed_budget_is_an_input_error_naming_the_file_and_the_key() {
    let dir = dir("check-bad");
    for (toml, expected) in [
        (
            "[site.poll]\nmax_episode = 3\n",
            "unknown field `max_episode`",
        ),
        (
            "[site.poll]\nmax_calls = { yeild = 3 }\n",
            "`yeild` is not a wait kind (spin, yield",
        ),
        (
            "[thread.main]\nmax_wait_share = 50\n",
            "max_wait_share = 50: a share is from 0 to 1",
        ),
        ("[site.poll\n", "budget.toml: TOML parse error"),
    ] {
        let (run, budget) = run_and_budget(&dir, toml);
        let (code, _, stderr) = yieldprof(&[&"check", &run, &"--budget", &budget]);
        assert_eq!(code, 2, "{toml}: {stderr}");
        assert!(stderr.contains(expected), "{toml}: {stderr}");
        assert!(stderr.contains(&budget.display().to_string()), "{stderr}");
    }
    let (code, _, stderr) = yieldprof(&[
        &"check",
        &dir.join("checked"),
        &"--budget",
        &dir.join("none.toml"),
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot read") && stderr.contains("none.toml"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
