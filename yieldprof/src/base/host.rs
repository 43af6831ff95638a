//! What identifies this host for a saved measurement and a report: CPU model, cores,
//! kernel, host name. A figure the system does not give is `None`, never a panic.

use std::ffi::CStr;

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
}
