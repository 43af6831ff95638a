//! Plain data without a PMU (`sharing::watch_plain`): layouts from Phoenix on plain
//! `Vec<u64>`s, updated through `chunks_mut` or raw offsets, seen by hardware
//! watchpoints. FALSE on exactly the lines two threads' data straddle, quiet when
//! each thread's data is 128-B aligned; and where breakpoints cannot be opened, the
//! report says why.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use yieldprof::counters::Reason;
use yieldprof::sharing::{watch_plain, watchpoints, LineVerdict, Verdict, WatchpointState};

const THREADS: usize = 2;
const LINE: usize = 64;
/// Phoenix histogram: each thread's counters (`int red[256], green[256], blue[256]`
/// and a few more) take 3096 B, so consecutive threads share the line at offset 3072.
const HISTOGRAM_STRIDE: usize = 3096;
/// Phoenix linear_regression: 64-B argument structs (sums and count) in an array that
/// starts 24 B into a line: every line but the end ones holds two threads' structs.
const REGRESSION_STRUCT: usize = 64;
const REGRESSION_OFFSET: usize = 24;
/// Runs per case before it is reported inconclusive, each longer than the last.
const ATTEMPTS: u32 = 3;

/// One case at a time: the watchpoints watch every thread of the process, and the
/// workloads need both cores.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pins the calling thread to `cpu`; false where the affinity call is refused.
fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
    }
}

/// A `Vec<u64>` of at least `bytes` from a 128-B boundary, never freed: no later case
/// gets its addresses, so the lines of one case are told from another's by address.
fn aligned_words(bytes: usize) -> &'static mut [u64] {
    let v: &'static mut Vec<u64> = Box::leak(Box::new(vec![0u64; bytes / 8 + 16]));
    let skip = (128 - v.as_ptr() as usize % 128) % 128 / 8;
    &mut v[skip..skip + bytes / 8]
}

/// One word update as the C code does it: a load and a store to memory every time.
fn bump(word: &mut u64, by: u64) {
    let p: *mut u64 = word;
    // SAFETY: `p` comes from a live `&mut`; volatile keeps the compiler from holding
    // the sum in a register, which C's `args->sx += x` through a pointer would not.
    unsafe { p.write_volatile(p.read_volatile().wrapping_add(by)) }
}

/// Runs `work(thread, chunk)` on one pinned thread per chunk for `run`; returns how
/// long all of them were running at once.
fn on_threads(
    chunks: Vec<&mut [u64]>,
    run: Duration,
    work: fn(usize, &mut [u64], u64),
) -> Duration {
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .enumerate()
            .map(|(t, chunk)| {
                s.spawn(move || {
                    pin(t);
                    let start = Instant::now();
                    let mut i = 0u64;
                    while start.elapsed() < run {
                        for _ in 0..4096 {
                            work(t, chunk, i);
                            i += 1;
                        }
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let begin = spans.iter().map(|s| s.0).max().unwrap();
    let end = spans.iter().map(|s| s.1).min().unwrap();
    end.saturating_duration_since(begin)
}

/// Histogram: a pixel's three channel counters, at pseudo-random values.
fn histogram(_t: usize, counters: &mut [u64], i: u64) {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
    let n = counters.len() as u64;
    for channel in 0..3 {
        let k = (x >> (channel * 8)).wrapping_add(channel * 131) % n;
        bump(&mut counters[k as usize], 1);
    }
}

/// Linear regression: one point into the thread's sums (`sx, sy, sxx, syy, sxy`, n
/// and two more).
fn regression(_t: usize, sums: &mut [u64], i: u64) {
    let (x, y) = (i & 0xff, (i >> 8) & 0xff);
    for (k, v) in [x, y, x * x, y * y, x * y, 1, x + y, x ^ y]
        .into_iter()
        .enumerate()
    {
        bump(&mut sums[k], v);
    }
}

/// The threads that wrote the line.
fn writers(l: &LineVerdict) -> BTreeSet<&str> {
    l.words
        .iter()
        .flat_map(|w| w.threads.iter().filter(|t| t.writes > 0))
        .map(|t| t.thread.as_str())
        .collect()
}

#[derive(Debug)]
enum Outcome {
    /// What the lines said.
    Verdicts(Vec<LineVerdict>),
    /// Too little evidence: retry.
    Thin(String),
    /// No breakpoints on this machine.
    Unavailable(Reason),
}

/// Watches a fresh buffer of `bytes` where each thread's data starts at `starts` (byte
/// offsets) and takes `len` bytes, runs `work` on it, and returns the buffer's address
/// and the verdicts of its lines.
fn case(
    bytes: usize,
    starts: &[usize],
    len: usize,
    run: Duration,
    work: fn(usize, &mut [u64], u64),
) -> (usize, Outcome) {
    let words = aligned_words(bytes);
    let base = words.as_ptr() as usize;
    let region: Range<usize> = starts[0]..starts[starts.len() - 1] + len;
    let guard = watch_plain(&words[region.start / 8..region.end / 8], "args");
    // Each thread's data, as disjoint `&mut` slices: `chunks_mut` after the offset.
    let mut chunks = Vec::new();
    let mut rest = &mut words[..];
    let mut at = 0;
    for &s in starts {
        let (_, tail) = rest.split_at_mut((s - at) / 8);
        let (mine, tail) = tail.split_at_mut(len / 8);
        chunks.push(mine);
        rest = tail;
        at = s + len;
    }
    let overlap = on_threads(chunks, run, work);
    let status = watchpoints();
    let summary = yieldprof::snapshot().summary();
    drop(guard);
    if let WatchpointState::Unavailable(r) = status.state {
        return (base, Outcome::Unavailable(r));
    }
    // The report says how plain data was watched.
    assert!(
        summary.contains("plain data: hardware watchpoints on "),
        "{summary}"
    );
    if overlap < run / 2 {
        return (
            base,
            Outcome::Thin(format!(
                "the threads ran together only {overlap:?} of {run:?}"
            )),
        );
    }
    let lines: Vec<LineVerdict> = yieldprof::snapshot()
        .sharing()
        .into_iter()
        .filter(|l| l.size == LINE && (base..base + bytes).contains(&l.address))
        .collect();
    (base, Outcome::Verdicts(lines))
}

/// Runs `attempt`, for `first` and then twice as long each time, until it gives
/// verdicts on which `straddled` (lines, as offsets from the buffer) are decided; fails
/// on a wrong verdict.
fn expect_false_on(
    name: &str,
    first: Duration,
    straddled: &[usize],
    attempt: impl Fn(Duration) -> (usize, Outcome),
) {
    for n in 0..ATTEMPTS {
        let run = first * (1 << n);
        let (base, outcome) = attempt(run);
        let lines = match outcome {
            Outcome::Thin(why) => {
                eprintln!("{name}: attempt {n}: {why}");
                continue;
            }
            Outcome::Unavailable(r) => {
                eprintln!("{name}: inconclusive, hardware watchpoints unavailable here: {r}");
                return;
            }
            Outcome::Verdicts(lines) => lines,
        };
        let at = |l: &LineVerdict| l.address - base;
        let flagged: Vec<usize> = lines
            .iter()
            .filter(|l| l.verdict.is_suspicious())
            .map(at)
            .collect();
        let decided = lines
            .iter()
            .filter(|l| straddled.contains(&at(l)) && l.verdict != Verdict::Quiet)
            .count();
        // Whatever is flagged must be a straddled line, and FALSE.
        for l in lines.iter().filter(|l| l.verdict != Verdict::Quiet) {
            assert!(
                straddled.contains(&at(l)),
                "{name}: line +{} is {} but holds one thread's data: {l:#?}",
                at(l),
                l.verdict
            );
            assert_eq!(l.verdict, Verdict::False, "{name}: line +{}: {l:#?}", at(l));
            // Each of the two threads wrote its own words of it.
            assert_eq!(writers(l).len(), 2, "{name}: {l:#?}");
        }
        if decided == straddled.len() {
            assert_eq!(flagged, straddled, "{name}");
            let s = watchpoints();
            eprintln!("{name}: {s} in {run:?}");
            return;
        }
        eprintln!(
            "{name}: attempt {n}: {decided} of {} straddled lines decided in {run:?}",
            straddled.len()
        );
    }
    eprintln!("{name}: inconclusive after {ATTEMPTS} attempts (a loaded machine?)");
}

/// Runs the aligned layout: every line must stay quiet (one writer each).
fn expect_quiet(name: &str, attempt: impl Fn(Duration) -> Outcome) {
    let run = Duration::from_millis(2000);
    for n in 0..ATTEMPTS {
        match attempt(run) {
            Outcome::Thin(why) => eprintln!("{name}: attempt {n}: {why}"),
            Outcome::Unavailable(r) => {
                eprintln!("{name}: inconclusive, hardware watchpoints unavailable here: {r}");
                return;
            }
            Outcome::Verdicts(lines) => {
                assert!(!lines.is_empty(), "{name}: its lines are in the report");
                for l in &lines {
                    assert_eq!(l.verdict, Verdict::Quiet, "{name}: {l:#?}");
                }
                // Lines nobody wrote are left out of the report: these were seen, each
                // written by one thread.
                for l in &lines {
                    assert_eq!(writers(l).len(), 1, "{name}: {l:#?}");
                }
                return;
            }
        }
    }
    eprintln!("{name}: inconclusive after {ATTEMPTS} attempts");
}

#[test]
fn phoenix_histogram_is_false_on_the_line_two_threads_straddle() {
    let _one = serial();
    let bytes = THREADS * HISTOGRAM_STRIDE + 128;
    let starts: Vec<usize> = (0..THREADS).map(|t| t * HISTOGRAM_STRIDE).collect();
    // Thread t - 1's counters end, and thread t's begin, 24 B into this line.
    let straddled: Vec<usize> = (1..THREADS)
        .map(|t| t * HISTOGRAM_STRIDE / LINE * LINE)
        .collect();
    // ~100 lines: a survey of them all comes before the straddled one is watched closely.
    expect_false_on("histogram", Duration::from_secs(3), &straddled, |run| {
        case(bytes, &starts, HISTOGRAM_STRIDE, run, histogram)
    });
}

#[test]
fn phoenix_histogram_padded_to_128_is_quiet() {
    let _one = serial();
    let stride = HISTOGRAM_STRIDE.div_ceil(128) * 128;
    let starts: Vec<usize> = (0..THREADS).map(|t| t * stride).collect();
    expect_quiet("histogram padded", |run| {
        case(THREADS * stride, &starts, HISTOGRAM_STRIDE, run, histogram).1
    });
}

#[test]
fn phoenix_linear_regression_is_false_on_the_lines_two_structs_straddle() {
    let _one = serial();
    let bytes = REGRESSION_OFFSET + THREADS * REGRESSION_STRUCT + 128;
    let starts: Vec<usize> = (0..THREADS)
        .map(|t| REGRESSION_OFFSET + t * REGRESSION_STRUCT)
        .collect();
    // Struct t + 1 starts 24 B into the line that struct t ends in.
    let straddled: Vec<usize> = (1..THREADS).map(|t| starts[t] / LINE * LINE).collect();
    expect_false_on(
        "linear_regression",
        Duration::from_secs(3),
        &straddled,
        |run| case(bytes, &starts, REGRESSION_STRUCT, run, regression),
    );
}

#[test]
fn phoenix_linear_regression_aligned_to_128_is_quiet() {
    let _one = serial();
    let starts: Vec<usize> = (0..THREADS).map(|t| t * 128).collect();
    expect_quiet("linear_regression aligned", |run| {
        case(THREADS * 128, &starts, REGRESSION_STRUCT, run, regression).1
    });
}

#[test]
fn breakpoints_refused_are_reported_with_their_reason() {
    let _one = serial();
    for (errno, expected) in [
        (libc::EACCES, "permission denied (EACCES)"),
        (libc::ENOSPC, "no free debug register (ENOSPC)"),
    ] {
        yieldprof::__private::fail_watchpoints(errno);
        let data = aligned_words(256);
        let guard = watch_plain(&data[..], "refused");
        let s = watchpoints();
        // The program's own writes go on undisturbed.
        for w in data.iter_mut() {
            *w += 1;
        }
        assert!(data.iter().all(|&w| w == 1));
        let profile = yieldprof::snapshot();
        let summary = profile.summary();
        let json = profile
            .json(&yieldprof::report::Costs::current())
            .watchpoints;
        drop(guard);
        // Only now: a thread started meanwhile would have got breakpoints.
        yieldprof::__private::fail_watchpoints(0);
        let reason = match s.state {
            WatchpointState::Unavailable(r) => r,
            other => panic!("errno {errno}: {other:?}"),
        };
        assert_eq!(reason.errno(), Some(errno));
        if errno == libc::ENOSPC {
            assert_eq!(reason, Reason::NoDebugRegister);
        }
        let line = summary
            .lines()
            .find(|l| l.contains("hardware watchpoints unavailable"))
            .unwrap_or_else(|| panic!("the summary says why:\n{summary}"));
        assert!(
            line.contains(expected) || matches!(reason, Reason::Paranoid { .. }),
            "{line}"
        );
        // The JSON says the same.
        let json = json.expect("watchpoints in the JSON");
        assert_eq!(json.state, "unavailable");
        assert_eq!(json.reason, Some(reason.to_string()));
        assert!(json.note.starts_with(line.trim()), "{line} / {}", json.note);
    }
}

#[test]
fn a_child_made_by_fork_while_watching_watches_nothing_and_exits_cleanly() {
    let _one = serial();
    let data = aligned_words(256);
    let guard = watch_plain(&data[..], "forked");
    // SAFETY: the child reads yieldprof's state (its locks are reset in a child) and
    // leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let s = watchpoints();
        data[0] += 1;
        let ok = s.threads == 0 && data[0] == 1;
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(i32::from(!ok)) };
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: waits for the child just made.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    drop(guard);
    assert!(libc::WIFEXITED(status), "{status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0);
}
