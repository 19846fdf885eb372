use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

static SCALE: f64 = 2.0;

#[kernel]
fn scaled(i: Idx<'_>, y: BoundWriter<'_, f64, 1>) {
    y.set(i, SCALE);
}

fn main() {}
