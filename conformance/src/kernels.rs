//! `#[kernel]` functions are kernels like closures: the same launches give the same results
//! on every backend, for `parallel_for` over ranges and MDRanges and for `parallel_reduce`.

use hoplite_core::{
    BoundReader, BoundWriter, Idx, MDRangePolicy, MdIdx, RangePolicy, Sum, View, parallel_for,
    parallel_reduce,
};
use hoplite_macros::kernel;

use crate::util::same;
use crate::{FullSpace, Outcome, check};

#[kernel(crate = hoplite_core)]
fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

#[kernel(crate = hoplite_core)]
fn five_point(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    let sum =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    out.set(ij, sum - 4.0 * u.get(ij));
}

#[kernel(crate = hoplite_core)]
fn weighted_count(i: Idx<'_>, x: BoundReader<'_, i64, 1>, threshold: i64, acc: &mut i64) {
    let v = x.get(i);
    if v > threshold {
        *acc += v;
    } else {
        *acc += 1;
    }
}

/// A `#[kernel]` range `parallel_for` stores what the same closure stores.
pub fn kernel_range_for_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 1000, 10_007] {
            let x: View<f64, 1> =
                View::from_slice("x", [n], &(0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>())?;
            let y: View<f64, 1> = View::from_slice("y", [n], &vec![1.0; n])?;
            let y2: View<f64, 1> = View::from_slice("y2", [n], &vec![1.0; n])?;
            let policy = RangePolicy::new(space.clone(), 0..n);
            parallel_for(
                "axpy kernel",
                (policy.clone(), (y.write(), x.read())),
                axpy::with(3.0),
            )?;
            parallel_for("axpy closure", (policy, (y2.write(), x.read())), |(i, (y, x))| {
                y.set(i, 3.0 * x.get(i) + y.get(i))
            })?;
            same(&y.to_vec()?, &y2.to_vec()?, || format!("axpy over {n} elements"))?;
        }
        Ok(())
    })
}

/// A `#[kernel]` MDRange stencil stores what the same closure stores.
pub fn kernel_mdrange_for_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (37, 29);
        let data: Vec<f64> = (0..rows * cols).map(|k| ((k * 7) % 23) as f64).collect();
        let u: View<f64, 2> = View::from_slice("u", [rows, cols], &data)?;
        let a: View<f64, 2> = View::new("a", [rows, cols])?;
        let b: View<f64, 2> = View::new("b", [rows, cols])?;
        let interior = MDRangePolicy::new(space.clone(), [1, 1], [rows - 1, cols - 1]);
        parallel_for(
            "stencil kernel",
            (interior.clone(), (a.write(), u.read())),
            five_point::with(),
        )?;
        parallel_for(
            "stencil closure",
            (interior, (b.write(), u.read())),
            |(ij, (out, u))| {
                let sum = u.neighbor(ij, [-1, 0])
                    + u.neighbor(ij, [1, 0])
                    + u.neighbor(ij, [0, -1])
                    + u.neighbor(ij, [0, 1]);
                out.set(ij, sum - 4.0 * u.get(ij));
            },
        )?;
        same(&a.to_vec()?, &b.to_vec()?, || format!("a {rows}x{cols} stencil"))
    })
}

/// A `#[kernel]` reduction with a scalar capture returns what the same closure returns.
pub fn kernel_reduce_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 999, 10_007] {
            let x: View<i64, 1> = View::from_slice(
                "x",
                [n],
                &(0..n as i64).map(|k| (k * 37) % 101).collect::<Vec<_>>(),
            )?;
            let policy = RangePolicy::new(space.clone(), 0..n);
            let got = parallel_reduce(
                "count kernel",
                (policy.clone(), (x.read(),)),
                weighted_count::with(50),
                Sum::<i64>::new(),
            )?;
            let want = parallel_reduce(
                "count closure",
                (policy, (x.read(),)),
                |(i, (x,)), acc: &mut i64| {
                    let v = x.get(i);
                    *acc += if v > 50 { v } else { 1 };
                },
                Sum::<i64>::new(),
            )?;
            ensure_eq!(got, want, "the weighted count over {n} elements");
        }
        Ok(())
    })
}
