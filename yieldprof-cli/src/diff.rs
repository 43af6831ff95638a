//! `yieldprof diff BEFORE AFTER`: the site-by-site table, the differential flame graph,
//! and the `--fail-if` thresholds.

use crate::cli::DiffArgs;
use crate::failure::Failure;
use crate::run::RunFiles;
use crate::threshold::violations;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use yieldprof::report::DiffError;

pub fn command(args: &DiffArgs, out: &mut String) -> Result<(), Failure> {
    let (before, after) = (
        RunFiles::locate(&args.before),
        RunFiles::locate(&args.after),
    );
    let comparison = yieldprof::report::compare(&before.document()?, &after.document()?);
    let _ = writeln!(out, "{} → {}", before.name(), after.name());
    let _ = write!(out, "{comparison}");
    if let Some(svg) = &args.svg {
        write_svg(&before, &after, svg)?;
        let _ = writeln!(out, "differential flame graph: {}", svg.display());
    }
    let broken = violations(&args.fail_if, &comparison);
    if broken.is_empty() {
        return Ok(());
    }
    let mut list = format!("{} threshold violation(s):\n", broken.len());
    for b in &broken {
        let _ = writeln!(list, "  {b}");
    }
    Err(Failure::Exceeded(list))
}

/// The differential graph of the runs' `<name>.folded` files into `svg`; nothing is
/// left at `svg` when it fails.
fn write_svg(before: &RunFiles, after: &RunFiles, svg: &Path) -> Result<(), Failure> {
    let file = std::fs::File::create(svg)
        .map_err(|e| Failure::Input(format!("cannot write {}: {e}", svg.display())))?;
    let mut w = std::io::BufWriter::new(file);
    let made = yieldprof::report::diff(&before.file("folded"), &after.file("folded"), &mut w)
        .and_then(|()| w.flush().map_err(|e| DiffError::Io(svg.to_path_buf(), e)));
    made.map_err(|e| {
        let _ = std::fs::remove_file(svg);
        Failure::Input(format!("differential flame graph not written: {e}"))
    })
}
