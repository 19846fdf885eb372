use hoplite::prelude::*;
use hoplite::{BoundReader, kernel};

// `update` is `MinMaxLoc`'s, `update_first_last` `MinMaxFirstLastLoc`'s: one kernel, one.
#[kernel]
fn mixed_ties(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut MinMaxLocScalar<f64>) {
    acc.update(x.get(i), *i);
    acc.update_first_last(x.get(i), *i);
}

fn main() {}
