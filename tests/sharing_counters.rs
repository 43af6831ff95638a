//! Per-thread counters in one array vs padded apart, and one counter all threads bump,
//! on two threads, several runs each.
//!
//! The two threads take turns through an unwatched turn flag (on its own line), so the
//! watched lines see the same interleaving on any machine, fast or slow, loaded or not.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use yieldprof::sharing::{LineVerdict, Verdict};
use yieldprof::Watched;

mod watching;
use watching::{serial, writers};

const TURNS: u64 = 5_000;
const RUNS: usize = 5;

#[repr(C, align(128))]
struct Turn(AtomicUsize);

/// Thread `me` of two waits for its turn, runs `step`, and passes the turn on.
fn take_turns(turn: &Turn, me: usize, step: impl Fn()) {
    for _ in 0..TURNS {
        let mut round = 0u32;
        while turn.0.load(Acquire) % 2 != me {
            round += 1;
            if round < 256 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        step();
        turn.0.fetch_add(1, Release);
    }
}

/// Runs `step(thread)` on two threads in turns.
fn two_threads<T: Send + Sync + 'static>(shared: Arc<T>, step: fn(&T, usize)) {
    let turn = Arc::new(Turn(AtomicUsize::new(0)));
    let threads: Vec<_> = (0..2)
        .map(|me| {
            let (shared, turn) = (shared.clone(), turn.clone());
            std::thread::Builder::new()
                .name(format!("worker-{me}"))
                .spawn(move || take_turns(&turn, me, || step(&shared, me)))
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn lines_with(prefix: &str) -> Vec<LineVerdict> {
    yieldprof::snapshot()
        .sharing()
        .into_iter()
        .filter(|l| l.words.iter().any(|w| w.name.starts_with(prefix)))
        .collect()
}

fn writers_by_offset(line: &LineVerdict) -> Vec<(usize, Vec<&str>)> {
    line.words.iter().map(|w| (w.offset, writers(w))).collect()
}

#[test]
fn per_thread_counters_in_one_array_are_false_sharing_with_the_writer_offsets() {
    let _serial = serial();
    #[repr(C, align(64))]
    struct Counters([Watched<AtomicU64>; 4]);
    for r in 0..RUNS {
        let counters = Arc::new(Counters(std::array::from_fn(|_| Watched::new(0))));
        let name = format!("array#{r}");
        yieldprof::watch(&counters.0, &name);
        two_threads(counters.clone(), |c, me| {
            c.0[me].fetch_add(1, Relaxed);
        });
        let lines = lines_with(&name);
        assert_eq!(lines.len(), 1, "run {r}: {lines:#?}");
        let line = &lines[0];
        assert_eq!(line.verdict, Verdict::False, "run {r}: {line:#?}");
        // Every turn after the first takes the line from the other thread, and the
        // other thread only ever touched its own word.
        assert_eq!(line.invalidations, 2 * TURNS - 1, "run {r}");
        assert_eq!(line.false_invalidations, 2 * TURNS - 1, "run {r}");
        assert_eq!(
            writers_by_offset(line),
            [
                (0, vec!["worker-0"]),
                (8, vec!["worker-1"]),
                (16, vec![]),
                (24, vec![]),
            ],
            "run {r}"
        );
        let names: Vec<&str> = line.words.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [0, 1, 2, 3].map(|i| format!("{name}[{i}]")),
            "the elements of a watched array are named by index"
        );
        assert_eq!(line.words[0].invalidations, TURNS - 1);
        assert_eq!(
            line.fix,
            format!(
                "align each element of `{name}` (`Watched<AtomicU64>`, stride 8 B; `{name}[0]` \
                 and `{name}[1]` share this line) to 128 B: `crossbeam_utils::CachePadded` or a \
                 `#[repr(align(128))]` wrapper (128 B, not 64: the adjacent-line prefetcher \
                 moves 64-B lines in pairs); expected: the {n} false invalidations (100% of the \
                 line's) go away",
                n = 2 * TURNS - 1
            )
        );
        assert_eq!(counters.0[0].load(Relaxed), TURNS);
    }
}

#[test]
fn per_thread_counters_padded_apart_are_quiet() {
    let _serial = serial();
    #[repr(C, align(128))]
    struct Slot(Watched<AtomicU64>);
    for r in 0..RUNS {
        let slots: Arc<[Slot; 4]> = Arc::new(std::array::from_fn(|_| Slot(Watched::new(0))));
        let prefix = format!("padded#{r}");
        for (i, s) in slots.iter().enumerate() {
            yieldprof::watch(&s.0, &format!("{prefix}.{i}"));
        }
        two_threads(slots.clone(), |s, me| {
            s[me].0.fetch_add(1, Relaxed);
        });
        let lines = lines_with(&prefix);
        // Two slots were used; each line saw one thread only. The other two saw nothing,
        // and say so.
        assert_eq!(lines.len(), 4, "run {r}: {lines:#?}");
        for line in &lines {
            let used = ["0", "1"].map(|i| format!("{prefix}.{i}"));
            let expected = if used.contains(&line.words[0].name) {
                Verdict::Quiet
            } else {
                Verdict::Untracked
            };
            assert_eq!(line.verdict, expected, "run {r}: {line:#?}");
            assert_eq!(line.invalidations, 0, "run {r}: {line:#?}");
        }
        yieldprof::assert_separate_lines!(Slots, a, b);
    }
}

#[derive(Default)]
#[allow(dead_code)]
struct Slots {
    a: Pad,
    b: Pad,
}

#[derive(Default)]
#[repr(align(128))]
#[allow(dead_code)]
struct Pad(u64);

#[test]
fn one_counter_bumped_by_both_threads_is_true_sharing_not_false() {
    let _serial = serial();
    for r in 0..RUNS {
        let counter: Arc<Watched<AtomicU64>> = Arc::new(Watched::new(0));
        let name = format!("shared#{r}");
        yieldprof::watch(&*counter, &name);
        two_threads(counter.clone(), |c, _| {
            c.fetch_add(1, Relaxed);
        });
        let lines = lines_with(&name);
        assert_eq!(lines.len(), 1, "run {r}: {lines:#?}");
        let line = &lines[0];
        assert_eq!(line.verdict, Verdict::True, "run {r}: {line:#?}");
        assert_eq!(line.false_invalidations, 0, "run {r}");
        assert_eq!(line.invalidations, 2 * TURNS - 1, "run {r}");
        assert_eq!(line.contended_invalidations, 2 * TURNS - 1, "run {r}");
        let offset = Arc::as_ptr(&counter) as usize % 64;
        assert_eq!(
            writers_by_offset(line),
            [(offset, vec!["worker-0", "worker-1"])]
        );
        assert!(line.fix.contains("padding cannot help"), "{}", line.fix);
        assert_eq!(counter.load(Relaxed), 2 * TURNS);
    }
}

#[test]
fn sampled_tracking_still_finds_false_sharing() {
    let _serial = serial();
    // A rate below the turns per thread, so most accesses after warm-up are skipped.
    yieldprof::sharing::set_watch_sampling(8);
    #[repr(C, align(64))]
    struct Pair([Watched<AtomicU64>; 2]);
    for r in 0..RUNS {
        let pair = Arc::new(Pair(std::array::from_fn(|_| Watched::new(0))));
        let name = format!("sampled#{r}");
        yieldprof::watch(&pair.0, &name);
        // Past the documented warm-up of 10 000 accesses per thread, so sampling is in
        // force for most of the run.
        let per_thread = 4 * 10_000u64;
        let turns = Arc::new(Turn(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..2)
            .map(|me| {
                let (pair, turns) = (pair.clone(), turns.clone());
                std::thread::spawn(move || {
                    for _ in 0..per_thread / TURNS {
                        take_turns(&turns, me, || {
                            pair.0[me].fetch_add(1, Relaxed);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let lines = lines_with(&name);
        let line = &lines[0];
        assert_eq!(line.verdict, Verdict::False, "run {r}: {line:#?}");
        assert_eq!(line.sample_every, 8);
        let tracked: u64 = line.words[0].threads.iter().map(|t| t.writes).sum();
        assert!(
            tracked < per_thread / 2 && tracked > 10_000,
            "run {r}: {tracked} of {per_thread} writes tracked"
        );
    }
}
