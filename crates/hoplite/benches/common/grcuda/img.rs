//! IMG (GrCUDA b8): three box blurs of one image feed a sobel branch, a contrast stretch and an
//! unsharp mask, which two combines join; then the sum of the result. The kernels of
//! `common/image.rs` (the `image-pipeline` benchmark's closures) as `#[kernel]`s, over the
//! interior 3 pixels from every edge.

use super::streams::Schedule;
use super::{BenchError, Deferred, DeviceView, Launcher, md_policy, upload, zeros};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, LaunchSpace, MdIdx, kernel};

/// The mean of the `(2 radius + 1)²` box around each pixel.
#[kernel]
pub fn blur(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f32, 2>, img: BoundReader<'_, f32, 2>, radius: isize) {
    let mut sum = 0.0;
    for dy in -radius..=radius {
        for dx in -radius..=radius {
            sum += img.neighbor(ij, [dy, dx]);
        }
    }
    let side = (2 * radius + 1) as f32;
    out.set(ij, sum / (side * side));
}

/// The gradient magnitude.
#[kernel]
pub fn sobel(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f32, 2>, b: BoundReader<'_, f32, 2>) {
    let gx = b.neighbor(ij, [-1, 1]) + 2.0 * b.neighbor(ij, [0, 1]) + b.neighbor(ij, [1, 1])
        - b.neighbor(ij, [-1, -1])
        - 2.0 * b.neighbor(ij, [0, -1])
        - b.neighbor(ij, [1, -1]);
    let gy = b.neighbor(ij, [1, -1]) + 2.0 * b.neighbor(ij, [1, 0]) + b.neighbor(ij, [1, 1])
        - b.neighbor(ij, [-1, -1])
        - 2.0 * b.neighbor(ij, [-1, 0])
        - b.neighbor(ij, [-1, 1]);
    out.set(ij, (gx * gx + gy * gy).sqrt());
}

/// A saturating contrast stretch of the edges.
#[kernel]
pub fn extend(ij: MdIdx<'_, 2>, mask: BoundWriter<'_, f32, 2>, s: BoundReader<'_, f32, 2>) {
    let v = s.get(ij);
    mask.set(ij, v / (v + 0.25));
}

/// The unsharp mask.
#[kernel]
pub fn unsharpen(
    ij: MdIdx<'_, 2>,
    u: BoundWriter<'_, f32, 2>,
    img: BoundReader<'_, f32, 2>,
    b: BoundReader<'_, f32, 2>,
) {
    u.set(ij, img.get(ij) + 0.5 * (img.get(ij) - b.get(ij)));
}

/// `u m + b (1 - m)`.
#[kernel]
pub fn combine(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2>,
    u: BoundReader<'_, f32, 2>,
    b: BoundReader<'_, f32, 2>,
    m: BoundReader<'_, f32, 2>,
) {
    out.set(ij, u.get(ij) * m.get(ij) + b.get(ij) * (1.0 - m.get(ij)));
}

/// The final combine, with the small edges as the mask.
#[kernel]
pub fn combine_edges(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2>,
    c: BoundReader<'_, f32, 2>,
    b: BoundReader<'_, f32, 2>,
    s: BoundReader<'_, f32, 2>,
) {
    let edge = (s.get(ij) * 4.0).min(1.0);
    out.set(ij, c.get(ij) * edge + b.get(ij) * (1.0 - edge));
}

/// `Σ out`, accumulated in `f64`.
#[kernel]
pub fn plane_sum(ij: MdIdx<'_, 2>, out: BoundReader<'_, f32, 2>, acc: &mut f64) {
    *acc += out.get(ij) as f64;
}

/// The test image (as `common/image.rs`'s).
pub fn input(n: usize) -> Vec<f32> {
    (0..n * n).map(|k| (((k * 7919) % 255) as f32) / 255.0).collect()
}

/// The views of one run.
pub struct Buffers<S: LaunchSpace> {
    n: usize,
    image: DeviceView<f32, 2, S>,
    planes: Vec<DeviceView<f32, 2, S>>,
}

const PLANES: [&str; 9] = [
    "blur small",
    "blur large",
    "blur unsharp",
    "sobel small",
    "sobel large",
    "mask",
    "unsharp",
    "combined",
    "out",
];

impl<S: LaunchSpace> Buffers<S> {
    /// An `n x n` image and its planes.
    pub fn new(n: usize) -> Result<Self, BenchError> {
        Ok(Buffers {
            n,
            image: upload::<_, 2, S>("image", [n, n], &input(n))?,
            planes: PLANES
                .iter()
                .map(|l| zeros::<_, 2, S>(l, [n, n]))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The result plane, after [`Launcher::finish`].
    pub fn result(&self) -> Result<Vec<f32>, BenchError> {
        Ok(self.planes[8].to_vec()?)
    }
}

/// The hand-written placement of [`run`]'s launches on two streams: the small blur, its sobel
/// and the unsharp mask on one; the large blur, its sobel and the mask on the other, where the
/// combines and the sum follow.
pub fn schedule() -> Schedule {
    Schedule::new(&[
        (0, &[]),  // blur small
        (1, &[]),  // blur large
        (0, &[]),  // blur unsharp
        (0, &[]),  // sobel small
        (1, &[]),  // sobel large
        (1, &[]),  // extend
        (0, &[]),  // unsharpen
        (1, &[6]), // combine
        (1, &[3]), // combine small
        (1, &[]),  // sum
    ])
}

/// The eleven launches; returns the sum of the result (read it with `Deferred::get`).
pub fn run<S: LaunchSpace, L: Launcher<S>>(to: &L, b: &Buffers<S>) -> Result<Deferred<f64>, BenchError> {
    let n = b.n;
    let inner = md_policy(to.space(), [3, 3], [n - 3, n - 3]);
    let [bs, bl, bu, ss, sl, mask, unsharp, combined, out] = &b.planes[..] else {
        unreachable!("nine planes")
    };
    let img = &b.image;
    to.launch(
        "blur small",
        (inner.clone(), (bs.write(), img.read())),
        blur::with(1),
    )?;
    to.launch(
        "blur large",
        (inner.clone(), (bl.write(), img.read())),
        blur::with(3),
    )?;
    to.launch(
        "blur unsharp",
        (inner.clone(), (bu.write(), img.read())),
        blur::with(2),
    )?;
    to.launch(
        "sobel small",
        (inner.clone(), (ss.write(), bs.read())),
        sobel::with(),
    )?;
    to.launch(
        "sobel large",
        (inner.clone(), (sl.write(), bl.read())),
        sobel::with(),
    )?;
    to.launch(
        "extend",
        (inner.clone(), (mask.write(), sl.read())),
        extend::with(),
    )?;
    to.launch(
        "unsharpen",
        (inner.clone(), (unsharp.write(), img.read(), bu.read())),
        unsharpen::with(),
    )?;
    to.launch(
        "combine",
        (
            inner.clone(),
            (combined.write(), unsharp.read(), bl.read(), mask.read()),
        ),
        combine::with(),
    )?;
    to.launch(
        "combine small",
        (
            inner.clone(),
            (out.write(), combined.read(), bs.read(), ss.read()),
        ),
        combine_edges::with(),
    )?;
    to.reduce("sum", (inner, (out.read(),)), plane_sum::with(), Sum::new())
}

/// The serial reference: the result plane (zero outside the interior) and its sum.
pub fn reference(n: usize) -> (Vec<f32>, f64) {
    let image = input(n);
    let inside = |i: usize, j: usize| (3..n - 3).contains(&i) && (3..n - 3).contains(&j);
    let map = |f: &dyn Fn(usize, usize) -> f32| -> Vec<f32> {
        (0..n * n)
            .map(|k| {
                if inside(k / n, k % n) {
                    f(k / n, k % n)
                } else {
                    0.0
                }
            })
            .collect()
    };
    let at = |p: &[f32], i: usize, j: usize, di: isize, dj: isize| {
        p[(i as isize + di) as usize * n + (j as isize + dj) as usize]
    };
    let blur = |r: isize| {
        map(&|i, j| {
            let mut sum = 0f32;
            for dy in -r..=r {
                for dx in -r..=r {
                    sum += at(&image, i, j, dy, dx);
                }
            }
            let side = (2 * r + 1) as f32;
            sum / (side * side)
        })
    };
    let sobel = |b: &[f32]| {
        map(&|i, j| {
            let a = |di, dj| at(b, i, j, di, dj);
            let gx = a(-1, 1) + 2.0 * a(0, 1) + a(1, 1) - a(-1, -1) - 2.0 * a(0, -1) - a(1, -1);
            let gy = a(1, -1) + 2.0 * a(1, 0) + a(1, 1) - a(-1, -1) - 2.0 * a(-1, 0) - a(-1, 1);
            (gx * gx + gy * gy).sqrt()
        })
    };
    let (bs, bl, bu) = (blur(1), blur(3), blur(2));
    let (ss, sl) = (sobel(&bs), sobel(&bl));
    let mask = map(&|i, j| sl[i * n + j] / (sl[i * n + j] + 0.25));
    let unsharp = map(&|i, j| image[i * n + j] + 0.5 * (image[i * n + j] - bu[i * n + j]));
    let k = |i: usize, j: usize| i * n + j;
    let combined = map(&|i, j| unsharp[k(i, j)] * mask[k(i, j)] + bl[k(i, j)] * (1.0 - mask[k(i, j)]));
    let out = map(&|i, j| {
        let edge = (ss[k(i, j)] * 4.0).min(1.0);
        combined[k(i, j)] * edge + bs[k(i, j)] * (1.0 - edge)
    });
    let sum = out.iter().map(|&v| v as f64).sum();
    (out, sum)
}

/// The plane within `1e-5` relative (exact on the host: the same `f32` operations in the same
/// order; a GPU may contract a multiply-add), the sum within `1e-9` relative (the order of
/// the `f64` sum differs between backends).
pub fn check(plane: &[f32], sum: f64, want: &(Vec<f32>, f64)) {
    super::assert_close("IMG plane", plane, &want.0, 1e-5);
    super::assert_close("IMG sum", &[sum], &[want.1], 1e-9);
}
