//! `Sum::new()` over an accumulator nothing gives a type (its only use diverges): the message
//! says to annotate it.
use hoplite_core::{RangePolicy, Sum, parallel_reduce};
use hoplite_serial::Serial;

fn main() {
    let total = parallel_reduce(
        "untyped",
        RangePolicy::new(Serial::default(), 0..4),
        |_i, acc| *acc = unimplemented!(),
        Sum::new(),
    );
    let _ = total;
}
