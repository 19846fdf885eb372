//! Reductions of complex numbers and fixed-size arrays, and lock-based atomics of complex numbers.

use hoplite_core::{Max, Min, Prod, RangePolicy, Sum, View, parallel_for, parallel_reduce};

use crate::{FullSpace, Outcome, check};

/// `Sum` and `Prod` of complex numbers, `Sum`/`Prod`/`Min`/`Max` of fixed-size arrays
/// (element by element, NaN ignored by `Min`/`Max`), and lock-based atomic adds of complex
/// numbers from every iteration, all equal to the sequential fold.
pub fn complex_array_reductions_and_locked_atomics<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        use hoplite_core::Complex;
        let n = 1000;
        let z = |i: usize| Complex::new((i % 7) as f64 - 3.0, (i % 5) as f64 * 0.5);
        let sum = parallel_reduce(
            "csum",
            RangePolicy::new(space.clone(), 0..n),
            |i, a| *a += z(*i),
            Sum::<Complex<f64>>::new(),
        )?;
        let want = (0..n).map(z).fold(Complex::new(0.0, 0.0), |a, b| a + b);
        ensure_eq!(sum, want, "complex sum");
        let unit = |i: usize| Complex::from_polar(1.0, i as f64 * 0.25);
        let prod = parallel_reduce(
            "cprod",
            RangePolicy::new(space.clone(), 0..8),
            |i, a: &mut Complex<f64>| *a *= unit(*i),
            Prod::new(),
        )?;
        let want = (0..8).map(unit).fold(Complex::new(1.0, 0.0), |a, b| a * b);
        let close = (prod - want).norm() < 1e-12;
        ensure!(close, "complex product {prod} vs {want}");

        let v = |i: usize| {
            [
                i as f64,
                -(i as f64),
                if i == 3 { f64::NAN } else { (i % 10) as f64 },
            ]
        };
        let s = parallel_reduce(
            "asum",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [i64; 2]| {
                a[0] += *i as i64;
                a[1] += 1;
            },
            Sum::new(),
        )?;
        ensure_eq!(s, [(n * (n - 1) / 2) as i64, n as i64], "array sum");
        let lo = parallel_reduce(
            "amin",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [f64; 3]| hoplite_core::MinMaxValue::keep_min(a, v(*i)),
            Min::new(),
        )?;
        let hi = parallel_reduce(
            "amax",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [f64; 3]| hoplite_core::MinMaxValue::keep_max(a, v(*i)),
            Max::new(),
        )?;
        ensure_eq!(
            (lo, hi),
            ([0.0, -999.0, 0.0], [999.0, 0.0, 9.0]),
            "array min and max"
        );
        let p = parallel_reduce(
            "aprod",
            RangePolicy::new(space.clone(), 1..6),
            |i, a: &mut [u64; 2]| {
                a[0] *= *i as u64;
                a[1] *= 2;
            },
            Prod::new(),
        )?;
        ensure_eq!(p, [120, 32], "array product");

        let acc: View<Complex<f64>, 1> = View::new("complex bins", [3])?;
        {
            let atomics = acc.atomic();
            parallel_for("cadd", RangePolicy::new(space.clone(), 0..n), |i| {
                atomics.fetch_add(*i % 3, z(*i));
            })?;
        }
        let got = acc.to_vec()?;
        for (bin, value) in got.iter().enumerate() {
            let want = (0..n)
                .filter(|i| i % 3 == bin)
                .map(z)
                .fold(Complex::new(0.0, 0.0), |a, b| a + b);
            ensure_eq!(*value, want, "complex atomic bin {bin}");
        }
        Ok(())
    })
}
