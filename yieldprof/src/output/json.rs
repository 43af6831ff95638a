//! `<name>.json`: the summary's data for tools.
//!
//! The schema is in the docs of [`Profile::json`].

use crate::analysis::costs::Costs;
use crate::analysis::findings::Fragmentation;
use crate::base::text::share;
use crate::counters::{capabilities, Availability, Count, CounterEvent, Counters};
use crate::model::profile::{totals, Profile};
use serde_json::{json, Map, Value};

fn count(c: Count) -> Value {
    match c {
        Count::NotAvailable => Value::Null,
        Count::Exact(v) => json!({ "value": v, "estimated": false }),
        Count::Scaled(v) => json!({ "value": v, "estimated": true }),
    }
}

fn counters(c: &Counters) -> Value {
    let mut m: Map<String, Value> = CounterEvent::ALL
        .iter()
        .map(|&e| (e.name().to_string(), count(c.get(e))))
        .collect();
    m.insert("sampled".into(), json!(c.sampled));
    Value::Object(m)
}

fn fragmentation(f: Fragmentation) -> Value {
    json!({ "episodes_per_s": f.episodes_per_s, "short_share": f.short_share })
}

impl Profile {
    /// The report as JSON, as written to `<name>.json`.
    ///
    /// Schema `yieldprof/1` (times in ns; a counter is `null` where it could not be
    /// counted, else `{"value": n, "estimated": bool}`):
    ///
    /// ```text
    /// {
    ///   "schema": "yieldprof/1",
    ///   "costs": { "spin_ns", "yield_ns", "switch_ns", "timer_slack_ns", "cores", "source" },
    ///   "totals": { "threads", "thread_ns", "wait_ns", "wait_share" },
    ///   "findings": [ { "rule", "subject", "location", "evidence", "fix" } ],
    ///   "threads": [ { "name", "tid", "exited", "wall_ns", "wait_ns", "work_ns",
    ///                  "wait_share", "overflowed", "run_queue_ns", "counter_source",
    ///                  "counters": { <event>: counter, ... },
    ///                  "counters_in_wait": { <event>: counter, ... },
    ///                  "fragmentation": { "episodes_per_s", "short_share" } } ],
    ///   "sites": [ { "name", "path", "file", "line", "episodes", "wall_ns", "self_ns",
    ///                "spin_ns", "blocked_ns",
    ///                "durations": { "min_ns", "median_ns", "p99_ns", "max_ns" },
    ///                "fragmentation": { "episodes_per_s", "short_share" },
    ///                "counters": { <event>: counter, ..., "sampled": n },
    ///                "calls": [ { "kind", "file", "line", "column", "calls", "ns",
    ///                             "per_episode" } ] } ],
    ///   "sharing": [ { "verdict", "address", "size", "invalidations",
    ///                  "false_invalidations", "contended_invalidations", "sample_every",
    ///                  "words": [ { "offset", "name", "invalidations",
    ///                               "threads": [ { "thread", "reads", "writes" } ] } ],
    ///                  "wait_sites": [ { "name", "reads" } ], "fix" } ],
    ///   "capabilities": { "paranoid", "fd_budget", "fds_in_use",
    ///                     "events": [ { "event", "source", "available", "reason" } ] }
    /// }
    /// ```
    ///
    /// `<event>` is a `perf list` style name such as `voluntary-switches` or
    /// `cache-misses`. Sites are sorted by wall time, costliest first, as in the text.
    ///
    /// ```
    /// let v = yieldprof::snapshot().json(&yieldprof::report::Costs::current());
    /// assert_eq!(v["schema"], "yieldprof/1");
    /// ```
    pub fn json(&self, costs: &Costs) -> Value {
        let threads = self.threads();
        let (wall, wait) = totals(&threads);
        let frag = self.thread_fragmentation(costs);
        let threads_json: Vec<Value> = threads
            .iter()
            .zip(frag)
            .map(|(t, f)| {
                json!({
                    "name": t.name, "tid": t.tid, "exited": t.exited,
                    "wall_ns": t.wall_ns, "wait_ns": t.wait_ns, "work_ns": t.work_ns,
                    "wait_share": share(t.wait_ns, t.wall_ns), "overflowed": t.overflowed,
                    "run_queue_ns": t.run_queue_ns,
                    "counter_source": t.counter_source.to_string(),
                    "counters": counters(&t.counters),
                    "counters_in_wait": counters(&t.counters_in_wait),
                    "fragmentation": fragmentation(f),
                })
            })
            .collect();
        let sites: Vec<Value> = self
            .sites()
            .iter()
            .map(|s| {
                let h = &s.durations;
                let calls: Vec<Value> = s
                    .calls
                    .iter()
                    .map(|c| {
                        json!({
                            "kind": c.site.kind.name(), "file": c.site.file,
                            "line": c.site.line, "column": c.site.column,
                            "calls": c.calls, "ns": c.ns,
                            "per_episode": share(c.calls, s.episodes),
                        })
                    })
                    .collect();
                json!({
                    "name": s.name, "path": s.path, "file": s.file, "line": s.line,
                    "episodes": s.episodes, "wall_ns": s.wall_ns, "self_ns": s.self_ns,
                    "spin_ns": s.spin_ns(), "blocked_ns": s.self_ns.saturating_sub(s.spin_ns()),
                    "durations": {
                        "min_ns": h.min(), "median_ns": h.quantile(0.5),
                        "p99_ns": h.quantile(0.99), "max_ns": h.max(),
                    },
                    "fragmentation": fragmentation(self.site_fragmentation(s, costs)),
                    "counters": counters(&s.counters),
                    "calls": calls,
                })
            })
            .collect();
        let sharing: Vec<Value> = self
            .sharing()
            .iter()
            .map(|l| {
                let words: Vec<Value> = l
                    .words
                    .iter()
                    .map(|w| {
                        let threads: Vec<Value> = w
                            .threads
                            .iter()
                            .map(|a| json!({ "thread": a.thread, "reads": a.reads, "writes": a.writes }))
                            .collect();
                        json!({ "offset": w.offset, "name": w.name,
                                "invalidations": w.invalidations, "threads": threads })
                    })
                    .collect();
                let spinning: Vec<Value> = l
                    .wait_sites
                    .iter()
                    .map(|w| json!({ "name": w.name, "reads": w.reads }))
                    .collect();
                json!({
                    "verdict": l.verdict.to_string(), "address": l.address, "size": l.size,
                    "invalidations": l.invalidations,
                    "false_invalidations": l.false_invalidations,
                    "contended_invalidations": l.contended_invalidations,
                    "sample_every": l.sample_every, "words": words,
                    "wait_sites": spinning, "fix": l.fix,
                })
            })
            .collect();
        let caps = capabilities();
        let events: Vec<Value> = caps
            .events
            .iter()
            .map(|e| {
                let reason = match e.availability {
                    Availability::Available => Value::Null,
                    Availability::Unavailable(r) => json!(r.to_string()),
                };
                json!({
                    "event": e.event.name(), "source": e.event.source().name(),
                    "available": e.availability.is_available(), "reason": reason,
                })
            })
            .collect();
        let findings: Vec<Value> = self
            .findings(costs)
            .iter()
            .map(|f| {
                json!({ "rule": f.rule.name(), "subject": f.subject, "location": f.location,
                        "evidence": f.evidence, "fix": f.fix })
            })
            .collect();
        json!({
            "schema": "yieldprof/1",
            "costs": {
                "spin_ns": costs.spin_ns, "yield_ns": costs.yield_ns,
                "switch_ns": costs.switch_ns, "timer_slack_ns": costs.timer_slack_ns,
                "cores": costs.cores, "source": costs.source,
            },
            "totals": {
                "threads": threads.len(), "thread_ns": wall, "wait_ns": wait,
                "wait_share": share(wait, wall),
            },
            "findings": findings,
            "threads": threads_json,
            "sites": sites,
            "sharing": sharing,
            "capabilities": {
                "paranoid": caps.paranoid, "fd_budget": caps.fd_budget,
                "fds_in_use": caps.fds_in_use, "events": events,
            },
        })
    }
}
