//! The misuses the types forbid, each a file in `tests/compile_fail/` with the compiler's
//! message in the `.stderr` beside it (regenerate with
//! `TRYBUILD=overwrite cargo test -p hoplite-conformance --test compile_fail`, then review).

#[test]
fn misuses_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
