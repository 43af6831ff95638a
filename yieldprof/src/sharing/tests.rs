use super::*;
use crate::base::text::{wrap, WIDTH};
use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;

const A: u16 = 1;
const B: u16 = 2;
const C: u16 = 3;

fn counts(h: &Hot) -> (u64, u64, u64) {
    let r = h.tally.record();
    (r.invalidations, r.false_inv, r.contended)
}

#[test]
fn writes_by_two_threads_to_two_words_are_false_invalidations() {
    let h = Hot::new();
    for _ in 0..10 {
        h.observe(A, 0, true);
        h.observe(B, 1, true);
    }
    // The very first write finds nobody to invalidate.
    assert_eq!(counts(&h), (19, 19, 0));
    assert_eq!(classify(&h.tally.record()), Verdict::Quiet);
}

#[test]
fn a_reader_spinning_on_another_word_is_a_false_victim() {
    let h = Hot::new();
    for _ in 0..40 {
        h.observe(B, 3, false);
        h.observe(B, 3, false);
        h.observe(A, 0, true);
    }
    assert_eq!(counts(&h), (40, 40, 0));
    assert_eq!(classify(&h.tally.record()), Verdict::False);
}

#[test]
fn a_reader_of_the_written_word_makes_a_true_invalidation() {
    let h = Hot::new();
    for _ in 0..40 {
        h.observe(A, 1, true);
        h.observe(B, 1, false);
    }
    assert_eq!(counts(&h), (39, 0, 0));
    assert_eq!(classify(&h.tally.record()), Verdict::True);
}

#[test]
fn one_word_written_by_two_threads_is_contended_true_sharing() {
    let h = Hot::new();
    for _ in 0..40 {
        h.observe(A, 0, true);
        h.observe(B, 0, true);
    }
    assert_eq!(counts(&h), (79, 0, 79));
    assert_eq!(classify(&h.tally.record()), Verdict::True);
}

#[test]
fn private_words_next_to_a_contended_word_are_mixed() {
    let h = Hot::new();
    for _ in 0..40 {
        h.observe(A, 0, true);
        h.observe(B, 0, true);
        h.observe(A, 1, true);
        h.observe(B, 2, true);
    }
    let (inv, false_inv, contended) = counts(&h);
    assert_eq!(inv, 159);
    assert_eq!(false_inv, 119);
    assert_eq!(contended, 40);
    assert_eq!(classify(&h.tally.record()), Verdict::Mixed);
}

#[test]
fn a_seqlock_read_by_one_thread_and_written_by_another_is_true() {
    // Writer: seq (word 0), data (word 1); reader: seq, data, seq.
    let h = Hot::new();
    for _ in 0..40 {
        h.observe(A, 0, true);
        h.observe(A, 1, true);
        h.observe(A, 0, true);
        h.observe(B, 0, false);
        h.observe(B, 1, false);
        h.observe(B, 0, false);
    }
    assert_eq!(counts(&h), (39, 0, 0));
    assert_eq!(classify(&h.tally.record()), Verdict::True);
}

#[test]
fn a_thread_rereading_what_it_read_leaves_the_history_unchanged() {
    let h = Hot::new();
    h.observe(A, 0, true);
    h.observe(B, 1, false);
    let before = h.history.load(Relaxed);
    h.observe(B, 1, false);
    h.observe(A, 0, false);
    h.observe(B, 1, false);
    assert_eq!(h.history.load(Relaxed), before);
}

#[test]
fn a_third_reader_waits_for_the_next_write() {
    let h = Hot::new();
    h.observe(A, 0, true);
    h.observe(B, 1, false);
    h.observe(C, 2, false);
    h.observe(A, 0, true);
    assert_eq!(counts(&h), (1, 1, 0));
}

#[test]
fn long_fix_texts_wrap_within_the_summary_width() {
    let names: Vec<String> = (0..12).map(|i| format!("counters_of_worker_{i}")).collect();
    let fix = fix_text(Verdict::False, &[], &[]).replace("the fields", &name_list(&names));
    let s = wrap(&fix, "    fix: ", "         ");
    assert!(s.lines().count() > 1);
    assert!(s.lines().all(|l| l.chars().count() <= WIDTH), "{s}");
    assert!(s.lines().skip(1).all(|l| l.starts_with("         ")), "{s}");
    let words: Vec<&str> = s.split_whitespace().skip(1).collect();
    assert_eq!(words, fix.split(' ').collect::<Vec<_>>());
}

#[test]
fn history_entries_round_trip() {
    let e = [
        Entry {
            tid: 0xfffe,
            read: 0x81,
            write: 0x7e,
        },
        Entry::wrote(7, 4),
    ];
    assert_eq!(decode(encode(e)), e);
}

#[test]
fn slots_do_not_share_128_byte_blocks() {
    assert_eq!(std::mem::align_of::<LineSlot>(), 128);
    assert_eq!(std::mem::size_of::<LineSlot>() % 128, 0);
    assert_eq!(std::mem::size_of::<PerThread>(), 384);
    assert_eq!(std::mem::size_of::<Hot>(), 128);
}

#[test]
fn sampling_gaps_average_the_rate_after_warm_up() {
    let s = Sampler {
        left: Cell::new(0),
        warm: Cell::new(3),
        rng: Cell::new(0),
    };
    assert_eq!([s.gap(16), s.gap(16), s.gap(16)], [1, 1, 1]);
    let gaps: Vec<u32> = (0..10_000).map(|_| s.gap(16)).collect();
    assert!(gaps.iter().all(|&g| (1..=31).contains(&g)));
    let mean = gaps.iter().map(|&g| g as f64).sum::<f64>() / gaps.len() as f64;
    assert!((14.0..18.0).contains(&mean), "mean gap {mean}");
}
