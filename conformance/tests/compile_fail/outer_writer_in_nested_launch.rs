//! Misuse: an outer launch's bound writer used inside a launch nested in it.
//!
//! Inner iterations run concurrently and all belong to one outer iteration, so if they could
//! store through the outer writer, two of them could store to one element. A bound writer is
//! neither `Send` nor `Sync` (its brand holds a raw pointer), so a nested kernel, which must be
//! `Send + Sync`, cannot capture it. It must not compile.
//!
//! `outer_writer_with_nested_tokens.rs` shows that even with that wall removed, the writer's
//! lifetime brand still rejects the inner launch's tokens.

use hoplite_core::{RangePolicy, View, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let y: View<f64, 1> = View::new("y", [8]).expect("allocates");
    let outer = RangePolicy::new(Serial::default(), 0..2);
    let _ = parallel_for("outer", (outer, (y.write(),)), |(i, (y,))| {
        y.set(i, 0.0);
        let _ = parallel_for("inner", RangePolicy::new(Serial::default(), 0..8), |j| {
            y.set(j, 1.0);
        });
    });
}
