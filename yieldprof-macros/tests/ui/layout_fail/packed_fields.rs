// Two indices in one 8-B word: the build fails, naming both fields.
use std::sync::atomic::AtomicU64;

#[allow(dead_code)]
struct Packed {
    head: AtomicU64,
    tail: AtomicU64,
}

const _: () = yieldprof::assert_separate_lines!(Packed, head, tail);

fn main() {}
