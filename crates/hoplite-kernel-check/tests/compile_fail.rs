//! Code outside the `#[kernel]` subset is a compile error at the construct, saying what is
//! supported: a closure, a method the subset lacks, a global, a `String`, recursion, team
//! scratch other than level 0, `return` in a nested loop, a reducer kernels lack, a scan over
//! `MinMaxScalar`.

#[test]
fn outside_the_subset() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
