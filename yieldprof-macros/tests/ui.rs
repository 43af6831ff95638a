//! What `#[instrument_wait]` accepts (each pass case also runs) and what it rejects,
//! with the error's position checked against `tests/ui/fail/*.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
