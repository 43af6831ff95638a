//! `assert_separate_lines!`: catches removed padding from the types alone, no threads.

use std::sync::atomic::{AtomicU32, AtomicU64};
use yieldprof::Watched;

#[repr(C, align(128))]
#[derive(Default)]
struct CachePadded<T>(T);

#[derive(Default)]
#[allow(dead_code)]
struct PaddedRing {
    head: CachePadded<Watched<AtomicU64>>,
    tail: CachePadded<Watched<AtomicU64>>,
    slots: Vec<u64>,
}

#[allow(dead_code)]
struct PackedRing {
    head: Watched<AtomicU64>,
    tail: Watched<AtomicU64>,
}

/// 64 B apart: separate 64-B lines, one 128-B block.
#[repr(C, align(128))]
#[allow(dead_code)]
struct Adjacent {
    head: AtomicU64,
    _gap: [u8; 56],
    tail: AtomicU64,
}

/// 128 B apart but only 8-aligned: the value may start anywhere in a line.
#[repr(C)]
#[allow(dead_code)]
struct Unaligned {
    a: [u64; 2],
    _gap: [u8; 112],
    b: [u64; 2],
}

#[allow(dead_code)]
struct Tuple(CachePadded<u64>, CachePadded<u64>);

fn message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("the check fails");
    err.downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| err.downcast_ref::<&str>().unwrap().to_string())
}

#[test]
fn padded_fields_pass() {
    yieldprof::assert_separate_lines!(PaddedRing, head, tail);
    yieldprof::assert_separate_lines!(PaddedRing, head, tail, slots);
    yieldprof::assert_separate_lines!(Tuple, 0, 1);
}

#[test]
fn packed_fields_fail_naming_fields_offsets_and_the_line_size() {
    let m = message(|| yieldprof::assert_separate_lines!(PackedRing, head, tail));
    assert!(
        m.starts_with("assert_separate_lines!(PackedRing): fields can share a 128-B line"),
        "{m}"
    );
    // Rust may order the two fields either way.
    assert!(
        m.contains("`head` (offset 0, 8 B) and `tail` (offset 8, 8 B)")
            || m.contains("`head` (offset 8, 8 B) and `tail` (offset 0, 8 B)"),
        "{m}"
    );
    assert!(m.contains("crossbeam_utils::CachePadded"), "{m}");
}

#[test]
fn fields_64_bytes_apart_in_one_block_fail() {
    let m = message(|| yieldprof::assert_separate_lines!(Adjacent, head, tail));
    assert!(
        m.contains("`head` (offset 0, 8 B) and `tail` (offset 64, 8 B)"),
        "{m}"
    );
    assert_eq!(yieldprof::sharing::SEPARATE_LINE_BYTES, 128);
}

#[test]
fn a_low_alignment_is_taken_into_account() {
    let m = message(|| yieldprof::assert_separate_lines!(Unaligned, a, b));
    assert!(
        m.contains("`a` (offset 0, 16 B) and `b` (offset 128, 16 B) when the value starts 120 B"),
        "{m}"
    );
    assert!(m.contains("align_of::<Unaligned>() = 8 allows it"), "{m}");
}

/// Two sides of a ring, each a struct of its own.
#[allow(dead_code)]
struct Side {
    head: AtomicU64,
    cached: u64,
}

#[allow(dead_code)]
struct Sides {
    producer: Side,
    consumer: Side,
}

#[allow(dead_code)]
struct PaddedSides {
    producer: CachePadded<Side>,
    consumer: CachePadded<Side>,
    locks: [CachePadded<AtomicU32>; 4],
}

#[allow(dead_code)]
struct Locks {
    locks: [AtomicU32; 4],
}

// The same checks as the tests', made by the compiler: this file would not build if the
// padded layouts shared a line.
const _: () = yieldprof::assert_separate_lines!(PaddedRing, head, tail);
const _: () = yieldprof::assert_separate_lines!(PaddedSides, producer.0.head, consumer.0.head);
const _: () = yieldprof::assert_separate_lines!(PaddedSides, producer, consumer, locks[..]);
const _: () = yieldprof::assert_separate_lines!([CachePadded<AtomicU32>; 16]);

#[test]
fn array_elements_a_stride_apart_fail_naming_the_elements() {
    let m = message(|| yieldprof::assert_separate_lines!(Locks, locks[..]));
    assert!(
        m.contains("`locks[0]` (offset 0, 4 B) and `locks[1]` (offset 4, 4 B): elements 4 B apart"),
        "{m}"
    );
    assert!(
        m.ends_with(
            "(for an array: on its element type, so that the stride is a multiple of 128 B)"
        ),
        "{m}"
    );
    let m = message(|| yieldprof::assert_separate_lines!([AtomicU32; 2]));
    assert!(
        m.starts_with("assert_separate_lines!([AtomicU32; 2]): fields can share a 128-B line"),
        "{m}"
    );
    assert!(
        m.contains("`[0]` (offset 0, 4 B) and `[1]` (offset 4, 4 B)"),
        "{m}"
    );
}

#[test]
fn nested_fields_are_named_by_their_path() {
    let m = message(|| yieldprof::assert_separate_lines!(Sides, producer.head, consumer.head));
    let (p, c) = (
        std::mem::offset_of!(Sides, producer.head),
        std::mem::offset_of!(Sides, consumer.head),
    );
    assert!(
        m.contains(&format!(
            "`producer.head` (offset {p}, 8 B) and `consumer.head` (offset {c}, 8 B)"
        )),
        "{m}"
    );
}
