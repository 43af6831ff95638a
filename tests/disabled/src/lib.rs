//! With `default-features = false` every probe is a no-op: annotated functions run as
//! written, and nothing is recorded.

/// The demo's kind of wait loop, annotated.
#[yieldprof::instrument_wait]
#[inline(never)]
pub fn annotated(n: u64) -> u64 {
    let mut spins = 0;
    for _ in 0..n {
        std::hint::spin_loop();
        spins += 1;
    }
    std::thread::yield_now();
    spins
}

/// The same loop, not annotated.
#[inline(never)]
pub fn raw(n: u64) -> u64 {
    let mut spins = 0;
    for _ in 0..n {
        std::hint::spin_loop();
        spins += 1;
    }
    std::thread::yield_now();
    spins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_recorded_and_the_function_still_runs() {
        assert!(!yieldprof::is_enabled());
        assert_eq!(annotated(1_000), 1_000);
        yieldprof::wait::spin();
        yieldprof::frame!("business");
        let p = yieldprof::snapshot();
        assert_eq!(
            p.folded(yieldprof::report::Metric::Calls),
            Vec::<String>::new()
        );
    }

    /// Prints raw vs annotated (run with `--release -- --nocapture`); asserts nothing
    /// about time.
    #[test]
    fn annotated_costs_what_raw_costs() {
        let time = |f: fn(u64) -> u64| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(f(std::hint::black_box(1_000_000)));
                    t.elapsed().as_nanos() as f64 / 1e6
                })
                .fold(f64::INFINITY, f64::min)
        };
        let (r, a) = (time(raw), time(annotated));
        println!(
            "feature off: raw {r:.2} ns/spin, annotated {a:.2} ns/spin, ratio {:.3}×",
            a / r
        );
        // rustc merges functions with identical machine code: one address means the
        // annotation left nothing behind.
        let same = annotated as fn(u64) -> u64 as usize == raw as fn(u64) -> u64 as usize;
        println!("annotated and raw are one function after optimisation: {same}");
    }
}
