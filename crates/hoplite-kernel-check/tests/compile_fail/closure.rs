use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn scaled(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, a: f64) {
    let f = |v: f64| v * a;
    y.set(i, f(1.0));
}

fn main() {}
