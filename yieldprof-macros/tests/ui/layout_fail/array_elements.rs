// Per-thread locks in one array, 4 B apart: an array field and an array type.
use std::sync::atomic::AtomicU32;

#[repr(align(128))]
#[allow(dead_code)]
struct Table {
    locks: [AtomicU32; 4],
}

const _: () = yieldprof::assert_separate_lines!(Table, locks[..]);
const _: () = yieldprof::assert_separate_lines!([AtomicU32; 2]);

fn main() {}
