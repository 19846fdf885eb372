//! ML (GrCUDA b6): an ensemble of a naive Bayes and a ridge regression classifier over `n`
//! rows of `f` integer features and `c` classes. The two branches (five kernels each) run side
//! by side; an argmax of their summed probabilities joins them.

use super::streams::Schedule;
use super::{BenchError, DeviceView, Launcher, Rng, md_policy, range_policy, upload, zeros};
use hoplite::prelude::*;
use hoplite::{BoundLookup, BoundReader, BoundWriter, LaunchSpace, MdIdx, kernel};

/// Mean and standard deviation of feature `j`.
#[kernel]
pub fn column_stats(
    j: Idx<'_>,
    mean: BoundWriter<'_, f32, 1>,
    std: BoundWriter<'_, f32, 1>,
    x: BoundLookup<'_, i32, 2>,
    rows: usize,
) {
    let mut sum = 0.0;
    let mut sum_sq = 0.0;
    for r in 0..rows {
        let v = x.get([r, *j]) as f32;
        sum += v;
        sum_sq += v * v;
    }
    let m = sum / rows as f32;
    mean.set(j, m);
    std.set(j, (sum_sq / rows as f32 - m * m).sqrt());
}

/// The standardized features.
#[kernel]
pub fn standardize(
    ij: MdIdx<'_, 2>,
    z: BoundWriter<'_, f32, 2>,
    x: BoundReader<'_, i32, 2>,
    mean: BoundLookup<'_, f32, 1>,
    std: BoundLookup<'_, f32, 1>,
) {
    let j = ij[1];
    z.set(ij, (x.get(ij) as f32 - mean.get(j)) / std.get(j));
}

/// Naive Bayes log-likelihoods: `prior[c] + Σ_q x[i, q] w[c, q]`.
#[kernel]
pub fn bayes_scores(
    ic: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2>,
    x: BoundLookup<'_, i32, 2>,
    w: BoundLookup<'_, f32, 2>,
    prior: BoundLookup<'_, f32, 1>,
    features: usize,
) {
    let i = ic[0];
    let c = ic[1];
    let mut s = prior.get(c);
    for q in 0..features {
        s += x.get([i, q]) as f32 * w.get([c, q]);
    }
    out.set(ic, s);
}

/// Ridge scores: `Σ_q z[i, q] w[c, q]`.
#[kernel]
pub fn ridge_scores(
    ic: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2>,
    z: BoundLookup<'_, f32, 2>,
    w: BoundLookup<'_, f32, 2>,
    features: usize,
) {
    let i = ic[0];
    let c = ic[1];
    let mut s = 0.0;
    for q in 0..features {
        s += z.get([i, q]) * w.get([c, q]);
    }
    out.set(ic, s);
}

/// Adds the intercept of each class.
#[kernel]
pub fn add_intercept(ic: MdIdx<'_, 2>, r: BoundWriter<'_, f32, 2>, b: BoundLookup<'_, f32, 1>) {
    r.set(ic, r.get(ic) + b.get(ic[1]));
}

/// The largest score of each row.
#[kernel]
pub fn row_max(i: Idx<'_>, out: BoundWriter<'_, f32, 1>, r: BoundLookup<'_, f32, 2>, classes: usize) {
    let mut m = r.get([*i, 0]);
    for c in 1..classes {
        m = m.max(r.get([*i, c]));
    }
    out.set(i, m);
}

/// `log Σ_c exp(r[i, c])`, shifted by the row's maximum.
#[kernel]
pub fn log_sum_exp(
    i: Idx<'_>,
    out: BoundWriter<'_, f32, 1>,
    r: BoundLookup<'_, f32, 2>,
    max: BoundReader<'_, f32, 1>,
    classes: usize,
) {
    let m = max.get(*i);
    let mut s = 0.0;
    for c in 0..classes {
        s += (r.get([*i, c]) - m).exp();
    }
    out.set(i, s.ln() + m);
}

/// The posterior probabilities: `exp(r[i, c] - lse[i])`, in place.
#[kernel]
pub fn posterior(ic: MdIdx<'_, 2>, r: BoundWriter<'_, f32, 2>, lse: BoundLookup<'_, f32, 1>) {
    r.set(ic, (r.get(ic) - lse.get(ic[0])).exp());
}

/// The softmax of each row.
#[kernel]
pub fn softmax(ic: MdIdx<'_, 2>, p: BoundWriter<'_, f32, 2>, r: BoundLookup<'_, f32, 2>, classes: usize) {
    let i = ic[0];
    let mut s = 0.0;
    for c in 0..classes {
        s += r.get([i, c]).exp();
    }
    p.set(ic, r.get(ic).exp() / s);
}

/// The class of the largest summed probability (the first on a tie).
#[kernel]
pub fn argmax(
    i: Idx<'_>,
    out: BoundWriter<'_, i32, 1>,
    a: BoundLookup<'_, f32, 2>,
    b: BoundLookup<'_, f32, 2>,
    classes: usize,
) {
    let mut best = 0;
    let mut best_value = a.get([*i, 0]) + b.get([*i, 0]);
    for c in 1..classes {
        let v = a.get([*i, c]) + b.get([*i, c]);
        if v > best_value {
            best_value = v;
            best = c;
        }
    }
    out.set(i, best as i32);
}

/// The input: counts in `0..10` and random weights in `[0, 1)`.
pub struct Input {
    rows: usize,
    features: usize,
    classes: usize,
    x: Vec<i32>,
    nb_w: Vec<f32>,
    prior: Vec<f32>,
    ridge_w: Vec<f32>,
    intercept: Vec<f32>,
}

impl Input {
    /// `rows x features` counts, `classes` classes.
    pub fn new(rows: usize, features: usize, classes: usize) -> Self {
        let mut rng = Rng::new(6);
        let mut unit = |n: usize| (0..n).map(|_| rng.unit() as f32).collect::<Vec<_>>();
        let nb_w = unit(classes * features);
        let ridge_w = unit(classes * features);
        let prior = unit(classes);
        let intercept = unit(classes);
        let mut rng = Rng::new(66);
        let x = (0..rows * features).map(|_| rng.below(10) as i32).collect();
        Input {
            rows,
            features,
            classes,
            x,
            nb_w,
            prior,
            ridge_w,
            intercept,
        }
    }
}

/// The result: both branches' probabilities and the ensemble's classes.
#[derive(Debug)]
pub struct Output {
    bayes: Vec<f32>,
    ridge: Vec<f32>,
    classes: Vec<i32>,
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    dims: (usize, usize, usize),
    x: DeviceView<i32, 2, S>,
    nb_w: DeviceView<f32, 2, S>,
    prior: DeviceView<f32, 1, S>,
    ridge_w: DeviceView<f32, 2, S>,
    intercept: DeviceView<f32, 1, S>,
    mean: DeviceView<f32, 1, S>,
    std: DeviceView<f32, 1, S>,
    z: DeviceView<f32, 2, S>,
    r1: DeviceView<f32, 2, S>,
    r2: DeviceView<f32, 2, S>,
    max: DeviceView<f32, 1, S>,
    lse: DeviceView<f32, 1, S>,
    p1: DeviceView<f32, 2, S>,
    p2: DeviceView<f32, 2, S>,
    out: DeviceView<i32, 1, S>,
}

impl<S: LaunchSpace> Buffers<S> {
    /// Uploads `input`.
    pub fn new(input: &Input) -> Result<Self, BenchError> {
        let (n, f, c) = (input.rows, input.features, input.classes);
        Ok(Buffers {
            dims: (n, f, c),
            x: upload::<_, 2, S>("x", [n, f], &input.x)?,
            nb_w: upload::<_, 2, S>("nb weights", [c, f], &input.nb_w)?,
            prior: upload::<_, 1, S>("nb prior", [c], &input.prior)?,
            ridge_w: upload::<_, 2, S>("ridge weights", [c, f], &input.ridge_w)?,
            intercept: upload::<_, 1, S>("ridge intercept", [c], &input.intercept)?,
            mean: zeros::<_, 1, S>("mean", [f])?,
            std: zeros::<_, 1, S>("std", [f])?,
            z: zeros::<_, 2, S>("z", [n, f])?,
            r1: zeros::<_, 2, S>("r1", [n, c])?,
            r2: zeros::<_, 2, S>("r2", [n, c])?,
            max: zeros::<_, 1, S>("max", [n])?,
            lse: zeros::<_, 1, S>("lse", [n])?,
            p1: zeros::<_, 2, S>("p1", [n, c])?,
            p2: zeros::<_, 2, S>("p2", [n, c])?,
            out: zeros::<_, 1, S>("classes", [n])?,
        })
    }

    /// The result, after [`Launcher::finish`].
    pub fn result(&self) -> Result<Output, BenchError> {
        Ok(Output {
            bayes: self.p1.to_vec()?,
            ridge: self.p2.to_vec()?,
            classes: self.out.to_vec()?,
        })
    }
}

/// The hand-written placement of [`run`]'s launches on two streams: naive Bayes on one, ridge
/// regression on the other, the argmax after the ridge softmax.
pub fn schedule() -> Schedule {
    Schedule::new(&[
        (1, &[]),  // rr stats
        (1, &[]),  // rr standardize
        (0, &[]),  // nb scores
        (1, &[]),  // rr scores
        (0, &[]),  // nb max
        (0, &[]),  // nb log-sum-exp
        (1, &[]),  // rr intercept
        (0, &[]),  // nb posterior
        (0, &[]),  // nb softmax
        (1, &[]),  // rr softmax
        (0, &[9]), // argmax
    ])
}

/// The eleven launches, then a wait for all.
pub fn run<S: LaunchSpace, L: Launcher<S>>(to: &L, b: &Buffers<S>) -> Result<(), BenchError> {
    let (n, f, c) = b.dims;
    let rows = range_policy(to.space(), 0..n);
    let scores = md_policy(to.space(), [0, 0], [n, c]);
    // Ridge regression.
    to.launch(
        "rr stats",
        (
            range_policy(to.space(), 0..f),
            (b.mean.write(), b.std.write(), b.x.lookup()),
        ),
        column_stats::with(n),
    )?;
    to.launch(
        "rr standardize",
        (
            md_policy(to.space(), [0, 0], [n, f]),
            (b.z.write(), b.x.read(), b.mean.lookup(), b.std.lookup()),
        ),
        standardize::with(),
    )?;
    // Naive Bayes, independent of the ridge branch so far.
    to.launch(
        "nb scores",
        (
            scores.clone(),
            (b.r1.write(), b.x.lookup(), b.nb_w.lookup(), b.prior.lookup()),
        ),
        bayes_scores::with(f),
    )?;
    to.launch(
        "rr scores",
        (scores.clone(), (b.r2.write(), b.z.lookup(), b.ridge_w.lookup())),
        ridge_scores::with(f),
    )?;
    to.launch(
        "nb max",
        (rows.clone(), (b.max.write(), b.r1.lookup())),
        row_max::with(c),
    )?;
    to.launch(
        "nb log-sum-exp",
        (rows.clone(), (b.lse.write(), b.r1.lookup(), b.max.read())),
        log_sum_exp::with(c),
    )?;
    to.launch(
        "rr intercept",
        (scores.clone(), (b.r2.write(), b.intercept.lookup())),
        add_intercept::with(),
    )?;
    to.launch(
        "nb posterior",
        (scores.clone(), (b.r1.write(), b.lse.lookup())),
        posterior::with(),
    )?;
    to.launch(
        "nb softmax",
        (scores.clone(), (b.p1.write(), b.r1.lookup())),
        softmax::with(c),
    )?;
    to.launch(
        "rr softmax",
        (scores, (b.p2.write(), b.r2.lookup())),
        softmax::with(c),
    )?;
    to.launch(
        "argmax",
        (rows, (b.out.write(), b.p1.lookup(), b.p2.lookup())),
        argmax::with(c),
    )?;
    to.finish()
}

/// The serial reference, in the kernels' order of operations.
pub fn reference(input: &Input) -> Output {
    let (n, f, c) = (input.rows, input.features, input.classes);
    let x = |i: usize, q: usize| input.x[i * f + q];
    let (mut mean, mut std) = (vec![0f32; f], vec![0f32; f]);
    for j in 0..f {
        let (mut s, mut sq) = (0f32, 0f32);
        for r in 0..n {
            let v = x(r, j) as f32;
            s += v;
            sq += v * v;
        }
        mean[j] = s / n as f32;
        std[j] = (sq / n as f32 - mean[j] * mean[j]).sqrt();
    }
    let z: Vec<f32> = (0..n * f)
        .map(|k| (input.x[k] as f32 - mean[k % f]) / std[k % f])
        .collect();
    let mut r1 = vec![0f32; n * c];
    let mut r2 = vec![0f32; n * c];
    for i in 0..n {
        for k in 0..c {
            let mut s = input.prior[k];
            let mut t = 0f32;
            for q in 0..f {
                s += x(i, q) as f32 * input.nb_w[k * f + q];
                t += z[i * f + q] * input.ridge_w[k * f + q];
            }
            r1[i * c + k] = s;
            r2[i * c + k] = t + input.intercept[k];
        }
    }
    for i in 0..n {
        let row = &mut r1[i * c..(i + 1) * c];
        let mut m = row[0];
        for &v in &row[1..] {
            m = m.max(v);
        }
        let mut s = 0f32;
        for &v in row.iter() {
            s += (v - m).exp();
        }
        let lse = s.ln() + m;
        for v in row.iter_mut() {
            *v = (*v - lse).exp();
        }
    }
    let softmax = |r: &[f32]| {
        let mut p = vec![0f32; n * c];
        for i in 0..n {
            let mut s = 0f32;
            for k in 0..c {
                s += r[i * c + k].exp();
            }
            for k in 0..c {
                p[i * c + k] = r[i * c + k].exp() / s;
            }
        }
        p
    };
    let (bayes, ridge) = (softmax(&r1), softmax(&r2));
    let classes = (0..n)
        .map(|i| {
            let mut best = 0;
            for k in 1..c {
                if bayes[i * c + k] + ridge[i * c + k] > bayes[i * c + best] + ridge[i * c + best] {
                    best = k;
                }
            }
            best as i32
        })
        .collect();
    Output {
        bayes,
        ridge,
        classes,
    }
}

impl Output {
    /// Probabilities within `1e-5` relative (exact on the host, which runs the same `f32`
    /// operations in the same order; a GPU's `exp` may differ in the last bits), and the
    /// classes equal wherever the reference's best two are more than `1e-4` apart.
    pub fn check(&self, want: &Output) {
        super::assert_close("ML naive Bayes", &self.bayes, &want.bayes, 1e-5);
        super::assert_close("ML ridge", &self.ridge, &want.ridge, 1e-5);
        let c = want.bayes.len() / want.classes.len();
        for (i, (&g, &w)) in self.classes.iter().zip(&want.classes).enumerate() {
            let at = |k: i32| want.bayes[i * c + k as usize] + want.ridge[i * c + k as usize];
            if g != w {
                assert!(
                    (at(g) - at(w)).abs() <= 1e-4,
                    "ML class of row {i}: {g} against the reference's {w}"
                );
            }
        }
    }
}
