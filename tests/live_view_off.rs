//! The live view is opt-in and loopback-only, read from the environment: without
//! `YIELDPROF_HTTP` there is no socket and no thread, and a non-loopback address needs
//! `YIELDPROF_HTTP_ANY=1`. The variables are read once per process, so each case is a
//! child process of this test binary, counting its own threads around `init()`.

mod child_process;

use child_process::{role, run, temp_dir};

/// Threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The child's part: `init()` as a host would call it, then what it started.
#[test]
fn child() {
    let Some(role) = role() else { return };
    let before = threads();
    let guard = yieldprof::Options::from_env().name(role.as_str()).init();
    let started = threads() - before;
    match (role.as_str(), guard.http_addr()) {
        ("off" | "not-loopback", None) => assert_eq!(started, 0, "{role}: a thread started"),
        ("serving", Some(addr)) => {
            assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
            assert!(started >= 1, "serving without a thread");
            println!("serving on {addr}");
        }
        (role, addr) => panic!("{role}: live view at {addr:?}"),
    }
}

#[test]
fn no_live_view_unless_yieldprof_http_names_a_loopback_address() {
    let dir = temp_dir("live-off");
    let out = dir.to_str().unwrap();
    let off = run("off", &[("YIELDPROF_OUT", out)]);
    assert_eq!(off.code, Some(0), "{}", off.stderr);
    assert!(!off.stderr.contains("live view"), "{}", off.stderr);

    let served = run(
        "serving",
        &[("YIELDPROF_OUT", out), ("YIELDPROF_HTTP", "127.0.0.1:0")],
    );
    assert_eq!(served.code, Some(0), "{}", served.stderr);
    assert!(
        served.stdout.contains("serving on 127.0.0.1:"),
        "{}",
        served.stdout
    );
    assert!(served
        .stderr
        .contains("yieldprof: live view at http://127.0.0.1:"));

    let env = [("YIELDPROF_OUT", out), ("YIELDPROF_HTTP", "0.0.0.0:0")];
    let refused = run("not-loopback", &env);
    assert_eq!(refused.code, Some(0), "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "yieldprof: no live view on 0.0.0.0:0: it shows command lines and thread names, \
             so it listens on loopback addresses only unless YIELDPROF_HTTP_ANY=1"
        ),
        "{}",
        refused.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
