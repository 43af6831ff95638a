//! What `#[instrument_wait]` accepts (each pass case also runs) and what it rejects,
//! with the error's position checked against `tests/ui/fail/*.stderr`; and the layouts
//! `yieldprof::assert_separate_lines!` accepts in a `const` and the ones it refuses to
//! build (`tests/ui/layout_*`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/layout_pass/*.rs");
    t.compile_fail("tests/ui/layout_fail/*.rs");
}
