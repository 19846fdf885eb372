//! B&S (GrCUDA b5): Black & Scholes call prices over `M` independent arrays, one kernel each.

use super::streams::Schedule;
use super::{BenchError, DeviceView, Launcher, Rng, range_policy, upload, zeros};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, LaunchSpace, kernel};

/// GrCUDA's market: rate, volatility, time, strike.
pub const R: f64 = 0.08;
/// Volatility.
pub const V: f64 = 0.3;
/// Time to expiry.
pub const T: f64 = 1.0;
/// Strike.
pub const K: f64 = 60.0;

/// The call price of each spot price, with the cumulative normal by its polynomial
/// approximation (Abramowitz and Stegun 26.2.17, as GrCUDA's `cndGPU`).
#[kernel]
pub fn black_scholes(
    i: Idx<'_>,
    call: BoundWriter<'_, f64, 1>,
    spot: BoundReader<'_, f64, 1>,
    r: f64,
    v: f64,
    t: f64,
    k: f64,
) {
    let s = spot.get(i);
    let sqrt_t = t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * sqrt_t);
    let d2 = d1 - v * sqrt_t;
    let mut cnd1 = 0.0;
    let mut cnd2 = 0.0;
    for pass in 0..2 {
        let d = if pass == 0 { d1 } else { d2 };
        let kk = 1.0 / (1.0 + 0.2316419 * d.abs());
        let poly = kk
            * (0.31938153
                + kk * (-0.356563782 + kk * (1.781477937 + kk * (-1.821255978 + kk * 1.330274429))));
        let mut cnd = 0.3989422804014327 * (-0.5 * d * d).exp() * poly;
        if d > 0.0 {
            cnd = 1.0 - cnd;
        }
        if pass == 0 {
            cnd1 = cnd;
        } else {
            cnd2 = cnd;
        }
    }
    call.set(i, s * cnd1 - k * (-r * t).exp() * cnd2);
}

/// Spot prices in `[59.5, 60.5)`, the same for every array (as GrCUDA's).
pub fn input(n: usize) -> Vec<f64> {
    let mut rng = Rng::new(5);
    (0..n).map(|_| 59.5 + rng.unit()).collect()
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    spots: Vec<DeviceView<f64, 1, S>>,
    /// The call prices, one array per input array.
    pub calls: Vec<DeviceView<f64, 1, S>>,
}

impl<S: LaunchSpace> Buffers<S> {
    /// `m` arrays of `n` prices.
    pub fn new(n: usize, m: usize) -> Result<Self, BenchError> {
        let x = input(n);
        let mut b = Buffers {
            spots: Vec::new(),
            calls: Vec::new(),
        };
        for _ in 0..m {
            b.spots.push(upload::<_, 1, S>("spot", [n], &x)?);
            b.calls.push(zeros::<_, 1, S>("call", [n])?);
        }
        Ok(b)
    }

    /// The call prices, after [`Launcher::finish`].
    pub fn result(&self) -> Result<Vec<Vec<f64>>, BenchError> {
        self.calls.iter().map(|c| Ok(c.to_vec()?)).collect()
    }
}

/// The hand-written placement of [`run`]'s `m` launches on two streams: in turn, with no
/// event (the arrays are independent).
pub fn schedule(m: usize) -> Schedule {
    let steps: Vec<(usize, &[usize])> = (0..m).map(|k| (k % 2, &[][..])).collect();
    Schedule::new(&steps)
}

/// The `M` launches, then a wait for all.
pub fn run<S: LaunchSpace, L: Launcher<S>>(to: &L, b: &Buffers<S>) -> Result<(), BenchError> {
    for (call, spot) in b.calls.iter().zip(&b.spots) {
        let all = range_policy(to.space(), 0..spot.extent(0));
        to.launch(
            "black scholes",
            (all, (call.write(), spot.read())),
            black_scholes::with(R, V, T, K),
        )?;
    }
    to.finish()
}

/// The serial reference: one array of call prices (every array's).
pub fn reference(n: usize) -> Vec<f64> {
    let cnd = |d: f64| {
        let kk = 1.0 / (1.0 + 0.2316419 * d.abs());
        let poly = kk
            * (0.31938153
                + kk * (-0.356563782 + kk * (1.781477937 + kk * (-1.821255978 + kk * 1.330274429))));
        let c = 0.3989422804014327 * (-0.5 * d * d).exp() * poly;
        if d > 0.0 { 1.0 - c } else { c }
    };
    input(n)
        .into_iter()
        .map(|s| {
            let d1 = ((s / K).ln() + (R + 0.5 * V * V) * T) / (V * T.sqrt());
            let d2 = d1 - V * T.sqrt();
            s * cnd(d1) - K * (-R * T).exp() * cnd(d2)
        })
        .collect()
}

/// Every array within `1e-12` relative (to `max(1, |price|)`): the host computes the same
/// operations in the same order; a GPU's `exp` and `log` may differ in the last bits.
pub fn check(got: &[Vec<f64>], want: &[f64]) {
    for g in got {
        super::assert_close("B&S call", g, want, 1e-12);
    }
}
