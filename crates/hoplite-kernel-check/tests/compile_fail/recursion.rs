use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn again(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, depth: u32) {
    if depth > 0 {
        again(i, y, depth - 1);
    } else {
        y.set(i, 1.0);
    }
}

fn main() {}
