//! `Sum`, `Prod`, `Min`, `Max` and `MinMax` against the sequential fold, and NaN under `Min`/`Max`.

use hoplite_core::{Idx, Max, Min, MinMax, MinMaxScalar, Prod, Sum};

use super::{N, prod_data, reduce_all};
use crate::util::{exact_f64_data, int_data};
use crate::{FullSpace, Outcome, check};

/// `Sum` of integers (i64, u32) and of exactly representable floats equals the sequential
/// sum, for ranges starting at zero or not.
pub fn sum_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let f = exact_f64_data(N);
        for range in [0..N, 13..N, 0..1, 500..502] {
            let want: i64 = x[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                &Sum::new(),
                |i, acc: &mut i64| *acc += x[*i],
                &want,
                "Sum<i64>",
            )?;
            let want: f64 = f[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                &Sum::new(),
                |i, acc: &mut f64| *acc += f[*i],
                &want,
                "Sum<f64>",
            )?;
            let want: u32 = range.clone().map(|i| i as u32).sum();
            reduce_all(
                space,
                range,
                &Sum::new(),
                |i, acc: &mut u32| *acc += *i as u32,
                &want,
                "Sum<u32>",
            )?;
        }
        Ok(())
    })
}

/// `Prod` equals the sequential product (f64 powers of two; small integers).
pub fn prod_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let f = prod_data();
        let want: f64 = f.iter().product();
        reduce_all(
            space,
            0..N,
            &Prod::new(),
            |i, acc: &mut f64| *acc *= f[*i],
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
            &Prod::new(),
            |i, acc: &mut i64| *acc *= small(*i),
            &want,
            "Prod<i64>",
        )
    })
}

/// `Min` and `Max` equal the sequential minimum and maximum.
pub fn min_and_max_match_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        for range in [0..N, 77..N, 3..4] {
            let lo = x[range.clone()].iter().copied().fold(i64::MAX, i64::min);
            let hi = x[range.clone()].iter().copied().fold(i64::MIN, i64::max);
            reduce_all(
                space,
                range.clone(),
                &Min::new(),
                |i, acc: &mut i64| *acc = (*acc).min(x[*i]),
                &lo,
                "Min<i64>",
            )?;
            reduce_all(
                space,
                range.clone(),
                &Max::new(),
                |i, acc: &mut i64| *acc = (*acc).max(x[*i]),
                &hi,
                "Max<i64>",
            )?;
            let (lo, hi) = (lo as f64 * 0.25, hi as f64 * 0.25);
            reduce_all(
                space,
                range.clone(),
                &Min::new(),
                |i, acc: &mut f64| *acc = acc.min(x[*i] as f64 * 0.25),
                &lo,
                "Min<f64>",
            )?;
            reduce_all(
                space,
                range,
                &Max::new(),
                |i, acc: &mut f64| *acc = acc.max(x[*i] as f64 * 0.25),
                &hi,
                "Max<f64>",
            )?;
        }
        Ok(())
    })
}

/// `Min` and `Max` ignore NaN; a range of only NaNs reduces to the identity.
pub fn min_and_max_ignore_nan<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = |i: usize| if i.is_multiple_of(3) { f64::NAN } else { i as f64 };
        let update_min = |i: Idx<'_>, acc: &mut f64| {
            let x = v(*i);
            if x < *acc {
                *acc = x;
            }
        };
        let update_max = |i: Idx<'_>, acc: &mut f64| {
            let x = v(*i);
            if x > *acc {
                *acc = x;
            }
        };
        reduce_all(space, 0..N, &Min::new(), update_min, &1.0, "Min<f64> with NaNs")?;
        reduce_all(space, 0..N, &Max::new(), update_max, &998.0, "Max<f64> with NaNs")?;
        let only_nan = |_: Idx<'_>, acc: &mut f64| *acc = acc.min(f64::NAN);
        reduce_all(
            space,
            0..N,
            &Min::new(),
            only_nan,
            &f64::INFINITY,
            "Min<f64> of only NaNs",
        )
    })
}

/// `MinMax` equals the sequential minimum and maximum.
pub fn minmax_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let want = MinMaxScalar {
            min: *x.iter().min().unwrap_or(&0),
            max: *x.iter().max().unwrap_or(&0),
        };
        reduce_all(
            space,
            0..N,
            &MinMax::new(),
            |i, acc: &mut MinMaxScalar<i64>| acc.update(x[*i]),
            &want,
            "MinMax<i64>",
        )
    })
}
