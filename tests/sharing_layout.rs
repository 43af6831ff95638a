//! `assert_separate_lines!`: catches removed padding from the types alone, no threads.

use std::sync::atomic::AtomicU64;
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
