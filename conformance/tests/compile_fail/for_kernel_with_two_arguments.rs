//! Misuse: a kernel of the wrong shape for the pattern.
//!
//! A `parallel_for` over a `RangePolicy` calls its kernel with one argument, the iteration's
//! token `Idx<'_>`. A two-argument closure (the shape of a reduce kernel) has no meaning here:
//! the launch cannot say what the second argument would be. It must not compile.

use hoplite_core::{RangePolicy, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let _ = parallel_for("two-args", RangePolicy::new(Serial::default(), 0..4), |i, j| {
        let _ = (i, j);
    });
}
