//! The plain-text summary: where each thread's time went and what each wait site did.
//! Lines stay within 100 columns.

use crate::profile::Profile;
use crate::site::Kind;
use std::fmt::Write;

/// `1234567` ns as `1.23 ms`.
pub(crate) fn duration(ns: u64) -> String {
    let ns = ns as f64;
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The last `max` characters of `s`, marked with `…` when cut.
fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let kept: String = s.chars().skip(n - max + 1).collect();
        format!("…{kept}")
    }
}

impl Profile {
    /// The text summary written to `<name>.txt`.
    ///
    /// ```
    /// let text = yieldprof::snapshot().summary();
    /// assert!(text.starts_with("yieldprof summary"));
    /// ```
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let threads = self.threads();
        let wall: u64 = threads.iter().map(|t| t.wall_ns).sum();
        let wait: u64 = threads.iter().map(|t| t.wait_ns).sum();
        let _ = writeln!(
            s,
            "yieldprof summary: {} threads, {} thread time, {:.1}% waiting",
            threads.len(),
            duration(wall),
            percent(wait, wall)
        );
        let _ = writeln!(s, "\nThreads");
        let _ = writeln!(
            s,
            "  {:<28} {:>8} {:>12} {:>8} {:>8} {:>10}",
            "thread", "tid", "wall", "wait %", "work %", "overflow"
        );
        for t in &threads {
            let _ = writeln!(
                s,
                "  {:<28} {:>8} {:>12} {:>7.1}% {:>7.1}% {:>10}",
                tail(
                    &format!("{}{}", t.name, if t.exited { " (exited)" } else { "" }),
                    28
                ),
                t.tid,
                duration(t.wall_ns),
                percent(t.wait_ns, t.wall_ns),
                percent(t.work_ns, t.wall_ns),
                t.overflowed
            );
        }
        let sites = self.sites();
        let _ = writeln!(s, "\nWait sites (by wall time)");
        if sites.is_empty() {
            let _ = writeln!(
                s,
                "  none recorded: annotate wait loops with #[instrument_wait]"
            );
        }
        for site in &sites {
            let _ = writeln!(
                s,
                "  {}  ({}:{})",
                tail(&site.name, 60),
                tail(site.file, 30),
                site.line
            );
            let per = |n: u64| n as f64 / site.episodes.max(1) as f64;
            let _ = writeln!(
                s,
                "    {} episodes, {} wall, {} mean; spinning {}, off-CPU/syscall {}",
                site.episodes,
                duration(site.wall_ns),
                duration(site.wall_ns / site.episodes.max(1)),
                duration(site.spin_ns()),
                duration(site.self_ns.saturating_sub(site.spin_ns()))
            );
            let q = |x: Option<u64>| x.map_or("-".to_string(), duration);
            let h = &site.durations;
            let _ = writeln!(
                s,
                "    episode time: min {}, median {}, p99 {}, max {}",
                q(h.min()),
                q(h.quantile(0.5)),
                q(h.quantile(0.99)),
                q(h.max())
            );
            for c in &site.calls {
                let _ = writeln!(
                    s,
                    "    {:<12} {:>28}:{:<5} {:>10} calls {:>8.1}/episode {:>11}",
                    c.site.kind.name(),
                    tail(c.site.file, 28),
                    c.site.line,
                    c.calls,
                    per(c.calls),
                    if c.site.kind == Kind::Spin {
                        String::new()
                    } else {
                        duration(c.ns)
                    }
                );
            }
        }
        s
    }
}
