//! What waiting costs on this machine: a PAUSE, a `sched_yield`, a context switch and
//! the timer slack, as the findings use them: the probe's figures when it ran in this
//! process or was saved on this host, a quick estimate otherwise.

use crate::base::fork::ForkOnce;
use crate::base::host::HostId;
use crate::base::text::{date_time, duration};
use crate::counters::Calibrated;
use crate::model::profile::Profile;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// What waiting costs on this machine, as the rules use it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Costs {
    /// One `spin_loop()` (PAUSE), ns.
    pub spin_ns: f64,
    /// One `sched_yield()` with nothing else runnable, ns.
    pub yield_ns: f64,
    /// One context switch, ns.
    pub switch_ns: f64,
    /// The timer slack every sleep is rounded up by, ns.
    pub timer_slack_ns: u64,
    /// Cores the process may run on.
    pub cores: usize,
    /// Where the figures come from.
    pub source: CostSource,
    /// Whether `switch_ns` was measured; else it is the 1 µs default.
    pub switch_measured: bool,
}

/// Where a report's [`Costs`] come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CostSource {
    /// [`crate::probe::run`] ran in this process.
    Probe,
    /// A probe saved on this host ([`crate::probe::Machine::save`]), at this Unix time.
    SavedProbe {
        /// When it was saved, seconds since 1970 (UTC).
        unix_s: u64,
    },
    /// About 0.2 ms of spins and yields timed at the first report; no context switch
    /// was measured.
    QuickEstimate,
}

impl fmt::Display for CostSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CostSource::Probe => f.write_str("probe"),
            CostSource::SavedProbe { unix_s } => {
                write!(
                    f,
                    "probe saved {} ({})",
                    date_time(*unix_s),
                    saved_path().display()
                )
            }
            CostSource::QuickEstimate => f.write_str("quick estimate"),
        }
    }
}

impl fmt::Display for Costs {
    /// `spin 12 ns, yield 172 ns, switch 1.0 µs (default), timer slack 50.0 µs, 2 cores`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "spin {}, yield {}, switch {}{}, timer slack {}, {} core{}",
            duration(self.spin_ns as u64),
            duration(self.yield_ns as u64),
            duration(self.switch_ns as u64),
            if self.switch_measured {
                ""
            } else {
                " (default)"
            },
            duration(self.timer_slack_ns),
            self.cores,
            if self.cores == 1 { "" } else { "s" }
        )
    }
}

/// A context switch when nothing has measured one: the probe measured 0.5–0.9 µs on
/// the build machine; with the cache refill that follows, 1 µs is the round figure.
pub(crate) const DEFAULT_SWITCH_NS: f64 = 1_000.0;

static PROBED: ForkOnce<Costs> = ForkOnce::new();

impl Costs {
    /// Costs for reports: the probe's if [`crate::probe::run`] ran in this process,
    /// else those of a probe saved on this host ([`saved_path`]), else a quick estimate
    /// (≈0.2 ms of spins and yields, made once).
    pub fn current() -> Costs {
        if let Some(c) = PROBED.get() {
            return *c;
        }
        static SAVED: ForkOnce<Option<Costs>> = ForkOnce::new();
        let saved = SAVED.get_or_init(|| {
            let path = saved_path();
            match Costs::load(&path, &HostId::current()) {
                Ok(c) => Some(c),
                Err(Unused::Malformed(why)) => {
                    eprintln!(
                        "yieldprof: {}: {why}; using a quick estimate",
                        path.display()
                    );
                    None
                }
                Err(Unused::Missing | Unused::OtherHost) => None,
            }
        });
        if let Some(c) = saved {
            return *c;
        }
        static QUICK: ForkOnce<Costs> = ForkOnce::new();
        *QUICK.get_or_init(Costs::quick)
    }

    /// The costs saved at `path`, if that file was saved on `host`: figures measured
    /// on another machine, kernel or core count do not apply here.
    pub(crate) fn load(path: &Path, host: &HostId) -> Result<Costs, Unused> {
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Unused::Missing,
            _ => Unused::Malformed(format!("cannot be read: {e}")),
        })?;
        Costs::parse_saved(&text, host)
    }

    /// A saved probe file's text, read as [`Costs::load`] does.
    pub(crate) fn parse_saved(text: &str, host: &HostId) -> Result<Costs, Unused> {
        let saved: Saved = crate::base::json::from_str(text)
            .map_err(|e| Unused::Malformed(format!("not a saved probe: {e}")))?;
        if saved.schema != SAVED_SCHEMA {
            return Err(Unused::Malformed(format!(
                "schema {:?}, not {SAVED_SCHEMA:?}",
                saved.schema
            )));
        }
        if saved.host != SavedHost::from(host) {
            return Err(Unused::OtherHost);
        }
        // The rules divide by these: each must be a real, positive figure.
        let figures = [
            ("spin_ns", saved.spin_ns),
            ("yield_ns", saved.yield_ns),
            ("switch_ns", saved.switch_ns.unwrap_or(DEFAULT_SWITCH_NS)),
            ("cores", saved.cores as f64),
        ];
        if let Some((name, v)) = figures.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(Unused::Malformed(format!(
                "{name} is {v}, not a positive number"
            )));
        }
        Ok(Costs {
            spin_ns: saved.spin_ns,
            yield_ns: saved.yield_ns,
            switch_ns: saved.switch_ns.unwrap_or(DEFAULT_SWITCH_NS),
            timer_slack_ns: saved.timer_slack_ns,
            cores: saved.cores,
            source: CostSource::SavedProbe {
                unix_s: saved.saved_unix_s,
            },
            switch_measured: saved.switch_ns.is_some(),
        })
    }

    /// These costs as a saved probe file of `host`, taken at `unix_s`.
    pub(crate) fn saved_text(&self, host: &HostId, unix_s: u64) -> String {
        let saved = Saved {
            schema: SAVED_SCHEMA.to_string(),
            saved_unix_s: unix_s,
            host: SavedHost::from(host),
            spin_ns: self.spin_ns,
            yield_ns: self.yield_ns,
            switch_ns: self.switch_measured.then_some(self.switch_ns),
            timer_slack_ns: self.timer_slack_ns,
            cores: self.cores,
        };
        crate::base::json::to_string_pretty(&saved)
    }

    /// Makes `self` what later reports use (the probe calls this).
    pub fn remember(self) {
        PROBED.set(self);
    }

    pub(crate) fn quick() -> Costs {
        // The 10th percentile of 20 batches: what a call costs when nothing else gets
        // the core meanwhile (a yield that hands it over costs a whole time slice).
        let per_call = |n: u32, f: &dyn Fn()| {
            let mut batches: Vec<f64> = (0..20)
                .map(|_| {
                    let t = std::time::Instant::now();
                    (0..n).for_each(|_| f());
                    t.elapsed().as_nanos() as f64 / n as f64
                })
                .collect();
            batches.sort_by(f64::total_cmp);
            batches[2]
        };
        Costs {
            spin_ns: per_call(100, &std::hint::spin_loop).max(0.1),
            yield_ns: per_call(10, &std::thread::yield_now).max(1.0),
            switch_ns: DEFAULT_SWITCH_NS,
            timer_slack_ns: timer_slack_ns().unwrap_or(50_000),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            source: CostSource::QuickEstimate,
            switch_measured: false,
        }
    }

    /// Spins that cost about one yield: how long to spin before yielding.
    pub fn spins_per_yield(&self) -> u64 {
        (self.yield_ns / self.spin_ns).round().clamp(1.0, 1e6) as u64
    }

    /// The same costs on a machine with `cores` cores (e.g. to check a single-core
    /// deployment).
    pub fn with_cores(mut self, cores: usize) -> Self {
        self.cores = cores;
        self
    }

    /// The same costs with this `sched_yield` cost, ns (e.g. from a probe run saved
    /// earlier).
    pub fn with_yield_ns(mut self, ns: f64) -> Self {
        self.yield_ns = ns.max(1.0);
        self
    }

    /// The same costs with this context-switch cost, ns.
    pub fn with_switch_ns(mut self, ns: f64) -> Self {
        self.switch_ns = ns;
        self
    }

    /// Yields that cost about one timer-slack sleep.
    pub fn yields_per_sleep(&self) -> u64 {
        (self.timer_slack_ns as f64 / self.yield_ns)
            .round()
            .clamp(1.0, 1e6) as u64
    }
}

/// yieldprof's own time over a profile's threads: what its clocks measured (the
/// `[profiler]` frames) and, estimated, what no clock of the thread's can bracket: the
/// kernel's work for each recording thread's context-switch counter (and its mapped
/// page) at every switch of that thread, calibrated once per process
/// ([`Profile::profiler_time`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProfilerTime {
    /// Timed on the threads: counter set-up, nodes created, switch figures read,
    /// and the closes of switched episodes, one in 16 timed and scaled.
    pub measured_ns: u64,
    /// `switches` × `kernel_ns_per_switch`: an estimate, not a measurement.
    pub estimated_ns: u64,
    /// Switches of the threads that saw each of their switches (a context-switch
    /// counter, or the rseq bit by default), since they began recording.
    pub switches: u64,
    /// The kernel's work per switch of one thread for what it held, as calibrated here
    /// (two threads passing a token on one CPU, with and without it; the mean over
    /// both sources where threads held each); `None` where nothing needed it or it
    /// could not be calibrated (no counter, no pinning).
    pub kernel_ns_per_switch: Option<f64>,
    /// What that calibration cost the process: its two threads' CPU time, ns, and
    /// context switches, in no thread's figures (`perf stat` of the process counts
    /// them); 0 where it did not run.
    pub calibration_cpu_ns: u64,
    pub calibration_switches: u64,
}

impl ProfilerTime {
    /// Measured and estimated together: what the profiler cost the threads.
    pub fn total_ns(&self) -> u64 {
        self.measured_ns + self.estimated_ns
    }
}

impl fmt::Display for ProfilerTime {
    /// `1.2 ms measured + 3.4 ms estimated (6 800 switches × 0.50 µs of kernel work
    /// for each thread's switch counter, calibrated at the first report)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} measured", duration(self.measured_ns))?;
        match self.kernel_ns_per_switch {
            Some(per) if self.switches > 0 => write!(
                f,
                " + {} estimated ({} switches × {} of kernel work for each thread's \
                 switch source, calibrated in this process; the calibration itself: {} \
                 switches and {} of CPU on two threads of its own, in no thread's figures)",
                duration(self.estimated_ns),
                self.switches,
                duration(per.round() as u64),
                self.calibration_switches,
                duration(self.calibration_cpu_ns)
            ),
            _ if self.switches > 0 => f.write_str(
                " (the kernel's work for the switch counters at each switch not \
                 estimated: its calibration could not run)",
            ),
            _ => Ok(()),
        }
    }
}

impl Profile {
    /// yieldprof's own time on these threads, measured and estimated (see
    /// [`ProfilerTime`]). The first call in a process that needs the estimate
    /// calibrates it: ~30 ms of CPU on two short-lived threads.
    pub fn profiler_time(&self) -> ProfilerTime {
        let threads = self.threads();
        let measured_ns = threads.iter().map(|t| t.profiler_ns).sum();
        let switches_of = |rseq: bool| -> u64 {
            threads
                .iter()
                .filter(|t| {
                    t.split_method
                        .is_some_and(|m| m.every_episode && m.rseq == rseq)
                })
                .map(|t| {
                    let all = t.counters.switches().value().unwrap_or(0);
                    let before = t.counters_before_recording.switches().value().unwrap_or(0);
                    all.saturating_sub(before)
                })
                .sum()
        };
        let (page, rseq) = (switches_of(false), switches_of(true));
        static PAGE: ForkOnce<Option<Calibrated>> = ForkOnce::new();
        static RSEQ: ForkOnce<Option<Calibrated>> = ForkOnce::new();
        let page_cal = (page > 0)
            .then(|| *PAGE.get_or_init(crate::counters::kernel_ns_per_switch))
            .flatten();
        let rseq_cal = (rseq > 0)
            .then(|| *RSEQ.get_or_init(crate::counters::rseq_ns_per_switch))
            .flatten();
        let (page_ns, rseq_ns) = (
            page_cal.map(|c| c.ns_per_switch),
            rseq_cal.map(|c| c.ns_per_switch),
        );
        let ran = [page_cal, rseq_cal].into_iter().flatten();
        let switches = page + rseq;
        let estimated = page_ns.map(|p| p * page as f64).unwrap_or(0.0)
            + rseq_ns.map(|p| p * rseq as f64).unwrap_or(0.0);
        let per = (page_ns.is_some() || rseq_ns.is_some()).then(|| {
            let counted = page_ns.map_or(0, |_| page) + rseq_ns.map_or(0, |_| rseq);
            estimated / counted.max(1) as f64
        });
        ProfilerTime {
            measured_ns,
            estimated_ns: estimated.round() as u64,
            switches,
            kernel_ns_per_switch: per,
            calibration_cpu_ns: ran.clone().map(|c| c.cpu_ns).sum(),
            calibration_switches: ran.map(|c| c.switches).sum(),
        }
    }
}

/// The calling thread's timer slack (`prctl(PR_GET_TIMERSLACK)`), ns.
pub(crate) fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(slack).ok()
}

const SAVED_SCHEMA: &str = "yieldprof-machine/1";

/// Why a saved probe file was not used.
#[derive(Debug, PartialEq)]
pub(crate) enum Unused {
    /// There is none: nothing to say.
    Missing,
    /// It was saved on another host, whose figures do not apply here.
    OtherHost,
    /// It is not a usable saved probe; why, for the one line on stderr.
    Malformed(String),
}

/// Where a saved probe is read from and written to: `YIELDPROF_MACHINE`, else
/// `machine.json` in the output folder (`YIELDPROF_OUT`, default `target/yieldprof`).
pub fn saved_path() -> PathBuf {
    let env = crate::config::settings();
    env.machine
        .clone()
        .unwrap_or_else(|| env.out_dir.join("machine.json"))
}

/// The file a saved probe is.
#[derive(Serialize, Deserialize)]
struct Saved {
    schema: String,
    saved_unix_s: u64,
    host: SavedHost,
    spin_ns: f64,
    yield_ns: f64,
    switch_ns: Option<f64>,
    timer_slack_ns: u64,
    cores: usize,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct SavedHost {
    cpu_model: Option<String>,
    cores: Option<u64>,
    kernel: Option<String>,
    hostname: Option<String>,
}

impl From<&HostId> for SavedHost {
    fn from(h: &HostId) -> Self {
        SavedHost {
            cpu_model: h.cpu_model.clone(),
            cores: h.cores,
            kernel: h.kernel.clone(),
            hostname: h.hostname.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn here() -> HostId {
        HostId::current()
    }

    #[test]
    fn a_saved_probe_loads_on_its_host_with_its_figures_and_date() {
        let dir = std::env::temp_dir().join(format!("yp-costs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("machine.json");
        let measured = Costs {
            spin_ns: 35.0,
            yield_ns: 700.0,
            switch_ns: 2_500.0,
            timer_slack_ns: 50_000,
            cores: 2,
            source: CostSource::Probe,
            switch_measured: true,
        };
        std::fs::write(&path, measured.saved_text(&here(), 1_764_730_000)).unwrap();
        let loaded = Costs::load(&path, &here()).expect("same host");
        assert_eq!(
            loaded,
            Costs {
                source: CostSource::SavedProbe {
                    unix_s: 1_764_730_000
                },
                ..measured
            }
        );
        // Another kernel: the figures do not apply here.
        let mut elsewhere = here();
        elsewhere.kernel = Some("0.0.0-other".into());
        assert_eq!(Costs::load(&path, &elsewhere), Err(Unused::OtherHost));
        assert_eq!(
            Costs::load(&dir.join("none.json"), &here()),
            Err(Unused::Missing)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unmeasured_switch_is_saved_as_unknown_and_shown_as_the_default() {
        let quick = Costs::quick();
        assert!(!quick.switch_measured);
        assert!(
            quick.to_string().contains("switch 1.0 µs (default)"),
            "{quick}"
        );
        let dir = std::env::temp_dir().join(format!("yp-costs-q-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("machine.json");
        std::fs::write(&path, quick.saved_text(&here(), 1)).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"switch_ns\": null"));
        let loaded = Costs::load(&path, &here()).unwrap();
        assert!(!loaded.switch_measured && loaded.switch_ns == DEFAULT_SWITCH_NS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A saved probe of this host, as `probe -- --save` writes it.
    fn saved_here() -> String {
        Costs::quick().saved_text(&here(), 1_764_730_000)
    }

    #[test]
    fn impossible_figures_are_refused_with_their_name() {
        let refused = |text: &str| match Costs::parse_saved(text, &here()) {
            Err(Unused::Malformed(why)) => why,
            other => panic!("{other:?}"),
        };
        // The last `cores` is the costs' own (the last field); the first, the host's.
        let mut text = saved_here();
        let at = text.rfind("\"cores\": ").unwrap();
        text.replace_range(at.., "\"cores\": 0 }");
        assert_eq!(refused(&text), "cores is 0, not a positive number");
        let negative = saved_here().replace("\"spin_ns\": ", "\"spin_ns\": -");
        assert!(
            refused(&negative).starts_with("spin_ns is -"),
            "{}",
            refused(&negative)
        );
        assert!(refused("{").starts_with("not a saved probe: unexpected end of the text"));
    }

    // Cases: proptest's default (256), or `PROPTEST_CASES` (the long run, docs/reliability.md).
    proptest! {
        #[test]
        fn a_saved_probe_cut_or_overwritten_never_panics_and_says_why(
            cut in any::<prop::sample::Index>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        ) {
            let mut bytes = saved_here().into_bytes();
            for (at, b) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
            match Costs::parse_saved(&String::from_utf8_lossy(&bytes), &here()) {
                Ok(c) => prop_assert!(c.spin_ns > 0.0 && c.yield_ns > 0.0 && c.cores > 0),
                Err(Unused::Malformed(why)) => prop_assert!(!why.is_empty() && !why.contains('\n')),
                Err(other) => prop_assert_eq!(other, Unused::OtherHost),
            }
        }
    }
}
