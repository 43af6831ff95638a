//! Output failures never harm the host: an unwritable, missing or blocked output
//! folder, a full disk, a file in the way. Each host runs in a child process and must
//! exit with its own exit code (7), with one clear line on stderr; and a write killed
//! half-way never leaves a truncated `.folded` under the final name.

mod child_process;

use child_process::{folded_total, names, run, temp_dir, Exit};
use std::path::Path;
use std::time::{Duration, Instant};

/// The host's own exit code.
const HOST_EXIT: i32 = 7;
const EPISODES: u64 = 10;
const YIELDS_PER_EPISODE: u64 = 3;

#[yieldprof::instrument_wait]
fn poll() {
    for _ in 0..YIELDS_PER_EPISODE {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
fn descend(depth: u32) {
    std::hint::spin_loop();
    if depth > 1 {
        descend(depth - 1);
    }
}

/// The host program: profiles `poll`, drops the guard, exits with [`HOST_EXIT`].
fn host(before_drop: impl FnOnce(&yieldprof::Guard)) -> ! {
    let guard = yieldprof::Options::from_env().name("out").init();
    for _ in 0..EPISODES {
        poll();
    }
    before_drop(&guard);
    drop(guard);
    println!("host done");
    std::process::exit(HOST_EXIT);
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    match role.as_str() {
        "host" => host(|_| ()),
        "host-as-nobody" => {
            // SAFETY: plain syscalls; as root they drop to nobody, else they fail and
            // the folder's mode already denies this user.
            unsafe {
                if libc::geteuid() == 0 {
                    assert_eq!(libc::setgid(65534), 0);
                    assert_eq!(libc::setuid(65534), 0);
                }
            }
            host(|_| ())
        }
        "host-disk-full" => host(|guard| {
            // The guard writes `out.folded` through `out.folded.tmp<pid>`: make that
            // name lead to /dev/full, whose every write fails with ENOSPC.
            let out = &guard.options().out_dir;
            let tmp = out.join(format!("out.folded.tmp{}", std::process::id()));
            std::os::unix::fs::symlink("/dev/full", tmp).unwrap();
        }),
        "rewrite-forever" => {
            let guard = yieldprof::Options::from_env().name("big").init();
            descend(2000);
            loop {
                guard.write().unwrap();
                println!("written");
            }
        }
        other => panic!("unknown role {other}"),
    }
}

fn host_in(out: &Path, role: &str) -> Exit {
    run(
        role,
        &[
            ("YIELDPROF_OUT", out.to_str().unwrap()),
            ("YIELDPROF_METRIC", "calls"),
        ],
    )
}

/// The host ran to its end and exited with its own code.
fn assert_host_finished(exit: &Exit) {
    assert_eq!(exit.code, Some(HOST_EXIT), "{exit:?}");
    assert!(exit.stdout.contains("host done"), "{exit:?}");
}

/// The one stderr line of a failed write, naming the path and the OS error.
fn assert_failure_line(exit: &Exit, path: &Path, os_error: &str) {
    let expected = format!("yieldprof: cannot write {}: {os_error}", path.display());
    let lines: Vec<&str> = exit
        .stderr
        .lines()
        .filter(|l| l.starts_with("yieldprof:"))
        .collect();
    assert_eq!(lines.len(), 1, "{exit:?}");
    assert!(
        lines[0].starts_with(&expected) && lines[0].ends_with("; the profile was not saved"),
        "expected {expected:?}, got {:?}",
        lines[0]
    );
}

#[test]
fn an_unwritable_folder_is_reported_and_the_host_exits_with_its_own_code() {
    let dir = temp_dir("out-readonly");
    let out = dir.join("ro");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let exit = host_in(&out, "host-as-nobody");
    assert_host_finished(&exit);
    assert_failure_line(
        &exit,
        &out.join("out.folded"),
        "Permission denied (os error 13)",
    );
    assert_eq!(names(&out), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_folder_is_created_with_its_parents() {
    let dir = temp_dir("out-missing");
    let out = dir.join("a/b/c");
    let exit = host_in(&out, "host");
    assert_host_finished(&exit);
    let folded = std::fs::read_to_string(out.join("out.folded")).unwrap();
    assert_eq!(
        folded_total(&folded, "poll;[yield]"),
        EPISODES * YIELDS_PER_EPISODE
    );
    assert_eq!(
        names(&out),
        [
            "out.folded",
            "out.json",
            "out.pb.gz",
            "out.split.svg",
            "out.svg",
            "out.trace.json",
            "out.txt"
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_where_the_folder_should_be_is_reported() {
    let dir = temp_dir("out-file");
    let out = dir.join("not-a-dir");
    std::fs::write(&out, "the user's file\n").unwrap();
    let exit = host_in(&out, "host");
    assert_host_finished(&exit);
    assert_failure_line(&exit, &out, "File exists (os error 17)");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the user's file\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_where_the_folded_file_should_be_is_reported_and_kept() {
    let dir = temp_dir("out-dir-in-the-way");
    std::fs::create_dir(dir.join("out.folded")).unwrap();
    std::fs::write(dir.join("out.folded/keep"), "x").unwrap();
    let exit = host_in(&dir, "host");
    assert_host_finished(&exit);
    assert_failure_line(
        &exit,
        &dir.join("out.folded"),
        "Is a directory (os error 21)",
    );
    assert_eq!(names(&dir.join("out.folded")), ["keep"]);
    // The temporary file was removed.
    assert_eq!(names(&dir), ["out.folded"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_disk_is_reported_and_the_previous_profile_stays_whole() {
    let dir = temp_dir("out-disk-full");
    std::fs::write(dir.join("out.folded"), "previous;run 1\n").unwrap();
    let exit = host_in(&dir, "host-disk-full");
    assert_host_finished(&exit);
    let tmp_prefix = dir.join("out.folded.tmp");
    let line = exit
        .stderr
        .lines()
        .find(|l| l.starts_with("yieldprof:"))
        .unwrap();
    assert!(
        line.starts_with(&format!(
            "yieldprof: cannot write {}",
            dir.join("out.folded").display()
        )) && line.contains("No space left on device (os error 28)"),
        "{line:?} (temporary file {})",
        tmp_prefix.display()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out.folded")).unwrap(),
        "previous;run 1\n"
    );
    // The symlink to /dev/full was the temporary file: removed with it.
    assert_eq!(names(&dir), ["out.folded"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_write_killed_half_way_never_leaves_a_truncated_folded_file() {
    const KILLS: u64 = 6;
    let dir = temp_dir("out-killed");
    let folded = dir.join("big.folded");
    let mut leftovers = 0;
    for k in 0..KILLS {
        let mut child = child_process::command(
            "rewrite-forever",
            &[
                ("YIELDPROF_OUT", dir.to_str().unwrap()),
                ("YIELDPROF_METRIC", "calls"),
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        // Kill at a different point of the write loop each time.
        let t = Instant::now();
        while !folded.exists() && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_micros(1_500 * k + 300));
        child.kill().unwrap();
        child.wait().unwrap();
        // Whatever the moment, the final name holds a whole profile: 2000 spins, each
        // in its own stack, every line parsed.
        let text = std::fs::read_to_string(&folded).unwrap();
        let stacks = yieldprof::report::parse_folded(&text).unwrap();
        assert_eq!(stacks.len(), 2000, "kill {k}");
        assert_eq!(folded_total(&text, "[spin]"), 2000, "kill {k}");
        leftovers += names(&dir).iter().filter(|n| n.contains(".tmp")).count();
        for n in names(&dir).iter().filter(|n| n.contains(".tmp")) {
            std::fs::remove_file(dir.join(n)).unwrap();
        }
    }
    // A killed writer can leave its temporary file behind (never under a final name).
    eprintln!("{leftovers} temporary file(s) left by {KILLS} kills");
    assert!(leftovers <= KILLS as usize);
    std::fs::remove_dir_all(&dir).unwrap();
}
