use super::fields::Field;
use super::history::access;
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
    // 19 of 19 false is far more than hand-offs make: FALSE, not too few to tell.
    assert_eq!(classify(&h.tally.record()), Verdict::False);
    let one_hand_off = Hot::new();
    one_hand_off.observe(A, 0, true);
    one_hand_off.observe(B, 1, true);
    assert_eq!(classify(&one_hand_off.tally.record()), Verdict::Quiet);
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
    let history = || h.history.each_ref().map(|w| w.load(Relaxed));
    let before = history();
    h.observe(B, 1, false);
    h.observe(A, 0, false);
    h.observe(B, 1, false);
    assert_eq!(history(), before);
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

/// Thread `tid` writes (or reads) `len` bytes at `offset`, as `track` does.
fn touch(h: &Hot, tid: u16, offset: usize, len: usize, write: bool) {
    if let Some(i) = h.apply(tid, access(offset, len), write, 0) {
        h.tally.count(offset / GRANULE, i, false);
    }
}

#[test]
fn two_four_byte_locks_in_one_word_written_by_their_own_threads_are_false() {
    let h = Hot::new();
    for _ in 0..40 {
        touch(&h, A, 0, 4, true);
        touch(&h, B, 4, 4, true);
    }
    assert_eq!(counts(&h), (79, 79, 0));
    assert_eq!(classify(&h.tally.record()), Verdict::False);
    assert_eq!(h.tally.record().by_granule[..2], [39, 40]);
}

#[test]
fn writes_to_overlapping_bytes_are_contended_true_sharing() {
    let h = Hot::new();
    for _ in 0..40 {
        touch(&h, A, 0, 4, true);
        touch(&h, B, 2, 2, true);
    }
    assert_eq!(counts(&h), (79, 0, 79));
    assert_eq!(classify(&h.tally.record()), Verdict::True);
}

#[test]
fn one_byte_flags_and_a_reader_of_a_neighbouring_byte() {
    // A sets flag 0, B spins on flag 1, then C reads flag 0 (the one A writes).
    let h = Hot::new();
    for _ in 0..40 {
        touch(&h, B, 1, 1, false);
        touch(&h, A, 0, 1, true);
    }
    assert_eq!(counts(&h), (40, 40, 0));
    touch(&h, C, 0, 1, false);
    touch(&h, A, 0, 1, true);
    assert_eq!(counts(&h), (41, 40, 0));
}

#[test]
fn long_fix_texts_wrap_within_the_summary_width() {
    let fields: Vec<Field> = (0..12)
        .map(|i| Field::new(4096 + 8 * i, 8, &format!("counters_of_worker_{i}"), "u64"))
        .collect();
    let parts: Vec<_> = fields.iter().flat_map(|f| f.parts(4096, LINE)).collect();
    let parts: Vec<_> = parts.iter().collect();
    let fix = fix_text(Verdict::False, &parts, &[], (100, 100));
    let s = wrap(&fix, "    fix: ", "         ");
    assert!(s.lines().count() > 1);
    assert!(s.lines().all(|l| l.chars().count() <= WIDTH), "{s}");
    assert!(s.lines().skip(1).all(|l| l.starts_with("         ")), "{s}");
    let words: Vec<&str> = s.split_whitespace().skip(1).collect();
    assert_eq!(words, fix.split(' ').collect::<Vec<_>>());
}

#[test]
fn fix_texts_name_the_elements_or_fields_their_type_and_the_padding() {
    let locks = Field::new(
        4096,
        8,
        "locks",
        "[yieldprof::Watched<core::sync::atomic::AtomicU32>; 2]",
    );
    let parts = locks.parts(4096, LINE);
    let parts: Vec<_> = parts.iter().collect();
    assert_eq!(
        fix_text(Verdict::False, &parts, &[], (30, 40)),
        "align each element of `locks` (`Watched<AtomicU32>`, stride 4 B; `locks[0]` and \
         `locks[1]` share this line) to 128 B: `crossbeam_utils::CachePadded` or a \
         `#[repr(align(128))]` wrapper (128 B, not 64: the adjacent-line prefetcher moves 64-B \
         lines in pairs); expected: the 30 false invalidations (75% of the line's) go away"
    );
    let a = Field::new(4096 + 16, 4, "lock_a", "core::sync::atomic::AtomicU32");
    let b = Field::new(4096 + 20, 1, "ready", "bool");
    let parts: Vec<_> = [a.parts(4096, LINE), b.parts(4096, LINE)].concat();
    let parts: Vec<_> = parts.iter().collect();
    assert_eq!(
        fix_text(Verdict::Mixed, &parts, &["ready".into()], (10, 40)),
        "pad `lock_a` (`AtomicU32`, 4 B at +16) and `ready` (`bool`, 1 B at +20) to 128 B \
         each: `crossbeam_utils::CachePadded` or a `#[repr(align(128))]` wrapper (128 B, not \
         64: the adjacent-line prefetcher moves 64-B lines in pairs); expected: the 10 false \
         invalidations (25% of the line's) go away; `ready` written by several threads: shard \
         it per thread or batch updates"
    );
}

#[test]
fn slots_do_not_share_128_byte_blocks() {
    assert_eq!(std::mem::align_of::<LineSlot>(), 128);
    assert_eq!(std::mem::size_of::<LineSlot>() % 128, 0);
    assert_eq!(std::mem::size_of::<PerThread>(), 512);
    assert_eq!(std::mem::size_of::<Hot>(), 256);
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
