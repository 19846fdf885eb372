use hoplite::prelude::*;
use hoplite::{BoundReader, kernel};

#[kernel]
fn last_max(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut MinMaxLocScalar<f64>) {
    acc.update_first_last(x.get(i), *i);
}

fn main() {}
