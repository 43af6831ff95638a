//! Characterises this machine's wait primitives, the way the founding articles did:
//! per-call cost, context switches per call and CPU share of `spin_loop`, `yield_now`,
//! `sched_yield`, `sleep(ZERO)`, `nanosleep(0)`, `usleep(0)`, `park_timeout(ZERO)` and
//! `sleep(1 µs)`, alone and with a busy thread on the same core; the timer slack, the
//! context-switch cost, which counters work here, and a spin → yield → sleep backoff.
//!
//! `cargo run --release --example probe` (about 5 s).

fn main() {
    println!("{}", yieldprof::probe::run());
}
