//! `init()`, its options, and the files written at shutdown.
//!
//! Every file is written to a temporary name and renamed into place, so a reader (or
//! a crash mid-write) never sees a truncated profile. A failure is reported on stderr
//! and returned; it never panics and never changes the host's exit code.

use crate::config;
use crate::counters::{self, CounterSampling};
use crate::model::profile::Profile;
use crate::output::flamegraph;
use crate::output::flush::Registration;
use crate::output::fold::Metric;
use crate::output::snapshots::{self, Snapshotter};
use crate::record::thread::snapshot;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What [`init`] writes and where. Built from the environment, then adjusted.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `YIELDPROF` | `0` turns recording off | on |
/// | `YIELDPROF_OUT` | output folder | `target/yieldprof` |
/// | `YIELDPROF_METRIC` | `wall`, `calls` or `switches`: the value in `.folded`/`.svg` | `wall` |
/// | `YIELDPROF_VIEWS` | extra `<name>.<metric>.folded` files, e.g. `calls,switches` | none |
/// | `YIELDPROF_MAX_NODES` | cap on calling-context nodes per thread | 4096 |
/// | `YIELDPROF_COUNTERS_EVERY` | `auto`, `off` or `N`: read counters on 1 of N wait episodes | `auto` |
/// | `YIELDPROF_FD_BUDGET` | perf-event fds for the whole process; past it, getrusage | 512 |
/// | `YIELDPROF_SNAPSHOT_EVERY` | seconds between delta snapshots (continuous mode) | off |
/// | `YIELDPROF_SNAPSHOT_KEEP` | snapshots kept in `<out_dir>/snapshots` | 60 |
/// | `YIELDPROF_WRITE_AT_EXIT` | `1`: also write when the process calls `exit()` ([`Options::write_at_exit`]) | off |
///
/// ```no_run
/// let _guard = yieldprof::Options::from_env()
///     .name("my-service")
///     .out_dir("/tmp/profiles")
///     .init();
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Folder the files go into.
    pub out_dir: PathBuf,
    /// File stem: `<name>.folded`, `<name>.svg`, `<name>.txt`.
    pub name: String,
    /// Value carried by the folded stacks and the flame graph.
    pub metric: Metric,
    /// Cap on calling-context nodes per thread; past it entries fold into `[overflow]`.
    pub max_nodes: u32,
    /// Extra folded files, one per metric: `<name>.<metric>.folded`.
    pub views: Vec<Metric>,
    /// Which wait episodes have their counters read (context switches, perf events).
    pub counters: CounterSampling,
    /// Most perf-event fds the process may hold; threads past it use getrusage only.
    pub fd_budget: usize,
    /// Continuous mode: a delta snapshot every so often ([`Options::snapshot_every`]).
    pub snapshot_every: Option<std::time::Duration>,
    /// Snapshots kept ([`Options::keep_snapshots`]).
    pub keep_snapshots: usize,
    /// Also write when the process calls `exit()` ([`Options::write_at_exit`]).
    pub write_at_exit: bool,
}

impl Options {
    /// Defaults, overridden by the `YIELDPROF_*` variables. A bad value is reported on
    /// stderr and the default kept.
    pub fn from_env() -> Self {
        let mut o = Options {
            out_dir: PathBuf::from("target/yieldprof"),
            name: default_name(),
            metric: Metric::Wall,
            max_nodes: config::DEFAULT_MAX_NODES,
            views: Vec::new(),
            counters: CounterSampling::from_env(),
            fd_budget: counters::fd_budget_from_env(),
            snapshot_every: None,
            keep_snapshots: snapshots::DEFAULT_KEEP_SNAPSHOTS,
            write_at_exit: matches!(
                std::env::var("YIELDPROF_WRITE_AT_EXIT").as_deref(),
                Ok("1" | "on" | "true" | "yes")
            ),
        };
        snapshots::from_env(&mut o);
        if let Some(dir) = std::env::var_os("YIELDPROF_OUT").filter(|d| !d.is_empty()) {
            o.out_dir = dir.into();
        }
        if let Ok(m) = std::env::var("YIELDPROF_METRIC") {
            match Metric::parse(&m) {
                Some(m) => o.metric = m,
                None => {
                    eprintln!("yieldprof: YIELDPROF_METRIC={m:?} is not wall, calls or switches; using wall")
                }
            }
        }
        if let Ok(views) = std::env::var("YIELDPROF_VIEWS") {
            for v in views.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                match Metric::parse(v) {
                    Some(m) => o.views.push(m),
                    None => eprintln!(
                        "yieldprof: YIELDPROF_VIEWS has {v:?}, not wall, calls or switches"
                    ),
                }
            }
        }
        if let Ok(n) = std::env::var("YIELDPROF_MAX_NODES") {
            match n.parse() {
                Ok(n) => o.max_nodes = n,
                Err(_) => eprintln!(
                    "yieldprof: YIELDPROF_MAX_NODES={n:?} is not a number; using {}",
                    o.max_nodes
                ),
            }
        }
        o
    }

    /// Sets the output folder.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = dir.into();
        self
    }

    /// Sets the file stem.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the metric of the folded stacks and flame graph.
    pub fn metric(mut self, metric: Metric) -> Self {
        self.metric = metric;
        self
    }

    /// Also writes `<name>.<metric>.folded` for `metric` (e.g. `calls`).
    pub fn view(mut self, metric: Metric) -> Self {
        self.views.push(metric);
        self
    }

    /// Sets the per-thread node cap (for threads that start recording afterwards).
    pub fn max_nodes(mut self, n: u32) -> Self {
        self.max_nodes = n;
        self
    }

    /// Sets which wait episodes have their counters read (for threads that start
    /// recording afterwards); see [`CounterSampling`].
    pub fn counters(mut self, sampling: CounterSampling) -> Self {
        self.counters = sampling;
        self
    }

    /// Sets the process-wide perf-event fd budget (capped at a quarter of the soft
    /// `RLIMIT_NOFILE`); threads that find it spent count with getrusage only.
    pub fn fd_budget(mut self, fds: usize) -> Self {
        self.fd_budget = fds;
        self
    }

    /// Applies the options; the returned guard writes the files when dropped (also
    /// while unwinding from a panic). In a child made with `fork()` the name becomes
    /// `<name>.<pid>` (see [`Guard`]).
    pub fn init(mut self) -> Guard {
        // Before any thread records: a child forked from here on must know it is one.
        crate::record::fork::install();
        self.name = name_here(self.name);
        config::set_max_nodes(self.max_nodes);
        counters::set_sampling(self.counters);
        counters::set_fd_budget(self.fd_budget);
        // The calling thread is not registered here: a thread shows in the profile
        // once it records something, so a `main` that only spawns and joins does not
        // fill a third of the graph with `[work]`.
        let snapshots = self
            .snapshot_every
            .and_then(|every| Snapshotter::start(&self, every));
        Guard {
            registration: Registration::new(&self),
            opts: self,
            snapshots,
        }
    }
}

/// The executable's file stem, e.g. `spsc` for `target/release/examples/spsc`.
fn default_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "yieldprof".to_string())
}

/// Starts profiling with options from the environment; keep the guard alive for the
/// life of the program.
///
/// ```no_run
/// let _guard = yieldprof::init();
/// // ... the program ...
/// drop(_guard); // target/yieldprof/<exe>.{folded,svg,split.svg,json,txt,pb.gz} are written here
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
    // Dropped after `drop` has written: `flush()` and the exit hook see the guard
    // until its files are out.
    pub(crate) registration: Registration,
}

/// A file that could not be written.
#[derive(Debug)]
pub struct WriteError {
    /// The file (or folder) concerned.
    pub path: PathBuf,
    /// What the OS said.
    pub source: io::Error,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Writes `path` through a temporary file in the same folder and a rename.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    let result = (|| {
        let mut w = io::BufWriter::new(std::fs::File::create(&tmp)?);
        fill(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
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

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.registration.is_own() {
            // A forked child's copy: the parent writes these files, and the snapshot
            // thread is the parent's (joining it here would wait forever).
            std::mem::forget(self.snapshots.take());
            return;
        }
        // The last snapshot first: it ends where the whole-run files begin to be written.
        drop(self.snapshots.take());
        match self.write() {
            Ok(paths) => {
                let names: Vec<String> = paths
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                eprintln!(
                    "yieldprof: wrote {} in {}",
                    names.join(", "),
                    self.opts.out_dir.display()
                );
            }
            Err(e) => eprintln!("yieldprof: {e}; the profile was not saved"),
        }
    }
}

/// Writes folded `lines`, one per line, to `path` (atomically).
pub(crate) fn write_folded(path: &Path, lines: &[String]) -> Result<(), WriteError> {
    write_atomic(path, |w| lines.iter().try_for_each(|l| writeln!(w, "{l}")))
}

/// Writes `<name>.folded`, `<name>.svg`, `<name>.split.svg`, `<name>.pb.gz` (pprof),
/// `<name>.txt` and the requested metric views for `profile`.
pub(crate) fn write_profile(profile: &Profile, opts: &Options) -> Result<Vec<PathBuf>, WriteError> {
    let dir = &opts.out_dir;
    std::fs::create_dir_all(dir).map_err(|source| WriteError {
        path: dir.clone(),
        source,
    })?;
    let path = |ext: &str| dir.join(format!("{}.{ext}", opts.name));
    let lines = profile.folded(opts.metric);
    let folded = path("folded");
    write_folded(&folded, &lines)?;
    let subtitle = format!(
        "{} (spin red, yield orange, sleep/park blue, work green, false sharing purple)",
        profile.headline()
    );
    let svg = path("svg");
    write_atomic(&svg, |w| {
        flamegraph::write_svg(
            &lines,
            opts.metric,
            &format!("yieldprof: {}", opts.name),
            Some(subtitle),
            w,
        )
    })?;
    let split = path("split.svg");
    write_atomic(&split, |w| {
        let title = format!("yieldprof: {} (wait | work)", opts.name);
        flamegraph::write_svg(
            &profile.folded_split(opts.metric),
            opts.metric,
            &title,
            None,
            w,
        )
    })?;
    let pb = path("pb.gz");
    write_atomic(&pb, |w| profile.write_pprof(w))?;
    let mut written = vec![folded, svg, split, pb];
    for &metric in &opts.views {
        let view = path(&format!("{}.folded", metric.name()));
        write_folded(&view, &profile.folded(metric))?;
        written.push(view);
    }
    let json = path("json");
    let doc = profile.json(&crate::analysis::costs::Costs::current());
    write_atomic(&json, |w| {
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)
    })?;
    written.push(json);
    let txt = path("txt");
    let summary = profile.summary();
    write_atomic(&txt, |w| w.write_all(summary.as_bytes()))?;
    written.push(txt);
    Ok(written)
}

/// `opts` as a guard created by process `pid` writes them from this process: under
/// `<name>.<pid>` when this is a forked child, so the parent's files stay its own.
pub(crate) fn options_here(opts: &Options, pid: u32) -> Options {
    let here = std::process::id();
    if pid == here {
        opts.clone()
    } else {
        opts.clone().name(format!("{}.{here}", opts.name))
    }
}

/// The name a guard created now writes under.
pub(crate) fn name_here(name: String) -> String {
    if crate::record::fork::is_child() {
        format!("{name}.{}", std::process::id())
    } else {
        name
    }
}

impl Profile {
    /// Writes `<dir>/<name>.{folded,svg,split.svg,json,txt,pb.gz}` for this report.
    pub fn write(&self, dir: impl Into<PathBuf>, name: &str) -> Result<Vec<PathBuf>, WriteError> {
        write_profile(self, &Options::from_env().out_dir(dir).name(name))
    }
}
