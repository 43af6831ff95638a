// Padded fields, nested fields and array elements pass in a `const` and at run time.
use std::sync::atomic::{AtomicU32, AtomicU64};

#[repr(align(128))]
#[allow(dead_code)]
struct Padded<T>(T);

#[allow(dead_code)]
struct Side {
    head: Padded<AtomicU64>,
    count: u64,
}

#[allow(dead_code)]
struct Ring {
    a: Side,
    b: Side,
    locks: [Padded<AtomicU32>; 4],
}

const _: () = yieldprof::assert_separate_lines!(Ring, a.head, b.head, locks[..]);
const _: () = yieldprof::assert_separate_lines!([Padded<AtomicU32>; 8]);

fn main() {
    yieldprof::assert_separate_lines!(Ring, a, b, locks[..]);
}
