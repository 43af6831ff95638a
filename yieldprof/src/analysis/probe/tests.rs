use super::*;

#[test]
fn backoff_spins_as_long_as_a_yield_and_yields_as_long_as_a_sleep() {
    let b = Backoff::derive(35.0, 700.0, 59_000.0);
    assert_eq!(b.spins_per_yield, 20);
    assert_eq!(b.yields_per_sleep, 84);
    assert_eq!(b.sleep_ns, 59_000);
}

#[test]
fn backoff_never_says_zero_and_survives_missing_figures() {
    // A yield cheaper than a spin still means one spin per yield.
    assert_eq!(Backoff::derive(35.0, 10.0, 100.0).spins_per_yield, 1);
    let b = Backoff::derive(f64::NAN, 700.0, f64::NAN);
    assert_eq!(
        (b.spins_per_yield, b.yields_per_sleep, b.sleep_ns),
        (1, 1, 0)
    );
    assert_eq!(Backoff::derive(0.0, 700.0, 1e12).spins_per_yield, 1);
    assert_eq!(Backoff::derive(1.0, 1.0, 1e12).yields_per_sleep, 1_000_000);
}

#[test]
fn durations_print_in_a_readable_unit() {
    assert_eq!(ns(0.31), "0.31 ns");
    assert_eq!(ns(35.4), "35 ns");
    assert_eq!(ns(59_123.0), "59.1 µs");
    assert_eq!(ns(3_200_000.0), "3.20 ms");
    assert_eq!(ns(f64::NAN), "n/a");
}

#[test]
fn a_measure_row_is_34_columns() {
    let m = Measure {
        calls: 10,
        ns_per_call: 59_123.0,
        voluntary_per_call: 1.0,
        involuntary_per_call: 0.0,
        cpu_share: 0.385,
    };
    let row = m.to_string();
    assert_eq!(row.chars().count(), 34, "{row:?}");
    assert!(row.ends_with(" 38%") || row.ends_with(" 39%"), "{row:?}");
}

#[test]
fn the_measure_loop_counts_every_call_it_makes() {
    let mut n = 0u64;
    let m = measure(Duration::from_micros(200), || n += 1);
    assert_eq!(m.calls, n);
    assert!(m.calls >= 1);
}

#[test]
fn the_probe_prints_every_primitive_within_100_columns() {
    let m = run_for(Duration::from_millis(1));
    let text = m.to_string();
    for p in PRIMITIVES {
        assert!(
            text.lines().any(|l| l.starts_with(p)),
            "{p} missing:\n{text}"
        );
    }
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    for p in &m.primitives {
        for s in [p.alone, p.contended] {
            assert!(s.calls >= 1 && s.ns_per_call > 0.0, "{p:?}");
            assert!(s.cpu_share >= 0.0, "{p:?}");
        }
    }
}
