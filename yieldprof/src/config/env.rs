//! Every `YIELDPROF_*` variable, read once from the environment into [`Settings`].
//!
//! The table of variables is on [`Options`](crate::Options) and in
//! `docs/configuration.md`; a test keeps both in step with the names read here. A value that
//! cannot be used gets one line on stderr naming the variable, the value and what is
//! used instead; an empty value counts as unset.

use super::values::{parse_switch, CounterSampling, Metric};
use super::{
    DEFAULT_FD_BUDGET, DEFAULT_KEEP_SNAPSHOTS, DEFAULT_MAX_NODES, DEFAULT_OUT_DIR,
    DEFAULT_REPORT_THREADS, DEFAULT_TIMELINE,
};
use crate::base::fork::ForkOnce;
use crate::base::reentry::Inside;
use std::ffi::OsString;
use std::fmt::Display;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Fewest nodes a thread may be given: below it nearly every entry would land in
/// `[overflow]` (the root and the overflow node take two).
pub(crate) const MIN_NODES: u32 = 16;
/// Most nodes a thread may be given. A node is ~0.8 KiB and a thread allocates them
/// as distinct stacks appear, so this bounds one thread at ~210 MiB (slots ~2× the
/// nodes in count, each 40 B).
pub(crate) const MAX_NODES: u32 = 1 << 18;
/// Longest timeline a thread may keep. An episode takes 32 B, and a thread's ring is
/// allocated in full (zeroed pages, touched as it fills) when it first records, so
/// this bounds one thread at 32 MiB.
pub(crate) const MAX_TIMELINE: u32 = 1 << 20;
/// Shortest snapshot interval: each snapshot copies every thread's tree and writes,
/// and syncs, two files.
pub(crate) const MIN_SNAPSHOT_INTERVAL: Duration = Duration::from_millis(10);
/// Longest snapshot interval: a year, far below where `Instant + interval` overflows.
pub(crate) const MAX_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(365 * 86_400);
/// One watched access in this many is tracked, after each thread's warm-up: full
/// tracking doubles the coherence traffic of the watched lines (see
/// `docs/cost.md`).
pub(crate) const DEFAULT_WATCH_SAMPLING: u32 = 64;
/// Hardware watchpoint hits per thread and second on plain data (`watch_plain`): at
/// ~8 µs a hit on the build VM, 0.3 % of each watched thread's time.
pub(crate) const DEFAULT_WATCHPOINT_RATE: u32 = 400;
/// Most hits per thread and second: about what a thread's 4 breakpoints can take in
/// the shortest window (50 ms) with what its ring holds (`counters::MAX_BUDGET`).
pub(crate) const MAX_WATCHPOINT_RATE: u32 = 5000;

/// What the environment says, each variable parsed once; unset ones hold defaults.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) enabled: bool,
    pub(crate) out_dir: PathBuf,
    pub(crate) metric: Metric,
    pub(crate) views: Vec<Metric>,
    pub(crate) max_nodes: u32,
    /// Episodes each thread keeps for the timeline; 0: no timeline.
    pub(crate) timeline: u32,
    /// Threads a written report lists one by one; `None`: all of them.
    pub(crate) report_threads: Option<usize>,
    pub(crate) counters: CounterSampling,
    pub(crate) fd_budget: usize,
    pub(crate) snapshot_every: Option<Duration>,
    pub(crate) keep_snapshots: usize,
    pub(crate) write_at_exit: bool,
    pub(crate) rseq: bool,
    pub(crate) watch_sample: u32,
    /// Watchpoint hits per thread and second on plain data; `None`: no watchpoints.
    pub(crate) watchpoint_rate: Option<u32>,
    /// The saved probe file, when set apart from the output folder.
    pub(crate) machine: Option<PathBuf>,
    /// Refuse to write a report that contradicts itself (CI sets it for the tests).
    pub(crate) self_check: bool,
    /// Where the live view listens (feature `http`); `None`: nowhere.
    pub(crate) http: Option<SocketAddr>,
    /// Whether the live view may listen on a non-loopback address.
    pub(crate) http_any: bool,
}

/// The settings of this process, read from its environment the first time anything
/// asks (later changes to the environment are not seen).
pub(crate) fn settings() -> &'static Settings {
    static SETTINGS: ForkOnce<Settings> = ForkOnce::new();
    // Marked while it may be reading: a signal handler's entry then does not wait for
    // this first read to end (see `enabled`).
    let _inside = Inside::mark();
    SETTINGS
        .get_or_init(|| Settings::read(|name| std::env::var_os(name), |line| eprintln!("{line}")))
}

/// Reads variables through `var` and sends each complaint to `warn` as one line.
struct Reader<'a, W: FnMut(String)> {
    var: &'a dyn Fn(&str) -> Option<OsString>,
    warn: W,
}

/// What `parse_switch` accepts, for messages.
const SWITCH_WORDS: &str = "1/0, on/off, true/false or yes/no";

impl<W: FnMut(String)> Reader<'_, W> {
    /// The text of `name`; `None` when unset, empty, or not UTF-8 (reported).
    fn text(&mut self, name: &str, instead: &str) -> Option<String> {
        let raw = (self.var)(name)?;
        match raw.into_string() {
            Ok(s) if s.trim().is_empty() => None,
            Ok(s) => Some(s),
            Err(raw) => {
                self.complain(name, &raw.to_string_lossy(), "is not valid UTF-8", instead);
                None
            }
        }
    }

    fn complain(&mut self, name: &str, value: &str, problem: &str, instead: &str) {
        (self.warn)(format!(
            "yieldprof: {name}={value:?} {problem}; using {instead}"
        ));
    }

    /// `name` as `parse` reads it; `default` (shown as `default_word`) when unset or
    /// when `parse` finds no `expected` value in it.
    fn parsed<T>(
        &mut self,
        name: &str,
        (default, default_word): (T, &str),
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> T {
        let Some(text) = self.text(name, default_word) else {
            return default;
        };
        parse(&text).unwrap_or_else(|| {
            self.complain(name, &text, &format!("is not {expected}"), default_word);
            default
        })
    }

    /// A whole number of `unit` within `min..=max`: out of range, the nearest bound.
    fn number<T>(&mut self, name: &str, default: T, (min, max): (T, T), unit: &str) -> T
    where
        T: Display + Copy + PartialOrd + std::str::FromStr,
    {
        let default_word = default.to_string();
        let Some(text) = self.text(name, &default_word) else {
            return default;
        };
        let Ok(n) = text.trim().parse::<T>() else {
            let problem = format!("is not a whole number of {unit}");
            self.complain(name, &text, &problem, &default_word);
            return default;
        };
        clamp(n, min, max).unwrap_or_else(|(bound, side)| {
            let problem = format!("is {side} of {bound} {unit}");
            self.complain(name, &text, &problem, &bound.to_string());
            bound
        })
    }

    fn path(&mut self, name: &str) -> Option<PathBuf> {
        (self.var)(name)
            .filter(|p| !p.to_string_lossy().trim().is_empty())
            .map(PathBuf::from)
    }

    /// `YIELDPROF_VIEWS`: the good names are kept; the others are named in one line.
    fn views(&mut self) -> Vec<Metric> {
        const NAME: &str = "YIELDPROF_VIEWS";
        let Some(text) = self.text(NAME, "no extra views") else {
            return Vec::new();
        };
        let names = text.split(',').map(str::trim).filter(|v| !v.is_empty());
        let (views, bad): (Vec<Option<Metric>>, Vec<Option<Metric>>) =
            names.clone().map(Metric::parse).partition(Option::is_some);
        let views: Vec<Metric> = views.into_iter().flatten().collect();
        if !bad.is_empty() {
            // Quoted like the value: a name with a line break stays on the one line.
            let bad: Vec<String> = names
                .filter(|v| Metric::parse(v).is_none())
                .map(|v| format!("{v:?}"))
                .collect();
            let problem = format!("has {}, not wall, calls or switches", bad.join(", "));
            let kept: Vec<&str> = views.iter().map(|m| m.name()).collect();
            let instead = match kept.is_empty() {
                true => "no extra views".to_string(),
                false => kept.join(","),
            };
            self.complain(NAME, &text, &problem, &instead);
        }
        views
    }

    /// `YIELDPROF_SNAPSHOT_EVERY`: seconds, or a switch word meaning off; clamped to
    /// the interval bounds.
    fn snapshot_every(&mut self) -> Option<Duration> {
        const NAME: &str = "YIELDPROF_SNAPSHOT_EVERY";
        const OFF: &str = "no snapshots";
        let text = self.text(NAME, OFF)?;
        if parse_switch(&text) == Some(false) {
            return None;
        }
        let Some(secs) = text.trim().parse::<f64>().ok().filter(|s| *s > 0.0) else {
            self.complain(NAME, &text, "is not a positive number of seconds", OFF);
            return None;
        };
        // Past `Duration`'s range (~5.8e11 years) is past the maximum too.
        let every = Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX);
        Some(
            clamp(every, MIN_SNAPSHOT_INTERVAL, MAX_SNAPSHOT_INTERVAL).unwrap_or_else(
                |(bound, side)| {
                    let s = bound.as_secs_f64();
                    self.complain(
                        NAME,
                        &text,
                        &format!("is {side} of {s} s"),
                        &format!("{s} s"),
                    );
                    bound
                },
            ),
        )
    }
}

/// `off` (or `0`): no watchpoints; else a rate within `1..=MAX_WATCHPOINT_RATE`.
fn parse_watchpoint_rate(s: &str) -> Option<Option<u32>> {
    match parse_switch(s) {
        Some(false) => Some(None),
        Some(true) if s.trim().parse::<u32>().is_err() => Some(Some(DEFAULT_WATCHPOINT_RATE)),
        _ => at_least_1(s)
            .filter(|&n| n <= MAX_WATCHPOINT_RATE)
            .map(Some),
    }
}

/// `all`: every thread listed; else a number of threads, 1 or more.
fn parse_report_threads(s: &str) -> Option<Option<usize>> {
    match s.trim().eq_ignore_ascii_case("all") {
        true => Some(None),
        false => at_least_1(s).map(Some),
    }
}

fn at_least_1<T: std::str::FromStr + PartialOrd + From<u8>>(s: &str) -> Option<T> {
    s.trim().parse().ok().filter(|n| *n >= T::from(1))
}

/// `n` if within `min..=max`, else the bound it passed and which side.
pub(crate) fn clamp<T: PartialOrd + Copy>(n: T, min: T, max: T) -> Result<T, (T, &'static str)> {
    if n < min {
        Err((min, "below the minimum"))
    } else if n > max {
        Err((max, "above the maximum"))
    } else {
        Ok(n)
    }
}

impl Settings {
    /// Parses every variable `var` returns; each complaint goes to `warn` as one line.
    pub(crate) fn read(
        var: impl Fn(&str) -> Option<OsString>,
        warn: impl FnMut(String),
    ) -> Settings {
        let mut r = Reader { var: &var, warn };
        Settings {
            enabled: r.parsed("YIELDPROF", (true, "on"), SWITCH_WORDS, parse_switch),
            out_dir: r
                .path("YIELDPROF_OUT")
                .unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR)),
            metric: r.parsed(
                "YIELDPROF_METRIC",
                (Metric::Wall, "wall"),
                "wall, calls or switches",
                Metric::parse,
            ),
            views: r.views(),
            max_nodes: r.number(
                "YIELDPROF_MAX_NODES",
                DEFAULT_MAX_NODES,
                (MIN_NODES, MAX_NODES),
                "nodes per thread",
            ),
            timeline: r.number(
                "YIELDPROF_TIMELINE",
                DEFAULT_TIMELINE,
                (0, MAX_TIMELINE),
                "episodes per thread",
            ),
            report_threads: r.parsed(
                "YIELDPROF_REPORT_THREADS",
                (
                    Some(DEFAULT_REPORT_THREADS),
                    &DEFAULT_REPORT_THREADS.to_string(),
                ),
                "all or a whole number of threads, 1 or more",
                parse_report_threads,
            ),
            counters: r.parsed(
                "YIELDPROF_COUNTERS_EVERY",
                (CounterSampling::Auto, "auto"),
                "auto, off or a number of episodes",
                CounterSampling::parse,
            ),
            fd_budget: r.number(
                "YIELDPROF_FD_BUDGET",
                DEFAULT_FD_BUDGET,
                (0, usize::MAX - 1),
                "fds",
            ),
            snapshot_every: r.snapshot_every(),
            keep_snapshots: r.parsed(
                "YIELDPROF_SNAPSHOT_KEEP",
                (DEFAULT_KEEP_SNAPSHOTS, &DEFAULT_KEEP_SNAPSHOTS.to_string()),
                "a whole number of snapshots, 1 or more",
                at_least_1,
            ),
            write_at_exit: r.parsed(
                "YIELDPROF_WRITE_AT_EXIT",
                (false, "off"),
                SWITCH_WORDS,
                parse_switch,
            ),
            rseq: r.parsed("YIELDPROF_RSEQ", (false, "off"), SWITCH_WORDS, parse_switch),
            // 0 is no rate at all: the default, not full tracking (which doubles the
            // coherence traffic of the watched lines).
            watch_sample: r.parsed(
                "YIELDPROF_WATCH_SAMPLE",
                (DEFAULT_WATCH_SAMPLING, &DEFAULT_WATCH_SAMPLING.to_string()),
                "a whole number of accesses, 1 or more",
                at_least_1,
            ),
            watchpoint_rate: r.parsed(
                "YIELDPROF_WATCHPOINTS",
                (
                    Some(DEFAULT_WATCHPOINT_RATE),
                    &DEFAULT_WATCHPOINT_RATE.to_string(),
                ),
                "off or hits per thread and second, 1 to 5000",
                parse_watchpoint_rate,
            ),
            machine: r.path("YIELDPROF_MACHINE"),
            self_check: r.parsed(
                "YIELDPROF_SELF_CHECK",
                (false, "off"),
                SWITCH_WORDS,
                parse_switch,
            ),
            http: r.parsed(
                "YIELDPROF_HTTP",
                (None, "no live view"),
                "an address and port like 127.0.0.1:6060",
                |a| a.trim().parse().ok().map(Some),
            ),
            http_any: r.parsed(
                "YIELDPROF_HTTP_ANY",
                (false, "off"),
                SWITCH_WORDS,
                parse_switch,
            ),
        }
    }
}
