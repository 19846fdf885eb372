//! The conformance suite on `Cuda`: the suite's portable checks, unchanged. They are written
//! once over `S: LaunchSpace`, with `#[kernel]` kernels and their data in the space's own
//! memory (`CudaSpace` here), so the same functions that the host backends run launch on the
//! GPU. The suite's other checks test host-only features (closures, host unique tokens,
//! panics, nested launches) and are reported skipped, with the count. Without a driver, a
//! device or NVRTC every check is reported skipped, with the reason.

use std::io::Write as _;

use hoplite_conformance::{ALL_CHECKS, LaunchSpace, portable_checks, run_check};
use hoplite_cuda::{Cuda, CudaError};

#[test]
fn the_conformance_suite_on_cuda() {
    let portable = portable_checks::<Cuda>();
    let host_only = ALL_CHECKS.len() - portable.len();
    println!(
        "the conformance suite on Cuda: {} of {} checks are portable ({:.0}%); {host_only} test host-only features",
        portable.len(),
        ALL_CHECKS.len(),
        100.0 * portable.len() as f64 / ALL_CHECKS.len() as f64
    );
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => {
            assert!(
                matches!(
                    e,
                    CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
                ),
                "{e}"
            );
            println!("skipped all {} conformance checks on Cuda: {e}", ALL_CHECKS.len());
            return;
        }
    };
    // Kernels compile with NVRTC, except on the emulated driver (the host C++ compiler).
    if !hoplite_cuda::driver_is_emulated()
        && let Err(e) = hoplite_cuda::nvrtc::Nvrtc::get()
    {
        println!("skipped all {} conformance checks on Cuda: {e}", ALL_CHECKS.len());
        return;
    }
    let mut failures = Vec::new();
    for check in &portable {
        match run_check(check, &cuda) {
            Ok(()) => println!("ok      {}", check.axiom),
            Err(failure) => {
                println!("FAILED  {failure}");
                failures.push(failure.to_string());
            }
        }
    }
    // Written past the test harness's capture, so that every run shows the count (with the
    // driver and the modes it ran in).
    let _ = writeln!(
        std::io::stderr(),
        "ran {} of {} conformance checks on Cuda ({}), {} failed; skipped {host_only} host-only checks",
        portable.len(),
        ALL_CHECKS.len(),
        modes(),
        failures.len()
    );
    assert_eq!(failures, Vec::<String>::new());
}

/// The driver and the launch and graph modes of this run.
fn modes() -> String {
    let setting = |name: &str, unset: &str| std::env::var(name).unwrap_or_else(|_| unset.to_owned());
    format!(
        "{} driver, launches {}, graphs {}",
        if hoplite_cuda::driver_is_emulated() {
            "emulated"
        } else {
            "CUDA"
        },
        setting("HOPLITE_CUDA_LAUNCHES", "sync"),
        setting("HOPLITE_CUDA_GRAPHS", "host")
    )
}

// `Cuda` takes every launch of the concepts, so the portable checks compile for it.
static_assertions::assert_impl_all!(Cuda: LaunchSpace);
