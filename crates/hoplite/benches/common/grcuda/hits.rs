//! HITS (GrCUDA b7): hub and authority scores of a random sparse graph. Each iteration runs two
//! sparse matrix-vector products side by side (the authorities from the hubs through `Aᵀ`, the
//! hubs from the authorities through `A`), sums both, and divides each by its sum.

use super::{BenchError, DeviceView, Launcher, Rng, range_policy, upload};
use hoplite::prelude::*;
use hoplite::{BoundLookup, BoundReader, BoundWriter, LaunchSpace, kernel};

/// `out[n] = Σ_k val[k] v[idx[k]]` over row `n` of a CSR matrix.
#[kernel]
pub fn spmv(
    n: Idx<'_>,
    out: BoundWriter<'_, f32, 1>,
    ptr: BoundLookup<'_, i32, 1>,
    idx: BoundLookup<'_, i32, 1>,
    val: BoundLookup<'_, i32, 1>,
    v: BoundLookup<'_, f32, 1>,
) {
    let start = ptr.get(*n) as usize;
    let end = ptr.get(*n + 1) as usize;
    let mut s = 0.0;
    for k in start..end {
        s += val.get(k) as f32 * v.get(idx.get(k) as usize);
    }
    out.set(n, s);
}

/// `Σ x[i]`, accumulated in `f64`.
#[kernel]
pub fn total(i: Idx<'_>, x: BoundReader<'_, f32, 1>, acc: &mut f64) {
    *acc += x.get(i) as f64;
}

/// `y[i] = x[i] / norm`.
#[kernel]
pub fn divide(i: Idx<'_>, y: BoundWriter<'_, f32, 1>, x: BoundReader<'_, f32, 1>, norm: f32) {
    y.set(i, x.get(i) / norm);
}

/// A matrix in compressed sparse rows.
struct Csr {
    ptr: Vec<i32>,
    idx: Vec<i32>,
    val: Vec<i32>,
}

/// A random graph of `n` vertices, each with `degree` distinct out-edges (as GrCUDA's
/// `random_coo`, weights 1), as `A` and `Aᵀ`.
pub struct Input {
    n: usize,
    a: Csr,
    at: Csr,
}

impl Input {
    /// The graph.
    pub fn new(n: usize, degree: usize) -> Self {
        let mut rng = Rng::new(7);
        let mut edges = Vec::with_capacity(n * degree);
        for i in 0..n {
            let mut row: Vec<usize> = Vec::with_capacity(degree);
            while row.len() < degree.min(n) {
                let j = rng.below(n);
                if !row.contains(&j) {
                    row.push(j);
                }
            }
            row.sort_unstable();
            edges.extend(row.into_iter().map(|j| (i, j)));
        }
        let csr = |edges: &[(usize, usize)]| {
            let mut ptr = vec![0i32; n + 1];
            for &(r, _) in edges {
                ptr[r + 1] += 1;
            }
            for r in 0..n {
                ptr[r + 1] += ptr[r];
            }
            let mut fill: Vec<usize> = ptr[..n].iter().map(|&p| p as usize).collect();
            let mut idx = vec![0i32; edges.len()];
            for &(r, c) in edges {
                idx[fill[r]] = c as i32;
                fill[r] += 1;
            }
            Csr {
                ptr,
                idx,
                val: vec![1; edges.len()],
            }
        };
        let a = csr(&edges);
        let mut transposed: Vec<(usize, usize)> = edges.iter().map(|&(i, j)| (j, i)).collect();
        transposed.sort_unstable();
        let at = csr(&transposed);
        Input { n, a, at }
    }
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    a: [DeviceView<i32, 1, S>; 3],
    at: [DeviceView<i32, 1, S>; 3],
    auth1: DeviceView<f32, 1, S>,
    auth2: DeviceView<f32, 1, S>,
    hub1: DeviceView<f32, 1, S>,
    hub2: DeviceView<f32, 1, S>,
}

impl<S: LaunchSpace> Buffers<S> {
    /// Uploads the graph; every score starts at 1.
    pub fn new(input: &Input) -> Result<Self, BenchError> {
        let n = input.n;
        let csr = |m: &Csr| -> Result<[DeviceView<i32, 1, S>; 3], BenchError> {
            Ok([
                upload::<_, 1, S>("ptr", [n + 1], &m.ptr)?,
                upload::<_, 1, S>("idx", [m.idx.len()], &m.idx)?,
                upload::<_, 1, S>("val", [m.val.len()], &m.val)?,
            ])
        };
        let ones = vec![1f32; n];
        Ok(Buffers {
            a: csr(&input.a)?,
            at: csr(&input.at)?,
            auth1: upload::<_, 1, S>("auth1", [n], &ones)?,
            auth2: upload::<_, 1, S>("auth2", [n], &ones)?,
            hub1: upload::<_, 1, S>("hub1", [n], &ones)?,
            hub2: upload::<_, 1, S>("hub2", [n], &ones)?,
        })
    }

    /// The authority and hub scores, after [`Launcher::finish`].
    pub fn result(&self) -> Result<(Vec<f32>, Vec<f32>), BenchError> {
        Ok((self.auth1.to_vec()?, self.hub1.to_vec()?))
    }
}

/// `iterations` rounds from the scores in the buffers, then a wait for all.
pub fn run<S: LaunchSpace, L: Launcher<S>>(
    to: &L,
    b: &Buffers<S>,
    iterations: usize,
) -> Result<(), BenchError> {
    let all = range_policy(to.space(), 0..b.auth1.extent(0));
    for _ in 0..iterations {
        let [ptr, idx, val] = &b.at;
        to.launch(
            "spmv auth",
            (
                all.clone(),
                (
                    b.auth2.write(),
                    ptr.lookup(),
                    idx.lookup(),
                    val.lookup(),
                    b.hub1.lookup(),
                ),
            ),
            spmv::with(),
        )?;
        let [ptr, idx, val] = &b.a;
        to.launch(
            "spmv hub",
            (
                all.clone(),
                (
                    b.hub2.write(),
                    ptr.lookup(),
                    idx.lookup(),
                    val.lookup(),
                    b.auth1.lookup(),
                ),
            ),
            spmv::with(),
        )?;
        let auth_norm = to.reduce(
            "sum auth",
            (all.clone(), (b.auth2.read(),)),
            total::with(),
            Sum::new(),
        )?;
        let hub_norm = to.reduce(
            "sum hub",
            (all.clone(), (b.hub2.read(),)),
            total::with(),
            Sum::new(),
        )?;
        let (auth_norm, hub_norm) = (auth_norm.get()? as f32, hub_norm.get()? as f32);
        to.launch(
            "divide auth",
            (all.clone(), (b.auth1.write(), b.auth2.read())),
            divide::with(auth_norm),
        )?;
        to.launch(
            "divide hub",
            (all.clone(), (b.hub1.write(), b.hub2.read())),
            divide::with(hub_norm),
        )?;
    }
    to.finish()
}

/// The serial reference: the authority and hub scores after `iterations` rounds.
pub fn reference(input: &Input, iterations: usize) -> (Vec<f32>, Vec<f32>) {
    let spmv = |m: &Csr, v: &[f32]| -> Vec<f32> {
        (0..input.n)
            .map(|r| {
                let mut s = 0f32;
                for k in m.ptr[r] as usize..m.ptr[r + 1] as usize {
                    s += m.val[k] as f32 * v[m.idx[k] as usize];
                }
                s
            })
            .collect()
    };
    let normalize = |v: Vec<f32>| {
        let norm = v.iter().map(|&x| x as f64).sum::<f64>() as f32;
        v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let (mut auth, mut hub) = (vec![1f32; input.n], vec![1f32; input.n]);
    for _ in 0..iterations {
        let (a, h) = (spmv(&input.at, &hub), spmv(&input.a, &auth));
        (auth, hub) = (normalize(a), normalize(h));
    }
    (auth, hub)
}

/// Scores times `n` (about 1 each) within `1e-5` relative: the products are exact, the order
/// of the norms' `f64` sums differs between backends, which may round a norm's last `f32` bit
/// the other way.
pub fn check(got: &(Vec<f32>, Vec<f32>), want: &(Vec<f32>, Vec<f32>)) {
    let scaled = |v: &[f32]| v.iter().map(|&x| x * v.len() as f32).collect::<Vec<f32>>();
    super::assert_close("HITS authority", &scaled(&got.0), &scaled(&want.0), 1e-5);
    super::assert_close("HITS hub", &scaled(&got.1), &scaled(&want.1), 1e-5);
}
