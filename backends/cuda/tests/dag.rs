//! hoplite-dag's stream conformance checks on CUDA streams and events. Without a device the
//! device cannot be made, and the test says so and what the error is.

use hoplite_cuda::dag::CudaDevice;
use hoplite_dag::DagError;
use hoplite_dag::conformance;

#[test]
fn a_pool_of_no_streams_is_refused() {
    let e = CudaDevice::new(0, 0).err().expect("zero streams");
    assert!(matches!(e, DagError::InvalidOptions(_)), "{e}");
}

#[test]
fn cuda_streams_keep_the_stream_axioms() {
    let device = match CudaDevice::new(0, 2) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                matches!(
                    &e,
                    DagError::Core(hoplite_core::Error::Device { space: "Cuda", .. })
                ),
                "{e}"
            );
            println!(
                "skipped {} stream conformance checks: {e}",
                conformance::checks::<CudaDevice>().len()
            );
            return;
        }
    };
    assert_eq!(hoplite_dag::device::Device::max_streams(&device), Some(2));
    assert_eq!(conformance::run_all(&device), Vec::<String>::new());
}
