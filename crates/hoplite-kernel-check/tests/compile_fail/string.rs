use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn named(i: Idx<'_>, y: BoundWriter<'_, f64, 1>) {
    let _label: String = String::new();
    y.set(i, 1.0);
}

fn main() {}
