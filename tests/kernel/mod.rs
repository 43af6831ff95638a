//! What the kernel counts for a thread: the ground truth for switch figures.

/// `(voluntary, involuntary)` switches of thread `tid` of this process, from its
/// `/proc/self/task/<tid>/status`.
pub fn switches(tid: i32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

/// Keeps the calling thread on CPU `cpu` (modulo those there are).
pub fn pin(cpu: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: `set` is a valid, zeroed cpu_set_t; the call changes this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % cpus, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
