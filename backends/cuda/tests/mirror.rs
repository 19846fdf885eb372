//! Host mirrors of device views and stream-ordered copies: shapes, labels and refusals
//! without a device; with one, round trips through pageable and page-locked host views, and
//! the host borrow an asynchronous copy holds until the fence.

use hoplite_core::{HostSpace, LayoutLeft, LayoutRight, View};
use hoplite_cuda::{
    Cuda, CudaError, CudaHostPinnedSpace, CudaSpace, create_mirror_view, create_mirror_view_and_copy,
    create_mirror_view_in,
};

#[test]
fn mirrors_have_the_device_views_shape_and_copies_check_before_the_driver() {
    let x: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
    let m = create_mirror_view(&x).expect("host memory");
    assert_eq!(m.extents(), x.extents());
    assert!(m.label().ends_with("_mirror"), "{}", m.label());
    let copied = create_mirror_view_and_copy(&x).expect("nothing to copy");
    assert_eq!(copied.len(), 0);

    let cuda = Cuda::default();
    let host4: View<f64, 2, LayoutLeft> = View::new("h", [2, 2]).expect("host memory");
    let e = cuda.deep_copy_to_device(&x, &host4).expect_err("extents differ");
    assert!(
        matches!(&e, CudaError::Transfer { .. }) && e.to_string().contains("same extents"),
        "{e}"
    );
    let e = cuda.deep_copy_to_host(&host4, &x).expect_err("extents differ");
    assert!(matches!(&e, CudaError::Transfer { .. }), "{e}");

    // Matching empty views: nothing to copy, with or without a device.
    let empty_host: View<f64, 2, LayoutLeft> = View::new("e", [0, 0]).expect("host memory");
    cuda.deep_copy_to_device(&x, &empty_host)
        .expect("nothing to copy");
    cuda.deep_copy_to_host(&empty_host, &x).expect("nothing to copy");

    // A pinned mirror needs the driver: its absence is the allocation's typed error.
    let y: View<f32, 1, LayoutRight, CudaSpace> = View::default();
    match create_mirror_view_in(CudaHostPinnedSpace, &y) {
        Ok(p) => assert_eq!(p.len(), 0),
        Err(e) => panic!("a mirror of no elements allocates nothing: {e}"),
    }
}

#[test]
fn copies_round_trip_through_pageable_and_page_locked_mirrors() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: needs a CUDA device ({e})");
            return;
        }
    };
    let n = [300, 7];
    let x = View::<i64, 2, LayoutLeft, CudaSpace>::without_initializing("x", n).expect("device memory");
    let values: Vec<i64> = (0..2100).collect();

    // Pageable: synchronous.
    let host: View<i64, 2, LayoutLeft, HostSpace> = View::from_slice("h", n, &values).expect("host");
    cuda.deep_copy_to_device(&x, &host).expect("uploads");
    let back = create_mirror_view_and_copy(&x).expect("downloads");
    assert_eq!(back.to_vec().expect("reads"), values);

    // A host view that a guard holds is refused, not raced.
    {
        let _reading = host.host_read().expect("no other borrow");
        let e = cuda.deep_copy_to_host(&host, &x).expect_err("the host reads it");
        assert!(e.to_string().contains("in use"), "{e}");
        cuda.deep_copy_to_device(&x, &host)
            .expect("reading alongside a reader is fine");
    }

    // Page-locked: asynchronous; the staging view is borrowed until the fence.
    let staging = create_mirror_view_in(CudaHostPinnedSpace, &x).expect("pinned memory");
    cuda.deep_copy_to_host(&staging, &x).expect("queued");
    assert!(
        staging.host_read().is_err(),
        "the copy writes the staging view until the fence"
    );
    cuda.synchronize().expect("copies");
    assert_eq!(staging.to_vec().expect("reads"), values);
    staging.host_write().expect("free again").fill(5);
    cuda.deep_copy_to_device(&x, &staging).expect("queued");
    assert!(
        staging.host_write().is_err(),
        "the copy reads the staging view until the fence"
    );
    cuda.synchronize().expect("copies");
    assert_eq!(
        create_mirror_view_and_copy(&x)
            .expect("downloads")
            .to_vec()
            .expect("reads"),
        vec![5; 2100]
    );
}
