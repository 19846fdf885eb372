//! What several of the CUDA backend's test binaries share: `#[kernel]`s (`axpy`, `dot`,
//! `scale`) and one launched through the one launch, a non-commutative reducer of index runs,
//! and how a launch reports the missing driver or device.

// Each test binary uses part of this.
#![allow(dead_code)]

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::{Custom, LayoutRight, View};
use hoplite_cuda::{Cuda, CudaSpace};

/// `y += a x`.
#[kernel]
pub fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

/// The dot product `x . y`.
#[kernel]
pub fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

/// `y = a x`.
#[kernel]
pub fn scale(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i));
}

/// `y = a x` over `0..n` on `cuda`, through the one launch.
pub fn scale_on(
    cuda: &Cuda,
    n: usize,
    y: &View<f64, 1, LayoutRight, CudaSpace>,
    x: &View<f64, 1, LayoutRight, CudaSpace>,
    a: f64,
) -> hoplite_core::Result<()> {
    let range = RangePolicy::new(cuda.clone(), 0..n);
    parallel_for("scale", (range, (y.write(), x.read())), scale::with(a))
}

/// Whether the launch error `e` is the absence of a driver or device.
pub fn is_launch_absence(e: &hoplite_core::Error) -> bool {
    let message = e.to_string();
    message.contains("CUDA driver")
        || message.contains("no CUDA device")
        || message.contains("driver is too old")
}

/// The run of points of a rank-2 MDRange numbered `s0 * i + s1 * j`, as `(lo << 32) + hi`:
/// -1 before the first, -2 once a point does not continue the run (what the conformance check
/// `reducer::custom_join_keeps_index_order` keeps of a concatenation).
#[kernel]
pub fn point_run(p: MdIdx<'_, 2>, s0: usize, s1: usize, acc: &mut i64) {
    let k = (p[0] * s0 + p[1] * s1) as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// A reducer of runs.
pub type Runs = Custom<i64, fn() -> i64, fn(&mut i64, i64)>;

/// The join of two runs, `dst` before `src`: one run if `src` starts where `dst` ends, else
/// broken. Not commutative.
pub fn runs() -> Runs {
    fn join(dst: &mut i64, src: i64) {
        *dst = if src == -1 {
            *dst
        } else if *dst == -1 {
            src
        } else if *dst >= 0 && src >= 0 && *dst & 0xffff_ffff == src >> 32 {
            (*dst >> 32 << 32) + (src & 0xffff_ffff)
        } else {
            -2
        };
    }
    Custom::new(|| -1, join)
}

/// The run of `0..n`.
pub fn whole(n: usize) -> i64 {
    if n == 0 { -1 } else { n as i64 }
}
