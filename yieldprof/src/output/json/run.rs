//! The `run` object: read from the system when a report is taken. A figure the system
//! does not give becomes `None`, never a panic: a report must not fail for want of
//! metadata.

use super::{Host, Run};
use crate::base::host::{process_age, HostId};
use std::time::SystemTime;

impl Run {
    /// This process, now.
    pub(super) fn current() -> Run {
        let age = process_age();
        let now = SystemTime::now();
        Run {
            version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            start: age.and_then(|a| now.checked_sub(a)),
            duration_ns: age.map(|a| a.as_nanos() as u64),
            host: Host::current(),
        }
    }
}

impl Host {
    fn current() -> Host {
        let id = HostId::current();
        Host {
            cpu_model: id.cpu_model,
            cores: id.cores,
            kernel: id.kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::costs::Costs;
    use crate::record::thread::snapshot;
    use std::time::{Duration, Instant};

    /// One clock tick of `/proc/self/stat`, and room for the coarse clock that stamps
    /// file times.
    const SLACK: Duration = Duration::from_millis(50);

    #[test]
    fn the_run_in_a_report_matches_the_system() {
        let test_began = Instant::now();
        let exe = std::env::current_exe().unwrap();
        let exe_written = std::fs::metadata(&exe).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let in_test = test_began.elapsed();
        let before = SystemTime::now();
        let run = snapshot().json(&Costs::current()).run;
        let after = SystemTime::now();

        assert_eq!(run.version, env!("CARGO_PKG_VERSION"));
        let program = std::path::Path::new(&run.command_line[0]);
        assert_eq!(
            program.file_name(),
            exe.file_name(),
            "{:?}",
            run.command_line
        );
        let uname = std::process::Command::new("uname")
            .arg("-r")
            .output()
            .unwrap();
        let release = String::from_utf8(uname.stdout).unwrap();
        assert_eq!(run.host.kernel.as_deref(), Some(release.trim()));
        let cores = std::thread::available_parallelism().unwrap().get() as u64;
        assert_eq!(run.host.cores, Some(cores));
        if cfg!(target_arch = "x86_64") {
            assert!(run.host.cpu_model.is_some_and(|m| !m.is_empty()));
        }

        let start = run.start.unwrap();
        let duration = Duration::from_nanos(run.duration_ns.unwrap());
        // The process began before this test and after its binary was written.
        assert!(duration >= in_test, "{duration:?} < {in_test:?}");
        assert!(
            start + SLACK >= exe_written,
            "{start:?} before {exe_written:?}"
        );
        assert!(start <= before);
        let report_time = start + duration;
        assert!(before <= report_time && report_time <= after);
    }
}
