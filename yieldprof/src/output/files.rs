//! Files: each written to a temporary name and renamed into place, so a reader (or a
//! process killed mid-write) never sees a truncated profile.

#[cfg(feature = "enabled")]
use crate::model::profile::Profile;
#[cfg(feature = "enabled")]
use crate::output::flamegraph;
#[cfg(feature = "enabled")]
use crate::output::fold::Folded;
#[cfg(feature = "enabled")]
use crate::output::options::Options;
use std::fmt;
use std::io;
#[cfg(feature = "enabled")]
use std::io::Write;
#[cfg(feature = "enabled")]
use std::path::Path;
use std::path::PathBuf;

/// A file that could not be written.
#[derive(Debug)]
pub struct WriteError {
    /// The file (or folder) concerned.
    pub path: PathBuf,
    /// What the OS said.
    pub source: io::Error,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Writes `path` through a temporary file in the same folder and a rename.
#[cfg(feature = "enabled")]
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    let result = (|| {
        let mut w = io::BufWriter::new(std::fs::File::create(&tmp)?);
        fill(&mut w)?;
        // Flushed, not fsynced: the rename already keeps a truncated file from any
        // reader and from a process killed mid-write; only a power cut could lose the
        // file, and a profile is not worth the 0.8–0.9 s a sync per file cost under
        // disk load.
        w.flush()?;
        drop(w);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// `6.5 MB in 0.42 s`: what `paths` hold together, and `took`, the time the caller
/// spent reading and writing them: the figures a report's own cost is judged by.
#[cfg(feature = "enabled")]
pub(crate) fn size_and_time(paths: &[PathBuf], took: std::time::Duration) -> String {
    let bytes: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    format!(
        "{:.1} MB in {:.2} s",
        bytes as f64 / 1e6,
        took.as_secs_f64()
    )
}

/// Writes folded `stacks`, one `stack value` per line, to `path` (atomically).
#[cfg(feature = "enabled")]
pub(crate) fn write_folded(path: &Path, stacks: &Folded) -> Result<(), WriteError> {
    write_atomic(path, |w| stacks.write(w))
}

/// Writes `<name>.folded`, `<name>.svg`, `<name>.split.svg`, `<name>.pb.gz` (pprof),
/// `<name>.trace.json` (the timeline, unless off), `<name>.json`, `<name>.txt` and the
/// requested metric views for `profile`, each listing at most `opts.report_threads`
/// threads one by one. With recording off (`YIELDPROF=0`) and nothing
/// recorded it writes nothing, so an empty run never replaces a real profile.
#[cfg(feature = "enabled")]
pub(crate) fn write_profile(profile: &Profile, opts: &Options) -> Result<Vec<PathBuf>, WriteError> {
    if !crate::config::enabled() && profile.threads.is_empty() {
        return Ok(Vec::new());
    }
    let dir = &opts.out_dir;
    std::fs::create_dir_all(dir).map_err(|source| WriteError {
        path: dir.clone(),
        source,
    })?;
    let path = |ext: &str| dir.join(format!("{}.{ext}", opts.name));
    // Every file lists the same threads; past the count, their sums.
    let listing;
    let profile = match opts.report_threads {
        Some(n) => {
            listing = profile.listing(n);
            &*listing
        }
        None => profile,
    };
    // Each view folded once: the file and both graphs draw from it.
    let stacks = profile.fold(opts.metric);
    let folded = path("folded");
    write_folded(&folded, &stacks)?;
    let subtitle = profile.headline();
    let notes = profile.frame_notes();
    let svg = path("svg");
    write_atomic(&svg, |w| {
        flamegraph::write_svg(
            &stacks,
            opts.metric,
            &format!("yieldprof: {}", opts.name),
            Some(subtitle.clone()),
            &notes,
            w,
        )
    })?;
    let split = path("split.svg");
    write_atomic(&split, |w| {
        let title = format!("yieldprof: {} (wait | work)", opts.name);
        flamegraph::write_svg(
            &stacks.split(),
            opts.metric,
            &title,
            Some(subtitle.clone()),
            &notes,
            w,
        )
    })?;
    let mut views = Vec::new();
    for &metric in &opts.views {
        let view = path(&format!("{}.folded", metric.name()));
        let other;
        let stacks = if metric == opts.metric {
            &stacks
        } else {
            other = profile.fold(metric);
            &other
        };
        write_folded(&view, stacks)?;
        let view_svg = path(&format!("{}.svg", metric.name()));
        write_atomic(&view_svg, |w| {
            let title = format!("yieldprof: {} ({})", opts.name, metric.name());
            flamegraph::write_svg(stacks, metric, &title, Some(subtitle.clone()), &notes, w)
        })?;
        views.extend([view, view_svg]);
    }
    // The stacks and the graphs' notes go before pprof's samples come: one of them at
    // a time at its peak.
    drop(stacks);
    drop(notes);
    let pb = path("pb.gz");
    write_atomic(&pb, |w| profile.write_pprof(w))?;
    let mut written = vec![folded, svg, split, pb];
    written.extend(views);
    let json = path("json");
    let doc = profile.json(&crate::analysis::costs::Costs::current());
    // CI sets it for the test suite, so every report a test writes is checked.
    if crate::config::settings().self_check {
        let wrong = doc.inconsistencies();
        if !wrong.is_empty() {
            return Err(WriteError {
                path: json,
                source: io::Error::other(format!(
                    "the report contradicts itself: {}",
                    wrong.join("; ")
                )),
            });
        }
    }
    write_atomic(&json, |w| {
        crate::base::json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)
    })?;
    written.push(json);
    let txt = path("txt");
    let summary = profile.summary();
    write_atomic(&txt, |w| w.write_all(summary.as_bytes()))?;
    written.push(txt);
    // A declared budget is checked wherever the report is written, not only in a test
    // that calls `check_declared`.
    if let Some(budgets) = crate::analysis::declared::declared_budgets(profile) {
        eprint!("yieldprof: {budgets}");
    }
    // Last: a caller looking for `<name>.json` by its extension finds that first.
    if profile.has_timeline() {
        let trace = path("trace.json");
        write_atomic(&trace, |w| {
            profile.write_trace_within(opts.trace_episodes, w)
        })?;
        written.push(trace);
    }
    Ok(written)
}

#[cfg(feature = "enabled")]
impl Profile {
    /// Writes `<dir>/<name>.{folded,svg,split.svg,json,txt,pb.gz}` for this report, and
    /// `<dir>/<name>.trace.json` ([`Profile::write_trace`]) unless the timeline is off.
    pub fn write(&self, dir: impl Into<PathBuf>, name: &str) -> Result<Vec<PathBuf>, WriteError> {
        write_profile(self, &Options::from_env().out_dir(dir).name(name))
    }
}
