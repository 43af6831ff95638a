//! `init()` and the [`Guard`] that writes the files when it drops. A failure is
//! reported on stderr and returned; it never panics and never changes the host's exit
//! code.

use crate::config;
use crate::counters;
use crate::output::files::{size_and_time, write_profile, WriteError};
use crate::output::flush::Registration;
use crate::output::options::{name_here, options_here, Options};
use crate::output::snapshots::{Snapshotter, Writer};
use crate::record::thread::snapshot;
use std::path::PathBuf;
use std::time::Duration;

/// Starts profiling with options from the environment; keep the guard alive for the
/// life of the program.
///
/// ```no_run
/// let _guard = yieldprof::init();
/// // ... the program ...
/// drop(_guard); // target/yieldprof/<exe>.<pid>.{folded,svg,split.svg,json,txt,pb.gz,trace.json} are written here
/// ```
pub fn init() -> Guard {
    Options::from_env().init()
}

/// Writes the profile when dropped. See [`init`].
///
/// When it does not drop: `std::process::exit` and `abort()` skip destructors; call
/// [`flush`](crate::flush) first or opt in to [`Options::write_at_exit`]. A panic
/// unwinds through it, so the files are written then too (not with `panic = "abort"`).
///
/// Across `fork()`: the child's copy of the guard writes nothing when it drops, so the
/// parent's files are never overwritten or doubled; a guard the child makes with
/// [`init`] writes `<name>.<child pid>.*` with what the child recorded since the fork.
#[must_use = "the profile is written when the guard drops; bind it with `let _guard = ...`"]
#[derive(Debug)]
pub struct Guard {
    pub(crate) opts: Options,
    pub(crate) snapshots: Option<Snapshotter>,
    #[cfg(feature = "http")]
    pub(crate) live: Option<crate::output::http::LiveView>,
    // Dropped after `drop` has written: `flush()` and the exit hook see the guard
    // until its files are out.
    pub(crate) registration: Registration,
}

impl Guard {
    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Writes the files now from a fresh snapshot; returns the paths written. In a
    /// forked child they are `<name>.<child pid>.*`.
    pub fn write(&self) -> Result<Vec<PathBuf>, WriteError> {
        let opts = options_here(&self.opts, self.registration.pid);
        write_profile(&snapshot(), &opts)
    }
}

#[cfg(feature = "http")]
impl Guard {
    /// Where the live view listens (with the port the system chose for port 0); `None`
    /// when it is off or could not start. Needs the `http` feature.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("yp-doc-http-{}", std::process::id()));
    /// let guard = yieldprof::Options::from_env()
    ///     .http("127.0.0.1:0".parse().unwrap())
    ///     .out_dir(&dir)
    ///     .init();
    /// let addr = guard.http_addr().unwrap();
    /// assert!(addr.ip().is_loopback() && addr.port() != 0);
    /// # drop(guard);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn http_addr(&self) -> Option<std::net::SocketAddr> {
        self.live.as_ref().map(|l| l.addr)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.registration.is_own() {
            // A forked child's copy: the parent writes these files, and the snapshot
            // thread is the parent's (joining it here would wait forever).
            std::mem::forget(self.snapshots.take());
            #[cfg(feature = "http")]
            std::mem::forget(self.live.take());
            return;
        }
        // The last snapshot first: it ends where the whole-run files begin to be written.
        drop(self.snapshots.take());
        let started = std::time::Instant::now();
        match self.write() {
            Ok(paths) if paths.is_empty() => {
                eprintln!("yieldprof: recording is off (YIELDPROF=0) and nothing was recorded: no files written");
            }
            Ok(paths) => {
                let names: Vec<String> = paths
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                eprintln!(
                    "yieldprof: wrote {} in {} ({})",
                    names.join(", "),
                    self.opts.out_dir.display(),
                    size_and_time(&paths, started.elapsed())
                );
            }
            Err(e) => eprintln!("yieldprof: {e}; the profile was not saved"),
        }
    }
}

impl Options {
    /// Applies the options; the returned guard writes the files when dropped (also
    /// while unwinding from a panic). In a child made with `fork()` the name becomes
    /// `<name>.<pid>` (see [`Guard`]).
    pub fn init(mut self) -> Guard {
        // Before any thread records: a child forked from here on must know it is one.
        crate::base::fork::install_handlers();
        self.name = name_here(self.name);
        config::set_max_nodes(self.max_nodes);
        config::set_timeline(self.timeline);
        counters::set_sampling(self.counters);
        counters::set_fd_budget(self.fd_budget);
        counters::set_episodes_before_open(self.counters_after);
        counters::want_rseq(self.rseq);
        // The clock's mode (a read of /proc/cpuinfo) is chosen here rather than by the
        // first thread to record, which a pool's workers would each pay at their start.
        crate::base::clock::now();
        // The probe (~0.2–0.5 ms here) runs once per process: at the first thread's
        // registration it delays every thread that registers meanwhile, which is how a
        // pool starts.
        if self.counters != config::CounterSampling::Off {
            counters::probe_now();
        }
        // The calling thread is not registered here: a thread shows in the profile
        // once it records something, so a `main` that only spawns and joins does not
        // fill a third of the graph with `[work]`.
        let snapshots = self
            .snapshot_every
            .and_then(|every| Snapshotter::start(&self, every));
        #[cfg(not(feature = "http"))]
        if let Some(addr) = self.http {
            eprintln!(
                "yieldprof: no live view on {addr}: this build has no `http` feature \
                 (yieldprof = {{ features = [\"http\"] }})"
            );
        }
        Guard {
            registration: Registration::new(&self),
            #[cfg(feature = "http")]
            live: crate::output::http::LiveView::start(&self),
            opts: self,
            snapshots,
        }
    }
}

impl Guard {
    /// Starts continuous mode on a running guard (see [`Options::snapshot_every`]):
    /// `let _guard = yieldprof::init().snapshot_every(Duration::from_secs(10));`.
    /// Calling it again restarts the timer with the new interval.
    ///
    /// ```
    /// use std::time::Duration;
    /// let dir = std::env::temp_dir().join(format!("yp-doc-snap-{}", std::process::id()));
    /// let guard = yieldprof::Options::from_env()
    ///     .out_dir(&dir)
    ///     .name("doc")
    ///     .init()
    ///     .snapshot_every(Duration::from_secs(3600));
    /// yieldprof::wait::yield_now();
    /// drop(guard); // writes the last snapshot, then the whole-run files
    /// let names: Vec<String> = std::fs::read_dir(dir.join("snapshots"))
    ///     .unwrap()
    ///     .map(|e| e.unwrap().file_name().into_string().unwrap())
    ///     .collect();
    /// assert_eq!(names.len(), 2, "{names:?}"); // one .folded and one .pb.gz
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn snapshot_every(mut self, every: Duration) -> Guard {
        // The running writer takes its last snapshot and hands its state on, so the
        // next delta starts where that one ended: nothing lost or counted twice.
        let writer = self.snapshots.take().and_then(Snapshotter::finish);
        self.opts.snapshot_every = Some(every);
        let writer = writer.unwrap_or_else(|| Writer::new(self.opts.clone()));
        self.snapshots = Snapshotter::resume(writer, every);
        self
    }
}
