//! perf-event unavailable in every way it can be: the host runs on, every count that
//! getrusage can give is exact, and the report says why perf is missing.
//!
//! - ENOENT: real for hardware events on a machine without a PMU (this project's VM;
//!   `tests/counters_hardware.rs`), and here for every event through the test hook.
//! - EACCES (`perf_event_paranoid`): the tests run as root, which paranoid does not
//!   stop, so through the test hook `__private::fail_perf_groups`.
//! - EPERM: a real seccomp filter that makes `perf_event_open` fail with EPERM.
//! - EMFILE: a real one, the host having used every fd under a lowered `RLIMIT_NOFILE`,
//!   before profiling starts and after.
//!
//! Each host is a child process that checks the API itself and writes its files; the
//! test reads the `.txt` and `.json` for the reason.

mod child_process;
mod fd_limit;

use child_process::{folded_total, run, temp_dir};
use std::path::Path;
use yieldprof::counters::{capabilities, Availability, CounterEvent, CounterSource, Reason};
use yieldprof::Kind;

const THREADS: u64 = 4;
const EPISODES: u64 = 25;

#[yieldprof::instrument_wait]
fn nap() {
    std::thread::sleep(std::time::Duration::from_micros(50));
}

/// The workload: `THREADS` threads of `EPISODES` naps; returns their reports' view.
fn workload() -> yieldprof::Profile {
    let session = yieldprof::Session::start();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..EPISODES {
                    nap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    session.finish()
}

/// The checks every host makes on itself: exact counts, switches still counted (by
/// getrusage), every worker on getrusage for `why`, no perf figure made up.
fn check_fallback(report: &yieldprof::Profile, why: Reason) {
    let site = report.site("nap").unwrap();
    assert_eq!(site.episodes, THREADS * EPISODES);
    assert_eq!(site.calls_of(Kind::Sleep), THREADS * EPISODES);
    assert!(site.counters.voluntary_switches.value().unwrap() >= THREADS * EPISODES / 2);
    assert_eq!(site.counters.context_switches.value(), None);
    let workers: Vec<_> = report.threads().into_iter().filter(|t| t.exited).collect();
    assert_eq!(workers.len() as u64, THREADS);
    for t in &workers {
        assert_eq!(
            t.counter_source,
            CounterSource::Getrusage(why),
            "{}",
            t.name
        );
        // No user page: the time split comes from the sampled episodes, so labelled.
        assert!(
            t.split_method.is_some_and(|m| !m.every_episode),
            "{}",
            t.name
        );
    }
    // Sleeps are off the CPU, sampled or not.
    let off = site
        .time
        .off_cpu_share()
        .expect("measured on the sampled episodes");
    assert!(off >= 0.5, "{:?}", site.time);
}

/// Installs a seccomp filter on every thread of this process: `perf_event_open` fails
/// with EPERM, every other syscall goes through.
fn deny_perf_event_open() {
    // Classic BPF opcodes (linux/bpf_common.h): BPF_LD|BPF_W|BPF_ABS,
    // BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x15;
    const BPF_RET_K: u16 = 0x06;
    let stmt = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let nr = libc::SYS_perf_event_open as u32;
    let mut filter = [
        // seccomp_data.nr is at offset 0.
        stmt(BPF_LD_W_ABS, 0),
        libc::sock_filter {
            code: BPF_JMP_JEQ_K,
            jt: 0,
            jf: 1,
            k: nr,
        },
        stmt(BPF_RET_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at a valid filter for the duration of the calls.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        let rc = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &prog as *const libc::sock_fprog,
        );
        assert_eq!(rc, 0, "seccomp: {}", std::io::Error::last_os_error());
        // The filter is in force: perf_event_open itself says EPERM now.
        assert_eq!(
            libc::syscall(libc::SYS_perf_event_open, 0usize, 0, -1, -1, 0),
            -1
        );
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EPERM)
        );
    }
}

/// Lowers the soft fd limit to `n`, then opens `/dev/null` until the process has no fd
/// left; returns them.
fn use_every_fd(n: u64) -> Vec<std::fs::File> {
    fd_limit::set_soft_fd_limit(n);
    let mut files = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => files.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
                return files;
            }
        }
    }
}

fn reason_line(why: Reason) -> String {
    format!("n/a: {why}")
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    // What the probe at init will find, and the reason expected for the workers.
    let (guard, why, fds) = match role.as_str() {
        // `injected-<errno>`: every perf group fails with that errno.
        r if r.starts_with("injected-") => {
            yieldprof::__private::fail_perf_groups(r["injected-".len()..].parse().unwrap());
            let guard = yieldprof::Options::from_env().name("perf").init();
            let why = capabilities()
                .get(CounterEvent::ContextSwitches)
                .reason()
                .unwrap();
            (guard, why, Vec::new())
        }
        "seccomp" => {
            deny_perf_event_open();
            let guard = yieldprof::Options::from_env().name("perf").init();
            (guard, Reason::Denied { errno: libc::EPERM }, Vec::new())
        }
        "emfile-before" => {
            let fds = use_every_fd(64);
            let guard = yieldprof::Options::from_env().name("perf").init();
            (
                guard,
                Reason::FdLimit {
                    errno: libc::EMFILE,
                },
                fds,
            )
        }
        "emfile-after" => {
            // Perf works at init (the main thread holds its group); then the host uses
            // up its fds and starts the workers.
            let guard = yieldprof::Options::from_env().name("perf").init();
            assert!(capabilities()
                .get(CounterEvent::ContextSwitches)
                .is_available());
            let fds = use_every_fd(64);
            (
                guard,
                Reason::FdLimit {
                    errno: libc::EMFILE,
                },
                fds,
            )
        }
        other => panic!("unknown role {other}"),
    };
    let report = workload();
    check_fallback(&report, why);
    // The host gets its fds back before the files are written.
    drop(fds);
    let caps = capabilities();
    if role != "emfile-after" {
        assert_eq!(
            caps.get(CounterEvent::ContextSwitches),
            Availability::Unavailable(why)
        );
        assert!(report.summary().contains(&reason_line(why)));
    }
    drop(guard);
    println!("host done; reason: {why}");
    std::process::exit(0);
}

fn host(role: &str, dir: &Path, extra: &[(&str, &str)]) -> String {
    let mut env = vec![
        ("YIELDPROF_OUT", dir.to_str().unwrap()),
        ("YIELDPROF_METRIC", "calls"),
        ("YIELDPROF_COUNTERS_EVERY", "1"),
    ];
    env.extend_from_slice(extra);
    let exit = run(role, &env);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    assert!(exit.stdout.contains("host done"), "{exit:?}");
    let folded = std::fs::read_to_string(dir.join("perf.folded")).unwrap();
    assert_eq!(folded_total(&folded, "nap;[sleep]"), THREADS * EPISODES);
    std::fs::read_to_string(dir.join("perf.txt")).unwrap()
}

/// The `.txt` and `.json` state `why` for the perf software events.
fn assert_reported(dir: &Path, txt: &str, why: Reason) {
    let line = format!(
        "  {:<22} {:<10} {}",
        "context-switches",
        "perf sw",
        reason_line(why)
    );
    assert!(txt.contains(&line), "{line:?} not in:\n{txt}");
    assert!(
        txt.contains("on/off-CPU split: switches seen on sampled episodes (getrusage)"),
        "{txt}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("perf.json")).unwrap()).unwrap();
    let events = json["capabilities"]["events"].as_array().unwrap();
    let cs = events
        .iter()
        .find(|e| e["event"] == "context-switches")
        .unwrap();
    assert_eq!(cs["available"], false);
    assert_eq!(cs["reason"], why.to_string());
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

#[test]
fn enoent_for_every_event_falls_back_to_getrusage_and_says_so() {
    let dir = temp_dir("perf-enoent");
    let txt = host("injected-2", &dir, &[]);
    // ENOENT on a software event: the kernel lacks it; on a hardware one: no PMU.
    let why = Reason::NotSupported {
        errno: libc::ENOENT,
    };
    assert_reported(&dir, &txt, why);
    let hw = format!(
        "  {:<22} {:<10} {}",
        "cache-misses",
        "perf hw",
        reason_line(Reason::NoPmu {
            errno: libc::ENOENT
        })
    );
    assert!(txt.contains(&hw), "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eacces_from_paranoid_falls_back_to_getrusage_and_says_so() {
    let dir = temp_dir("perf-eacces");
    let txt = host("injected-13", &dir, &[]);
    let why = match paranoid() {
        Some(level) if level >= 2 => Reason::Paranoid {
            level,
            errno: libc::EACCES,
        },
        _ => Reason::Denied {
            errno: libc::EACCES,
        },
    };
    assert_reported(&dir, &txt, why);
    if paranoid() == Some(2) {
        assert!(
            txt.contains("perf_event_paranoid"),
            "the hint names the setting:\n{txt}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eperm_from_a_real_seccomp_filter_falls_back_to_getrusage_and_says_so() {
    let dir = temp_dir("perf-seccomp");
    let txt = host("seccomp", &dir, &[]);
    let why = Reason::Denied { errno: libc::EPERM };
    assert_eq!(
        why.to_string(),
        "blocked by seccomp or a security module (EPERM)"
    );
    assert_reported(&dir, &txt, why);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn emfile_before_profiling_starts_falls_back_to_getrusage_and_says_so() {
    let dir = temp_dir("perf-emfile-before");
    let txt = host("emfile-before", &dir, &[]);
    assert_reported(
        &dir,
        &txt,
        Reason::FdLimit {
            errno: libc::EMFILE,
        },
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn emfile_later_moves_new_threads_to_getrusage_and_the_host_runs_on() {
    let dir = temp_dir("perf-emfile-after");
    let txt = host("emfile-after", &dir, &[]);
    // perf was available at the probe: the table says so, the workers say getrusage.
    assert!(
        txt.contains(&format!(
            "  {:<22} {:<10} available",
            "context-switches", "perf sw"
        )),
        "{txt}"
    );
    let getrusage_rows = txt
        .lines()
        .filter(|l| l.starts_with("  thread-") && l.contains(" getrusage "))
        .count();
    assert_eq!(getrusage_rows as u64, THREADS, "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}
