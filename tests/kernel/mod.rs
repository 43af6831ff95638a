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
