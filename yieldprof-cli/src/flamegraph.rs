//! `yieldprof flamegraph RUN --view V`: a flame graph drawn from the folded file the run
//! wrote for that view, in the colours of the run's own graphs.

use crate::cli::{FlamegraphArgs, View};
use crate::failure::Failure;
use crate::run::RunFiles;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use yieldprof::report::{parse_folded, split_folded, DiffError, Metric};

pub fn command(args: &FlamegraphArgs, out: &mut String) -> Result<(), Failure> {
    let run = RunFiles::locate(&args.run);
    let view = name(args.view);
    let folded = folded_file(&run, args.view)?;
    let stacks = read(&folded)?;
    let lines = match args.view {
        View::Split => split_folded(stacks),
        _ => stacks
            .into_iter()
            .map(|(s, v)| format!("{s} {v}"))
            .collect(),
    };
    let metric = metric(args.view);
    let title = format!("yieldprof: {} ({view})", run.name());
    let draw = |w: &mut dyn Write| yieldprof::report::flamegraph(&lines, metric, &title, w);
    match args.output.as_deref() {
        Some(p) if p == Path::new("-") => {
            // Standard output takes the SVG: nothing else may go there.
            let mut stdout = io::stdout().lock();
            draw(&mut stdout)
                .and_then(|()| stdout.flush())
                .map_err(|e| Failure::Input(format!("cannot write the SVG: {e}")))
        }
        given => {
            let path = given.map_or_else(
                || run.file(&format!("{view}.flamegraph.svg")),
                PathBuf::from,
            );
            write_file(&path, draw)?;
            let _ = writeln!(out, "{} from {}", path.display(), folded.display());
            Ok(())
        }
    }
}

/// What a view's widths measure: the split view halves the wall-time graph.
fn metric(view: View) -> Metric {
    match view {
        View::Wall | View::Split => Metric::Wall,
        View::Calls => Metric::Calls,
        View::Switches => Metric::Switches,
    }
}

/// The view's name, as in file names: `wall`, `calls`, `switches`, `split`.
fn name(view: View) -> &'static str {
    match view {
        View::Split => "split",
        metric_view => metric(metric_view).name(),
    }
}

/// The folded file a view is drawn from; a missing one says how a run writes it.
fn folded_file(run: &RunFiles, view: View) -> Result<PathBuf, Failure> {
    let path = match view {
        // Runs write `<name>.folded` in YIELDPROF_METRIC, `wall` unless set; a `wall`
        // view file, where written, is the one to trust.
        View::Wall => Some(run.file("wall.folded"))
            .filter(|p| p.exists())
            .unwrap_or_else(|| run.file("folded")),
        View::Split => run.file("folded"),
        View::Calls | View::Switches => run.file(&format!("{}.folded", name(view))),
    };
    if path.exists() {
        return Ok(path);
    }
    let how = match view {
        View::Calls => {
            "; the run writes it with YIELDPROF_VIEWS=calls (or Options::view(Metric::Calls))"
        }
        View::Switches => {
            "; the run writes it with YIELDPROF_VIEWS=switches (or Options::view(Metric::Switches))"
        }
        View::Wall | View::Split => " (RUN is a run's `<dir>/<name>.json` or `<dir>/<name>`)",
    };
    Err(Failure::Input(format!(
        "{}: no such file{how}",
        path.display()
    )))
}

/// The stacks of a folded file; every malformed line is named.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, u64)>, Failure> {
    let text = yieldprof::report::text::read_utf8(path)
        .map_err(|e| Failure::Input(DiffError::Io(path.to_path_buf(), e).to_string()))?;
    parse_folded(&text)
        .map_err(|bad| Failure::Input(DiffError::Malformed(path.to_path_buf(), bad).to_string()))
}

/// Writes `path` whole or not at all (a failed render leaves no half file).
pub(crate) fn write_file(
    path: &Path,
    draw: impl Fn(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Failure> {
    let result = std::fs::File::create(path).and_then(|f| {
        let mut w = io::BufWriter::new(f);
        draw(&mut w)?;
        w.flush()
    });
    result.map_err(|e| {
        let _ = std::fs::remove_file(path);
        Failure::Input(format!("cannot write {}: {e}", path.display()))
    })
}
