//! What waiting costs on this machine: a PAUSE, a `sched_yield`, a context switch and
//! the timer slack, as the findings use them; the probe's figures when it ran.

use std::sync::OnceLock;

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
    /// Where the figures come from: `"probe"` or `"quick estimate"`.
    pub source: &'static str,
}

/// A context switch when nothing has measured one: the probe measured 0.5–0.9 µs on
/// the build machine; with the cache refill that follows, 1 µs is the round figure.
pub(crate) const DEFAULT_SWITCH_NS: f64 = 1_000.0;

static PROBED: OnceLock<Costs> = OnceLock::new();

impl Costs {
    /// Costs for reports: the probe's if [`crate::probe::run`] ran in this process,
    /// else a quick estimate (≈0.2 ms of spins and yields, made once).
    pub fn current() -> Costs {
        if let Some(c) = PROBED.get() {
            return *c;
        }
        static QUICK: OnceLock<Costs> = OnceLock::new();
        *QUICK.get_or_init(Costs::quick)
    }

    /// Makes `self` what later reports use (the probe calls this).
    pub fn remember(self) {
        let _ = PROBED.set(self);
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
            source: "quick estimate",
        }
    }

    /// Spins that cost about one yield (seed 000 §5.4).
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

/// The calling thread's timer slack (`prctl(PR_GET_TIMERSLACK)`), ns.
pub(crate) fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(slack).ok()
}
