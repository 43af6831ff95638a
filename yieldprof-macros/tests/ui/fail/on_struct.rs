#[yieldprof::instrument_wait]
pub struct Waiter {
    pub spins: u32,
}

fn main() {
    let _ = Waiter { spins: 0 };
}
