//! The false-sharing detector on an SPSC ring, producer and consumer on two threads, in
//! three layouts: `head`/`tail` side by side, 128 B apart, and 64 B apart inside one
//! 128-B block. Each layout runs several times, each run with a fresh ring.
//!
//! The ring caches the other side's index (as rigtorp's SPSCQueue does), so each side
//! reads the other's index only when the ring looks full or empty, the consumer mostly
//! inside its wait episode. The producer pushes message `i` only once the consumer has
//! popped message `i - 1` (a credit on its own, unwatched line): that keeps the two
//! sides interleaved one message at a time on any machine, fast or slow, idle or
//! loaded, so the verdicts follow from the ring's code, not from the schedule.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use yieldprof::__private::{enter, EpisodeSite};
use yieldprof::sharing::{LineVerdict, Verdict};
use yieldprof::Watched;

mod watching;
use watching::{serial, writers};

const CAPACITY: u64 = 64;
const MESSAGES: u64 = 10_000;
const RUNS: usize = 5;

type Index = Watched<AtomicU64>;

trait Indices: Send + Sync + 'static {
    fn new() -> Self;
    fn head(&self) -> &Index;
    fn tail(&self) -> &Index;
}

/// `head` at offset 0 and `tail` at offset 8 of one 64-B line.
#[repr(C, align(64))]
struct Packed {
    head: Index,
    tail: Index,
}

#[repr(C, align(128))]
struct Padded128(Index);

/// Each index in its own 128-B block.
#[repr(C)]
struct Padded {
    head: Padded128,
    tail: Padded128,
}

/// 64 B apart: two lines, one 128-B block.
#[repr(C, align(128))]
struct Adjacent {
    head: Index,
    _gap: [u8; 56],
    tail: Index,
}

impl Indices for Packed {
    fn new() -> Self {
        Packed {
            head: Watched::new(0),
            tail: Watched::new(0),
        }
    }
    fn head(&self) -> &Index {
        &self.head
    }
    fn tail(&self) -> &Index {
        &self.tail
    }
}

impl Indices for Padded {
    fn new() -> Self {
        Padded {
            head: Padded128(Watched::new(0)),
            tail: Padded128(Watched::new(0)),
        }
    }
    fn head(&self) -> &Index {
        &self.head.0
    }
    fn tail(&self) -> &Index {
        &self.tail.0
    }
}

impl Indices for Adjacent {
    fn new() -> Self {
        Adjacent {
            head: Watched::new(0),
            _gap: [0; 56],
            tail: Watched::new(0),
        }
    }
    fn head(&self) -> &Index {
        &self.head
    }
    fn tail(&self) -> &Index {
        &self.tail
    }
}

struct Ring<I> {
    idx: I,
    slots: Box<[AtomicU64]>,
}

/// Messages the consumer has popped, on a line of its own.
#[repr(C, align(128))]
struct Credit(AtomicU64);

static WAIT_FOR_SPACE: EpisodeSite = EpisodeSite::new(
    Some("ring::wait_for_space"),
    module_path!(),
    "wait_for_space",
    file!(),
    line!(),
);
static WAIT_FOR_MESSAGE: EpisodeSite = EpisodeSite::new(
    Some("ring::wait_for_message"),
    module_path!(),
    "wait_for_message",
    file!(),
    line!(),
);

/// Spins, then yields: on two cores the other side is running and a spin suffices;
/// if it was descheduled the yield lets it run.
fn backoff(round: &mut u32) {
    *round += 1;
    if *round < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl<I: Indices> Ring<I> {
    fn push(&self, v: u64, head: &mut u64) {
        let tail = self.idx.tail().load(Relaxed);
        if tail - *head == CAPACITY {
            *head = self.idx.head().load(Acquire);
            if tail - *head == CAPACITY {
                let _episode = enter(&WAIT_FOR_SPACE);
                let mut round = 0;
                while tail - self.idx.head().load(Acquire) == CAPACITY {
                    backoff(&mut round);
                }
                *head = self.idx.head().load(Acquire);
            }
        }
        self.slots[(tail % CAPACITY) as usize].store(v, Relaxed);
        self.idx.tail().store(tail + 1, Release);
    }

    fn pop(&self, tail: &mut u64) -> u64 {
        let head = self.idx.head().load(Relaxed);
        if head == *tail {
            *tail = self.idx.tail().load(Acquire);
            if head == *tail {
                let _episode = enter(&WAIT_FOR_MESSAGE);
                let mut round = 0;
                while self.idx.tail().load(Acquire) == head {
                    backoff(&mut round);
                }
                *tail = self.idx.tail().load(Acquire);
            }
        }
        let v = self.slots[(head % CAPACITY) as usize].load(Relaxed);
        self.idx.head().store(head + 1, Release);
        v
    }
}

/// `head` and `tail` as watched in run `r` of a test: unique, so runs and tests
/// never mix up lines.
fn names(test: &str, r: usize) -> (String, String) {
    (format!("{test}.head#{r}"), format!("{test}.tail#{r}"))
}

/// Runs one ring with its indices watched under `names`; returns the verdicts on them.
fn run<I: Indices>((head, tail): &(String, String)) -> Vec<LineVerdict> {
    let ring = Arc::new(Ring {
        idx: I::new(),
        slots: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
    });
    yieldprof::watch(ring.idx.head(), head);
    yieldprof::watch(ring.idx.tail(), tail);
    let credit = Arc::new(Credit(AtomicU64::new(0)));
    let producer = {
        let (ring, credit) = (ring.clone(), credit.clone());
        std::thread::Builder::new()
            .name("producer".into())
            .spawn(move || {
                let mut head = 0;
                for i in 0..MESSAGES {
                    let mut round = 0;
                    while credit.0.load(Acquire) < i {
                        backoff(&mut round);
                    }
                    ring.push(i, &mut head);
                }
            })
            .unwrap()
    };
    let consumer = {
        let ring = ring.clone();
        std::thread::Builder::new()
            .name("consumer".into())
            .spawn(move || {
                let mut tail = 0;
                (1..=MESSAGES)
                    .map(|n| {
                        let v = ring.pop(&mut tail);
                        credit.0.store(n, Release);
                        v
                    })
                    .sum::<u64>()
            })
            .unwrap()
    };
    producer.join().unwrap();
    assert_eq!(consumer.join().unwrap(), MESSAGES * (MESSAGES - 1) / 2);
    yieldprof::snapshot()
        .sharing()
        .into_iter()
        .filter(|l| l.words.iter().any(|w| &w.name == head || &w.name == tail))
        .collect()
}

fn word<'a>(line: &'a LineVerdict, name: &str) -> &'a yieldprof::sharing::WordAccess {
    line.words
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no word {name} in {line:#?}"))
}

#[test]
fn head_and_tail_at_offsets_0_and_8_are_false_sharing() {
    let _serial = serial();
    yieldprof::assert_separate_lines!(Padded, head, tail);
    for r in 0..RUNS {
        let (head, tail) = names("packed", r);
        let lines = run::<Packed>(&(head.clone(), tail.clone()));
        assert_eq!(lines.len(), 1, "run {r}: one line holds both: {lines:#?}");
        let line = &lines[0];
        assert_eq!(line.verdict, Verdict::False, "run {r}: {line:#?}");
        assert_eq!(line.size, 64);
        assert_eq!(word(line, &head).offset, 0);
        assert_eq!(word(line, &tail).offset, 8);
        assert_eq!(writers(word(line, &head)), ["consumer"], "run {r}");
        assert_eq!(writers(word(line, &tail)), ["producer"], "run {r}");
        let head_writes: u64 = word(line, &head).threads.iter().map(|t| t.writes).sum();
        assert_eq!(head_writes, MESSAGES);
        // Each `head` store takes the line from the producer, which touched only `tail`
        // since its own last store: a false invalidation (about) once per message.
        assert!(
            line.false_invalidations >= MESSAGES / 2,
            "run {r}: {line:#?}"
        );
        assert_eq!(line.contended_invalidations, 0, "one writer per word");
        let sites: Vec<&str> = line.wait_sites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            sites,
            ["ring::wait_for_message"],
            "run {r}: the consumer spins on it"
        );
        assert!(
            line.fix.starts_with(&format!(
                "pad `{head}` (`Watched<AtomicU64>`, 8 B at +0) and `{tail}` \
                 (`Watched<AtomicU64>`, 8 B at +8) to 128 B each: `crossbeam_utils::CachePadded` \
                 or a `#[repr(align(128))]` wrapper (128 B, not 64: the adjacent-line \
                 prefetcher moves 64-B lines in pairs); expected: the {} false invalidations",
                line.false_invalidations
            )),
            "run {r}: {}",
            line.fix
        );
    }
}

#[test]
fn head_and_tail_128_bytes_apart_are_not_flagged() {
    let _serial = serial();
    for r in 0..RUNS {
        let (head, tail) = names("padded", r);
        let lines = run::<Padded>(&(head, tail.clone()));
        assert_eq!(lines.len(), 2, "run {r}: one line each: {lines:#?}");
        for line in &lines {
            assert!(!line.verdict.is_suspicious(), "run {r}: {line:#?}");
            assert_eq!(line.false_invalidations, 0, "run {r}: {line:#?}");
        }
        // The consumer's reads of `tail` are true sharing: seen, not flagged.
        let tail_line = lines
            .iter()
            .find(|l| l.words.iter().any(|w| w.name == tail))
            .unwrap();
        assert_eq!(tail_line.verdict, Verdict::True, "run {r}: {tail_line:#?}");
        let readers: Vec<&str> = word(tail_line, &tail)
            .threads
            .iter()
            .filter(|t| t.reads > 0)
            .map(|t| t.thread.as_str())
            .collect();
        assert!(readers.contains(&"consumer"), "{readers:?}");
        assert!(
            tail_line.invalidations >= MESSAGES / 2,
            "run {r}: {tail_line:#?}"
        );
    }
}

#[test]
fn head_and_tail_64_bytes_apart_in_one_block_are_adjacent_risk_only() {
    let _serial = serial();
    for r in 0..RUNS {
        let (head, tail) = names("adjacent", r);
        let lines = run::<Adjacent>(&(head.clone(), tail.clone()));
        let flagged: Vec<&LineVerdict> =
            lines.iter().filter(|l| l.verdict.is_suspicious()).collect();
        assert_eq!(flagged.len(), 1, "run {r}: {lines:#?}");
        let block = flagged[0];
        assert_eq!(block.verdict, Verdict::AdjacentRisk, "run {r}: {block:#?}");
        assert_eq!(block.size, 128);
        assert_eq!(block.address % 128, 0);
        assert_eq!(word(block, &head).offset, 0);
        assert_eq!(word(block, &tail).offset, 64);
        assert!(
            block.false_invalidations >= MESSAGES / 2,
            "run {r}: {block:#?}"
        );
        assert!(
            block.fix.contains("adjacent-line prefetcher"),
            "{}",
            block.fix
        );
        // Each 64-B line on its own holds one index: nothing false there.
        let single: Vec<&LineVerdict> = lines.iter().filter(|l| l.size == 64).collect();
        assert_eq!(single.len(), 2, "run {r}: {lines:#?}");
        for line in single {
            assert_eq!(line.false_invalidations, 0, "run {r}: {line:#?}");
        }
    }
}
