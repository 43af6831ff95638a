//! The README's Quick start: `cargo run --example quick_start`. tests/readme.rs checks
//! that the README shows this code as it is here, and runs it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Waits until `sent` reaches `n`: spins up to 64 times, then yields the CPU.
#[yieldprof::instrument_wait(budget(max_spins_per_episode = 64))]
pub fn wait_for(sent: &AtomicU64, n: u64) {
    let mut spins = 0;
    while sent.load(Ordering::Acquire) < n {
        if spins < 64 {
            std::hint::spin_loop(); // counted as [spin] at this line
            spins += 1;
        } else {
            std::thread::yield_now(); // counted and timed as [yield] at this line
        }
    }
}

fn main() {
    let _guard = yieldprof::init(); // on drop: writes target/yieldprof/<program>.<pid>.*
    let sent = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| (1..=100).for_each(|n| wait_for(&sent, n)));
        for n in 1..=100 {
            std::thread::sleep(Duration::from_micros(100));
            sent.store(n, Ordering::Release);
        }
    });
}

#[test]
fn wait_for_stays_within_its_declared_budget() {
    let session = yieldprof::Session::this_thread();
    let sent = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| sent.store(1, Ordering::Release));
        wait_for(&sent, 1);
    });
    session.finish().check_declared().unwrap();
}

/// What the README says appears at exit: the declared budget on stderr (not capturable
/// here) and in the summary, which names the site with its `file:line`.
#[test]
fn main_writes_the_files_and_the_declared_budget_held() {
    main();
    let out = yieldprof::Options::from_env().out_dir;
    let exe = std::env::current_exe().unwrap();
    let stem = exe.file_stem().unwrap().to_string_lossy();
    let name = format!("{stem}.{}", std::process::id());
    let summary = std::fs::read_to_string(out.join(format!("{name}.txt"))).unwrap();
    let at = "site `quick_start::wait_for` (examples/quick_start.rs:9)";
    let flat = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Declared budgets: 0 exceeded, 1 held"),
        "{summary}"
    );
    assert!(
        flat.contains(&format!("held {at}: max_spins_per_episode = 64")),
        "{summary}"
    );
    for ext in ["svg", "split.svg", "folded", "json", "pb.gz", "trace.json"] {
        assert!(out.join(format!("{name}.{ext}")).exists(), "{name}.{ext}");
    }
}
