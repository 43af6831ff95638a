#[yieldprof::instrument_wait]
const fn answer() -> u32 {
    42
}

fn main() {
    // The fn is still emitted: only the attribute's error is reported.
    const _: u32 = answer();
}
