//! DL (GrCUDA b10): a two-branch convolutional network. Each branch runs a convolution with
//! ReLU (stride 2), a mean pooling and a second convolution; a concatenation joins the
//! branches and a dense layer of one output (a dot product) ends the network.

use super::streams::Schedule;
use super::{BenchError, Deferred, DeviceView, Launcher, Rng, md_policy, upload, zeros};
use hoplite::prelude::*;
use hoplite::{BoundLookup, BoundReader, BoundWriter, LaunchSpace, MdIdx, kernel};

/// GrCUDA's layers: 3x3 kernels, stride 2, 8 then 16 filters, pooling over 5x5 boxes.
pub const K: usize = 3;
/// The stride of the convolutions.
pub const STRIDE: usize = 2;
/// The filters of the first convolution.
pub const KN1: usize = 8;
/// The filters of the second convolution.
pub const KN2: usize = 16;
/// The side of a pooling box (its stride too).
pub const POOL: usize = 5;

/// `out[o, i, j] = max(0, Σ_{c, a, b} x[c, s i + a - K/2, s j + b - K/2] w[o, c, a, b])`, zero
/// outside the input.
#[kernel]
pub fn conv2d(
    oij: MdIdx<'_, 3>,
    out: BoundWriter<'_, f32, 3>,
    x: BoundLookup<'_, f32, 3>,
    w: BoundLookup<'_, f32, 4>,
    channels: usize,
    k: usize,
    stride: usize,
    rows: usize,
    cols: usize,
) {
    let o = oij[0];
    let i = oij[1];
    let j = oij[2];
    let mut s = 0.0;
    for c in 0..channels {
        for a in 0..k {
            for b in 0..k {
                let y = (i * stride + a) as isize - (k / 2) as isize;
                let z = (j * stride + b) as isize - (k / 2) as isize;
                if y >= 0 && z >= 0 && (y as usize) < rows && (z as usize) < cols {
                    s += x.get([c, y as usize, z as usize]) * w.get([o, c, a, b]);
                }
            }
        }
    }
    out.set(oij, s.max(0.0));
}

/// The mean of each `p x p` box.
#[kernel]
pub fn mean_pool(oij: MdIdx<'_, 3>, out: BoundWriter<'_, f32, 3>, x: BoundLookup<'_, f32, 3>, p: usize) {
    let o = oij[0];
    let i = oij[1];
    let j = oij[2];
    let mut s = 0.0;
    for a in 0..p {
        for b in 0..p {
            s += x.get([o, i * p + a, j * p + b]);
        }
    }
    out.set(oij, s / (p * p) as f32);
}

/// `z[0] = x`, `z[1] = y`.
#[kernel]
pub fn concat(
    bij: MdIdx<'_, 4>,
    z: BoundWriter<'_, f32, 4>,
    x: BoundLookup<'_, f32, 3>,
    y: BoundLookup<'_, f32, 3>,
) {
    let v = if bij[0] == 0 {
        x.get([bij[1], bij[2], bij[3]])
    } else {
        y.get([bij[1], bij[2], bij[3]])
    };
    z.set(bij, v);
}

/// `Σ z w`, accumulated in `f64`.
#[kernel]
pub fn dense(bij: MdIdx<'_, 4>, z: BoundReader<'_, f32, 4>, w: BoundReader<'_, f32, 4>, acc: &mut f64) {
    *acc += (z.get(bij) * w.get(bij)) as f64;
}

/// The shapes of one network on an `n x n` single-channel image.
#[derive(Clone, Copy)]
pub struct Shape {
    n: usize,
    c1: usize,
    p1: usize,
    c2: usize,
}

impl Shape {
    /// The layers' sides for an `n x n` input.
    pub fn new(n: usize) -> Self {
        let c1 = n.div_ceil(STRIDE);
        let p1 = c1 / POOL;
        let c2 = p1.div_ceil(STRIDE);
        Shape { n, c1, p1, c2 }
    }
}

/// The input: two images, four filter banks and the dense weights, uniform in `[-1, 1)`
/// (images in `[0, 1)`).
pub struct Input {
    shape: Shape,
    x: Vec<f32>,
    y: Vec<f32>,
    w1: Vec<f32>,
    w2: Vec<f32>,
    w3: Vec<f32>,
    w4: Vec<f32>,
    dense: Vec<f32>,
}

impl Input {
    /// The input of an `n x n` network.
    pub fn new(n: usize) -> Self {
        let shape = Shape::new(n);
        let mut rng = Rng::new(10);
        let mut take = |len: usize, lo: f64| {
            (0..len)
                .map(|_| (lo + (1.0 - lo) * rng.unit()) as f32)
                .collect::<Vec<_>>()
        };
        Input {
            x: take(n * n, 0.0),
            y: take(n * n, 0.0),
            w1: take(KN1 * K * K, -1.0),
            w2: take(KN2 * KN1 * K * K, -1.0),
            w3: take(KN1 * K * K, -1.0),
            w4: take(KN2 * KN1 * K * K, -1.0),
            dense: take(2 * KN2 * shape.c2 * shape.c2, -1.0),
            shape,
        }
    }
}

/// One branch's views.
struct Branch<S: LaunchSpace> {
    image: DeviceView<f32, 3, S>,
    w1: DeviceView<f32, 4, S>,
    w2: DeviceView<f32, 4, S>,
    c1: DeviceView<f32, 3, S>,
    p1: DeviceView<f32, 3, S>,
    c2: DeviceView<f32, 3, S>,
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    shape: Shape,
    x: Branch<S>,
    y: Branch<S>,
    z: DeviceView<f32, 4, S>,
    dense: DeviceView<f32, 4, S>,
}

impl<S: LaunchSpace> Buffers<S> {
    /// Uploads `input`.
    pub fn new(input: &Input) -> Result<Self, BenchError> {
        let s = input.shape;
        let branch = |image: &[f32], w1: &[f32], w2: &[f32]| -> Result<Branch<S>, BenchError> {
            Ok(Branch {
                image: upload::<_, 3, S>("image", [1, s.n, s.n], image)?,
                w1: upload::<_, 4, S>("filters 1", [KN1, 1, K, K], w1)?,
                w2: upload::<_, 4, S>("filters 2", [KN2, KN1, K, K], w2)?,
                c1: zeros::<_, 3, S>("conv 1", [KN1, s.c1, s.c1])?,
                p1: zeros::<_, 3, S>("pool", [KN1, s.p1, s.p1])?,
                c2: zeros::<_, 3, S>("conv 2", [KN2, s.c2, s.c2])?,
            })
        };
        Ok(Buffers {
            shape: s,
            x: branch(&input.x, &input.w1, &input.w2)?,
            y: branch(&input.y, &input.w3, &input.w4)?,
            z: zeros::<_, 4, S>("concat", [2, KN2, s.c2, s.c2])?,
            dense: upload::<_, 4, S>("dense", [2, KN2, s.c2, s.c2], &input.dense)?,
        })
    }

    /// The concatenated features, after [`Launcher::finish`].
    pub fn features(&self) -> Result<Vec<f32>, BenchError> {
        Ok(self.z.to_vec()?)
    }
}

/// The hand-written placement of [`run`]'s launches on two streams: a branch on each, the
/// concatenation and the dense layer after the other branch's last convolution.
pub fn schedule() -> Schedule {
    Schedule::new(&[
        (0, &[]),  // conv 1 x
        (0, &[]),  // pool x
        (0, &[]),  // conv 2 x
        (1, &[]),  // conv 1 y
        (1, &[]),  // pool y
        (1, &[]),  // conv 2 y
        (0, &[5]), // concat
        (0, &[]),  // dense
    ])
}

/// The eight launches; returns the network's output (read it with `Deferred::get`).
pub fn run<S: LaunchSpace, L: Launcher<S>>(to: &L, b: &Buffers<S>) -> Result<Deferred<f64>, BenchError> {
    let s = b.shape;
    for (label, br) in [("x", &b.x), ("y", &b.y)] {
        to.launch(
            &format!("conv 1 {label}"),
            (
                md_policy(to.space(), [0, 0, 0], [KN1, s.c1, s.c1]),
                (br.c1.write(), br.image.lookup(), br.w1.lookup()),
            ),
            conv2d::with(1, K, STRIDE, s.n, s.n),
        )?;
        to.launch(
            &format!("pool {label}"),
            (
                md_policy(to.space(), [0, 0, 0], [KN1, s.p1, s.p1]),
                (br.p1.write(), br.c1.lookup()),
            ),
            mean_pool::with(POOL),
        )?;
        to.launch(
            &format!("conv 2 {label}"),
            (
                md_policy(to.space(), [0, 0, 0], [KN2, s.c2, s.c2]),
                (br.c2.write(), br.p1.lookup(), br.w2.lookup()),
            ),
            conv2d::with(KN1, K, STRIDE, s.p1, s.p1),
        )?;
    }
    let all = md_policy(to.space(), [0, 0, 0, 0], [2, KN2, s.c2, s.c2]);
    to.launch(
        "concat",
        (all.clone(), (b.z.write(), b.x.c2.lookup(), b.y.c2.lookup())),
        concat::with(),
    )?;
    to.reduce(
        "dense",
        (all, (b.z.read(), b.dense.read())),
        dense::with(),
        Sum::new(),
    )
}

/// The serial reference: the concatenated features and the output.
pub fn reference(input: &Input) -> (Vec<f32>, f64) {
    let s = input.shape;
    let conv = |x: &[f32], w: &[f32], channels: usize, filters: usize, side: usize, out_side: usize| {
        let mut out = vec![0f32; filters * out_side * out_side];
        for o in 0..filters {
            for i in 0..out_side {
                for j in 0..out_side {
                    let mut acc = 0f32;
                    for c in 0..channels {
                        for a in 0..K {
                            for bb in 0..K {
                                let y = (i * STRIDE + a) as isize - (K / 2) as isize;
                                let z = (j * STRIDE + bb) as isize - (K / 2) as isize;
                                if y >= 0 && z >= 0 && (y as usize) < side && (z as usize) < side {
                                    acc += x[(c * side + y as usize) * side + z as usize]
                                        * w[((o * channels + c) * K + a) * K + bb];
                                }
                            }
                        }
                    }
                    out[(o * out_side + i) * out_side + j] = acc.max(0.0);
                }
            }
        }
        out
    };
    let pool = |x: &[f32]| {
        let mut out = vec![0f32; KN1 * s.p1 * s.p1];
        for o in 0..KN1 {
            for i in 0..s.p1 {
                for j in 0..s.p1 {
                    let mut acc = 0f32;
                    for a in 0..POOL {
                        for bb in 0..POOL {
                            acc += x[(o * s.c1 + i * POOL + a) * s.c1 + j * POOL + bb];
                        }
                    }
                    out[(o * s.p1 + i) * s.p1 + j] = acc / (POOL * POOL) as f32;
                }
            }
        }
        out
    };
    let branch = |image: &[f32], w1: &[f32], w2: &[f32]| {
        let c1 = conv(image, w1, 1, KN1, s.n, s.c1);
        conv(&pool(&c1), w2, KN1, KN2, s.p1, s.c2)
    };
    let mut z = branch(&input.x, &input.w1, &input.w2);
    z.extend(branch(&input.y, &input.w3, &input.w4));
    let out = z.iter().zip(&input.dense).map(|(&a, &b)| (a * b) as f64).sum();
    (z, out)
}

/// The features within `1e-5` relative (exact on the host: the same `f32` operations in the
/// same order; a GPU may contract a multiply-add), the output within `1e-9` relative (the
/// order of the `f64` sum differs between backends).
pub fn check(features: &[f32], out: f64, want: &(Vec<f32>, f64)) {
    super::assert_close("DL features", features, &want.0, 1e-5);
    super::assert_close("DL output", &[out], &[want.1], 1e-9);
}
