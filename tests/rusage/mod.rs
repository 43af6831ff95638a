//! The calling thread's switches as getrusage counts them.

/// `(voluntary, involuntary)` switches of the calling thread since it started.
pub fn switches() -> (u64, u64) {
    // SAFETY: rusage is plain integers; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) }, 0);
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}
