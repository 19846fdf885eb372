//! Misuse: a reduce kernel missing the accumulator.
//!
//! A `parallel_reduce` kernel adds its iteration's contribution to the accumulator it is
//! handed, `|i, acc| *acc += ...`. A one-argument kernel has nowhere to put its contribution:
//! the reduction would silently return the identity. It must not compile.

use hoplite_core::{RangePolicy, Sum, parallel_reduce};
use hoplite_serial::Serial;

fn main() {
    let x = [1.0f64, 2.0, 3.0, 4.0];
    let _ = parallel_reduce(
        "no-accumulator",
        RangePolicy::new(Serial::default(), 0..4),
        |i| {
            let _ = x[*i];
        },
        Sum::<f64>::new(),
    );
}
