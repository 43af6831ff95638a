//! How a thread's time split is measured, as a report states it.

/// How a thread's time split is measured: the report says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SplitMethod {
    /// Switches are seen on every episode through the perf user page; else only on
    /// the episodes whose counters are sampled (getrusage), and scaled up.
    pub every_episode: bool,
    /// On-CPU time from the page's time fields (`cap_user_time`); else from
    /// `CLOCK_THREAD_CPUTIME_ID`, read when a switch was seen.
    pub page_time: bool,
    /// The run-queue wait (queued time) from `/proc/thread-self/schedstat`; else the
    /// off-CPU time is not split into queued and blocked.
    pub schedstat: bool,
    /// Migrations counted on every episode through their own counter's page: only
    /// where sampling was asked for (`CounterSampling::Every`); the default holds one
    /// perf event per thread, as each costs the kernel time at every switch.
    pub migrations: bool,
    /// Switches seen through rseq (`counters/rseq.rs`: one load, no perf event) and
    /// counted by getrusage after each switch; else through the perf user page.
    pub rseq: bool,
}

impl std::fmt::Display for SplitMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let switches = if self.rseq {
            "switches seen on every episode (rseq; counted by getrusage after a switch)"
        } else if self.every_episode {
            "switches seen on every episode (perf user page)"
        } else {
            "switches seen on sampled episodes (getrusage), scaled"
        };
        let cpu = match (self.page_time, self.every_episode) {
            (true, _) => "on-CPU time from the page's clock (cap_user_time)",
            (false, true) => "on-CPU time from CLOCK_THREAD_CPUTIME_ID at switches",
            (false, false) => "on-CPU time from CLOCK_THREAD_CPUTIME_ID",
        };
        let queue = if self.schedstat {
            "queued = schedstat run-queue wait"
        } else {
            "queued n/a (no schedstat)"
        };
        write!(f, "{switches}; {cpu}; {queue}")?;
        if self.rseq {
            f.write_str(
                "; migrations and page faults n/a: no perf event per thread by default \
                 (YIELDPROF_COUNTERS_EVERY=N opens their counters)",
            )?;
        } else if self.every_episode && !self.migrations {
            f.write_str(
                "; migrations and page faults n/a: one perf event per thread by default \
                 (YIELDPROF_COUNTERS_EVERY=N opens their counters too)",
            )?;
        }
        Ok(())
    }
}
