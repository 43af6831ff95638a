//! Checks a report against itself: parts within totals, shares within 0..=1, quantiles
//! in order, per-episode figures that multiply back to their totals, no estimate above
//! the exact total it is part of. A report that fails one says something false.

use super::{Count, Counters, Document, Durations};

impl Document {
    /// Every way this report contradicts itself; empty when it is consistent.
    ///
    /// ```
    /// let doc = yieldprof::snapshot().json(&yieldprof::report::Costs::current());
    /// assert_eq!(doc.inconsistencies(), Vec::<String>::new());
    /// ```
    pub fn inconsistencies(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |ok: bool, what: String| {
            if !ok {
                out.push(what);
            }
        };
        let t = &self.totals;
        check(
            t.wait_ns <= t.thread_ns,
            format!("total wait {} > thread time {}", t.wait_ns, t.thread_ns),
        );
        check(
            unit(t.wait_share),
            format!("total wait share {}", t.wait_share),
        );
        let listed: u64 = self.threads.iter().map(|th| th.threads).sum();
        check(
            t.threads == listed,
            format!("{} threads in totals, {listed} listed", t.threads),
        );
        for th in &self.threads {
            let who = format!("thread {}", th.name);
            check(
                th.wait_ns <= th.wall_ns,
                format!("{who}: wait {} > wall {}", th.wait_ns, th.wall_ns),
            );
            check(
                th.wait_ns + th.work_ns == th.wall_ns,
                format!("{who}: wait + work != wall"),
            );
            check(
                th.jobs_off_cpu_ns <= th.wait_ns,
                format!(
                    "{who}: jobs off-CPU {} > wait {}",
                    th.jobs_off_cpu_ns, th.wait_ns
                ),
            );
            check(
                th.unmarked_work_ns <= th.work_ns,
                format!(
                    "{who}: unmarked work {} > work {}",
                    th.unmarked_work_ns, th.work_ns
                ),
            );
            check(
                unit(th.wait_share),
                format!("{who}: wait share {}", th.wait_share),
            );
            check(
                unit(th.fragmentation.short_share),
                format!("{who}: short share {}", th.fragmentation.short_share),
            );
            if let Some(q) = th.run_queue_ns {
                check(
                    q <= th.wall_ns,
                    format!("{who}: run-queue wait {q} > wall {}", th.wall_ns),
                );
            }
            // A merged entry's wall is its threads' together: each within the age.
            if let Some(age) = self.run.duration_ns {
                let most = age.saturating_mul(th.threads.max(1));
                check(
                    th.wall_ns <= most,
                    format!(
                        "{who}: wall {} > the process's age {age} × {} threads",
                        th.wall_ns, th.threads
                    ),
                );
            }
            for (event, total, part) in pairs(&th.counters, &th.counters_in_wait) {
                check(
                    part <= total,
                    format!("{who}: {event} in waits {part} > its total {total}"),
                );
            }
            // Before its first record and in its waits are two parts of one whole.
            for (event, total, before) in th
                .counters_before_recording
                .iter()
                .flat_map(|b| pairs(&th.counters, b))
            {
                let in_wait = pairs(&th.counters, &th.counters_in_wait)
                    .find_map(|(e, _, part)| (e == event).then_some(part))
                    .unwrap_or(0);
                check(
                    before + in_wait <= total,
                    format!("{who}: {event} before recording {before} + in waits {in_wait} > its total {total}"),
                );
            }
        }
        let by_threads: u64 = self
            .threads
            .iter()
            .map(|t| t.returned_without_waiting)
            .sum();
        let by_sites: u64 = self.sites.iter().map(|s| s.returned_without_waiting).sum();
        check(
            by_threads == by_sites,
            format!(
                "episodes returned without waiting: {by_threads} over threads, {by_sites} over sites"
            ),
        );
        for s in &self.sites {
            let who = format!("site {}", s.name);
            check(
                s.self_ns <= s.wall_ns,
                format!("{who}: own time {} > wall {}", s.self_ns, s.wall_ns),
            );
            let own = &s.own;
            let outside = own.spin_ns
                + own.on_cpu_ns
                + own.off_cpu_ns
                + own.unexplained_ns
                + own.unmarked_work_ns;
            // The profiler's time inside the site's frames is in its own time, apart.
            check(
                s.spin_ns == own.spin_ns && outside + s.in_calls_ns + s.profiler_ns == s.self_ns,
                format!(
                    "{who}: own time outside calls {outside} + in calls {} + profiler {} != \
                     own time {}",
                    s.in_calls_ns, s.profiler_ns, s.self_ns
                ),
            );
            let exact = |c: Option<Count>| c.filter(|c| !c.estimated).map(|c| c.value);
            let t = &s.time;
            // Parts of the own time named on or off the CPU within the site's figures
            // (estimated ones too: the own split is derived from the same estimate).
            let any = |c: Option<Count>| c.map(|c| c.value);
            // Clocks read a few ns apart at each end of every episode.
            let slack = s.wall_ns / 100 + 1_000 * s.episodes;
            if let (Some(on), Some(off)) = (any(t.on_cpu_ns), any(t.off_cpu_ns)) {
                // Not `[unmarked work]`: a stretch never switched is on the CPU where
                // the site's split, apportioned or not read yet, says otherwise.
                check(
                    own.spin_ns + own.on_cpu_ns <= on + slack,
                    format!(
                        "{who}: own [spin] {} + [on-cpu] {} > on-CPU {on}",
                        own.spin_ns, own.on_cpu_ns
                    ),
                );
                check(
                    own.off_cpu_ns <= off + slack,
                    format!("{who}: own [off-cpu] {} > off-CPU {off}", own.off_cpu_ns),
                );
            }
            if let (Some(on), Some(off)) = (exact(t.on_cpu_ns), exact(t.off_cpu_ns)) {
                check(
                    on + off <= s.wall_ns + slack,
                    format!("{who}: on-CPU {on} + off-CPU {off} > wall {}", s.wall_ns),
                );
                if let (Some(q), Some(b)) = (exact(t.queued_ns), exact(t.blocked_ns)) {
                    check(
                        q + b == off,
                        format!("{who}: queued {q} + blocked {b} != off-CPU {off}"),
                    );
                }
            }
            check(
                unit(s.fragmentation.short_share),
                format!("{who}: short share {}", s.fragmentation.short_share),
            );
            let d = &s.durations;
            let (order, known) = quantiles(d);
            check(
                known.windows(2).all(|w| w[0] <= w[1]),
                format!("{who}: quantiles out of order {order:?}"),
            );
            for k in &s.call_durations {
                let (order, known) = quantiles(&k.durations);
                check(
                    known.windows(2).all(|w| w[0] <= w[1]) && known.is_empty() == (k.calls == 0),
                    format!("{who}: {} calls {}, quantiles {order:?}", k.kind, k.calls),
                );
                let made: u64 = s
                    .calls
                    .iter()
                    .filter(|c| c.kind == k.kind)
                    .map(|c| c.calls)
                    .sum();
                check(
                    k.calls <= made,
                    format!("{who}: {} {} calls timed, {made} made", k.calls, k.kind),
                );
            }
            // Episodes that returned without waiting were never timed.
            let timed = s.episodes.checked_sub(s.returned_without_waiting);
            check(
                timed.is_some(),
                format!(
                    "{who}: {} returned without waiting of {} episodes",
                    s.returned_without_waiting, s.episodes
                ),
            );
            check(
                known.is_empty() == (timed == Some(0)),
                format!(
                    "{who}: {} episodes ({} returned without waiting) but quantiles {order:?}",
                    s.episodes, s.returned_without_waiting
                ),
            );
            check(
                s.open_ns <= s.wall_ns,
                format!("{who}: open {} > wall {}", s.open_ns, s.wall_ns),
            );
            if let Some(max) = d.max_ns {
                // An async episode's span also holds its time between polls.
                let span = s.wall_ns + s.suspended_ns;
                check(
                    max <= span,
                    format!(
                        "{who}: longest episode {max} > wall {} + suspended {}",
                        s.wall_ns, s.suspended_ns
                    ),
                );
            }
            // Calls made in episodes still open have no returned episode to share: a
            // site whose only episodes are open gives them per open episode.
            let per_closed = s.episodes > 0 || s.open_ns == 0;
            for c in s.calls.iter().filter(|_| per_closed) {
                let back = c.per_episode * s.episodes as f64;
                check(
                    (back - c.calls as f64).abs() <= 1e-6 * c.calls.max(1) as f64,
                    format!(
                        "{who}: {} calls at line {}: {} per episode × {} episodes",
                        c.calls, c.line, c.per_episode, s.episodes
                    ),
                );
            }
            if let Some(Some(v)) = s.counters.events.get("voluntary-switches") {
                check(
                    !v.estimated || v.value <= thread_total(self, "voluntary-switches"),
                    format!(
                        "{who}: estimated voluntary switches {} above every thread's total",
                        v.value
                    ),
                );
            }
        }
        out
    }
}

fn unit(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// `(event, total, part)` for each event counted exactly in both.
fn pairs<'a>(total: &'a Counters, part: &'a Counters) -> impl Iterator<Item = (&'a str, u64, u64)> {
    total
        .events
        .iter()
        .filter_map(|(e, t)| match (t, part.events.get(e)) {
            (
                Some(Count {
                    value: t,
                    estimated: false,
                }),
                Some(Some(Count {
                    value: p,
                    estimated: false,
                })),
            ) => Some((e.as_str(), *t, *p)),
            _ => None,
        })
}

/// `event` summed over every thread's exact totals.
fn thread_total(doc: &Document, event: &str) -> u64 {
    doc.threads
        .iter()
        .filter_map(|t| t.counters.events.get(event).copied().flatten())
        .map(|c| c.value)
        .sum()
}

/// Quantiles in order from min to max, and those that are known.
fn quantiles(d: &Durations) -> ([Option<u64>; 6], Vec<u64>) {
    let order = [
        d.min_ns,
        d.median_ns,
        d.p90_ns,
        d.p99_ns,
        d.p999_ns,
        d.max_ns,
    ];
    (order, order.iter().flatten().copied().collect())
}

#[cfg(test)]
mod tests {
    use crate::analysis::costs::Costs;
    use crate::record::thread::snapshot;

    #[test]
    fn a_consistent_report_passes_and_each_contradiction_is_named() {
        let mut doc = snapshot().json(&Costs::quick());
        assert_eq!(doc.inconsistencies(), Vec::<String>::new());
        doc.totals.wait_ns = doc.totals.thread_ns + 1;
        doc.totals.wait_share = 1.5;
        let found = doc.inconsistencies();
        assert!(
            found.iter().any(|f| f.starts_with("total wait ")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.starts_with("total wait share 1.5")),
            "{found:?}"
        );
    }
}
