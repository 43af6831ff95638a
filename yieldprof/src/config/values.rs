//! The values settings take beyond numbers and switches, with the words that name them:
//! the one parser for each, whether the word comes from a variable or from code.

// The defaults of `Options`, which a build without the `enabled` feature keeps
// without reading the environment.
/// Default output folder, relative to the working directory.
pub(crate) const DEFAULT_OUT_DIR: &str = "target/yieldprof";
/// Default cap on calling-context-tree nodes per thread.
pub(crate) const DEFAULT_MAX_NODES: u32 = 4096;
/// Default length of each thread's timeline: the last episodes it keeps.
pub(crate) const DEFAULT_TIMELINE: u32 = 4096;
/// Default perf-event fd budget of the process.
pub(crate) const DEFAULT_FD_BUDGET: usize = 512;
/// Wait episodes a thread reads on getrusage before its perf counters open
/// (`counters::episodes_before_open`).
pub(crate) const DEFAULT_COUNTERS_AFTER: u32 = 16;
/// Threads a written report lists one by one by default; the rest are merged into one
/// `[N other threads]` entry. At ~2.4 KB of JSON a thread, ~0.6 MB.
pub(crate) const DEFAULT_REPORT_THREADS: usize = 256;
/// How many snapshots are kept by default.
pub(crate) const DEFAULT_KEEP_SNAPSHOTS: usize = 60;

/// The value each folded line carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Metric {
    /// Wall-clock nanoseconds (the default).
    #[default]
    Wall,
    /// Number of wait calls (spin, yield, sleep, park) per kind.
    Calls,
    /// Context switches (voluntary + involuntary, getrusage): each wait frame's own,
    /// and the rest of the thread's as `[work]`. Estimated where episodes are sampled.
    Switches,
}

impl Metric {
    /// Every metric, in the order the names are listed.
    const ALL: [Metric; 3] = [Metric::Wall, Metric::Calls, Metric::Switches];

    /// Parses `wall`, `calls` or `switches` (the values of `YIELDPROF_METRIC`), in any
    /// case, around blanks.
    ///
    /// ```
    /// assert_eq!(yieldprof::report::Metric::parse("calls"), Some(yieldprof::report::Metric::Calls));
    /// assert_eq!(yieldprof::report::Metric::parse(" Wall "), Some(yieldprof::report::Metric::Wall));
    /// assert_eq!(yieldprof::report::Metric::parse("cycles"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Metric> {
        let s = s.trim();
        Metric::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
    }

    /// The name `parse` accepts, also used in view file names.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::Calls => "calls",
            Metric::Switches => "switches",
        }
    }

    /// Unit shown in the flame graph.
    #[cfg(feature = "enabled")]
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Metric::Wall => "ns",
            Metric::Calls => "calls",
            Metric::Switches => "switches",
        }
    }
}

/// Which wait episodes have their sampled counters read (page faults, hardware
/// counters; switches and the time split too where perf is denied). Set with
/// [`Options::counters`](crate::Options::counters) or `YIELDPROF_COUNTERS_EVERY`.
/// Switches are counted on every episode through the perf user page wherever perf
/// works, whatever this says, unless it is `Off`. `Every(n)` also opens the migration
/// counter (every episode, through its page) and the page-fault counter (sampled):
/// the exact-everything setting; `Auto` leaves both out (n/a), as each perf event a
/// thread holds costs the kernel time at every switch of it (docs/cost.md).
///
/// Reading every sampled source costs a syscall or two at each end of an episode
/// (measured here: ~1.1 µs per episode; up to ~2.7 µs on slower kernels, ~4.5 µs with
/// a PMU). The figures of the episodes that were not read are estimated from those
/// that were, in proportion to wall time, and shown as `~N`.
///
/// ```
/// use yieldprof::counters::CounterSampling;
/// assert_eq!(CounterSampling::parse("auto"), Some(CounterSampling::Auto));
/// assert_eq!(CounterSampling::parse("8"), Some(CounterSampling::Every(8)));
/// assert_eq!(CounterSampling::parse("off"), Some(CounterSampling::Off));
/// assert_eq!(CounterSampling::parse("0"), Some(CounterSampling::Off));
/// assert_eq!(CounterSampling::parse("ON"), Some(CounterSampling::Auto));
/// assert_eq!(CounterSampling::parse("sometimes"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterSampling {
    /// No counters: no fds, no syscalls; every figure is n/a.
    Off,
    /// Read 1 of N wait episodes per thread (`Every(1)`: all of them).
    Every(u32),
    /// The default: read an episode whenever the thread's counter reads so far cost
    /// less than 2 % of its wait time. With ~1.1 µs per sampled
    /// episode, every episode of 60 µs or more (any real sleep or park) is read, a
    /// 1 µs spin episode about 1 in 60. A thread's first episode is always read.
    #[default]
    Auto,
}

impl CounterSampling {
    /// Parses a number `N` (read 1 of N episodes; `0` is off), `auto`, or a switch word
    /// (see [`Options`](crate::Options)): on is `auto`, off is `off`.
    pub fn parse(s: &str) -> Option<CounterSampling> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u32>() {
            return Some(CounterSampling::Every(n).normal());
        }
        if s.eq_ignore_ascii_case("auto") {
            return Some(CounterSampling::Auto);
        }
        match parse_switch(s)? {
            true => Some(CounterSampling::Auto),
            false => Some(CounterSampling::Off),
        }
    }

    pub(crate) fn normal(self) -> CounterSampling {
        match self {
            CounterSampling::Every(0) => CounterSampling::Off,
            s => s,
        }
    }

    #[cfg(feature = "enabled")]
    pub(crate) fn encode(self) -> u32 {
        match self.normal() {
            CounterSampling::Off => 1,
            CounterSampling::Auto => 2,
            CounterSampling::Every(n) => n.saturating_add(2),
        }
    }

    #[cfg(feature = "enabled")]
    pub(crate) fn decode(v: u32) -> CounterSampling {
        match v {
            1 => CounterSampling::Off,
            2 => CounterSampling::Auto,
            n => CounterSampling::Every(n - 2),
        }
    }
}

/// The one vocabulary of on/off settings: `1`/`0`, `on`/`off`, `true`/`false`,
/// `yes`/`no`, in any case, around blanks.
pub(crate) fn parse_switch(s: &str) -> Option<bool> {
    const ON: [&str; 4] = ["1", "on", "true", "yes"];
    const OFF: [&str; 4] = ["0", "off", "false", "no"];
    let s = s.trim();
    let is = |words: [&str; 4]| words.iter().any(|w| w.eq_ignore_ascii_case(s));
    if is(ON) {
        Some(true)
    } else if is(OFF) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_word_reads_the_same_in_any_case() {
        for (word, on) in [
            ("1", true),
            ("ON", true),
            ("True", true),
            (" yes ", true),
            ("0", false),
            ("Off", false),
            ("FALSE", false),
            ("no", false),
        ] {
            assert_eq!(parse_switch(word), Some(on), "{word:?}");
        }
        for word in ["", "abc", "2", "onn", "y"] {
            assert_eq!(parse_switch(word), None, "{word:?}");
        }
    }
}
