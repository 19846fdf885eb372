//! Code outside the `#[kernel]` subset is a compile error at the construct, saying what is
//! supported: a closure, a method the subset lacks, a global, a `String`, recursion, scratch
//! of a level other than 0 and 1, `return` in a nested loop, a reducer kernels lack (locations, `Custom`, tuples of reducers), a scan over
//! `MinMaxScalar`, a `team_scan` result that is not destructured, a team row used without a `let`, `update` and `update_first_last` on one `MinMaxLocScalar`, team slots written with a rank, a league token bound to a local, unique token ids that are
//! never released, used without a `let`, released without being acquired, or taken for a team
//! inside a nested loop.

#[test]
fn outside_the_subset() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
