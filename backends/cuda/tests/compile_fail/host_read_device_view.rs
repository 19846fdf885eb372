// The host cannot dereference device memory: views in CudaSpace have no host guards.
use hoplite_core::{LayoutLeft, View};
use hoplite_cuda::CudaSpace;

fn main() {
    let v = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("v", [4]).unwrap();
    let _ = v.host_read();
}
