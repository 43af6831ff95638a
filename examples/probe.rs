//! Characterises this machine's wait primitives, the way the founding articles did:
//! per-call cost, context switches per call and CPU share of `spin_loop`, `yield_now`,
//! `sched_yield`, `sleep(ZERO)`, `nanosleep(0)`, `usleep(0)`, `park_timeout(ZERO)` and
//! `sleep(1 µs)`, alone and with a busy thread on the same core; the timer slack, the
//! context-switch cost, which counters work here, and a spin → yield → sleep backoff.
//!
//! `cargo run --release --example probe` (about 5 s); with `-- --save` it also keeps the
//! costs in `target/yieldprof/machine.json` (or `YIELDPROF_MACHINE`), which later reports
//! on this host use and cite instead of a quick estimate.

fn main() {
    let machine = yieldprof::probe::run();
    println!("{machine}");
    if std::env::args().any(|a| a == "--save") {
        let path = yieldprof::probe::saved_path();
        match machine.save(&path) {
            Ok(()) => println!("saved: {}", path.display()),
            Err(e) => eprintln!("not saved to {}: {e}", path.display()),
        }
    }
}
