//! `yieldprof show RUN`: the run at a glance, from its `<name>.json`.

use crate::cli::{ShowArgs, SortBy};
use crate::failure::Failure;
use crate::run::RunFiles;
use std::cmp::Reverse;
use std::fmt::Write;
use std::time::UNIX_EPOCH;
use yieldprof::report::json::Lock;
use yieldprof::report::json::{Document, Site};
use yieldprof::report::text::{date_time, duration, tail, wrap};
use yieldprof::Kind;

pub fn command(args: &ShowArgs, out: &mut String) -> Result<(), Failure> {
    let run = RunFiles::locate(&args.run);
    let doc = run.document()?;
    let _ = writeln!(out, "{}", run.file("json").display());
    write_run(&doc, out);
    write_sites(&doc, args.sort, args.top, out);
    write_findings(&doc, out);
    write_locks(&doc, args.top, out);
    Ok(())
}

/// What ran, where, and the totals.
fn write_run(doc: &Document, out: &mut String) {
    let r = &doc.run;
    if !r.command_line.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            wrap(&r.command_line.join(" "), "  command: ", "    ")
        );
    }
    let started = r
        .start
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or("start unknown".into(), |d| {
            format!("started {}", date_time(d.as_secs()))
        });
    let ran = r
        .duration_ns
        .map_or(String::new(), |ns| format!(", ran {}", duration(ns)));
    let mut host: Vec<String> = r.host.cpu_model.iter().cloned().collect();
    host.extend(r.host.cores.map(|c| format!("{c} cores")));
    host.extend(r.host.kernel.as_ref().map(|k| format!("kernel {k}")));
    let _ = writeln!(out, "  {started}{ran}; {}", host.join(", "));
    let t = &doc.totals;
    let _ = writeln!(
        out,
        "  {} thread{}, {} thread time, {:.1}% of it waiting",
        t.threads,
        if t.threads == 1 { "" } else { "s" },
        duration(t.thread_ns),
        100.0 * t.wait_share
    );
    let c = &doc.costs;
    let _ = writeln!(
        out,
        "  costs from {}: spin {}, yield {}, switch {}{}",
        c.source,
        duration(c.spin_ns.round() as u64),
        duration(c.yield_ns.round() as u64),
        duration(c.switch_ns.round() as u64),
        if c.switch_measured { "" } else { " (default)" }
    );
}

/// The `top` costliest wait sites by `sort`; sites without the figure come last.
fn write_sites(doc: &Document, sort: SortBy, top: usize, out: &mut String) {
    let mut sites: Vec<&Site> = doc.sites.iter().collect();
    let key = |s: &Site| match sort {
        SortBy::OnCpu => s.on_cpu_ns(),
        SortBy::Wall => Some(s.wall_ns),
        SortBy::Switches => s.switches(),
        SortBy::Calls => Some(s.calls_total()),
        SortBy::P99 => s.durations.p99_ns,
    };
    // Ties (and sites without the figure) by wall time.
    sites.sort_by_key(|s| Reverse((key(s), s.wall_ns)));
    let by = match sort {
        SortBy::OnCpu => "on-CPU time",
        SortBy::Wall => "wall time",
        SortBy::Switches => "context switches",
        SortBy::Calls => "wait calls",
        SortBy::P99 => "p99 episode",
    };
    let shown = top.min(sites.len());
    let _ = writeln!(out, "\nWait sites by {by} ({shown} of {})", doc.sites.len());
    if sites.is_empty() {
        let _ = writeln!(
            out,
            "  none recorded: annotate wait loops with #[instrument_wait]"
        );
        return;
    }
    let _ = writeln!(
        out,
        "  {:<30} {:>8} {:>10} {:>6} {:>10} {:>9} {:>9} {:>8}",
        "site", "episodes", "wall", "share", "on-cpu", "p50", "p99", "switches"
    );
    let ns = |v: Option<u64>| v.map_or("-".into(), duration);
    for s in &sites[..shown] {
        let switches = match s.switches() {
            None => "n/a".to_string(),
            Some(n) if estimated(s) => format!("~{n}"),
            Some(n) => n.to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<30} {:>8} {:>10} {:>5.1}% {:>10} {:>9} {:>9} {:>8}",
            tail(&s.name, 30),
            s.episodes,
            duration(s.wall_ns),
            100.0 * s.wall_ns as f64 / doc.totals.thread_ns.max(1) as f64,
            ns(s.on_cpu_ns()),
            ns(s.durations.median_ns),
            ns(s.durations.p99_ns),
            switches
        );
        let calls: Vec<String> = Kind::ALL
            .iter()
            .map(|&k| (k, s.calls_of(k)))
            .filter(|&(_, n)| n > 0)
            .map(|(k, n)| {
                let per = n as f64 / s.episodes.max(1) as f64;
                // Free acquisitions that would open an episode are not recorded.
                match k {
                    Kind::Lock => format!(
                        "lock {n} recorded ({per:.1}/episode; free first locks not counted)"
                    ),
                    _ => format!("{} {n} ({per:.1}/episode)", k.name()),
                }
            })
            .collect();
        let calls = if calls.is_empty() {
            String::new()
        } else {
            format!("; calls: {}", calls.join(", "))
        };
        let shared = if s.false_sharing {
            "; spins on a falsely shared line"
        } else {
            ""
        };
        let _ = writeln!(out, "    {}:{}{calls}{shared}", tail(&s.file, 40), s.line);
    }
}

/// Whether the site's switch count is scaled up from sampled episodes.
fn estimated(s: &Site) -> bool {
    use yieldprof::counters::CounterEvent::{InvoluntarySwitches, VoluntarySwitches};
    [VoluntarySwitches, InvoluntarySwitches]
        .into_iter()
        .any(|e| s.counters.get(e).is_some_and(|c| c.estimated))
}

/// Every finding, as the run's summary words it.
fn write_findings(doc: &Document, out: &mut String) {
    let _ = writeln!(out, "\nFindings ({})", doc.findings.len());
    if doc.findings.is_empty() {
        let _ = writeln!(out, "  none: no wait pattern here calls for a change");
    }
    for f in &doc.findings {
        let at = f
            .location
            .as_ref()
            .map_or(String::new(), |l| format!(" ({l})"));
        let _ = writeln!(out, "  [{}] {}{at}", f.rule, f.subject);
        let _ = writeln!(out, "{}", wrap(&f.evidence, "    evidence: ", "      "));
        let _ = writeln!(out, "{}", wrap(&f.fix, "    fix: ", "      "));
    }
}

/// The `top` lock sites that waited longest, each wait split by holder, and every
/// lock-order cycle; nothing when the run used no `yieldprof::sync` lock.
fn write_locks(doc: &Document, top: usize, out: &mut String) {
    let Some(locks) = &doc.locks else {
        return;
    };
    let _ = writeln!(
        out,
        "\nLocks (hold times sampled: first per site and thread, then 1 in {})",
        locks.hold_sample_every
    );
    for l in locks.sites.iter().take(top) {
        write_lock(l, out);
    }
    for (i, cycle) in locks.cycles.iter().enumerate() {
        let _ = writeln!(out, "  lock-order cycle {} (potential deadlock):", i + 1);
        for e in cycle {
            let _ = writeln!(
                out,
                "    lock made at {} taken at {} while holding lock made at {} (taken at {}), thread {}",
                e.taken, e.taken_at, e.held, e.held_at, e.thread
            );
        }
    }
}

fn write_lock(l: &Lock, out: &mut String) {
    let _ = writeln!(
        out,
        "  {}  {} acquisitions, {} contended ({:.1}%), waited {}",
        l.site,
        l.acquisitions,
        l.contended,
        100.0 * l.contended_share,
        duration(l.waited_ns)
    );
    let whole: u64 = l.held_by.iter().map(|h| h.waited_ns).sum();
    for h in &l.held_by {
        let who = h
            .holder
            .as_ref()
            .map_or("handoff".into(), |s| format!("held by {s}"));
        let _ = writeln!(
            out,
            "    {who:<44} {:>5.1}%  {}",
            100.0 * h.waited_ns as f64 / whole.max(1) as f64,
            duration(h.waited_ns)
        );
    }
    if let (Some(mean), Some(p99), Some(max)) = (l.holds.mean_ns, l.holds.p99_ns, l.holds.max_ns) {
        let _ = writeln!(
            out,
            "    holds (sampled {}): mean {}, p99 {}, max {}",
            l.holds.sampled,
            duration(mean),
            duration(p99),
            duration(max)
        );
    }
}
