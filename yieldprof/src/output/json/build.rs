//! A [`Profile`] into the schema's types.

use super::{
    Asked, Backoff, Call, Capabilities, Costs, Count, Counters, Document, Durations, EventStatus,
    Finding, Fragmentation, Held, KindDurations, Line, OwnTime, Run, Site, SpinningSite, Thread,
    ThreadAccess, TimeSplit, Totals, Watchpoints, Word, SCHEMA,
};
use crate::analysis::costs::Costs as MachineCosts;
use crate::analysis::findings;
use crate::counters::{self, CounterEvent};
use crate::model::histogram::Histogram;
use crate::model::profile::{thread_count, totals, Profile};
use crate::sharing::{LineVerdict, WatchpointState};

fn count(c: counters::Count) -> Option<Count> {
    match c {
        counters::Count::NotAvailable => None,
        counters::Count::Exact(value) => Some(Count {
            value,
            estimated: false,
        }),
        counters::Count::Scaled(value) => Some(Count {
            value,
            estimated: true,
        }),
    }
}

fn counters(c: &counters::Counters) -> Counters {
    Counters {
        events: CounterEvent::ALL
            .iter()
            .map(|&e| (e.name().to_string(), count(c.get(e))))
            .collect(),
        sampled: c.sampled,
    }
}

fn time_split(t: &counters::TimeSplit) -> TimeSplit {
    TimeSplit {
        on_cpu_ns: count(t.on_cpu_ns),
        off_cpu_ns: count(t.off_cpu_ns),
        queued_ns: count(t.queued_ns),
        blocked_ns: count(t.blocked_ns),
        estimated_episodes: t.estimated_episodes,
    }
}

fn fragmentation(f: findings::Fragmentation) -> Fragmentation {
    Fragmentation {
        // 0 where the report gives none: too little time for a rate, no timed episode.
        episodes_per_s: f.episodes_per_s.unwrap_or(0.0),
        short_share: f.short_share.unwrap_or(0.0),
    }
}

fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

fn line(l: &LineVerdict) -> Line {
    let words = l.words.iter().map(|w| Word {
        offset: w.offset as u64,
        size: w.size as u64,
        name: w.name.clone(),
        invalidations: w.invalidations,
        threads: w
            .threads
            .iter()
            .map(|a| ThreadAccess {
                thread: a.thread.clone(),
                reads: a.reads,
                writes: a.writes,
            })
            .collect(),
    });
    let wait_sites = l.wait_sites.iter().map(|w| SpinningSite {
        name: w.name.clone(),
        reads: w.reads,
    });
    Line {
        verdict: l.verdict.to_string(),
        address: l.address as u64,
        size: l.size as u64,
        invalidations: l.invalidations,
        false_invalidations: l.false_invalidations,
        contended_invalidations: l.contended_invalidations,
        sample_every: l.sample_every,
        words: words.collect(),
        wait_sites: wait_sites.collect(),
        fix: l.fix.clone(),
        note: l.note.clone(),
        confidence: l.confidence,
        evidence: l.evidence.clone(),
    }
}

fn capabilities() -> Capabilities {
    let caps = counters::capabilities();
    let events = caps.events.iter().map(|e| EventStatus {
        event: e.event.name().to_string(),
        source: e.event.source().name().to_string(),
        available: e.availability.is_available(),
        reason: e.availability.reason().map(|r| r.to_string()),
    });
    Capabilities {
        paranoid: caps.paranoid,
        fd_budget: caps.fd_budget as u64,
        fds_in_use: caps.fds_in_use as u64,
        events: events.collect(),
    }
}

impl Profile {
    /// The report as written to `<name>.json`: schema `yieldprof/3`, described in
    /// [`crate::report::json`]. A tool reads it back with `serde_json` or any serde reader.
    ///
    /// ```
    /// let report = yieldprof::snapshot().json(&yieldprof::report::Costs::current());
    /// assert_eq!(report.schema, "yieldprof/3");
    /// assert_eq!(report.run.version, env!("CARGO_PKG_VERSION"));
    /// ```
    pub fn json(&self, costs: &MachineCosts) -> Document {
        let threads = self.thread_views();
        let (wall, wait) = totals(threads);
        let frag = self.thread_fragmentation(costs);
        let thread_rows = threads.iter().zip(frag).map(|(t, f)| Thread {
            name: t.name.clone(),
            threads: t.threads,
            tid: t.tid,
            exited: t.exited,
            wall_ns: t.wall_ns,
            wait_ns: t.wait_ns,
            work_ns: t.work_ns,
            jobs_off_cpu_ns: t.jobs_off_cpu_ns,
            unmarked_work_ns: t.unmarked_work_ns,
            wait_share: share(t.wait_ns, t.wall_ns),
            overflowed: t.overflowed,
            reentries_skipped: t.reentries_skipped,
            entries_after_exit: t.entries_after_exit,
            returned_without_waiting: t.returned_without_waiting,
            run_queue_ns: t.run_queue_ns,
            cpu_ns: t.cpu_ns,
            counter_source: t.counter_source.to_string(),
            counters: counters(&t.counters),
            counters_in_wait: counters(&t.counters_in_wait),
            counters_before_recording: Some(counters(&t.counters_before_recording)),
            time_in_wait: time_split(&t.time_in_wait),
            split_method: t.split_method.map(|m| m.to_string()),
            fragmentation: fragmentation(f),
            profiler_ns: t.profiler_ns,
        });
        let falsely_shared: Vec<&str> = self
            .false_sharing_frames()
            .into_iter()
            .map(|f| self.frames[f as usize].name.as_str())
            .collect();
        let sites = self.site_views().iter().map(|s| {
            let h = &s.durations;
            let calls = s.calls.iter().map(|c| Call {
                kind: c.site.kind.name().to_string(),
                file: c.site.file.to_string(),
                line: c.site.line,
                column: c.site.column,
                calls: c.calls,
                ns: c.ns,
                per_episode: share(c.calls, s.episodes),
                in_async: c.site.in_async,
                asked: c.asked.map(|a| Asked {
                    calls: a.calls,
                    min_ns: a.min_ns,
                    max_ns: a.max_ns,
                    mean_ns: a.mean_ns,
                }),
                held: c.held.map(|h| Held {
                    max_ns: h.max_ns,
                    delayed_polls: h.delayed_polls,
                    delayed_ns: h.delayed_ns,
                    delayed_max_ns: h.delayed_max_ns,
                }),
                backoff: c.backoff.map(|b| Backoff {
                    spun: b.spun,
                    spun_ns: b.spun_ns,
                    yielded: b.yielded,
                    yielded_ns: b.yielded_ns,
                }),
            });
            Site {
                spin_ns: s.spin_ns(),
                in_calls_ns: s.calls.iter().map(|c| c.ns).sum(),
                time: time_split(&s.time),
                own: OwnTime {
                    spin_ns: s.own.spin_ns,
                    on_cpu_ns: s.own.on_cpu_ns,
                    off_cpu_ns: s.own.off_cpu_ns,
                    unexplained_ns: s.own.unexplained_ns,
                    unmarked_work_ns: s.own.unmarked_work_ns,
                },
                profiler_ns: s.profiler_ns,
                durations: durations(h),
                call_durations: s
                    .call_durations
                    .iter()
                    .map(|(kind, h)| KindDurations {
                        kind: kind.name().to_string(),
                        calls: h.count(),
                        durations: durations(h),
                    })
                    .collect(),
                fragmentation: fragmentation(self.site_fragmentation(s, costs)),
                counters: counters(&s.counters),
                calls: calls.collect(),
                false_sharing: falsely_shared.contains(&s.name.as_str()),
                file: s.file.to_string(),
                line: s.line,
                episodes: s.episodes,
                returned_without_waiting: s.returned_without_waiting,
                wall_ns: s.wall_ns,
                self_ns: s.self_ns,
                suspended_ns: s.suspended_ns,
                open_ns: s.open_ns,
                name: s.name.clone(),
                path: s.path.clone(),
            }
        });
        let findings = self.findings(costs).into_iter().map(|f| Finding {
            rule: f.rule.name().to_string(),
            subject: f.subject,
            location: f.location,
            evidence: f.evidence,
            fix: f.fix,
        });
        Document {
            schema: SCHEMA.to_string(),
            run: Run::current(),
            costs: Costs {
                spin_ns: costs.spin_ns,
                yield_ns: costs.yield_ns,
                switch_ns: costs.switch_ns,
                timer_slack_ns: costs.timer_slack_ns,
                cores: costs.cores as u64,
                source: costs.source.to_string(),
                switch_measured: costs.switch_measured,
            },
            totals: Totals {
                threads: thread_count(threads),
                thread_ns: wall,
                wait_ns: wait,
                wait_share: share(wait, wall),
            },
            findings: findings.collect(),
            threads: thread_rows.collect(),
            sites: sites.collect(),
            sharing: self.sharing().iter().map(line).collect(),
            watchpoints: watchpoints(),
            capabilities: capabilities(),
            locks: super::locks::locks(&self.locks()),
        }
    }
}

fn durations(h: &Histogram) -> Durations {
    Durations {
        min_ns: h.min(),
        median_ns: h.quantile(0.5),
        p90_ns: h.quantile(0.9),
        p99_ns: h.quantile(0.99),
        p999_ns: h.quantile(0.999),
        max_ns: h.max(),
    }
}

fn watchpoints() -> Option<Watchpoints> {
    let w = crate::sharing::watchpoints();
    let (state, reason) = match w.state {
        WatchpointState::Unused => return None,
        WatchpointState::Off => ("off", None),
        WatchpointState::Armed => ("armed", w.refusal.filter(|_| w.refused > 0)),
        WatchpointState::Unavailable(r) => ("unavailable", Some(r)),
    };
    Some(Watchpoints {
        state: state.into(),
        reason: reason.map(|r| r.to_string()),
        threads: w.watched,
        over_cap: w.over_cap,
        refused: w.refused,
        hits: w.hits,
        lost: w.lost,
        rate: w.rate,
        note: w.to_string(),
    })
}
