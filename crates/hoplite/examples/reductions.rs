//! The reducers a Kokkos code reaches for, each checked against a plain loop: a dot product,
//! the location of the minimum and maximum, the first index where a condition holds, a tuple
//! of reducers in one pass, a custom (non-commutative) reducer, and a result stored straight
//! into a rank-0 view. The `#[kernel]` ones run unchanged on a GPU.
//!
//! `cargo run --release --example reductions`

use hoplite::prelude::*;
use hoplite::{BoundReader, kernel};

/// `Σ x y`.
#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

/// The minimum and maximum of `x` with their lowest indices.
#[kernel]
fn extremes(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut MinMaxLocScalar<f64>) {
    acc.update(x.get(i), *i);
}

/// The first index where `x` exceeds `limit`.
#[kernel]
fn first_above(i: Idx<'_>, x: BoundReader<'_, f64, 1>, limit: f64, acc: &mut Option<usize>) {
    if x.get(i) > limit {
        FirstLoc::update(acc, *i);
    }
}

fn main() -> Result<()> {
    let n = 1 << 20;
    let xs: Vec<f64> = (0..n).map(|k| ((k * 7919) % 1000) as f64 / 10.0 - 50.0).collect();
    let ys: Vec<f64> = (0..n).map(|k| (k % 3) as f64).collect();
    let x = View::<f64, 1>::from_slice("x", [n], &xs)?;
    let y = View::<f64, 1>::from_slice("y", [n], &ys)?;
    let all = || RangePolicy::new(DefaultExecutionSpace::default(), 0..n);

    let d = parallel_reduce("dot", (all(), (x.read(), y.read())), dot::with(), Sum::new())?;
    let want: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
    assert!((d - want).abs() <= 1e-9 * want.abs().max(1.0));
    println!("dot = {d}");

    let e = parallel_reduce(
        "extremes",
        (all(), (x.read(),)),
        extremes::with(),
        MinMaxLoc::new(),
    )?;
    // The plain loop: the first index of the smallest and of the largest value.
    let (mut lo, mut hi) = (0, 0);
    for (k, &v) in xs.iter().enumerate() {
        if v < xs[lo] {
            lo = k;
        }
        if v > xs[hi] {
            hi = k;
        }
    }
    assert_eq!(
        (e.min_val, e.min_loc, e.max_val, e.max_loc),
        (xs[lo], Some(lo), xs[hi], Some(hi))
    );
    println!(
        "min {} at {:?}, max {} at {:?}",
        e.min_val, e.min_loc, e.max_val, e.max_loc
    );

    let first = parallel_reduce(
        "first above",
        (all(), (x.read(),)),
        first_above::with(49.0),
        FirstLoc,
    )?;
    assert_eq!(first, xs.iter().position(|&v| v > 49.0));
    println!("first value above 49 at {first:?}");

    // A tuple of reducers, one pass: a count, a sum and a maximum (closures run on the host).
    let (count, sum, max) = parallel_reduce(
        "stats",
        all(),
        |i, (c, s, m): &mut (u64, f64, f64)| {
            if xs[*i] > 0.0 {
                *c += 1;
                *s += xs[*i];
            }
            *m = m.max(xs[*i]);
        },
        (Sum::<u64>::new(), Sum::<f64>::new(), Max::<f64>::new()),
    )?;
    assert_eq!(count as usize, xs.iter().filter(|&&v| v > 0.0).count());
    println!("{count} positive values summing to {sum:.1}; the largest is {max}");

    // A custom reducer that is not commutative: the last positive value in index order (the
    // join keeps the right part's value when it has one, and sees the left part first).
    let last = Custom::new(
        || None,
        |a: &mut Option<f64>, b: Option<f64>| {
            if b.is_some() {
                *a = b;
            }
        },
    );
    let got = parallel_reduce(
        "last positive",
        all(),
        |i, acc: &mut Option<f64>| {
            if xs[*i] > 0.0 {
                *acc = Some(xs[*i]);
            }
        },
        &last,
    )?;
    assert_eq!(got, xs.iter().rev().copied().find(|&v| v > 0.0));
    println!("last positive value: {got:?}");

    // Kokkos' reduction into a view: the result is stored into a rank-0 view.
    let total = View::<f64, 0>::new("total", [])?;
    parallel_reduce_into(
        "dot into a view",
        (all(), (x.read(), y.read())),
        dot::with(),
        Sum::new(),
        &total,
    )?;
    assert_eq!(total.to_vec()?, [d]);
    println!("dot stored in a rank-0 view: {}", total.to_vec()?[0]);
    Ok(())
}
