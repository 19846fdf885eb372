//! VEC (GrCUDA b1): `x1 = x²` and `y1 = y²` side by side, then `Σ (x1 - y1)`.

use super::streams::Schedule;
use super::{BenchError, Deferred, DeviceView, Launcher, range_policy, upload, zeros};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, LaunchSpace, kernel};

/// `y[i] = x[i]²`.
#[kernel]
pub fn square(i: Idx<'_>, y: BoundWriter<'_, f32, 1>, x: BoundReader<'_, f32, 1>) {
    let v = x.get(i);
    y.set(i, v * v);
}

/// `Σ x[i] - y[i]`, accumulated in `f64`.
#[kernel]
pub fn difference_sum(i: Idx<'_>, x: BoundReader<'_, f32, 1>, y: BoundReader<'_, f32, 1>, acc: &mut f64) {
    *acc += (x.get(i) - y.get(i)) as f64;
}

/// GrCUDA's input: `x[i] = 1 / (i + 1)`, `y[i] = 2 / (i + 1)`.
pub fn input(n: usize) -> (Vec<f32>, Vec<f32>) {
    (
        (0..n).map(|i| 1.0 / (i + 1) as f32).collect(),
        (0..n).map(|i| 2.0 / (i + 1) as f32).collect(),
    )
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    x: DeviceView<f32, 1, S>,
    y: DeviceView<f32, 1, S>,
    x1: DeviceView<f32, 1, S>,
    y1: DeviceView<f32, 1, S>,
}

impl<S: LaunchSpace> Buffers<S> {
    /// Uploads the input of size `n`.
    pub fn new(n: usize) -> Result<Self, BenchError> {
        let (x, y) = input(n);
        Ok(Buffers {
            x: upload::<_, 1, S>("x", [n], &x)?,
            y: upload::<_, 1, S>("y", [n], &y)?,
            x1: zeros::<_, 1, S>("x1", [n])?,
            y1: zeros::<_, 1, S>("y1", [n])?,
        })
    }
}

/// The hand-written placement of [`run`]'s launches on two streams: the squares side by
/// side, the sum after the other stream's square.
pub fn schedule() -> Schedule {
    Schedule::new(&[(0, &[]), (1, &[]), (0, &[1])])
}

/// The three launches; returns the sum (read it with `Deferred::get`).
pub fn run<S: LaunchSpace, L: Launcher<S>>(to: &L, b: &Buffers<S>) -> Result<Deferred<f64>, BenchError> {
    let all = range_policy(to.space(), 0..b.x.extent(0));
    to.launch(
        "square x",
        (all.clone(), (b.x1.write(), b.x.read())),
        square::with(),
    )?;
    to.launch(
        "square y",
        (all.clone(), (b.y1.write(), b.y.read())),
        square::with(),
    )?;
    to.reduce(
        "reduce",
        (all, (b.x1.read(), b.y1.read())),
        difference_sum::with(),
        Sum::new(),
    )
}

/// The serial reference.
pub fn reference(n: usize) -> f64 {
    let (x, y) = input(n);
    x.iter().zip(&y).map(|(&a, &b)| (a * a - b * b) as f64).sum()
}

/// The sum within `1e-9` relative: the squares are exact, only the order of the `f64` sum
/// differs between backends.
pub fn check(got: f64, want: f64) {
    super::assert_close("VEC sum", &[got], &[want], 1e-9);
}
