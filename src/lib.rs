//! Top-level examples and tests of yieldprof live in examples/ and tests/.

/// The examples of `docs/`, compiled and run as doc-tests of this package
/// (`docs/fleet.md`'s need the `tracing` feature: they are the `yieldprof` crate's).
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../docs/budgets.md")]
    mod budgets {}
    #[doc = include_str!("../docs/false-sharing.md")]
    mod false_sharing {}
    #[doc = include_str!("../docs/profiling-a-test-suite.md")]
    mod profiling_a_test_suite {}
}
