//! [`Options`]: what `init` writes and where, from the environment and the builders.

use crate::config::{self, CounterSampling, Metric};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The default of [`Options::trace_episodes`]: at ~190 bytes an episode (measured),
/// about 4.7 MB, so a process's files stay within 10 MB however many threads kept
/// timelines (a test binary's hundreds of threads once wrote a 217 MB trace). Kept here: a build
/// without the `enabled` feature has the same options and no trace writer.
pub(crate) const TRACE_EPISODES: usize = 24_576;

/// What [`init`](crate::init) writes and where. Built from the environment, then adjusted.
///
/// Every variable is read once, the first time anything asks. A value that cannot be
/// used is reported in one stderr line naming the variable, the value and what is used
/// instead; an empty value counts as unset. On/off values take `1`/`0`, `on`/`off`,
/// `true`/`false` or `yes`/`no`, in any case.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `YIELDPROF` | off turns recording off at run time (one relaxed load per probe) | on |
/// | `YIELDPROF_OUT` | output folder | `target/yieldprof` |
/// | `YIELDPROF_METRIC` | `wall` (ns), `calls` or `switches` (context switches): the value of the folded stacks and flame graph | `wall` |
/// | `YIELDPROF_VIEWS` | extra folded files, one per metric: `calls,switches` writes `<name>.calls.folded` and `<name>.switches.folded` | none |
/// | `YIELDPROF_MAX_NODES` | calling-context nodes per thread, 16 to 262 144, allocated as stacks appear; past it entries fold into `[overflow]` | 4096 |
/// | `YIELDPROF_TIMELINE` | episodes each thread keeps for the timeline (`<name>.trace.json`, Chrome trace events), 0 to 1 048 576; the oldest give way; 0: no timeline | 4096 |
/// | `YIELDPROF_REPORT_THREADS` | threads a written report, a snapshot or the live view lists one by one, those that waited longest; the rest merged into one `[N other threads]` entry (`Options::report_threads`); `all`: every one | 256 |
/// | `YIELDPROF_COUNTERS_EVERY` | `auto`: read counters while they cost ≤ 2 % of wait time; `N`: 1 of N wait episodes; off (or `0`): none | `auto` |
/// | `YIELDPROF_FD_BUDGET` | perf-event fds for the whole process (≤ ¼ of `ulimit -n`); threads past it use getrusage | 512 |
/// | `YIELDPROF_SNAPSHOT_EVERY` | seconds between delta snapshots (continuous mode), 0.01 to 31 536 000 (a year); off: none | off |
/// | `YIELDPROF_SNAPSHOT_KEEP` | snapshots kept in `<out>/snapshots/`, 1 or more | 60 |
/// | `YIELDPROF_WRITE_AT_EXIT` | on: also write the files when the process calls `exit()` (`Options::write_at_exit`) | off |
/// | `YIELDPROF_RSEQ` | on: threads see their switches through rseq instead of a perf event (`Options::rseq`) | off |
/// | `YIELDPROF_WATCH_SAMPLE` | watched accesses: `1` tracks every one, `N` one in N after each thread's first 10 000 | 64 |
/// | `YIELDPROF_WATCHPOINTS` | plain data (`sharing::watch_plain`): hardware watchpoint hits per thread and second, 1 to 5000; off: no watchpoints | 400 |
/// | `YIELDPROF_SELF_CHECK` | on: a report that contradicts itself (`report::json::Document::inconsistencies`) is not written; the write returns the contradictions as its error (CI sets it for the tests) | off |
/// | `YIELDPROF_MACHINE` | a saved probe (`yieldprof probe --save`, or `--example probe -- --save`) whose costs reports on the same host use and cite | `<out>/machine.json` |
/// | `YIELDPROF_HTTP` | an address and port, e.g. `127.0.0.1:6060`: serve the live view there (feature `http`; `Options::http`) | off |
/// | `YIELDPROF_HTTP_ANY` | on: let the live view listen on a non-loopback address (`Options::http_any`) | off |
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
    /// File stem: `<name>.folded`, `<name>.svg`, `<name>.txt`. Default `<exe>.<pid>`:
    /// each process its own files; `yieldprof merge DIR` sums a folder of them.
    pub name: String,
    /// Value carried by the folded stacks and the flame graph.
    pub metric: Metric,
    /// Cap on calling-context nodes per thread; past it entries fold into `[overflow]`.
    pub max_nodes: u32,
    /// Episodes each thread keeps for the timeline ([`Options::timeline`]).
    pub timeline: u32,
    /// Extra folded files, one per metric: `<name>.<metric>.folded`.
    pub views: Vec<Metric>,
    /// Most episodes `<name>.trace.json` holds over all threads ([`Options::trace_episodes`]).
    pub trace_episodes: usize,
    /// Threads the written report lists one by one ([`Options::report_threads`]);
    /// `None`: all of them.
    pub report_threads: Option<usize>,
    /// Which wait episodes have their counters read (context switches, perf events).
    pub counters: CounterSampling,
    /// Most perf-event fds the process may hold; threads past it use getrusage only.
    pub fd_budget: usize,
    /// Waits (episodes and timed calls) a new thread reads on getrusage before its
    /// perf counters open (`Auto` sampling only; 0: at its first episode). Default 16.
    pub counters_after: u32,
    /// Continuous mode: a delta snapshot every so often ([`Options::snapshot_every`]).
    pub snapshot_every: Option<std::time::Duration>,
    /// Snapshots kept ([`Options::keep_snapshots`]).
    pub keep_snapshots: usize,
    /// Also write when the process calls `exit()` ([`Options::write_at_exit`]).
    pub write_at_exit: bool,
    /// Switches seen through rseq, no perf event per thread ([`Options::rseq`]).
    pub rseq: bool,
    /// Where the live view listens ([`Options::http`]); `None`: no live view.
    pub http: Option<SocketAddr>,
    /// Whether the live view may listen on a non-loopback address ([`Options::http_any`]).
    pub http_any: bool,
}

impl Options {
    /// Defaults, overridden by the `YIELDPROF_*` variables. A bad value is reported on
    /// stderr and the default kept.
    #[cfg(feature = "enabled")]
    pub fn from_env() -> Self {
        let env = config::settings();
        Options {
            out_dir: env.out_dir.clone(),
            name: default_name(),
            metric: env.metric,
            max_nodes: env.max_nodes,
            timeline: env.timeline,
            views: env.views.clone(),
            trace_episodes: TRACE_EPISODES,
            report_threads: env.report_threads,
            counters: env.counters,
            fd_budget: env.fd_budget,
            counters_after: config::DEFAULT_COUNTERS_AFTER,
            snapshot_every: env.snapshot_every,
            keep_snapshots: env.keep_snapshots,
            write_at_exit: env.write_at_exit,
            rseq: env.rseq,
            http: env.http,
            http_any: env.http_any,
        }
    }

    /// The defaults: a build without the `enabled` feature reads no variable.
    #[cfg(not(feature = "enabled"))]
    pub fn from_env() -> Self {
        Options {
            out_dir: PathBuf::from(config::DEFAULT_OUT_DIR),
            name: default_name(),
            metric: Metric::default(),
            max_nodes: config::DEFAULT_MAX_NODES,
            timeline: config::DEFAULT_TIMELINE,
            views: Vec::new(),
            trace_episodes: TRACE_EPISODES,
            report_threads: Some(config::DEFAULT_REPORT_THREADS),
            counters: CounterSampling::default(),
            fd_budget: config::DEFAULT_FD_BUDGET,
            counters_after: config::DEFAULT_COUNTERS_AFTER,
            snapshot_every: None,
            keep_snapshots: config::DEFAULT_KEEP_SNAPSHOTS,
            write_at_exit: false,
            rseq: false,
            http: None,
            http_any: false,
        }
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

    /// Sets how many of its last wait episodes each thread keeps for the timeline (for
    /// threads that start recording afterwards): start, duration, kinds of wait, calls
    /// and context switches of each, written as `<name>.trace.json`
    /// ([`Profile::write_trace`](crate::Profile::write_trace)). 0 keeps none; at most
    /// 1 048 576; default 4096, `YIELDPROF_TIMELINE` from the environment. A thread's
    /// ring takes 32 B per episode, reserved when it first records.
    pub fn timeline(mut self, episodes: u32) -> Self {
        self.timeline = episodes;
        self
    }

    /// Sets the most episodes `<name>.trace.json` holds over all threads: each thread
    /// writes its newest, an even share (or all its own where it kept fewer), and the
    /// file says how many were cut (`episodes_cut`). Default 24 576, about 4.7 MB, so a
    /// process with hundreds of threads still writes ≤ 10 MB of reports; the timeline
    /// each thread keeps in memory is [`Options::timeline`].
    pub fn trace_episodes(mut self, episodes: usize) -> Self {
        self.trace_episodes = episodes;
        self
    }

    /// Sets how many threads the written files list one by one: those that waited
    /// longest (then lived longest), in the order they started; the others are
    /// merged into one `[N other threads]` thread, last, whose figures are their sums
    /// (`threads` in its JSON entry says how many), and their timelines are left out
    /// of the trace (counted in its `episodes_cut`). Totals and sites are unchanged.
    /// Snapshots (continuous mode) and the live view list threads the same way.
    /// `None` lists every thread; default 256 (~0.6 MB of JSON), so a test binary
    /// that ran thousands of short threads writes ≤ 10 MB in all;
    /// `YIELDPROF_REPORT_THREADS` (`all` or a number) from the environment.
    /// [`Profile::threads`](crate::Profile::threads) always has every thread.
    pub fn report_threads(mut self, threads: Option<usize>) -> Self {
        self.report_threads = threads.map(|n| n.max(1));
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

    /// Sets how many waits (episodes and timed calls) a thread registered afterwards reads on getrusage
    /// (exact switches, no fd) before it opens its perf counters, under `Auto`
    /// sampling: a short-lived thread then never pays their set-up (0: open at once).
    pub fn counters_after(mut self, episodes: u32) -> Self {
        self.counters_after = episodes;
        self
    }

    /// Threads registered afterwards see their switches through rseq (one load, the
    /// count and split from getrusage after each) instead of a perf event per thread,
    /// under `Auto` sampling: a switching episode costs about half (docs/cost.md,
    /// "Where the +2.3 µs went"), off-CPU and queued time are read now and then and
    /// apportioned between reads (labelled estimated), and `[profiler]` shows less of
    /// what the profiler costs (~70 % on the build VM). `YIELDPROF_RSEQ=on`.
    pub fn rseq(mut self, on: bool) -> Self {
        self.rseq = on;
        self
    }
}

impl Options {
    /// Also writes the files when the process calls `exit()` (`std::process::exit`
    /// included) while the guard is alive; off by default, `YIELDPROF_WRITE_AT_EXIT=1`
    /// from the environment. A guard that drops first writes as usual and the hook
    /// then has nothing to do.
    ///
    /// ```no_run
    /// let _guard = yieldprof::Options::from_env().write_at_exit(true).init();
    /// // ... the program ...
    /// std::process::exit(3); // the files are written, then the process exits with 3
    /// ```
    pub fn write_at_exit(mut self, on: bool) -> Self {
        self.write_at_exit = on;
        self
    }
}

impl Options {
    /// Serves the live view on `addr` while the guard lives: the current flame graph,
    /// summary and findings at `/` (reloading every 5 s), and pprof's
    /// `/debug/pprof/profile?seconds=N` (what was recorded in the next N seconds, for
    /// `go tool pprof http://127.0.0.1:6060`). Port 0 takes a free port
    /// (`Guard::http_addr` says which). Only loopback addresses
    /// unless [`http_any`](Options::http_any). Needs the `http` feature (without it, a
    /// note on stderr and no live view); `YIELDPROF_HTTP=127.0.0.1:6060` from the
    /// environment.
    ///
    /// ```no_run
    /// let _guard = yieldprof::Options::from_env()
    ///     .http("127.0.0.1:6060".parse().unwrap())
    ///     .init();
    /// // open http://127.0.0.1:6060/ while the program runs
    /// ```
    pub fn http(mut self, addr: SocketAddr) -> Self {
        self.http = Some(addr);
        self
    }

    /// Lets the live view listen on any address, e.g. `0.0.0.0:6060`, not only loopback:
    /// the page shows the command line, thread names and source paths to whoever can
    /// connect, so only on a trusted network. `YIELDPROF_HTTP_ANY=1` from the environment.
    pub fn http_any(mut self, allow: bool) -> Self {
        self.http_any = allow;
        self
    }
}

impl Options {
    /// Continuous mode: also writes a snapshot (folded and pprof) every `every`, from
    /// a background thread named `yieldprof-snapshots`, and a last one when the guard
    /// drops. Each holds only what was recorded since the previous one (the first:
    /// everything before it), so a backend that sums them gets the whole run.
    ///
    /// Files: [`snapshot_dir`](Options::snapshot_dir)`/<name>.<UTC time>-<n>.{folded,pb.gz}`,
    /// e.g. `svc.20261202T151023.120Z-000007.pb.gz`, in the order taken; only the
    /// newest [`keep_snapshots`](Options::keep_snapshots) are kept. A failed write is
    /// reported on stderr (once until the error changes), never stops the program, and
    /// the next snapshot covers the missed interval. Intervals under 10 ms are raised to
    /// 10 ms, and over a year lowered to a year. `YIELDPROF_SNAPSHOT_EVERY` (seconds)
    /// sets it from the environment.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let _guard = yieldprof::Options::from_env()
    ///     .name("svc")
    ///     .snapshot_every(Duration::from_secs(10))
    ///     .keep_snapshots(360) // an hour
    ///     .init();
    /// // target/yieldprof/snapshots/svc.<time>-<n>.{folded,pb.gz}, one pair per 10 s
    /// ```
    pub fn snapshot_every(mut self, every: Duration) -> Self {
        self.snapshot_every = Some(every);
        self
    }

    /// How many snapshots to keep (each is a `.folded` and a `.pb.gz`); older ones
    /// are deleted. At least 1; default 60; `YIELDPROF_SNAPSHOT_KEEP` from the
    /// environment.
    pub fn keep_snapshots(mut self, keep: usize) -> Self {
        self.keep_snapshots = keep.max(1);
        self
    }

    /// The folder snapshots go to: `<out_dir>/snapshots`.
    ///
    /// ```
    /// let opts = yieldprof::Options::from_env().out_dir("/tmp/p");
    /// assert_eq!(opts.snapshot_dir(), std::path::Path::new("/tmp/p/snapshots"));
    /// ```
    pub fn snapshot_dir(&self) -> PathBuf {
        self.out_dir.join("snapshots")
    }
}

/// The executable's file stem and the process id, e.g. `spsc.4242` for
/// `target/release/examples/spsc`: unique per process, so the runs of one program into
/// one folder (a test suite's binaries, its doctests, all named `rust_out`) never
/// overwrite each other.
fn default_name() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "yieldprof".to_string());
    format!("{exe}.{}", std::process::id())
}

#[cfg(feature = "enabled")]
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

#[cfg(feature = "enabled")]
/// The name a guard created now writes under.
pub(crate) fn name_here(name: String) -> String {
    if crate::base::fork::is_child() {
        format!("{name}.{}", std::process::id())
    } else {
        name
    }
}
