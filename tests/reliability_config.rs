//! Configuration never hurts the host: every `YIELDPROF_*` value that cannot be used is
//! named in one stderr line (variable, value, what is used instead), a huge node cap
//! allocates nothing up front, and a huge snapshot interval neither panics nor loses
//! the last snapshot. Each host is a child process with its own environment.

mod child_process;
mod counting_alloc;

use child_process::{names, run, temp_dir, Exit};
use counting_alloc::Counting;
use std::sync::atomic::{AtomicU64, Ordering};
use yieldprof::Watched;

#[yieldprof::instrument_wait]
fn poll() {
    std::thread::yield_now();
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    match role.as_str() {
        "record" => {
            // The options a host starts with: the environment's.
            let guard = yieldprof::Options::from_env()
                .out_dir(std::env::temp_dir())
                .init();
            let before = counting_alloc::reset_peak();
            // A thread of its own: it registers, with the node cap in force, here.
            let report = std::thread::spawn(|| {
                for _ in 0..3 {
                    poll();
                }
                yieldprof::snapshot()
            })
            .join()
            .unwrap();
            let grown = counting_alloc::peak() - before;
            let episodes = report.site("poll").map_or(0, |s| s.episodes);
            let overflowed: u64 = report.threads().iter().map(|t| t.overflowed).sum();
            println!("episodes {episodes} overflowed {overflowed} heap_peak {grown}");
            // Nothing to write: the figures above are the test's.
            std::mem::forget(guard);
        }
        "watch" => {
            let value: Watched<AtomicU64> = Watched::new(0);
            yieldprof::watch(&value, "value");
            value.fetch_add(1, Ordering::Relaxed);
            let every = yieldprof::snapshot().sharing()[0].sample_every;
            println!("sample_every {every}");
        }
        "snapshots" => {
            let guard = yieldprof::Options::from_env().name("snap").init();
            poll();
            drop(guard);
            println!("guard dropped");
        }
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

/// Runs `role` with `env`; it must exit 0.
fn host(role: &str, env: &[(&str, &str)]) -> Exit {
    let exit = run(role, env);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    exit
}

/// yieldprof's own stderr lines.
fn complaints(exit: &Exit) -> Vec<&str> {
    exit.stderr
        .lines()
        .filter(|l| l.starts_with("yieldprof: YIELDPROF"))
        .collect()
}

#[test]
fn a_bad_switch_is_named_and_recording_stays_on() {
    let exit = host("record", &[("YIELDPROF", "abc")]);
    assert_eq!(
        complaints(&exit),
        [r#"yieldprof: YIELDPROF="abc" is not 1/0, on/off, true/false or yes/no; using on"#]
    );
    assert!(exit.stdout.contains("episodes 3 "), "{exit:?}");
}

#[test]
fn any_off_word_in_any_case_turns_recording_off() {
    for off in ["OFF", "No", "false", "0"] {
        let exit = host("record", &[("YIELDPROF", off)]);
        assert!(complaints(&exit).is_empty(), "{off}: {exit:?}");
        assert!(exit.stdout.contains("episodes 0 "), "{off}: {exit:?}");
    }
}

#[test]
fn watch_sample_0_is_named_and_the_default_rate_used() {
    let exit = host("watch", &[("YIELDPROF_WATCH_SAMPLE", "0")]);
    assert_eq!(
        complaints(&exit),
        [
            r#"yieldprof: YIELDPROF_WATCH_SAMPLE="0" is not a whole number of accesses, 1 or more; using 64"#
        ]
    );
    assert!(exit.stdout.contains("sample_every 64"), "{exit:?}");
}

/// The heap peak of a thread that records 3 episodes under `env`, bytes.
fn thread_heap_peak(exit: &Exit) -> isize {
    exit.stdout
        .split("heap_peak ")
        .nth(1)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{exit:?}"))
}

#[test]
fn a_huge_node_cap_is_capped_named_and_allocates_nothing_up_front() {
    let exit = host("record", &[("YIELDPROF_MAX_NODES", "4294967295")]);
    assert_eq!(
        complaints(&exit),
        [
            r#"yieldprof: YIELDPROF_MAX_NODES="4294967295" is above the maximum of 262144 nodes per thread; using 262144"#
        ]
    );
    assert!(exit.stdout.contains("episodes 3 overflowed 0"), "{exit:?}");
    // Nodes are allocated as stacks appear: a thread of 3 episodes costs the same
    // under the largest cap as under the default one (~75 KiB; allocated up front,
    // the largest cap's indexes alone were 380 KiB more), give or take the few
    // hundred bytes the rest of the process allocates meanwhile.
    let capped = thread_heap_peak(&exit);
    let default = thread_heap_peak(&host("record", &[]));
    assert!(
        (capped - default).abs() < 4096,
        "heap peak {capped} B vs {default} B"
    );
}

#[test]
fn a_node_cap_of_0_is_raised_named_and_every_site_still_recorded() {
    let exit = host("record", &[("YIELDPROF_MAX_NODES", "0")]);
    assert_eq!(
        complaints(&exit),
        [
            r#"yieldprof: YIELDPROF_MAX_NODES="0" is below the minimum of 16 nodes per thread; using 16"#
        ]
    );
    assert!(exit.stdout.contains("episodes 3 overflowed 0"), "{exit:?}");
}

#[test]
fn a_huge_snapshot_interval_is_clamped_named_and_the_last_snapshot_written() {
    let dir = temp_dir("config-snapshots");
    let exit = host(
        "snapshots",
        &[
            ("YIELDPROF_SNAPSHOT_EVERY", "1e19"),
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
        ],
    );
    assert!(!exit.stderr.contains("panicked"), "{exit:?}");
    assert_eq!(
        complaints(&exit),
        [
            r#"yieldprof: YIELDPROF_SNAPSHOT_EVERY="1e19" is above the maximum of 31536000 s; using 31536000 s"#
        ]
    );
    // The last snapshot, taken when the guard drops: one .folded and one .pb.gz.
    assert_eq!(names(&dir.join("snapshots")).len(), 2, "{exit:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
