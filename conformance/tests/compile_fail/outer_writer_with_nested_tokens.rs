//! Misuse: an outer launch's bound writer used with the tokens of a launch nested inside it,
//! with the `Send + Sync` wall deliberately (and unsoundly) removed by an `unsafe impl`.
//!
//! The writer carries the brand `'it` of the outer launch and accepts only tokens of that
//! brand; the inner launch's tokens carry their own brand (the inner kernel is
//! `for<'j> Fn(Idx<'j>)`). Were it accepted, two outer iterations could store to the same
//! element through inner tokens 0..8. The invariant brand must reject it (E0521), independently
//! of the `Sync` check that `outer_writer_in_nested_launch.rs` shows.

use hoplite_core::{RangePolicy, View, parallel_for};
use hoplite_serial::Serial;

/// Pretends its contents can be shared between threads (the unsound part of the misuse).
struct AssertShared<T>(T);
// SAFETY: it is not; this file must not compile.
unsafe impl<T> Send for AssertShared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for AssertShared<T> {}

impl<T> AssertShared<T> {
    fn get(&self) -> &T {
        &self.0
    }
}

fn main() {
    let y: View<f64, 1> = View::new("y", [8]).expect("allocates");
    let outer = RangePolicy::new(Serial::default(), 0..2);
    let _ = parallel_for("outer", (outer, (y.write(),)), |(i, (y,))| {
        y.set(i, 0.0);
        let shared = AssertShared(y);
        let _ = parallel_for("inner", RangePolicy::new(Serial::default(), 0..8), |j| {
            shared.get().set(j, 1.0);
        });
    });
}
