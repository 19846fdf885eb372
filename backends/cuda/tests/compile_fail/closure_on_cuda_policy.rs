//! A closure cannot run on a GPU: a launch of one over a `Cuda` policy does not compile, and
//! the error says to write a `#[kernel]` function instead.
use hoplite_core::{RangePolicy, parallel_for};
use hoplite_cuda::Cuda;

fn main() {
    let _ = parallel_for("on the device", RangePolicy::new(Cuda::default(), 0..4), |_i| {});
}
