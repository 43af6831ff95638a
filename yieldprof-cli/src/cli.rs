//! The command line: every subcommand, argument and help text.

use crate::{budget, probe, threshold::Threshold};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// What a profiled run wrote, read back: its summary, two runs compared with CI
/// thresholds, flame graphs per view, the timeline, budgets, and the machine probe.
#[derive(Parser, Debug)]
#[command(name = "yieldprof", version)]
#[command(after_help = "\
RUN is a run's `<dir>/<name>.json` or its stem `<dir>/<name>` (e.g. target/yieldprof/spsc-packed-spin): \
the files `yieldprof::init()` writes when its guard drops, or `Profile::write`.

Exit status: 0 success; 1 a --fail-if threshold or a budget limit was exceeded (each is listed); \
2 a usage error, or a file missing, unreadable or malformed.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The run's headline, its costliest wait sites and its findings
    Show(ShowArgs),
    /// Two runs site by site, a differential flame graph, and CI thresholds
    Diff(DiffArgs),
    /// A flame graph of one view of a run, drawn from its folded files
    Flamegraph(FlamegraphArgs),
    /// The runs in a folder (a test suite's binaries and doctests) as one: their
    /// stacks summed into `<OUT>.folded` and its flame graph `<OUT>.svg`
    Merge(MergeArgs),
    /// The run's timeline (`<name>.trace.json`): threads, episodes kept and dropped,
    /// sites; open the file in Perfetto or speedscope
    Timeline(TimelineArgs),
    /// Measures this machine's wait primitives (about 5 s) and prints a backoff for it
    Probe(ProbeArgs),
    /// Checks a run against the limits of a TOML budget file
    #[command(after_long_help = budget::schema_help())]
    Check(CheckArgs),
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The run: `<dir>/<name>.json` or `<dir>/<name>`
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// Order of the wait sites: on-CPU time (where the cores go; an idle wait costs
    /// none), wall time, context switches, wait calls, or 99th percentile episode
    #[arg(long, value_enum, default_value_t = SortBy::OnCpu)]
    pub sort: SortBy,
    /// How many wait sites to list
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
}

/// What `show` orders the wait sites by, costliest first.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// On-CPU time of the episodes (spinning, yielding, the profiler): where the cores go
    OnCpu,
    /// Wall time of the episodes
    Wall,
    /// Voluntary plus involuntary context switches in the episodes
    Switches,
    /// Wait calls of every kind made in the episodes
    Calls,
    /// 99th percentile of the episode durations
    P99,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The run before the change: `<dir>/<name>.json` or `<dir>/<name>`
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// The run after the change
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// Also write a differential flame graph (from the runs' `.folded` files) to OUT:
    /// widths from AFTER, red frames grew, blue shrank
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// Fail (exit 1) when a wait site's figure changed by more than this, e.g.
    /// `p99+10%` (grew more than 10%), `wall+5%`, `switches+0%` (grew at all),
    /// `episodes-20%` (fell more than 20%). Figures: episodes, episodes_per_s (per second
    /// of the threads' wall time: the throughput of a site entered once per unit of work),
    /// wall, switches, p50, p99, calls (every kind) or <kind>-calls for one wait kind (spin-calls, yield-calls,
    /// lock-calls, ...). Repeat for several; a figure that grew from 0 counts as grown
    /// by any percentage.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<Threshold>,
}

#[derive(Args, Debug)]
pub struct FlamegraphArgs {
    /// The run: `<dir>/<name>.json` or `<dir>/<name>`
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// What the widths measure; `split` puts each thread's wait and work side by side
    #[arg(long, value_enum, default_value_t = View::Wall)]
    pub view: View,
    /// Where to write the SVG (`-` for standard output); default
    /// `<dir>/<name>.<view>.flamegraph.svg`, beside the run's own files
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// A flame graph view and the folded file it is drawn from.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Wall time: `<name>.wall.folded`, else `<name>.folded`
    Wall,
    /// Wait calls per kind: `<name>.calls.folded` (YIELDPROF_VIEWS=calls)
    Calls,
    /// Context switches: `<name>.switches.folded` (YIELDPROF_VIEWS=switches)
    Switches,
    /// `<name>.folded` with a `wait` and a `work` frame under each thread
    Split,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The folder of runs, e.g. target/yieldprof: every `<name>.json` with its
    /// `<name>.folded`
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Where the merged files go, as a stem: `<OUT>.folded` and `<OUT>.svg`; default
    /// `<DIR>/merged`
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Keep the runs apart: each run's stacks under a frame named after it
    #[arg(long)]
    pub by_run: bool,
}

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// The run: `<dir>/<name>.json` or `<dir>/<name>`; reads `<dir>/<name>.trace.json`
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// How many sites to list, by time in their kept episodes
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Keep the measured costs in `<YIELDPROF_OUT>/machine.json` (or YIELDPROF_MACHINE),
    /// which later reports on this host use instead of a quick estimate
    #[arg(long)]
    pub save: bool,
    /// Total probing time in seconds (default about 5): shorter is quicker and noisier
    #[arg(long, value_name = "S", value_parser = probe::parse_seconds, allow_negative_numbers = true)]
    pub seconds: Option<f64>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The run: `<dir>/<name>.json` or `<dir>/<name>`
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// The budget: a TOML file of limits per wait site and per thread (see below)
    #[arg(long, value_name = "FILE")]
    pub budget: PathBuf,
}
