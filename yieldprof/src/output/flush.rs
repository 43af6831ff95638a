//! Writing the profile without dropping the guard: [`flush`], and the opt-in hook that
//! writes it when the process calls `exit()` ([`Options::write_at_exit`]).
//!
//! `std::process::exit` (and `libc::exit`) ends the process without unwinding, so the
//! guard returned by [`init`](crate::init) never drops and writes nothing. A program
//! that leaves that way can call [`flush`] first, or opt in to the hook, which runs
//! from `atexit` and writes every guard still alive in this process. `abort()`, a
//! fatal signal and `panic = "abort"` run neither: flush earlier, or use continuous
//! mode ([`Options::snapshot_every`]).

use crate::base::fork::{ForkMutex, ForkOnce, Locked};
use crate::output::files::{size_and_time, write_profile, WriteError};
use crate::output::options::{options_here, Options};
use crate::record::thread::snapshot;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A guard alive in some process: what [`flush`] and the exit hook write.
struct Active {
    id: u64,
    pid: u32,
    opts: Options,
}

fn active() -> Locked<Vec<Active>> {
    static ACTIVE: ForkMutex<Vec<Active>> = ForkMutex::new(Vec::new(), |_| ());
    ACTIVE.lock()
}

/// A guard's entry in the list of live guards; leaves it when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    /// The process that created the guard (a forked child inherits the guard).
    pub(crate) pid: u32,
}

impl Registration {
    pub(crate) fn new(opts: &Options) -> Registration {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Relaxed);
        let pid = std::process::id();
        active().push(Active {
            id,
            pid,
            opts: opts.clone(),
        });
        if opts.write_at_exit {
            static HOOK: ForkOnce<()> = ForkOnce::new();
            // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
            HOOK.get_or_init(|| unsafe {
                if libc::atexit(at_exit) != 0 {
                    eprintln!("yieldprof: atexit failed; the profile is written only when the guard drops");
                }
            });
        }
        Registration { id, pid }
    }

    /// Whether the guard was created by this process, not inherited through `fork()`.
    pub(crate) fn is_own(&self) -> bool {
        self.pid == std::process::id()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        active().retain(|a| a.id != self.id);
    }
}

/// Writes the files of every guard alive in this process now, from a fresh snapshot,
/// as each would when dropped; returns the paths written (none without a live guard).
/// Every guard is tried; the first failure is returned, and reported on stderr.
///
/// In a child made with `fork()` the inherited guard writes `<name>.<child pid>.*`
/// with what the child recorded since the fork (see [`init`](crate::init)).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("yp-doc-flush-{}", std::process::id()));
/// let guard = yieldprof::Options::from_env().out_dir(&dir).name("flushed").init();
/// yieldprof::wait::yield_now();
/// let paths = yieldprof::flush().unwrap();
/// assert!(paths.contains(&dir.join("flushed.folded")));
/// // `std::process::exit(0)` here would keep these files.
/// # drop(guard);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn flush() -> Result<Vec<PathBuf>, WriteError> {
    let targets: Vec<Options> = active()
        .iter()
        .map(|a| options_here(&a.opts, a.pid))
        .collect();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let profile = snapshot();
    let mut written = Vec::new();
    let mut first_error = None;
    for opts in &targets {
        match write_profile(&profile, opts) {
            Ok(paths) => written.extend(paths),
            Err(e) => {
                eprintln!("yieldprof: {e}; the profile was not saved");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(written),
    }
}

/// The exit hook: writes the guards of this process that opted in.
extern "C" fn at_exit() {
    // A panic must not cross into C; whatever happens, the exit goes on.
    let _ = std::panic::catch_unwind(|| {
        let targets: Vec<Options> = active()
            .iter()
            .filter(|a| a.opts.write_at_exit && a.pid == std::process::id())
            .map(|a| a.opts.clone())
            .collect();
        if targets.is_empty() {
            return;
        }
        let started = std::time::Instant::now();
        let profile = snapshot();
        for opts in &targets {
            match write_profile(&profile, opts) {
                Ok(paths) => eprintln!(
                    "yieldprof: wrote {} files, {}, in {} at exit",
                    paths.len(),
                    size_and_time(&paths, started.elapsed()),
                    opts.out_dir.display()
                ),
                Err(e) => eprintln!("yieldprof: {e}; the profile was not saved at exit"),
            }
        }
    });
}
