//! Report rows of `benches/overhead.rs`: the 1M-episode file and row 7.

use super::{episodes, one_spin_episode, thread_cpu_ns, walk};
use std::time::Instant;

/// Resets the peak RSS to the current RSS (Linux ≥ 4.0), so the next peak is one step's.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `VmRSS` and `VmHWM` (the peak since the last reset) of this process, KiB.
fn rss_and_peak_kib() -> (i64, i64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The 1M-episodes-of-one-stack file against tracing-flame's (`flame`, when written),
/// and row 7: writing the report of 10k and 100k unique stacks, against its targets.
pub(crate) fn million_and_stacks(out: &std::path::Path, flame: Option<&std::path::Path>) {
    let session = yieldprof::Session::this_thread();
    episodes(1_000_000, one_spin_episode);
    let report = session.finish();
    let start = Instant::now();
    let paths = report.write(out, "million").expect("write");
    let took = start.elapsed();
    let ours_bytes = std::fs::metadata(&paths[0]).map_or(0, |m| m.len());
    let theirs = flame.map_or("not run".into(), |f| {
        format!("{} B", std::fs::metadata(f).map_or(0, |m| m.len()))
    });
    println!(
        "\nOutput for 1M episodes: yieldprof .folded {ours_bytes} B (report written in {:.0} ms), \
         tracing-flame {theirs}",
        took.as_secs_f64() * 1e3
    );

    // Report cost for many unique stacks: the write alone, its extra peak RSS measured
    // from a peak reset just before it. Its CPU time too: on a loaded machine the wall
    // time also counts waiting for a CPU (and for the disk, each file being synced).
    for (depth, label) in [(4, "10k"), (5, "100k")] {
        let stacks = 10u64.pow(depth);
        let (rss_empty, _) = rss_and_peak_kib();
        let t = std::thread::spawn(move || {
            let session = yieldprof::Session::this_thread();
            for p in 0..stacks {
                walk(depth, p);
            }
            session.finish()
        });
        let report = t.join().expect("walker");
        reset_peak_rss();
        let (rss_before, _) = rss_and_peak_kib();
        let (start, cpu) = (Instant::now(), thread_cpu_ns());
        let paths = report.write(out, &format!("stacks{label}")).expect("write");
        let (took, cpu) = (start.elapsed(), thread_cpu_ns() - cpu);
        let (_, peak) = rss_and_peak_kib();
        let (ms, mib) = (took.as_secs_f64() * 1e3, (peak - rss_before) / 1024);
        let lines = std::fs::read_to_string(&paths[0]).map_or(0, |s| s.lines().count());
        let size = |p: &std::path::PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
        let bytes: Vec<String> = paths
            .iter()
            .map(|p| format!("{} {} KB", p.display(), size(p) / 1000))
            .collect();
        let holds = |ok: bool| if ok { "holds" } else { "does not hold" };
        println!(
            "7. report of {label} unique stacks ({lines} folded lines, every file): {ms:.0} ms \
             wall, {:.0} ms CPU (target ≤ 500 ms: {}), peak RSS +{mib} MiB (target ≤ 100 MiB: \
             {}); the recorded profile itself: {} MiB",
            cpu as f64 / 1e6,
            holds(ms <= 500.0),
            holds(mib <= 100),
            (rss_before - rss_empty) / 1024
        );
        println!("   files: {}", bytes.join(", "));
    }
}
