//! One axpy and dot, written once, on the CPU and on a GPU: the same `parallel_for` /
//! `parallel_reduce` with a `#[kernel]` on any `LaunchSpace`, over views of memory the space
//! reaches. Without a CUDA driver or device the GPU half prints the typed error and the
//! example still succeeds.
//!
//! `cargo run --release --example cuda_axpy --features cuda`

use hoplite::prelude::*;
use hoplite::{
    BoundReader, BoundWriter, Cuda, CudaSpace, LaunchSpace, LayoutRight, MemorySpace, SpaceAccessibility,
    kernel,
};

#[kernel]
fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

/// `y = a x + y`, then `x . y`, on `space`.
fn axpy_dot<S, M>(
    space: &S,
    y: &View<f64, 1, LayoutRight, M>,
    x: &View<f64, 1, LayoutRight, M>,
) -> hoplite::Result<f64>
where
    S: LaunchSpace + SpaceAccessibility<M>,
    M: MemorySpace,
{
    let all = RangePolicy::new(space.clone(), 0..y.extent(0));
    parallel_for("axpy", (all.clone(), (y.write(), x.read())), axpy::with(0.5))?;
    parallel_reduce("dot", (all, (x.read(), y.read())), dot::with(), Sum::new())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let n = 1 << 20;
    let xs: Vec<f64> = (0..n).map(|k| (k % 17) as f64).collect();
    let ys: Vec<f64> = (0..n).map(|k| (k % 5) as f64).collect();

    // On the host: views in host memory.
    let (x, y) = (
        View::<f64, 1>::from_slice("x", [n], &xs)?,
        View::<f64, 1>::from_slice("y", [n], &ys)?,
    );
    let on_host = axpy_dot(&DefaultExecutionSpace::default(), &y, &x)?;
    println!("on the host: x . (0.5 x + y) = {on_host}");

    // On a GPU: the same function, views in device memory.
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => {
            println!("on a GPU: not here ({e})");
            return Ok(());
        }
    };
    let device =
        |label: &str,
         values: &[f64]|
         -> std::result::Result<View<f64, 1, LayoutRight, CudaSpace>, Box<dyn std::error::Error>> {
            let view = View::without_initializing(label, [values.len()])?;
            hoplite::cuda::copy_to_device(&view, values)?;
            Ok(view)
        };
    let (dx, dy) = (device("x", &xs)?, device("y", &ys)?);
    let on_gpu = axpy_dot(&cuda, &dy, &dx)?;
    println!("on {}: x . (0.5 x + y) = {on_gpu}", cuda.name());
    // Small integers and halves: every order of the sum gives the same value.
    assert_eq!(on_gpu, on_host);
    // A closure cannot run on a GPU: refused with an error that names the fix.
    if let Err(e) = parallel_for("closure", RangePolicy::new(cuda.clone(), 0..4), |_i| {}) {
        println!("{e}");
    }
    Ok(())
}
