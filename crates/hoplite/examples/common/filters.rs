//! The filter kernels of the `dag_pipeline` and `graph_pipeline` examples: the same
//! `#[kernel]`s launched through the implicit DAG and as an explicit graph.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};

/// A moving average over `2 r + 1` points (the ends keep their value).
#[kernel]
pub fn smooth(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, r: usize, n: usize) {
    if *i < r || *i + r >= n {
        y.set(i, x.get(i));
    } else {
        let mut sum = 0.0;
        for k in *i - r..=*i + r {
            sum += x.get(k);
        }
        y.set(i, sum / (2 * r + 1) as f64);
    }
}

/// The discrete derivative `x[i + 1] - x[i]` (0 at the end).
#[kernel]
pub fn derivative(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, n: usize) {
    if *i + 1 < n {
        y.set(i, x.get(*i + 1) - x.get(i));
    } else {
        y.set(i, 0.0);
    }
}

/// `out = a + w b`.
#[kernel]
pub fn combine(
    i: Idx<'_>,
    out: BoundWriter<'_, f64, 1>,
    a: BoundReader<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    w: f64,
) {
    out.set(i, a.get(i) + w * b.get(i));
}

/// `Σ x²`.
#[kernel]
pub fn energy(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    let v = x.get(i);
    *acc += v * v;
}

/// The filters as eager launches on the default space, the reference both examples check
/// against: `x` smoothed into `low` and differentiated into `slope`, the two combined into
/// `out`, and `out`'s energy returned.
pub fn eager_energy(
    x: &View<f64, 1>,
    low: &View<f64, 1>,
    slope: &View<f64, 1>,
    out: &View<f64, 1>,
) -> hoplite::Result<f64> {
    let n = x.extent(0);
    let all = || RangePolicy::new(DefaultExecutionSpace::default(), 0..n);
    parallel_for("smooth", (all(), (low.write(), x.read())), smooth::with(8, n))?;
    parallel_for(
        "derivative",
        (all(), (slope.write(), x.read())),
        derivative::with(n),
    )?;
    parallel_for(
        "combine",
        (all(), (out.write(), low.read(), slope.read())),
        combine::with(10.0),
    )?;
    parallel_reduce("energy", (all(), (out.read(),)), energy::with(), Sum::new())
}
