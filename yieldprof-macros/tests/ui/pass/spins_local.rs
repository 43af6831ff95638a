#![deny(warnings)]

// Spins written directly in the body are counted in the episode's own frame; those in
// closures keep the per-call probe. A call left out by `cfg` takes its probe with it.

#[yieldprof::instrument_wait]
fn mixed(n: u32) -> u32 {
    let mut spun = 0;
    while spun < n {
        std::hint::spin_loop();
        spun += 1;
    }
    #[cfg(any())]
    std::hint::spin_loop();
    #[cfg(any())]
    std::thread::yield_now();
    (0..n).for_each(|_| std::hint::spin_loop());
    spun
}

#[yieldprof::instrument_wait]
fn spins_only_in_a_closure() {
    let spin = || std::hint::spin_loop();
    spin();
}

fn main() {
    // Recording off: the episode and its spins leave nothing.
    yieldprof::set_enabled(false);
    assert_eq!(mixed(3), 3);
    assert!(yieldprof::snapshot().site("mixed").is_none());

    yieldprof::set_enabled(true);
    assert_eq!(mixed(3), 3);
    spins_only_in_a_closure();
    let profile = yieldprof::snapshot();
    let s = profile.site("mixed").unwrap();
    assert_eq!(s.episodes, 1);
    assert_eq!(s.calls_of(yieldprof::Kind::Spin), 6);
    // The loop's call site and the closure's.
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.calls_of(yieldprof::Kind::Yield), 0);
    let c = profile.site("spins_only_in_a_closure").unwrap();
    assert_eq!(c.calls_of(yieldprof::Kind::Spin), 1);
}
