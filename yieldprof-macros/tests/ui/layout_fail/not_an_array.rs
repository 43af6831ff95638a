// `[..]` on a `Vec`: its elements are not in the struct, so the check cannot read them.
#[allow(dead_code)]
struct Queue {
    slots: Vec<u64>,
}

const _: () = yieldprof::assert_separate_lines!(Queue, slots[..]);

fn main() {}
