//! What identifies this host for a saved measurement and a report: CPU model, cores,
//! kernel, host name. A figure the system does not give is `None`, never a panic.

use std::ffi::CStr;
use std::time::Duration;

/// This machine, as far as the figures measured on it depend on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostId {
    pub(crate) cpu_model: Option<String>,
    pub(crate) cores: Option<u64>,
    pub(crate) kernel: Option<String>,
    pub(crate) hostname: Option<String>,
}

impl HostId {
    pub(crate) fn current() -> HostId {
        let uname = uname();
        HostId {
            cpu_model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|t| cpu_model(&t)),
            cores: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u64),
            kernel: uname.as_ref().map(|u| field(&u.release)),
            hostname: uname.as_ref().map(|u| field(&u.nodename)),
        }
    }
}

/// The first `model name` in `/proc/cpuinfo` (every core repeats it).
pub(crate) fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

fn uname() -> Option<libc::utsname> {
    // SAFETY: `utsname` is plain C arrays, for which all zeroes is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    (unsafe { libc::uname(&mut u) } == 0).then_some(u)
}

/// A NUL-terminated `utsname` field as text.
fn field(chars: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Time since the process started. The kernel keeps the start in `/proc/self/stat` in
/// clock ticks on `CLOCK_BOOTTIME`; reading that clock now, rather than adding the
/// start to `btime`, keeps the age exact to the tick (`btime` is whole seconds).
pub(crate) fn process_age() -> Option<Duration> {
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

    #[test]
    fn the_cpu_model_is_the_first_model_name() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n\
                       model name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
    }

    #[test]
    fn this_host_has_a_kernel_and_a_name() {
        let id = HostId::current();
        assert!(id.kernel.is_some_and(|k| !k.is_empty()));
        assert!(id.hostname.is_some_and(|n| !n.is_empty()));
        assert!(id.cores.is_some_and(|c| c >= 1));
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
