//! Peer access between GPUs. Without a driver every entry returns the typed absence; with two
//! GPUs, contiguous copies between them need no peer access, and where they have a peer path a
//! kernel on GPU 0 reads a view of GPU 1 once access is enabled, and is refused it before.
//!
//! One test only touches the driver: the enabled pairs are process-wide, so the refusal before
//! enabling and the launch after it must not race another test of this binary.

use hoplite_core::{ExecutionSpace, LayoutRight, View};
use hoplite_cuda::{Cuda, CudaError, CudaSpace, can_access_peer, copy_to_device, copy_to_host};

mod support;

use support::scale_on;

/// Whether `e` is the `WrongDevice` refusal of a view of `view_device` on an instance of
/// `instance_device`, naming the fix.
fn is_wrong_device(e: &hoplite_core::Error, view_device: usize, instance_device: usize) -> bool {
    let message = e.to_string();
    message.contains(&format!(
        "is a view of CUDA device {view_device}, but the instance is a stream of device {instance_device}"
    )) && message.contains(&format!("enable_peer_access({view_device})"))
}

fn is_absence(e: &CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
    )
}

#[test]
fn a_missing_peer_path_names_both_devices_and_the_fix() {
    let e = CudaError::PeerAccessUnsupported { device: 2, peer: 3 };
    let msg = e.to_string();
    assert!(msg.contains("device 2 cannot access device 3"), "{msg}");
    assert!(msg.contains("can_access_peer(2, 3)"), "{msg}");
    assert!(msg.contains("Cuda::on_device(3)"), "{msg}");
    let core: hoplite_core::Error = e.into();
    assert!(matches!(core, hoplite_core::Error::Device { space: "Cuda", .. }));
}

#[test]
fn a_kernel_reads_a_peers_view_once_access_is_enabled() {
    let count = match hoplite_cuda::device_count() {
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            // Every new entry returns the same typed absence, and none panics.
            for (a, b) in [(0, 1), (0, 0), (1, 0), (7, 3)] {
                let err = can_access_peer(a, b).expect_err("no driver");
                assert_eq!(err, e, "can_access_peer({a}, {b})");
            }
            let cuda = Cuda::default();
            for peer in [0, 1, 5] {
                let err = cuda.enable_peer_access(peer).expect_err("no device");
                assert_eq!(err, e, "enable_peer_access({peer})");
            }
            // A launch with a view of device 1 stops at the absence, not at the device check.
            let x1: View<f64, 1, LayoutRight, CudaSpace> =
                View::without_initializing_in(CudaSpace::on_device(1), "x1", [0]).expect("no memory needed");
            let y0: View<f64, 1, LayoutRight, CudaSpace> = View::default();
            let err = scale_on(&cuda, 0, &y0, &x1, 2.0).expect_err("no device");
            assert_eq!(err, hoplite_core::Error::from(e.clone()));
            println!("skipped the GPU part: {e}");
            return;
        }
        Ok(n) => n,
    };
    // A device always reaches itself; ordinals past the last device are typed errors.
    assert_eq!(can_access_peer(0, 0), Ok(true));
    assert!(matches!(
        can_access_peer(0, count),
        Err(CudaError::InvalidDevice { ordinal, .. }) if ordinal == count
    ));
    let cuda0 = Cuda::on_device(0).expect("device 0");
    cuda0.enable_peer_access(0).expect("its own device");
    assert!(matches!(
        cuda0.enable_peer_access(count),
        Err(CudaError::InvalidDevice { ordinal, .. }) if ordinal == count
    ));
    if count < 2 {
        println!("skipped the peer part: {count} GPU here, peer access needs two");
        return;
    }
    let n = 1000;
    let x1 =
        View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(1), "x1", [n])
            .expect("device 1 memory");
    let y0 =
        View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(0), "y0", [n])
            .expect("device 0 memory");
    let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
    copy_to_device(&x1, &host).expect("copy into device 1");
    let err = scale_on(&cuda0, n, &y0, &x1, 3.0).expect_err("access 0 -> 1 not enabled yet");
    assert!(is_wrong_device(&err, 1, 0), "{err}");
    // Contiguous copies between the GPUs need no peer access (`cuMemcpyPeerAsync`), in both
    // directions, on device 0's stream.
    let z0 =
        View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(0), "z0", [n])
            .expect("device 0 memory");
    let z1 =
        View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(1), "z1", [n])
            .expect("device 1 memory");
    cuda0.copy(&z0, &x1).expect("copy from device 1 to device 0");
    cuda0.copy(&z1, &z0).expect("copy from device 0 to device 1");
    cuda0.fence().expect("fence");
    let mut out = vec![0.0; n];
    copy_to_host(&mut out, &z1).expect("copy out of device 1");
    assert_eq!(out, host, "device 1 -> 0 -> 1");
    if !can_access_peer(0, 1).expect("two devices") {
        let err = cuda0.enable_peer_access(1).expect_err("no peer path");
        assert_eq!(err, CudaError::PeerAccessUnsupported { device: 0, peer: 1 });
        println!("skipped the peer launch: GPU 0 has no peer path to GPU 1");
        return;
    }
    cuda0.enable_peer_access(1).expect("peer access 0 -> 1");
    cuda0.enable_peer_access(1).expect("enabling again is success");
    scale_on(&cuda0, n, &y0, &x1, 3.0).expect("device 0 reads device 1's view");
    cuda0.fence().expect("fence");
    let mut out = vec![0.0; n];
    copy_to_host(&mut out, &y0).expect("copy out of device 0");
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f64, "index {i}");
    }
    // Access is one way: device 1's instance still refuses device 0's views.
    let cuda1 = Cuda::on_device(1).expect("device 1");
    let err = scale_on(&cuda1, n, &x1, &y0, 1.0).expect_err("access 1 -> 0 not enabled");
    assert!(is_wrong_device(&err, 0, 1), "{err}");
}
