//! Launches over a policy validated once (`ValidatedPolicy` and the `*_validated` functions).

use std::panic::{AssertUnwindSafe, catch_unwind};

use hoplite_core::{
    Error, HostSpace, LayoutRight, RangePolicy, Reader, Sum, ValidatedPolicy, View, Writer,
    parallel_for_validated, parallel_reduce_validated, parallel_scan_validated,
};
use hoplite_serial::Serial;

type WriteY = (RangePolicy<Serial>, (Writer<u32, 1, LayoutRight, HostSpace>,));
type ReadX = (RangePolicy<Serial>, (Reader<u32, 1, LayoutRight, HostSpace>,));

#[test]
#[expect(clippy::reversed_empty_ranges, reason = "an invalid range on purpose")]
fn an_invalid_policy_is_refused_once() {
    let err =
        ValidatedPolicy::new("backwards", RangePolicy::new(Serial::default(), 3..1)).expect_err("invalid");
    assert!(matches!(err, Error::InvalidRange { .. }), "{err}");
}

#[test]
fn handles_are_checked_on_every_launch() {
    let y: View<u32, 1> = View::new("y", [4]).expect("y");
    let policy = ValidatedPolicy::new("fill", RangePolicy::new(Serial::default(), 0..4)).expect("valid");
    {
        let held = y.host_read().expect("host reader");
        let args = (y.write(),);
        let err = parallel_for_validated::<WriteY, _>("fill", &policy, &args, &|(i, (y,))| y.set(i, 1))
            .expect_err("conflict");
        assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
        assert_eq!(held.get(0), 0);
    }
    let short: View<u32, 1> = View::new("short", [2]).expect("short");
    let err =
        parallel_for_validated::<WriteY, _>("fill", &policy, &(short.write(),), &|(i, (y,))| y.set(i, 1))
            .expect_err("too small");
    assert!(matches!(err, Error::OutOfExtent { .. }), "{err}");
    parallel_for_validated::<WriteY, _>("fill", &policy, &(y.write(),), &|(i, (y,))| y.set(i, *i as u32))
        .expect("launch");
    assert_eq!(y.to_vec().expect("y"), [0, 1, 2, 3]);
}

#[test]
fn a_panic_unwinds_to_the_caller_which_releases_the_handles() {
    let y: View<u32, 1> = View::new("y", [4]).expect("y");
    let policy = ValidatedPolicy::new("boom", RangePolicy::new(Serial::default(), 0..4)).expect("valid");
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let args = (y.write(),);
        parallel_for_validated::<WriteY, _>("boom", &policy, &args, &|(i, (y,))| {
            if *i == 2 {
                panic!("boom");
            }
            y.set(i, 7);
        })
    }));
    assert!(caught.is_err(), "the panic is not caught by the launch");
    // The writer was dropped while unwinding, so the view can be borrowed again.
    assert_eq!(y.host_read().expect("released").get(1), 7);
}

#[test]
fn reduce_and_scan_over_handles() {
    let x: View<u32, 1> = View::from_slice("x", [4], &[1, 2, 3, 4]).expect("x");
    let policy = ValidatedPolicy::new("x", RangePolicy::new(Serial::default(), 0..4)).expect("valid");
    for _ in 0..2 {
        let sum = parallel_reduce_validated::<ReadX, _, _>(
            "sum",
            &policy,
            &(x.read(),),
            &|(i, (x,)), acc| *acc += x.get(i),
            &Sum::<u32>::new(),
        )
        .expect("reduce");
        assert_eq!(sum, 10);
        let total: u32 =
            parallel_scan_validated::<ReadX, _, _>("scan", &policy, &(x.read(),), &|(i, (x,)), p, _| {
                *p += x.get(i)
            })
            .expect("scan");
        assert_eq!(total, 10);
    }
}
