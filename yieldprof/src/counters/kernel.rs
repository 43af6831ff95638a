//! A thread's switches over its whole life, as the kernel counts them: what
//! `/proc/<pid>/task/<tid>/status` shows, and so what a thread's totals must equal.
//!
//! A thread's totals are read whole rather than summed from its episodes: switches
//! before its first record or between episodes happen where no mark is taken, and a
//! sum of marks misses them (issue 26: a storm of 64 threads showed 2 % of their
//! involuntary switches). The thread itself reads them with getrusage (~0.4 µs) at its
//! exit and at a report it makes; a report on another thread reads the live thread's
//! status file (~8 µs).

use super::perf::zeroed_rusage;

/// Voluntary and involuntary switches of one thread since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Switches {
    pub(crate) voluntary: u64,
    pub(crate) involuntary: u64,
}

impl Switches {
    /// Both kinds: what the perf context-switch counter counts over the same time.
    pub(crate) fn all(&self) -> u64 {
        self.voluntary + self.involuntary
    }

    /// The calling thread's, from getrusage; `None` where the call fails.
    pub(crate) fn own() -> Option<Switches> {
        let mut ru = zeroed_rusage();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        ok.then_some(Switches {
            voluntary: ru.ru_nvcsw as u64,
            involuntary: ru.ru_nivcsw as u64,
        })
    }

    /// Thread `tid` of this process, from its status file; `None` once it has exited
    /// or where there is no procfs.
    pub(crate) fn of(tid: i32) -> Option<Switches> {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
        parse_status(&status)
    }
}

/// The two switch lines of a `/proc/<pid>/task/<tid>/status` text.
fn parse_status(status: &str) -> Option<Switches> {
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse()
            .ok()
    };
    Some(Switches {
        voluntary: field("voluntary_ctxt_switches:")?,
        involuntary: field("nonvoluntary_ctxt_switches:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_file_and_getrusage_agree_on_the_calling_thread() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        // Bracketed: equal whenever no switch landed between the reads (retried).
        for _ in 0..100 {
            let a = Switches::own().unwrap();
            let status = Switches::of(tid).unwrap();
            let b = Switches::own().unwrap();
            if a == b {
                assert_eq!(status, a);
                return;
            }
        }
        eprintln!("inconclusive: a switch landed between the reads 100 times");
    }

    #[test]
    fn a_status_text_gives_both_counts_or_none() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(
            parse_status(text),
            Some(Switches {
                voluntary: 12,
                involuntary: 3
            })
        );
        assert_eq!(parse_status("voluntary_ctxt_switches:\t12\n"), None);
        assert_eq!(Switches::of(-1), None);
    }
}
