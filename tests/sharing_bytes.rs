//! Byte-precise verdicts, on two threads pinned to the two cores that really run at once:
//! two 4-byte spin locks in one 8-byte word, each taken by its own thread, are FALSE
//! sharing (padding fixes them), and the report's fix names the array, its element type
//! and stride; both threads taking the same lock (the same bytes) is TRUE sharing.
//!
//! On a loaded machine other processes may take a core from the threads: an attempt in
//! which either thread ran less than 3/4 of the window is retried, a bounded number of
//! times, and the result reported inconclusive if none overlapped.
//!
//! Also: a watched range no tracked access reached, and a line whose two writers never
//! ran at the same time, say so in the summary and the JSON instead of "quiet".

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::time::Duration;
use yieldprof::report::Costs;
use yieldprof::sharing::{LineVerdict, Verdict};
use yieldprof::Watched;

mod clocks;
mod watching;
use watching::{serial, writers};

const RUN: Duration = Duration::from_millis(200);
const ATTEMPTS: usize = 4;

/// Two 4-byte locks in one 8-byte word.
#[repr(C, align(64))]
struct Locks([Watched<AtomicU32>; 2]);

fn lock_unlock(lock: &Watched<AtomicU32>) {
    while lock.compare_exchange_weak(0, 1, Acquire, Relaxed).is_err() {
        spin_loop();
    }
    lock.store(0, Release);
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

/// Runs `step(me)` in a loop on two threads named `t0`, `t1`, pinned to cores 0 and 1,
/// for `RUN`; true when both were on their core for at least 3/4 of it (and so ran at
/// the same time for at least half of it).
fn two_pinned(step: impl Fn(usize) + Sync) -> bool {
    let stop = AtomicBool::new(false);
    let step = &step;
    let on_cpu: Vec<u64> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|me| {
                let stop = &stop;
                std::thread::Builder::new()
                    .name(format!("t{me}"))
                    .spawn_scoped(s, move || {
                        let pinned = pin(me);
                        let c0 = clocks::cpu_ns();
                        while !stop.load(Relaxed) {
                            step(me);
                        }
                        if pinned {
                            clocks::cpu_ns() - c0
                        } else {
                            0
                        }
                    })
                    .unwrap()
            })
            .collect();
        std::thread::sleep(RUN);
        stop.store(true, Relaxed);
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    eprintln!("on the CPU: {on_cpu:?} ns of {RUN:?}");
    on_cpu.iter().all(|&ns| ns >= RUN.as_nanos() as u64 * 3 / 4)
}

/// The line holding `name`'s rows.
fn line_of(name: &str) -> LineVerdict {
    yieldprof::snapshot()
        .sharing()
        .into_iter()
        .find(|l| l.words.iter().any(|w| w.name.starts_with(name)))
        .unwrap_or_else(|| panic!("no line of {name}"))
}

/// Runs `attempt` until the threads overlapped, at most `ATTEMPTS` times; false if they
/// never did (inconclusive).
fn with_overlap(test: &str, mut attempt: impl FnMut(usize) -> bool) -> bool {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("inconclusive: {test} needs two cores");
        return false;
    }
    for n in 0..ATTEMPTS {
        if attempt(n) {
            return true;
        }
        eprintln!("{test}, attempt {n}: the threads did not overlap (a loaded machine), retrying");
    }
    eprintln!("inconclusive: in {ATTEMPTS} attempts the two threads of {test} never overlapped");
    false
}

#[test]
fn two_4_byte_locks_in_one_word_each_taken_by_its_own_thread_are_false_sharing() {
    let _serial = serial();
    with_overlap("own locks", |n| {
        let locks = Box::new(Locks([Watched::new(0), Watched::new(0)]));
        let name = format!("locks#{n}");
        yieldprof::watch(&locks.0, &name);
        if !two_pinned(|me| lock_unlock(&locks.0[me])) {
            return false;
        }
        let line = line_of(&name);
        assert_eq!(line.verdict, Verdict::False, "{line:#?}");
        // Each thread touches only its own 4 bytes: every invalidation is false.
        assert!(line.invalidations >= 32, "{line:#?}");
        assert_eq!(line.false_invalidations, line.invalidations, "{line:#?}");
        assert_eq!(line.contended_invalidations, 0, "{line:#?}");
        let rows: Vec<(usize, usize, &str, Vec<&str>)> = line
            .words
            .iter()
            .map(|w| (w.offset, w.size, w.name.as_str(), writers(w)))
            .collect();
        assert_eq!(
            rows,
            [
                (0, 4, format!("{name}[0]").as_str(), vec!["t0"]),
                (4, 4, format!("{name}[1]").as_str(), vec!["t1"]),
            ]
        );
        assert_eq!(
            line.fix,
            format!(
                "align each element of `{name}` (`Watched<AtomicU32>`, stride 4 B; `{name}[0]` \
                 and `{name}[1]` share this line) to 128 B: `crossbeam_utils::CachePadded` or a \
                 `#[repr(align(128))]` wrapper (128 B, not 64: the adjacent-line prefetcher \
                 moves 64-B lines in pairs); expected: the {} false invalidations (100% of the \
                 line's) go away",
                line.invalidations
            )
        );
        assert_eq!(line.note, None);
        true
    });
}

#[test]
fn two_threads_taking_the_same_4_byte_lock_are_true_sharing() {
    let _serial = serial();
    with_overlap("one lock", |n| {
        let locks = Box::new(Locks([Watched::new(0), Watched::new(0)]));
        let name = format!("shared#{n}");
        yieldprof::watch(&locks.0, &name);
        if !two_pinned(|_| lock_unlock(&locks.0[0])) {
            return false;
        }
        let line = line_of(&name);
        assert_eq!(line.verdict, Verdict::True, "{line:#?}");
        assert!(line.invalidations >= 32, "{line:#?}");
        // Both use the same bytes: no invalidation is false, and those whose victim had
        // written the lock (not only read it) are contended.
        assert_eq!(line.false_invalidations, 0, "{line:#?}");
        assert!(line.contended_invalidations > 0, "{line:#?}");
        let mut both = writers(&line.words[0]);
        both.sort_unstable();
        assert_eq!(both, ["t0", "t1"]);
        assert_eq!(
            line.fix,
            format!(
                "same-bytes sharing (`{name}[0]` used by several threads): padding cannot help; \
                 write less often (batch, shard)"
            )
        );
        true
    });
}

#[test]
fn untracked_ranges_and_writers_that_never_overlapped_say_so_in_the_summary_and_the_json() {
    let _serial = serial();
    // Plain data on two lines: nothing reaches the detector through `Watched`.
    #[repr(align(64))]
    struct Plain([u64; 16]);
    let plain = Box::new(Plain([0; 16]));
    yieldprof::watch(&plain.0, "plain");
    // Two writers of one line, one after the other: never at the same time.
    let pair = Box::new(Locks([Watched::new(0), Watched::new(0)]));
    yieldprof::watch(&pair.0, "one_after_the_other");
    for me in 0..2 {
        let pair = &pair;
        std::thread::scope(|s| {
            s.spawn(move || {
                for _ in 0..10 {
                    pair.0[me].fetch_add(1, Relaxed);
                }
            });
        });
    }

    let profile = yieldprof::snapshot();
    let lines = profile.sharing();
    let plain_lines: Vec<&LineVerdict> = lines
        .iter()
        .filter(|l| l.words.iter().any(|w| w.name.starts_with("plain[")))
        .collect();
    assert_eq!(plain_lines.len(), 2, "{plain_lines:#?}");
    for l in &plain_lines {
        assert_eq!(l.verdict, Verdict::Untracked);
        assert_eq!(
            l.note.as_deref(),
            Some("nothing tracked: 0 accesses through Watched on this range")
        );
    }
    let seq = lines
        .iter()
        .find(|l| l.words.iter().any(|w| w.name == "one_after_the_other[0]"))
        .unwrap();
    assert_eq!(seq.verdict, Verdict::Uncertain, "{seq:#?}");
    // The second writer's first write found the first one in the history.
    assert_eq!(seq.invalidations, 1);
    let note = "verdict uncertain: the two writers overlapped 0 ns (a verdict needs 10.00 ms)";
    assert_eq!(seq.note.as_deref(), Some(note));

    let summary = profile.summary();
    let section = &summary[summary.find("\nFalse sharing (").expect(&summary)..];
    assert!(
        section.contains(
            "  untracked     2 lines, nothing tracked: 0 accesses through Watched on each: \
             plain[..]\n"
        ),
        "{section}"
    );
    assert!(section.contains("  uncertain     64 B at 0x"), "{section}");
    assert!(
        section.contains(&format!("    note: {note}\n")),
        "{section}"
    );

    let json = profile.json(&Costs::current());
    let notes: Vec<(&str, Option<&str>)> = json
        .sharing
        .iter()
        .filter(|l| {
            l.words
                .iter()
                .any(|w| w.name.starts_with("plain[") || w.name == "one_after_the_other[0]")
        })
        .map(|l| (l.verdict.as_str(), l.note.as_deref()))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes.contains(&("uncertain", Some(note))), "{notes:?}");
    let untracked = (
        "untracked",
        Some("nothing tracked: 0 accesses through Watched on this range"),
    );
    assert_eq!(
        notes.iter().filter(|n| **n == untracked).count(),
        2,
        "{notes:?}"
    );
    let text = serde_json::to_string(&json).unwrap();
    assert!(text.contains(&format!("\"note\":\"{note}\"")), "{text}");
}
