//! A real run for the command to read: annotated wait sites recorded on the test's own
//! thread and written by the library, as a profiled program writes them.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A wait site that yields `yields` times per episode.
#[yieldprof::instrument_wait]
pub fn poll(yields: u32) {
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

/// A wait site that spins `spins` times per episode.
#[yieldprof::instrument_wait]
pub fn spin(spins: u32) {
    for _ in 0..spins {
        std::hint::spin_loop();
    }
}

/// An empty folder of this test's own.
pub fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yieldprof-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Records `episodes` episodes of `poll(yields)` and one of `spin(100)` on a thread
/// named `recorder`, writes them as `<dir>/<name>.*`, and returns the run's stem
/// `<dir>/<name>`.
pub fn record(dir: &Path, name: &str, episodes: u32, yields: u32) -> PathBuf {
    // A fresh thread per run: other tests record beside it, and a session over sites
    // that ran before on the same thread would estimate their longest episode.
    let recorder = std::thread::Builder::new().name("recorder".into());
    let run = recorder.spawn(move || {
        let session = yieldprof::Session::this_thread();
        for _ in 0..episodes {
            poll(yields);
        }
        spin(100);
        session.finish()
    });
    let profile = run.unwrap().join().expect("the run");
    profile.write(dir, name).expect("the run's files");
    dir.join(name)
}

/// The `yieldprof` command's exit code, standard output and standard error.
pub fn yieldprof(args: &[&dyn AsRef<OsStr>]) -> (i32, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_yieldprof"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("the yieldprof binary runs");
    (
        out.status.code().expect("an exit code, not a signal"),
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8(out.stderr).expect("UTF-8 errors"),
    )
}
