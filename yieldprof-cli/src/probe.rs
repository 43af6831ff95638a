//! `yieldprof probe`: the library's machine probe on a thread of its own, with a
//! progress bar while it measures.

use crate::cli::ProbeArgs;
use crate::failure::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write;
use std::time::{Duration, Instant};
use yieldprof::probe::Machine;

/// Loops the probe times, each for the same duration (see `yieldprof::probe::run_for`):
/// 9 primitives alone and against a competitor, and the context-switch cost.
const LOOPS: u32 = 19;

/// What `yieldprof::probe::run` takes, as its docs say.
const DEFAULT_TIME: Duration = Duration::from_secs(5);

/// `--seconds`: a positive, finite number of seconds.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

pub fn command(args: &ProbeArgs, out: &mut String) -> Result<(), Failure> {
    type Probe = Box<dyn FnOnce() -> Machine + Send>;
    let (expected, probe): (Duration, Probe) = match args.seconds {
        None => (DEFAULT_TIME, Box::new(yieldprof::probe::run)),
        Some(s) => {
            let per_loop = Duration::from_secs_f64(s / f64::from(LOOPS));
            (
                per_loop * LOOPS,
                Box::new(move || yieldprof::probe::run_for(per_loop)),
            )
        }
    };
    let probing = std::thread::Builder::new()
        .name("probe-runner".into())
        .spawn(probe)
        .map_err(|e| Failure::Input(format!("cannot start the probe: {e}")))?;
    // Drawn on stderr, and not at all when stderr is not a terminal (CI logs, tests).
    let bar = ProgressBar::new(expected.as_millis() as u64);
    bar.set_style(
        ProgressStyle::with_template("probing wait primitives {bar:40} {elapsed} of ~{msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!("{}s", expected.as_secs_f64().ceil()));
    let start = Instant::now();
    while !probing.is_finished() {
        // Time is all the probe reports while it runs; the bar stops short of full
        // until it has returned.
        let done = start.elapsed().min(expected.mul_f64(0.99));
        bar.set_position(done.as_millis() as u64);
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
    let machine = probing
        .join()
        .map_err(|_| Failure::Input("the probe panicked; nothing was measured".into()))?;
    let _ = writeln!(out, "{machine}");
    if args.save {
        let path = yieldprof::probe::saved_path();
        machine
            .save(&path)
            .map_err(|e| Failure::Input(format!("not saved to {}: {e}", path.display())))?;
        let _ = writeln!(out, "saved: {}", path.display());
    }
    Ok(())
}
