//! The conformance suite's portable checks on `HostDevice`, the emulated GPU: every check
//! launches its `#[kernel]`s as a device backend does (the generated CUDA C, compiled for the
//! host, with the device ABI's parameters, partials joined on the host, scans in two passes)
//! on data in memory the host reaches only through copies. Every portable check must pass.
//! Skipped, with the reason, when there is no host C++ compiler.

use std::time::Instant;

use hoplite_conformance::{ALL_CHECKS, LaunchSpace, portable_checks, run_check};
use hoplite_kernel_check::emulated::{self, HostDevice};
use hoplite_kernel_check::host_compiler;

#[test]
fn the_portable_conformance_checks_on_the_emulated_device() {
    let portable = portable_checks::<HostDevice>();
    let Some(cxx) = host_compiler() else {
        println!(
            "skipped all {} portable conformance checks on HostDevice: no host C++ compiler (set CXX, or install g++)",
            portable.len()
        );
        return;
    };
    emulated::set_build_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("host-device"));
    println!(
        "the portable conformance checks on HostDevice (generated CUDA C compiled by `{cxx}`): {} of {}",
        portable.len(),
        ALL_CHECKS.len()
    );
    // Every kernel of the suite compiled up front, on every core (cached on disk by hash).
    let start = Instant::now();
    if let Err(e) = emulated::precompile(&hoplite_conformance::device_kernels()) {
        panic!("{e}");
    }
    println!("compiled the suite's kernels in {:.2?}", start.elapsed());
    let space = HostDevice;
    let mut failures = Vec::new();
    for check in &portable {
        let start = Instant::now();
        match run_check(check, &space) {
            Ok(()) => println!("ok      {} ({:.2?})", check.axiom, start.elapsed()),
            Err(failure) => {
                println!("FAILED  {failure}");
                failures.push(failure.to_string());
            }
        }
    }
    println!(
        "ran {} portable conformance checks on HostDevice: {} passed, {} failed",
        portable.len(),
        portable.len() - failures.len(),
        failures.len()
    );
    assert_eq!(failures, Vec::<String>::new());
}

/// A closure is not a device kernel: the launch is refused and the closure never runs.
#[test]
fn closures_are_refused_and_never_run() {
    use hoplite_core::{Error, RangePolicy, Sum, parallel_for, parallel_reduce};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let ran = AtomicUsize::new(0);
    let policy = RangePolicy::new(HostDevice, 0..10);
    let got = parallel_for("closure", policy.clone(), |_i| {
        ran.fetch_add(1, Ordering::Relaxed);
    });
    assert!(
        matches!(
            &got,
            Err(Error::NotADeviceKernel {
                space: "HostDevice",
                ..
            })
        ),
        "{got:?}"
    );
    let got = parallel_reduce(
        "closure-sum",
        policy,
        |_i, acc: &mut i64| {
            ran.fetch_add(1, Ordering::Relaxed);
            *acc += 1;
        },
        Sum::new(),
    );
    assert!(matches!(got, Err(Error::NotADeviceKernel { .. })), "{got:?}");
    assert_eq!(ran.load(Ordering::Relaxed), 0);
}

/// `HostDevice` takes every launch of the concepts, so the portable checks compile for it.
const _: fn() = || {
    fn launch_space<S: LaunchSpace>() {}
    launch_space::<HostDevice>();
};

/// A host pool is no device token: a launch that passes one to a kernel on the emulated device
/// is refused with a typed error that names the fix, and its kernel never runs.
#[test]
fn host_tokens_are_refused_by_device_launches() {
    use hoplite_conformance::unique_token::record_token_id;
    use hoplite_core::{Error, RangePolicy, TokenPool, View, parallel_for};
    if host_compiler().is_none() {
        println!("skipped: no host C++ compiler (set CXX, or install g++)");
        return;
    }
    emulated::set_build_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("host-device"));
    let ids: View<usize, 1, hoplite_core::LayoutRight, emulated::HostDeviceSpace> =
        View::new("ids", [8]).expect("a view");
    let pool = TokenPool::new(4, "Serial").expect("a pool");
    let e = parallel_for(
        "host pool",
        (RangePolicy::new(HostDevice, 0..8), (ids.write(),)),
        record_token_id::with(&pool),
    )
    .expect_err("a host pool on a device");
    assert!(
        matches!(&e, Error::Device { reason, .. } if reason.contains("host unique token") && reason.contains("kernel_token()")),
        "{e}"
    );
    assert_eq!(pool.live(), 0);
    assert_eq!(ids.to_vec().expect("read back"), [0; 8], "the kernel did not run");
}
