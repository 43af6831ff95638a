// Nested fields: `a.head` and `b.head` lie in two structs, 16 B apart.
use std::sync::atomic::AtomicU64;

#[allow(dead_code)]
struct Side {
    head: AtomicU64,
}

#[repr(C, align(128))]
#[allow(dead_code)]
struct Both {
    a: Side,
    _gap: [u8; 8],
    b: Side,
}

const _: () = yieldprof::assert_separate_lines!(Both, a.head, b.head);

fn main() {}
