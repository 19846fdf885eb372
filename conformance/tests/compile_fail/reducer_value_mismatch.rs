//! Misuse: a reducer whose value type does not match the kernel's accumulator.
//!
//! The reducer decides the type of every partial result (`Sum<i64>` accumulates `i64`); a
//! kernel that adds `f64`s into its accumulator would have its contributions reinterpreted or
//! truncated. It must not compile.

use hoplite_core::{Idx, RangePolicy, Sum, parallel_reduce};
use hoplite_serial::Serial;

fn main() {
    let _ = parallel_reduce(
        "mismatch",
        RangePolicy::new(Serial::default(), 0..4),
        |i: Idx<'_>, acc: &mut f64| *acc += *i as f64 * 0.5,
        Sum::<i64>::new(),
    );
}
