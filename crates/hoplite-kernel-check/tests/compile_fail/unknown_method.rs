use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn rounded(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, a: f64) {
    y.set(i, a.round());
}

fn main() {}
