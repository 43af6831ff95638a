//! The `run` object: read from the system when a report is taken. A figure the system
//! does not give becomes `None`, never a panic: a report must not fail for want of
//! metadata.

use super::{Host, Run};
use crate::base::host::HostId;
use std::time::{Duration, SystemTime};

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

/// Time since the process started. The kernel keeps the start in `/proc/self/stat` in
/// clock ticks on `CLOCK_BOOTTIME`; reading that clock now, rather than adding the
/// start to `btime`, keeps the age exact to the tick (`btime` is whole seconds).
fn process_age() -> Option<Duration> {
    let start_ticks = start_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    // SAFETY: sysconf has no preconditions.
    let hz = u32::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
    let started = Duration::from_secs(start_ticks).checked_div(hz)?;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return None;
    }
    let now = Duration::new(ts.tv_sec.try_into().ok()?, ts.tv_nsec.try_into().ok()?);
    now.checked_sub(started)
}

/// Field 22 of `/proc/<pid>/stat`, `starttime`. Counted from the last `)`: the command
/// name before it (field 2) may hold spaces and parentheses.
fn start_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // `after_name` starts at field 3.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::costs::Costs;
    use crate::record::thread::snapshot;
    use std::time::Instant;

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

    #[test]
    fn the_start_is_read_past_a_command_name_with_spaces_and_parentheses() {
        // The command is `a) b (c`; starttime (field 22) is 4242.
        let stat = "7 (a) b (c) S 1 7 7 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 1 0 4242 1000 100";
        assert_eq!(start_ticks(stat), Some(4242));
        assert_eq!(start_ticks("garbage"), None);
        assert_eq!(start_ticks("1 (short) S 1"), None);
    }
}
