//! `Sum`, `Prod`, `Min`, `Max` and `MinMax` against the sequential fold, and NaN under `Min`/`Max`.

use hoplite_core::{BoundReader, Idx, Max, Min, MinMax, MinMaxScalar, Prod, Sum, parallel_reduce};
use hoplite_macros::kernel;

use super::{N, prod_data, reduce_all};
use crate::util::{exact_f64_data, int_data};
use crate::{LaunchSpace, Outcome, SpaceView, check};

/// A kernel of these checks: the sum of `x`.
#[kernel(crate = hoplite_core)]
pub fn sum_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc += x.get(i);
}

/// A kernel of these checks: the sum of `x`.
#[kernel(crate = hoplite_core)]
pub fn sum_x_f64(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i);
}

/// A kernel of these checks: the sum of the indices.
#[kernel(crate = hoplite_core)]
pub fn sum_index_u32(i: Idx<'_>, acc: &mut u32) {
    *acc += *i as u32;
}

/// A kernel of these checks: the product of `x`.
#[kernel(crate = hoplite_core)]
pub fn prod_x_f64(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc *= x.get(i);
}

/// A kernel of these checks: the product of 2 at every `i % 50 == 7`, -1 at every other
/// `i % 31 == 3`, 1 elsewhere.
#[kernel(crate = hoplite_core)]
pub fn prod_small_i64(i: Idx<'_>, acc: &mut i64) {
    let k = *i;
    let v: i64 = if k % 50 == 7 {
        2
    } else if k % 31 == 3 {
        -1
    } else {
        1
    };
    *acc *= v;
}

/// A kernel of these checks: the minimum of `x`.
#[kernel(crate = hoplite_core)]
pub fn min_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc = (*acc).min(x.get(i));
}

/// A kernel of these checks: the maximum of `x`.
#[kernel(crate = hoplite_core)]
pub fn max_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc = (*acc).max(x.get(i));
}

/// A kernel of these checks: the minimum of `x / 4` as `f64`.
#[kernel(crate = hoplite_core)]
pub fn min_quarter_x_f64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut f64) {
    *acc = (*acc).min(x.get(i) as f64 * 0.25);
}

/// A kernel of these checks: the maximum of `x / 4` as `f64`.
#[kernel(crate = hoplite_core)]
pub fn max_quarter_x_f64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut f64) {
    *acc = (*acc).max(x.get(i) as f64 * 0.25);
}

/// A kernel of these checks: the minimum of NaN at every third index and the index elsewhere,
/// kept by `<` (so a NaN never replaces the accumulator).
#[kernel(crate = hoplite_core)]
#[allow(
    clippy::manual_is_multiple_of,
    reason = "the kernel subset has `%`, not `is_multiple_of`"
)]
pub fn min_below_nan_thirds(i: Idx<'_>, acc: &mut f64) {
    let v = if *i % 3 == 0 { f64::NAN } else { *i as f64 };
    if v < *acc {
        *acc = v;
    }
}

/// A kernel of these checks: the maximum of NaN at every third index and the index elsewhere,
/// kept by `>`.
#[kernel(crate = hoplite_core)]
#[allow(
    clippy::manual_is_multiple_of,
    reason = "the kernel subset has `%`, not `is_multiple_of`"
)]
pub fn max_above_nan_thirds(i: Idx<'_>, acc: &mut f64) {
    let v = if *i % 3 == 0 { f64::NAN } else { *i as f64 };
    if v > *acc {
        *acc = v;
    }
}

/// A kernel of these checks: the minimum of only NaNs, by `f64::min`.
#[kernel(crate = hoplite_core)]
pub fn min_of_only_nan(_i: Idx<'_>, acc: &mut f64) {
    *acc = (*acc).min(f64::NAN);
}

/// A kernel of these checks: the minimum and maximum of `x`.
#[kernel(crate = hoplite_core)]
pub fn minmax_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut MinMaxScalar<i64>) {
    acc.update(x.get(i));
}

/// `Sum` of integers (i64, u32) and of exactly representable floats equals the sequential
/// sum, for ranges starting at zero or not.
pub fn sum_matches_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let f = exact_f64_data(N);
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        let fv = SpaceView::<S, f64, 1>::from_slice("f", [N], &f)?;
        for range in [0..N, 13..N, 0..1, 500..502] {
            let want: i64 = x[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (xv.read(),)), sum_x_i64::with(), Sum::new()),
                &want,
                "Sum<i64>",
            )?;
            let want: f64 = f[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (fv.read(),)), sum_x_f64::with(), Sum::new()),
                &want,
                "Sum<f64>",
            )?;
            let want: u32 = range.clone().map(|i| i as u32).sum();
            reduce_all(
                space,
                range,
                |p| parallel_reduce("reduce", p, sum_index_u32::with(), Sum::new()),
                &want,
                "Sum<u32>",
            )?;
        }
        Ok(())
    })
}

/// `Prod` equals the sequential product (f64 powers of two; small integers).
pub fn prod_matches_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let f = prod_data();
        let fv = SpaceView::<S, f64, 1>::from_slice("f", [N], &f)?;
        let want: f64 = f.iter().product();
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", (p, (fv.read(),)), prod_x_f64::with(), Prod::new()),
            &want,
            "Prod<f64>",
        )?;
        let small = |i: usize| -> i64 {
            if i % 50 == 7 {
                2
            } else if i % 31 == 3 {
                -1
            } else {
                1
            }
        };
        let want: i64 = (0..N).map(small).product();
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", p, prod_small_i64::with(), Prod::new()),
            &want,
            "Prod<i64>",
        )
    })
}

/// `Min` and `Max` equal the sequential minimum and maximum.
pub fn min_and_max_match_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        for range in [0..N, 77..N, 3..4] {
            let lo = x[range.clone()].iter().copied().fold(i64::MAX, i64::min);
            let hi = x[range.clone()].iter().copied().fold(i64::MIN, i64::max);
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (xv.read(),)), min_x_i64::with(), Min::new()),
                &lo,
                "Min<i64>",
            )?;
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (xv.read(),)), max_x_i64::with(), Max::new()),
                &hi,
                "Max<i64>",
            )?;
            let (lo, hi) = (lo as f64 * 0.25, hi as f64 * 0.25);
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (xv.read(),)), min_quarter_x_f64::with(), Min::new()),
                &lo,
                "Min<f64>",
            )?;
            reduce_all(
                space,
                range,
                |p| parallel_reduce("reduce", (p, (xv.read(),)), max_quarter_x_f64::with(), Max::new()),
                &hi,
                "Max<f64>",
            )?;
        }
        Ok(())
    })
}

/// `Min` and `Max` ignore NaN; a range of only NaNs reduces to the identity.
pub fn min_and_max_ignore_nan<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", p, min_below_nan_thirds::with(), Min::new()),
            &1.0,
            "Min<f64> with NaNs",
        )?;
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", p, max_above_nan_thirds::with(), Max::new()),
            &998.0,
            "Max<f64> with NaNs",
        )?;
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", p, min_of_only_nan::with(), Min::new()),
            &f64::INFINITY,
            "Min<f64> of only NaNs",
        )
    })
}

/// `MinMax` equals the sequential minimum and maximum.
pub fn minmax_matches_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        let want = MinMaxScalar {
            min: *x.iter().min().unwrap_or(&0),
            max: *x.iter().max().unwrap_or(&0),
        };
        reduce_all(
            space,
            0..N,
            |p| parallel_reduce("reduce", (p, (xv.read(),)), minmax_x_i64::with(), MinMax::new()),
            &want,
            "MinMax<i64>",
        )
    })
}
