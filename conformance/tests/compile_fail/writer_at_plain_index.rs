//! Misuse: storing through a bound writer at a plain integer index.
//!
//! A writer stores only at the token the launch hands to the current iteration: that token is
//! the proof that no other iteration touches the element. A plain `usize` proves nothing (every
//! iteration could store at index 0, a data race), so `set` must not accept one.

use hoplite_core::{RangePolicy, View, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let y: View<f64, 1> = View::new("y", [4]).expect("allocates");
    let _ = parallel_for(
        "plain-index",
        (RangePolicy::new(Serial::default(), 0..4), (y.write(),)),
        |(i, (y,))| {
            let _ = i;
            y.set(0usize, 1.0);
        },
    );
}
