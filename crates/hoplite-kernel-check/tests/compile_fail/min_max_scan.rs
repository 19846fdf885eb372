use hoplite::prelude::*;
use hoplite::{BoundReader, kernel};

#[kernel]
fn running_extremes(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut MinMaxScalar<f64>, _is_final: bool) {
    acc.update(x.get(i));
}

#[kernel]
fn spread(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut MinMaxScalar<f64>) {
    acc.max = x.get(i);
}

fn main() {}
