//! `yieldprof merge DIR`: the runs in a folder (a test suite's binaries and doctests,
//! each writing `<name>.<pid>.*`) as one profile: their folded stacks summed, and the
//! flame graph of the sum.

use crate::cli::MergeArgs;
use crate::failure::Failure;
use crate::flamegraph::{read, write_file};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use yieldprof::report::Metric;

pub fn command(args: &MergeArgs, out: &mut String) -> Result<(), Failure> {
    let stem = args
        .output
        .clone()
        .unwrap_or_else(|| args.dir.join("merged"));
    let runs = runs(&args.dir, &stem)?;
    if runs.is_empty() {
        return Err(Failure::Input(format!(
            "{}: no run's files here (a run writes `<name>.json` and `<name>.folded`)",
            args.dir.display()
        )));
    }
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    for (name, folded) in &runs {
        for (stack, v) in read(folded)? {
            let stack = if args.by_run {
                format!("{name};{stack}")
            } else {
                stack
            };
            let total = sum.entry(stack).or_default();
            *total = total.saturating_add(v);
        }
    }
    let lines: Vec<String> = sum.iter().map(|(s, v)| format!("{s} {v}")).collect();
    let with = |ext: &str| {
        let mut p = stem.clone().into_os_string();
        p.push(ext);
        PathBuf::from(p)
    };
    let (folded, svg) = (with(".folded"), with(".svg"));
    write_file(&folded, |w| {
        lines.iter().try_for_each(|l| writeln!(w, "{l}"))
    })?;
    let title = format!("yieldprof: {} runs of {}", runs.len(), args.dir.display());
    write_file(&svg, |w| {
        yieldprof::report::flamegraph(&lines, Metric::Wall, &title, w)
    })?;
    let _ = writeln!(
        out,
        "{} and {}: {} runs, {} stacks",
        folded.display(),
        svg.display(),
        runs.len(),
        lines.len()
    );
    for (name, _) in &runs {
        let _ = writeln!(out, "  {name}");
    }
    Ok(())
}

/// Each run in `dir` (a `<name>.json` beside its `<name>.folded`), by name, leaving out
/// the merge's own output `stem`.
fn runs(dir: &Path, stem: &Path) -> Result<Vec<(String, PathBuf)>, Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", dir.display())))?;
    let mut runs = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".json") else {
            continue;
        };
        // The timeline (`<name>.trace.json`) and a saved probe are not runs.
        if name.ends_with(".trace") || name == "machine" {
            continue;
        }
        let folded = dir.join(format!("{name}.folded"));
        if folded.exists() && dir.join(name) != stem {
            runs.push((name.to_string(), folded));
        }
    }
    runs.sort();
    Ok(runs)
}
