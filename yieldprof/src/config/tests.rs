use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::time::Duration;

/// The settings `vars` make, and the lines they print.
fn read(vars: &[(&str, &str)]) -> (Settings, Vec<String>) {
    let mut lines = Vec::new();
    let s = Settings::read(
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        },
        |l| lines.push(l),
    );
    (s, lines)
}

#[test]
fn unset_and_empty_variables_give_the_defaults_silently() {
    let (unset, lines) = read(&[]);
    assert!(lines.is_empty(), "{lines:?}");
    let names = names_read();
    let empty: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), " ")).collect();
    let (blank, lines) = read(&empty);
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(blank, unset);
    assert!(unset.enabled);
    assert_eq!(unset.max_nodes, DEFAULT_MAX_NODES);
    assert_eq!(unset.timeline, DEFAULT_TIMELINE);
    assert_eq!(unset.watch_sample, DEFAULT_WATCH_SAMPLING);
    assert_eq!(unset.watchpoint_rate, Some(DEFAULT_WATCHPOINT_RATE));
    assert_eq!(unset.snapshot_every, None);
}

#[test]
fn every_switch_takes_one_vocabulary_and_a_bad_word_is_named() {
    for (value, on) in [("OFF", false), ("no", false), ("0", false), ("True", true)] {
        let (s, lines) = read(&[("YIELDPROF", value), ("YIELDPROF_WRITE_AT_EXIT", value)]);
        assert_eq!(
            (s.enabled, s.write_at_exit, lines.len()),
            (on, on, 0),
            "{value}"
        );
    }
    let (s, lines) = read(&[("YIELDPROF", "abc"), ("YIELDPROF_WRITE_AT_EXIT", "sure")]);
    assert!(s.enabled && !s.write_at_exit);
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF="abc" is not 1/0, on/off, true/false or yes/no; using on"#,
            r#"yieldprof: YIELDPROF_WRITE_AT_EXIT="sure" is not 1/0, on/off, true/false or yes/no; using off"#,
        ]
    );
}

#[test]
fn numbers_out_of_range_are_clamped_or_defaulted_and_reported() {
    let (s, lines) = read(&[
        ("YIELDPROF_MAX_NODES", "4294967295"),
        ("YIELDPROF_WATCH_SAMPLE", "0"),
        ("YIELDPROF_SNAPSHOT_KEEP", "0"),
        ("YIELDPROF_FD_BUDGET", "lots"),
    ]);
    assert_eq!(
        (s.max_nodes, s.watch_sample, s.keep_snapshots, s.fd_budget),
        (
            MAX_NODES,
            DEFAULT_WATCH_SAMPLING,
            DEFAULT_KEEP_SNAPSHOTS,
            DEFAULT_FD_BUDGET
        )
    );
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_MAX_NODES="4294967295" is above the maximum of 262144 nodes per thread; using 262144"#,
            r#"yieldprof: YIELDPROF_FD_BUDGET="lots" is not a whole number of fds; using 512"#,
            r#"yieldprof: YIELDPROF_SNAPSHOT_KEEP="0" is not a whole number of snapshots, 1 or more; using 60"#,
            r#"yieldprof: YIELDPROF_WATCH_SAMPLE="0" is not a whole number of accesses, 1 or more; using 64"#,
        ]
    );
    let (s, lines) = read(&[("YIELDPROF_MAX_NODES", "0")]);
    assert_eq!(s.max_nodes, MIN_NODES);
    assert_eq!(lines.len(), 1, "{lines:?}");
}

#[test]
fn a_timeline_is_0_for_none_up_to_a_million_episodes() {
    let (s, lines) = read(&[("YIELDPROF_TIMELINE", "0")]);
    assert_eq!((s.timeline, lines.len()), (0, 0), "{lines:?}");
    let (s, lines) = read(&[("YIELDPROF_TIMELINE", "16")]);
    assert_eq!((s.timeline, lines.len()), (16, 0), "{lines:?}");
    let (s, lines) = read(&[("YIELDPROF_TIMELINE", "2000000")]);
    assert_eq!(s.timeline, MAX_TIMELINE);
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_TIMELINE="2000000" is above the maximum of 1048576 episodes per thread; using 1048576"#
        ]
    );
    let (s, lines) = read(&[("YIELDPROF_TIMELINE", "-1")]);
    assert_eq!(s.timeline, DEFAULT_TIMELINE);
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_TIMELINE="-1" is not a whole number of episodes per thread; using 4096"#
        ]
    );
}

#[test]
fn report_threads_take_all_or_a_count_and_a_bad_count_is_named() {
    let (s, lines) = read(&[]);
    assert_eq!(
        (s.report_threads, lines.len()),
        (Some(DEFAULT_REPORT_THREADS), 0)
    );
    let (s, lines) = read(&[("YIELDPROF_REPORT_THREADS", " ALL ")]);
    assert_eq!((s.report_threads, lines.len()), (None, 0), "{lines:?}");
    let (s, lines) = read(&[("YIELDPROF_REPORT_THREADS", "12")]);
    assert_eq!((s.report_threads, lines.len()), (Some(12), 0), "{lines:?}");
    let (s, lines) = read(&[("YIELDPROF_REPORT_THREADS", "0")]);
    assert_eq!(s.report_threads, Some(DEFAULT_REPORT_THREADS));
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_REPORT_THREADS="0" is not all or a whole number of threads, 1 or more; using 256"#
        ]
    );
}

#[test]
fn watchpoints_take_off_on_or_a_rate_and_a_bad_rate_is_named() {
    let rate = |v: &str| read(&[("YIELDPROF_WATCHPOINTS", v)]);
    for (value, expected) in [
        ("off", None),
        ("0", None),
        ("on", Some(DEFAULT_WATCHPOINT_RATE)),
        ("1", Some(1)),
        ("2500", Some(2500)),
        ("5000", Some(MAX_WATCHPOINT_RATE)),
    ] {
        assert_eq!(
            rate(value),
            (
                Settings {
                    watchpoint_rate: expected,
                    ..rate("").0
                },
                vec![]
            ),
            "{value}"
        );
    }
    for bad in ["5001", "-3", "fast"] {
        let (s, lines) = rate(bad);
        assert_eq!(s.watchpoint_rate, Some(DEFAULT_WATCHPOINT_RATE));
        assert_eq!(
            lines,
            [format!(
                "yieldprof: YIELDPROF_WATCHPOINTS={bad:?} is not off or hits per thread and \
                 second, 1 to 5000; using 400"
            )]
        );
    }
}

#[test]
fn snapshot_intervals_are_clamped_to_a_year_and_10_ms() {
    let every = |v: &str| read(&[("YIELDPROF_SNAPSHOT_EVERY", v)]);
    let (s, lines) = every("1e19");
    assert_eq!(s.snapshot_every, Some(MAX_SNAPSHOT_INTERVAL));
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_SNAPSHOT_EVERY="1e19" is above the maximum of 31536000 s; using 31536000 s"#
        ]
    );
    for huge in ["1e300", "inf"] {
        assert_eq!(every(huge).0.snapshot_every, Some(MAX_SNAPSHOT_INTERVAL));
    }
    assert_eq!(
        every("0.001").0.snapshot_every,
        Some(Duration::from_millis(10))
    );
    assert_eq!(
        every("2.5").0.snapshot_every,
        Some(Duration::from_millis(2500))
    );
    for off in ["off", "0", "no"] {
        assert_eq!(every(off), (read(&[]).0, vec![]), "{off}");
    }
    for bad in ["-1", "NaN", "soon"] {
        let (s, lines) = every(bad);
        assert_eq!(
            (s.snapshot_every, lines.len()),
            (None, 1),
            "{bad}: {lines:?}"
        );
    }
}

#[test]
fn metrics_views_and_sampling_name_what_they_drop() {
    let (s, lines) = read(&[
        ("YIELDPROF_METRIC", "Calls"),
        ("YIELDPROF_VIEWS", "calls, cycles,SWITCHES,,x"),
        ("YIELDPROF_COUNTERS_EVERY", "sometimes"),
    ]);
    assert_eq!(s.metric, Metric::Calls);
    assert_eq!(s.views, [Metric::Calls, Metric::Switches]);
    assert_eq!(s.counters, CounterSampling::Auto);
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_VIEWS="calls, cycles,SWITCHES,,x" has "cycles", "x", not wall, calls or switches; using calls,switches"#,
            r#"yieldprof: YIELDPROF_COUNTERS_EVERY="sometimes" is not auto, off or a number of episodes; using auto"#,
        ]
    );
    assert_eq!(
        read(&[("YIELDPROF_COUNTERS_EVERY", "0")]).0.counters,
        CounterSampling::Off
    );
}

#[test]
fn a_value_that_is_not_utf8_is_reported() {
    use std::os::unix::ffi::OsStringExt;
    let mut lines = Vec::new();
    let s = Settings::read(
        |name| (name == "YIELDPROF_METRIC").then(|| OsString::from_vec(vec![b'w', 0xff])),
        |l| lines.push(l),
    );
    assert_eq!(s.metric, Metric::Wall);
    assert_eq!(
        lines,
        ["yieldprof: YIELDPROF_METRIC=\"w\u{fffd}\" is not valid UTF-8; using wall"]
    );
}

/// The `YIELDPROF_*` names `env.rs` reads.
fn names_read() -> BTreeSet<String> {
    let src = include_str!("env.rs");
    names_in(src, "\"YIELDPROF")
}

fn names_in(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i + prefix.len() - "YIELDPROF".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .collect()
}

#[test]
fn the_options_and_docs_tables_are_one_table_of_every_variable_read() {
    let read = names_read();
    assert_eq!(read.len(), 19, "{read:?}");
    let options: Vec<&str> = include_str!("../output/options.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("/// |"))
        .collect();
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
    let docs = std::fs::read_to_string(page).expect("docs/configuration.md");
    let section = docs
        .split("\n## ")
        .next()
        .expect("the table before the first subsection");
    let readme_rows: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("|"))
        .collect();
    assert_eq!(options, readme_rows);
    assert_eq!(names_in(section, "| `YIELDPROF"), read);
}

/// A value as a host might set one: any text, a number or switch word in any case, or
/// bytes that are not UTF-8.
fn value() -> impl Strategy<Value = OsString> {
    use std::os::unix::ffi::OsStringExt;
    prop_oneof![
        any::<String>().prop_map(OsString::from),
        "[-+0-9.eE]{0,24}|inf|NaN|[oO][nN]|[oO][fF]{2}|[yY][eE][sS]|auto|wall|calls,x"
            .prop_map(OsString::from),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(OsString::from_vec),
    ]
}

// Cases: proptest's default (256), or `PROPTEST_CASES` (the long run, docs/reliability.md).
proptest! {
    #[test]
    fn any_environment_gives_settings_within_bounds_and_one_line_per_complaint(
        // One value per variable read (`names_read`; zip stops at the shorter).
        values in prop::collection::vec(prop::option::of(value()), 32),
    ) {
        let names: Vec<String> = names_read().into_iter().collect();
        let set: Vec<(&str, OsString)> = names
            .iter()
            .zip(values)
            .filter_map(|(n, v)| Some((n.as_str(), v?)))
            .collect();
        let mut lines = Vec::new();
        let s = Settings::read(
            |name| set.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
            |l| lines.push(l),
        );
        prop_assert!(lines.len() <= set.len());
        for l in &lines {
            let named = set.iter().any(|(k, _)| l.starts_with(&format!("yieldprof: {k}=")));
            prop_assert!(named && l.contains("; using ") && !l.contains('\n'), "{}", l);
        }
        prop_assert!((MIN_NODES..=MAX_NODES).contains(&s.max_nodes));
        prop_assert!(s.timeline <= MAX_TIMELINE);
        prop_assert!(s.watch_sample >= 1 && s.keep_snapshots >= 1);
        if let Some(every) = s.snapshot_every {
            prop_assert!((MIN_SNAPSHOT_INTERVAL..=MAX_SNAPSHOT_INTERVAL).contains(&every));
        }
    }
}

#[test]
fn the_live_view_address_is_an_address_and_port() {
    let (s, lines) = read(&[
        ("YIELDPROF_HTTP", "127.0.0.1:6060"),
        ("YIELDPROF_HTTP_ANY", "on"),
    ]);
    assert_eq!(s.http, Some("127.0.0.1:6060".parse().unwrap()));
    assert!(s.http_any && lines.is_empty(), "{lines:?}");
    let (s, lines) = read(&[("YIELDPROF_HTTP", "6060")]);
    assert_eq!((s.http, s.http_any), (None, false));
    assert_eq!(
        lines,
        [
            r#"yieldprof: YIELDPROF_HTTP="6060" is not an address and port like 127.0.0.1:6060; using no live view"#
        ]
    );
}
