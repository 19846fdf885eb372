//! A host backend dereferences its launch's views on host threads: a handle of a device view
//! in a launch on a host space does not compile.
use hoplite_core::{LayoutRight, RangePolicy, View, parallel_for};
use hoplite_cuda::CudaSpace;
use hoplite_serial::Serial;

fn main() {
    let y: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let _ = parallel_for("on the host", (RangePolicy::new(Serial::default(), 0..0), (y.write(),)), |(i, (y,))| {
        y.set(i, 1.0)
    });
}
