//! The plain-text summary: where each thread's time went and what each wait site did.
//! Lines stay within 100 columns.

use crate::analysis::blocking::held_line;
use crate::analysis::findings::RATE_FLOOR_NS;
use crate::analysis::slack::asked_vs_got;
use crate::base::site::Kind;
use crate::base::text::{count, duration, percent, tail, wrap};
use crate::counters::{Count, TimeSplit};
use crate::model::merged::listed_rest;
use crate::model::profile::{thread_count, totals, Profile, ThreadStats};
use crate::record::exited::MAX_EXITED_THREADS;
use std::fmt::Write;

/// `3 threads, 1.20 s thread time, 18.0% of it waiting`.
fn headline(threads: &[ThreadStats]) -> String {
    let (wall, wait) = totals(threads);
    format!(
        "{}, {} thread time, {:.1}% of it waiting",
        count(thread_count(threads), "thread"),
        duration(wall),
        percent(wait, wall)
    )
}

/// Threads listed one by one in the text; the JSON has them all.
const THREAD_ROWS: usize = 64;

/// Longest-lived first.
fn by_wall(threads: &[ThreadStats]) -> Vec<ThreadStats> {
    let mut t = threads.to_vec();
    t.sort_by_key(|t| std::cmp::Reverse(t.wall_ns));
    t
}

/// The threads the text lists: all of them, or the `THREAD_ROWS` longest-lived.
fn shown(threads: &[ThreadStats]) -> Vec<ThreadStats> {
    if threads.len() <= THREAD_ROWS {
        return threads.to_vec();
    }
    let mut t = by_wall(threads);
    t.truncate(THREAD_ROWS);
    t
}

/// One line for the threads `shown` leaves out.
fn write_rest(threads: &[ThreadStats], s: &mut String) {
    if threads.len() <= THREAD_ROWS {
        return;
    }
    let all = by_wall(threads);
    let rest = &all[THREAD_ROWS..];
    let wall: u64 = rest.iter().map(|t| t.wall_ns).sum();
    let wait: u64 = rest.iter().map(|t| t.wait_ns).sum();
    let more = thread_count(rest);
    let _ = writeln!(
        s,
        "  ... {more} more {}: {} in all, {:.1}% of it waiting (each row is in the JSON)",
        if more == 1 { "thread" } else { "threads" },
        duration(wall),
        percent(wait, wall)
    );
}

/// What a written report merged, where it did.
fn write_merged(threads: &[ThreadStats], s: &mut String) {
    for t in threads.iter().filter(|t| t.threads > 1) {
        let line = if t.name == listed_rest(t.threads) {
            format!(
                "{}: the threads past the {} that waited longest, merged into one row and \
                 one stack root (YIELDPROF_REPORT_THREADS=all lists every one)",
                t.name,
                threads.len() - 1
            )
        } else {
            format!(
                "{}: {} threads that exited after the first {MAX_EXITED_THREADS}, kept merged \
                 by name in one row and one stack root",
                t.name, t.threads
            )
        };
        let _ = writeln!(s, "{}", wrap(&line, "  ", "    "));
    }
}

/// Entries a thread made that are not in its figures, and why.
fn write_missed(threads: &[ThreadStats], s: &mut String) {
    for t in threads {
        if t.reentries_skipped > 0 {
            let _ = writeln!(
                s,
                "  {}: {} entries skipped: they interrupted yieldprof on this thread (a signal handler)",
                t.name, t.reentries_skipped
            );
        }
        if t.entries_after_exit > 0 {
            let _ = writeln!(
                s,
                "  {}: {} entries after its recording ended (a thread-local destructor or atexit handler running after yieldprof's), not recorded",
                t.name, t.entries_after_exit
            );
        }
    }
}

/// The part of the work column that ran inside wait sites with no frame around it.
fn write_unmarked(threads: &[ThreadStats], s: &mut String) {
    let work: u64 = threads.iter().map(|t| t.unmarked_work_ns).sum();
    let wall: u64 = threads.iter().map(|t| t.wall_ns).sum();
    if work > 0 {
        let _ = writeln!(
            s,
            "  of the work, {} ({:.1}%) ran inside wait sites, no frame around it: [unmarked work]",
            duration(work),
            percent(work, wall)
        );
    }
}

impl Profile {
    /// `3 threads, 1.20 s thread time, 18.0% of it waiting`: the totals at a glance.
    pub fn headline(&self) -> String {
        headline(self.thread_views())
    }

    /// The text summary written to `<name>.txt`.
    ///
    /// ```
    /// let text = yieldprof::snapshot().summary();
    /// assert!(text.starts_with("yieldprof summary"));
    /// ```
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let threads = self.thread_views();
        let _ = writeln!(s, "yieldprof summary: {}", headline(threads));
        let costs = crate::analysis::costs::Costs::current();
        self.write_findings(&costs, &mut s);
        if let Some(budgets) = crate::analysis::declared::declared_budgets(self) {
            let _ = write!(s, "\n{budgets}");
        }
        let _ = writeln!(s, "\nThreads");
        let _ = writeln!(
            s,
            "  {:<32} {:>7} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "thread", "tid", "wall", "wait %", "work %", "CPU %", "queued %", "overflow"
        );
        let share = |ns: Option<u64>, wall| {
            ns.map_or("n/a".into(), |v| format!("{:.1}%", percent(v, wall)))
        };
        for t in shown(threads) {
            let _ = writeln!(
                s,
                "  {:<32} {:>7} {:>12} {:>7.1}% {:>7.1}% {:>8} {:>8} {:>8}",
                // Wide enough for `[999999 other threads] (exited)`.
                tail(
                    &format!("{}{}", t.name, if t.exited { " (exited)" } else { "" }),
                    32
                ),
                t.tid,
                duration(t.wall_ns),
                percent(t.wait_ns, t.wall_ns),
                percent(t.work_ns, t.wall_ns),
                share(t.cpu_ns, t.wall_ns),
                share(t.run_queue_ns, t.wall_ns),
                t.overflowed
            );
        }
        write_rest(threads, &mut s);
        write_merged(threads, &mut s);
        write_missed(threads, &mut s);
        write_unmarked(threads, &mut s);
        let sites = self.site_views();
        let _ = writeln!(s, "\nWait sites (by wall time)");
        if sites.is_empty() {
            let _ = writeln!(
                s,
                "  none recorded: annotate wait loops with #[instrument_wait]"
            );
        }
        for site in sites {
            let _ = writeln!(
                s,
                "  {}  ({}:{})",
                tail(&site.name, 60),
                tail(site.file, 30),
                site.line
            );
            let per = |n: u64| n as f64 / site.episodes.max(1) as f64;
            let timed = site.timed_episodes();
            // An async site's histogram holds whole episodes (first poll to completion),
            // its wall time only the polls: each line says which it covers.
            let polled = site.suspended_ns > 0;
            if polled {
                let span = site.wall_ns + site.suspended_ns;
                let _ = writeln!(
                    s,
                    "    {} episodes, {} span (first poll to completion), {} mean span",
                    site.episodes,
                    duration(span),
                    duration(span / site.episodes.max(1)),
                );
            } else if site.episodes == 0 && site.open_ns > 0 {
                // A worker's whole life in one wait: no mean of episodes to give yet.
                let _ = writeln!(
                    s,
                    "    no episode returned yet, {} wall, all of it open",
                    duration(site.wall_ns),
                );
            } else {
                let _ = writeln!(
                    s,
                    "    {} episodes, {} wall, {} mean",
                    site.episodes,
                    duration(site.wall_ns),
                    duration(site.wall_ns / site.episodes.max(1)),
                );
            }
            if site.returned_without_waiting > 0 {
                // Timed from the first wait: the wall time is the other episodes'.
                let _ = writeln!(
                    s,
                    "    returned without waiting: {} (not timed); waited: {timed}, {} mean",
                    site.returned_without_waiting,
                    duration(site.wall_ns / timed.max(1)),
                );
            }
            if site.open_ns > 0 {
                let _ = writeln!(
                    s,
                    "    open at this report: {} of its time is episodes not yet returned, \
                     counted up to now",
                    duration(site.open_ns),
                );
            }
            if polled {
                let span = site.wall_ns + site.suspended_ns;
                let _ = writeln!(
                    s,
                    "    async: {} polled ({} mean per episode), {} suspended between polls \
                     ({:.1}% of the span)",
                    duration(site.wall_ns),
                    duration(site.wall_ns / site.episodes.max(1)),
                    duration(site.suspended_ns),
                    percent(site.suspended_ns, span),
                );
            }
            let _ = writeln!(
                s,
                "    time{}: {}",
                if polled { " (polls)" } else { "" },
                // Every episode returned at once: nothing was timed, counters or not.
                if timed == 0 && site.open_ns == 0 {
                    "none (no episode waited)".into()
                } else {
                    time_split(&site.time)
                }
            );
            let own: Vec<String> = site
                .own
                .leaves()
                .iter()
                .filter(|(_, ns)| *ns > 0)
                .map(|(leaf, ns)| format!("{leaf} {}", duration(*ns)))
                .collect();
            if !own.is_empty() {
                let _ = writeln!(s, "    own time outside calls: {}", own.join(", "));
            }
            if site.profiler_ns > 0 {
                let _ = writeln!(
                    s,
                    "    the profiler's own time in it: [profiler] {}",
                    duration(site.profiler_ns)
                );
            }
            // Left out where no episode waited: there is nothing to say.
            let frag = self.site_fragmentation(site, &costs);
            if let Some(short) = frag.short_share {
                let rate = frag.episodes_per_s.map_or_else(
                    || format!("rate n/a (threads ran < {})", duration(RATE_FLOOR_NS)),
                    |r| format!("{r:.0} waited episodes/s"),
                );
                let _ = writeln!(
                    s,
                    "    fragmentation: {rate}, {:.1}% of episode time in episodes < {}",
                    100.0 * short,
                    duration(costs.switch_ns as u64)
                );
            }
            let q = |x: Option<u64>| x.map_or("-".to_string(), duration);
            let h = &site.durations;
            let _ = writeln!(
                s,
                "    durations{}: min {}, p50 {}, p90 {}, p99 {}, p99.9 {}, max {}",
                if polled {
                    " (first poll to completion)"
                } else {
                    ""
                },
                q(h.min()),
                q(h.quantile(0.5)),
                q(h.quantile(0.9)),
                q(h.quantile(0.99)),
                q(h.quantile(0.999)),
                q(h.max())
            );
            for (kind, h) in &site.call_durations {
                let _ = writeln!(
                    s,
                    "    each {}: min {}, p50 {}, p90 {}, p99 {}, max {} ({} timed)",
                    kind.name(),
                    q(h.min()),
                    q(h.quantile(0.5)),
                    q(h.quantile(0.9)),
                    q(h.quantile(0.99)),
                    q(h.max()),
                    count(h.count(), "call")
                );
            }
            for c in &site.calls {
                let line = format!(
                    "    {:<12} {:>28}:{:<5} {:>10} {} {:>8.1}/episode {:>11}",
                    c.site.kind.name(),
                    tail(c.site.file, 28),
                    c.site.line,
                    c.calls,
                    calls_word(c.site.kind),
                    per(c.calls),
                    if c.site.kind == Kind::Spin {
                        String::new()
                    } else {
                        duration(c.ns)
                    }
                );
                let _ = writeln!(s, "{}", line.trim_end());
                if let Some(a) = &c.asked {
                    let _ = writeln!(s, "      {}", asked_vs_got(site, c, a));
                }
                if let Some(b) = &c.backoff {
                    let _ = writeln!(s, "{}", wrap(&snoozes(b), "      ", "      "));
                }
                if let Some(h) = &c.held {
                    let _ = writeln!(s, "{}", wrap(&held_line(h), "      ", "        "));
                }
            }
            if site.calls.iter().any(|c| c.site.kind == Kind::Lock) {
                let _ = writeln!(s, "      {LOCKS_RECORDED}");
            }
        }
        self.write_sharing(&mut s);
        let locks = self.locks();
        if !locks.is_empty() {
            let _ = write!(s, "\n{locks}");
        }
        self.write_counters(&mut s);
        s
    }
}

impl Profile {
    /// What to change, first: each finding with its evidence and fix.
    fn write_findings(&self, costs: &crate::analysis::costs::Costs, s: &mut String) {
        let findings = self.findings(costs);
        let _ = writeln!(s, "\nFindings ({})", findings.len());
        if findings.is_empty() {
            let _ = writeln!(s, "  none: no wait pattern here calls for a change");
        }
        for f in &findings {
            let at = f
                .location
                .as_ref()
                .map_or(String::new(), |l| format!(" ({l})"));
            let _ = writeln!(s, "  [{}] {}{at}", f.rule.name(), f.subject);
            let _ = writeln!(s, "{}", wrap(&f.evidence, "    evidence: ", "      "));
            let _ = writeln!(s, "{}", wrap(&f.fix, "    fix: ", "      "));
        }
        let costs_line = format!("(costs from {}: {costs})", costs.source);
        let _ = writeln!(s, "{}", wrap(&costs_line, "  ", "   "));
    }

    /// The counter sections: switches per wait site and per thread, then what this
    /// process can count (missing counters print `n/a`, estimates `~N`).
    fn write_counters(&self, s: &mut String) {
        write_site_counters(self.site_views(), s);
        write_thread_counters(self.thread_views(), &self.profiler_time(), s);
        let _ = write!(s, "\n{}", crate::counters::capabilities());
    }
}

/// A backoff line's calls by what they did: `spun 7 calls (140 ns mean), yielded 5
/// (180 ns mean)`.
fn snoozes(b: &crate::base::snoozed::Snoozes) -> String {
    let mean = |ns: u64, n: u64| duration(ns / n.max(1));
    format!(
        "spun {} ({} mean), yielded {} ({} mean): a yield is a sched_yield made inside the \
         call (whole run)",
        count(b.spun, "call"),
        mean(b.spun_ns, b.spun),
        b.yielded,
        mean(b.yielded_ns, b.yielded)
    )
}

/// `on-CPU 2.1 ms, off-CPU 598 ms (blocked 597 ms, queued 1.1 ms)`, `~` where
/// estimated from sampled episodes.
fn time_split(t: &TimeSplit) -> String {
    let d = |c: Count| match c {
        Count::Exact(v) => duration(v),
        Count::Scaled(v) => format!("~{}", duration(v)),
        Count::NotAvailable => "n/a".into(),
    };
    if t.off_cpu_ns == Count::NotAvailable {
        return "on/off-CPU split n/a (counters off)".into();
    }
    let parts = match t.queued_ns {
        Count::NotAvailable => String::new(),
        _ => format!(" (blocked {}, queued {})", d(t.blocked_ns), d(t.queued_ns)),
    };
    format!(
        "on-CPU {}, off-CPU {}{parts}",
        d(t.on_cpu_ns),
        d(t.off_cpu_ns)
    )
}

fn write_site_counters(sites: &[crate::model::profile::SiteStats], s: &mut String) {
    if sites.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nCounters per wait site (~N estimated from sampled episodes)"
    );
    let _ = writeln!(
        s,
        "  {:<28} {:>8} {:>10} {:>11} {:>8} {:>9} {:>6} {:>8}",
        "site", "sampled", "voluntary", "involuntary", "sw/ep", "perf cs", "migr", "faults"
    );
    for site in sites {
        let c = &site.counters;
        let per_episode = c
            .switches()
            .per(site.episodes)
            .map_or("n/a".to_string(), |v| format!("{v:.1}"));
        let _ = writeln!(
            s,
            "  {:<28} {:>8} {:>10} {:>11} {:>8} {:>9} {:>6} {:>8}",
            tail(&site.name, 28),
            c.sampled,
            c.voluntary_switches,
            c.involuntary_switches,
            per_episode,
            c.context_switches,
            c.cpu_migrations,
            c.page_faults
        );
        let hardware = [
            ("cache-misses", c.cache_misses),
            ("cache-refs", c.cache_references),
            ("L1D-misses", c.l1d_read_misses),
            ("instructions", c.instructions),
            ("cycles", c.cycles),
        ];
        if hardware.iter().any(|(_, v)| v.value().is_some()) {
            let line: Vec<String> = hardware.iter().map(|(n, v)| format!("{n} {v}")).collect();
            let _ = writeln!(s, "    {}", line.join(", "));
        }
    }
}

fn write_thread_counters(
    threads: &[crate::model::profile::ThreadStats],
    own: &crate::analysis::costs::ProfilerTime,
    s: &mut String,
) {
    if threads.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nThread counters (life-long voluntary/involuntary switches; the part not in waits is \
         [work]'s)"
    );
    let _ = writeln!(
        s,
        "  {:<24} {:<10} {:>10} {:>11} {:>12} {:>24}",
        "thread", "source", "voluntary", "involuntary", "in waits", "counter cost (% of wait)"
    );
    for t in &shown(threads) {
        let w = &t.counters_in_wait;
        let in_waits = format!("{}/{}", w.voluntary_switches, w.involuntary_switches);
        // A share of a few microseconds of waiting says nothing (see `RATE_FLOOR_NS`).
        let share = match t.wait_ns >= RATE_FLOOR_NS {
            true => format!("{:.1}%", percent(t.counter_overhead_ns, t.wait_ns)),
            false => "n/a".into(),
        };
        let cost = format!("{} ({share})", duration(t.counter_overhead_ns));
        let _ = writeln!(
            s,
            "  {:<24} {:<10} {:>10} {:>11} {:>12} {:>24}",
            tail(&t.name, 24),
            t.counter_source,
            t.counters.voluntary_switches,
            t.counters.involuntary_switches,
            in_waits,
            cost
        );
        // A thread that fell back after the process-wide probe (fd budget, EMFILE)
        // says why under its row.
        if let crate::counters::CounterSource::Getrusage(why) = t.counter_source {
            let _ = writeln!(s, "    perf counters not used: {why}");
        }
        let b = &t.counters_before_recording;
        if let (Some(v), Some(i)) = (b.voluntary_switches.value(), b.involuntary_switches.value()) {
            if v + i > 0 {
                let _ = writeln!(s, "    {v}/{i} of them before its first record");
            }
        }
        if t.counters.voluntary_switches.is_scaled() {
            let _ = writeln!(
                s,
                "    ~: as the thread last read them; its status file could not be read"
            );
        }
    }
    let mut methods = Vec::new();
    for m in threads.iter().filter_map(|t| t.split_method) {
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    for m in methods {
        let _ = writeln!(
            s,
            "{}",
            wrap(&format!("on/off-CPU split: {m}"), "  ", "    ")
        );
    }
    // Over every thread, as the profiler's time is, not only the rows shown: over 64 of
    // flume's 20 000 threads it read 102 % of their CPU (70.5 % of all threads').
    let wall: u64 = threads.iter().map(|t| t.wall_ns).sum();
    // Against their CPU time too: beside a mostly idle thread's wall, the profiler's
    // share reads small where it was much of what the thread ran (flume's tests: 0.92 %
    // of the wall, where the annotation added 77 % CPU, 2026-12-06).
    let cpu = match threads.iter().map(|t| t.cpu_ns).sum::<Option<u64>>() {
        Some(cpu) => format!(", {:.1}% of their CPU time", percent(own.total_ns(), cpu)),
        None => String::new(),
    };
    let estimated: u64 = threads
        .iter()
        .map(|t| t.time_in_wait.estimated_episodes)
        .sum();
    let line = format!(
        "profiler's own time: {own}: {:.2}% of the threads' wall{cpu}; the measured part shown as \
         [profiler], not in any site's own time; {estimated} outermost episodes with their \
         on/off-CPU split apportioned (switched again before it was read)",
        percent(own.total_ns(), wall)
    );
    let _ = writeln!(s, "{}", wrap(&line, "  ", "    "));
    if cfg!(debug_assertions) {
        let _ = writeln!(s, "{}", wrap(UNOPTIMISED, "  ", "    "));
    }
}

/// A user's dev build compiles yieldprof unoptimised too, and its own time is then
/// several times what it is in release (crossbeam-channel's `tests/zero.rs`, 2026-12-04:
/// 31.4 s CPU against 9.3 s raw, 13.1 s with the override below).
const UNOPTIMISED: &str = "yieldprof itself was built without optimisation (a dev profile): its \
     own time is 2-3x what it is optimised; to profile tests or debug builds at release cost, \
     add to the workspace's Cargo.toml: [profile.dev.package.yieldprof] opt-level = 3, \
     debug-assertions = false";

/// What a lock's figure counts: a lock taken at once (under ~1 µs) as an episode's
/// first wait is no wait and is not recorded, so the figure is not every `lock()` run.
const LOCKS_RECORDED: &str = "lock: recorded = acquisitions that took over ~1 µs, and all after \
     the episode's first wait;\n      a quick one that would open the episode is not counted";

/// The word after a call count: `recorded` for locks (see [`LOCKS_RECORDED`]).
fn calls_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Lock => "recorded",
        _ => "calls",
    }
}
