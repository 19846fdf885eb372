//! A GrCUDA-style image pipeline (its benchmark 8): three blurs of one image feed a sobel
//! branch, a saturating contrast stretch and an unsharp mask, which two combines join, then a
//! sum. Written once against [`Launcher`], it runs eagerly or as vertices of an implicit DAG,
//! so the tour and the `image-pipeline` benchmark compare the same launches.

use hoplite::AccessibleArgs;
use hoplite::dag::Context;
use hoplite::dag::device::HostDevice;
use hoplite::held::RecordedArgs;
use hoplite::prelude::*;

/// The pipeline's error: a launch's or the DAG's.
pub type PipelineError = Box<dyn std::error::Error + Send + Sync>;

/// Where the pipeline's launches go: straight to the space ([`Eager`]) or into a DAG context.
pub trait Launcher<S: FullSpace> {
    /// A `parallel_for` over a 2-D box.
    fn run<A, F>(
        &self,
        label: &str,
        launch: (MDRangePolicy<S, 2>, A),
        kernel: F,
    ) -> Result<(), PipelineError>
    where
        A: RecordedArgs + AccessibleArgs<S>,
        F: for<'it> Fn((MdIdx<'it, 2>, A::Bound<'it>)) + Send + Sync + 'static;

    /// The sum of `plane` over `interior`, waited for.
    fn sum(&self, interior: &MDRangePolicy<S, 2>, plane: &View<f32, 2>) -> Result<f64, PipelineError>;
}

/// Eager launches: each returns when its kernel has run.
pub struct Eager;

impl<S: FullSpace> Launcher<S> for Eager {
    fn run<A, F>(&self, label: &str, launch: (MDRangePolicy<S, 2>, A), kernel: F) -> Result<(), PipelineError>
    where
        A: RecordedArgs + AccessibleArgs<S>,
        F: for<'it> Fn((MdIdx<'it, 2>, A::Bound<'it>)) + Send + Sync + 'static,
    {
        Ok(parallel_for(label, launch, kernel)?)
    }

    fn sum(&self, interior: &MDRangePolicy<S, 2>, plane: &View<f32, 2>) -> Result<f64, PipelineError> {
        Ok(parallel_reduce(
            "sum",
            (interior.clone(), (plane.read(),)),
            |(ij, (o,)), acc: &mut f64| *acc += o.get(ij) as f64,
            Sum::new(),
        )?)
    }
}

impl<S: FullSpace> Launcher<S> for Context<HostDevice<S>> {
    fn run<A, F>(&self, label: &str, launch: (MDRangePolicy<S, 2>, A), kernel: F) -> Result<(), PipelineError>
    where
        A: RecordedArgs + AccessibleArgs<S>,
        F: for<'it> Fn((MdIdx<'it, 2>, A::Bound<'it>)) + Send + Sync + 'static,
    {
        self.launch(label, launch, kernel)?;
        Ok(())
    }

    fn sum(&self, interior: &MDRangePolicy<S, 2>, plane: &View<f32, 2>) -> Result<f64, PipelineError> {
        let total = self.reduce(
            "sum",
            (interior.clone(), (plane.read(),)),
            |(ij, (o,)), acc: &mut f64| *acc += o.get(ij) as f64,
            Sum::new(),
        )?;
        Ok(total.get()?)
    }
}

/// The image and the planes of one pipeline.
pub struct Images {
    /// The input image.
    pub image: View<f32, 2>,
    blur_small: View<f32, 2>,
    blur_large: View<f32, 2>,
    blur_unsharp: View<f32, 2>,
    sobel_small: View<f32, 2>,
    sobel_large: View<f32, 2>,
    mask: View<f32, 2>,
    unsharp: View<f32, 2>,
    combined: View<f32, 2>,
    /// The result.
    pub out: View<f32, 2>,
}

impl Images {
    /// An `n x n` test image and its planes.
    pub fn new(n: usize) -> Result<Self, PipelineError> {
        let pixel = |k: usize| (((k * 7919) % 255) as f32) / 255.0;
        let image = View::<f32, 2>::from_slice("image", [n, n], &(0..n * n).map(pixel).collect::<Vec<_>>())?;
        let plane = |label: &str| View::<f32, 2>::new(label, [n, n]);
        Ok(Images {
            image,
            blur_small: plane("blur small")?,
            blur_large: plane("blur large")?,
            blur_unsharp: plane("blur unsharp")?,
            sobel_small: plane("sobel small")?,
            sobel_large: plane("sobel large")?,
            mask: plane("mask")?,
            unsharp: plane("unsharp")?,
            combined: plane("combined")?,
            out: plane("out")?,
        })
    }
}

/// Runs the pipeline's 11 launches through `to` over the interior `interior` of the planes
/// (3 pixels from every edge) and returns the sum of the result.
pub fn pipeline<S: FullSpace, L: Launcher<S>>(
    to: &L,
    interior: &MDRangePolicy<S, 2>,
    im: &Images,
) -> Result<f64, PipelineError> {
    let blur = |label: &str, out: &View<f32, 2>, radius: isize| {
        to.run(
            label,
            (interior.clone(), (out.write(), im.image.read())),
            move |(ij, (o, img))| {
                let mut sum = 0.0;
                for dy in -radius..=radius {
                    for dx in -radius..=radius {
                        sum += img.neighbor(ij, [dy, dx]);
                    }
                }
                o.set(ij, sum / ((2 * radius + 1) * (2 * radius + 1)) as f32);
            },
        )
    };
    let sobel = |label: &str, out: &View<f32, 2>, input: &View<f32, 2>| {
        to.run(
            label,
            (interior.clone(), (out.write(), input.read())),
            |(ij, (o, b))| {
                let at = |dy: isize, dx: isize| b.neighbor(ij, [dy, dx]);
                let gx = at(-1, 1) + 2.0 * at(0, 1) + at(1, 1) - at(-1, -1) - 2.0 * at(0, -1) - at(1, -1);
                let gy = at(1, -1) + 2.0 * at(1, 0) + at(1, 1) - at(-1, -1) - 2.0 * at(-1, 0) - at(-1, 1);
                o.set(ij, (gx * gx + gy * gy).sqrt());
            },
        )
    };
    blur("blur small", &im.blur_small, 1)?;
    blur("blur large", &im.blur_large, 3)?;
    blur("blur unsharp", &im.blur_unsharp, 2)?;
    sobel("sobel small", &im.sobel_small, &im.blur_small)?;
    sobel("sobel large", &im.sobel_large, &im.blur_large)?;
    to.run(
        "extend",
        (interior.clone(), (im.mask.write(), im.sobel_large.read())),
        |(ij, (m, s))| {
            let v = s.get(ij);
            m.set(ij, v / (v + 0.25));
        },
    )?;
    to.run(
        "unsharpen",
        (
            interior.clone(),
            (im.unsharp.write(), im.image.read(), im.blur_unsharp.read()),
        ),
        |(ij, (u, img, b))| u.set(ij, img.get(ij) + 0.5 * (img.get(ij) - b.get(ij))),
    )?;
    to.run(
        "combine",
        (
            interior.clone(),
            (
                im.combined.write(),
                im.unsharp.read(),
                im.blur_large.read(),
                im.mask.read(),
            ),
        ),
        |(ij, (c, u, b, m))| c.set(ij, u.get(ij) * m.get(ij) + b.get(ij) * (1.0 - m.get(ij))),
    )?;
    to.run(
        "combine small",
        (
            interior.clone(),
            (
                im.out.write(),
                im.combined.read(),
                im.blur_small.read(),
                im.sobel_small.read(),
            ),
        ),
        |(ij, (o, c, b, s))| {
            let edge = (s.get(ij) * 4.0).min(1.0);
            o.set(ij, c.get(ij) * edge + b.get(ij) * (1.0 - edge));
        },
    )?;
    to.sum(interior, &im.out)
}
