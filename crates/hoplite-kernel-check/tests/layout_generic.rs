//! A `#[kernel]` generic over its handles' layouts (`<L: ArrayLayout>`): one function launched
//! on row-major and column-major views, on a host backend and on `Cuda` under the emulated CUDA
//! driver, whose CUDA C indexes with the views' strides whatever the layout.

use hoplite::Serial;
use hoplite_core::{
    ArrayLayout, BoundReader, BoundWriter, LayoutLeft, LayoutRight, MDRangePolicy, MdIdx, Sum, View,
    parallel_for, parallel_reduce,
};
use hoplite_cuda::{Cuda, CudaSpace};
use hoplite_kernel_check::host_compiler;
use hoplite_macros::kernel;

/// `out = 2 * x + i - j` over a 2-D box, for views of any one layout.
#[kernel(crate = hoplite_core)]
pub fn twice_plus_diagonal<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f64, 2, L>,
    x: BoundReader<'_, f64, 2, L>,
) {
    out.set(ij, 2.0 * x.get(ij) + ij[0] as f64 - ij[1] as f64);
}

/// The sum of a view of any layout.
#[kernel(crate = hoplite_core)]
pub fn total<L: ArrayLayout>(ij: MdIdx<'_, 2>, x: BoundReader<'_, f64, 2, L>, acc: &mut f64) {
    *acc += x.get(ij);
}

const N: [usize; 2] = [5, 7];

fn expected() -> Vec<f64> {
    (0..N[0])
        .flat_map(|i| (0..N[1]).map(move |j| 2.0 * (i * 10 + j) as f64 + i as f64 - j as f64))
        .collect()
}

/// Runs both kernels on views of layout `L` in memory `M` on `space`, and returns `out` in
/// row-major order and the total.
fn run<S, L, M>(space: S) -> hoplite_core::Result<(Vec<f64>, f64)>
where
    S: hoplite_core::LaunchSpace + hoplite_core::SpaceAccessibility<M>,
    L: ArrayLayout,
    M: hoplite_core::MemorySpace,
{
    let host: View<f64, 2> = View::from_slice(
        "x",
        N,
        &(0..N[0])
            .flat_map(|i| (0..N[1]).map(move |j| (i * 10 + j) as f64))
            .collect::<Vec<_>>(),
    )?;
    let x = View::<f64, 2, L, M>::new("x", N)?;
    hoplite_core::deep_copy(&x, &host)?;
    let out = View::<f64, 2, L, M>::new("out", N)?;
    let all = || MDRangePolicy::new(space.clone(), [0, 0], N);
    parallel_for(
        "twice",
        (all(), (out.write(), x.read())),
        twice_plus_diagonal::with(),
    )?;
    let sum = parallel_reduce("total", (all(), (out.read(),)), total::with(), Sum::new())?;
    let back: View<f64, 2> = View::new("back", N)?;
    hoplite_core::deep_copy(&back, &out)?;
    Ok((back.to_vec()?, sum))
}

#[test]
fn one_layout_generic_kernel_runs_on_both_layouts_on_host_and_device_paths() {
    let want = expected();
    let sum: f64 = want.iter().sum();
    let serial = Serial::default();
    assert_eq!(
        run::<_, LayoutRight, hoplite_core::HostSpace>(serial.clone()).expect("right"),
        (want.clone(), sum)
    );
    assert_eq!(
        run::<_, LayoutLeft, hoplite_core::HostSpace>(serial).expect("left"),
        (want.clone(), sum)
    );
    if host_compiler().is_none() {
        println!("skipped the device path: no host C++ compiler (set CXX, or install g++)");
        return;
    }
    // The emulated driver, unless this process already runs on another one (a GPU's, when
    // HOPLITE_CUDA_DRIVER asks for it).
    if let Err(e) = hoplite_cuda::use_emulated_driver() {
        println!("the device path runs on the driver in use ({e})");
    }
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => {
            println!("skipped the device path: {e}");
            return;
        }
    };
    assert_eq!(
        run::<_, LayoutRight, CudaSpace>(cuda.clone()).expect("device, right"),
        (want.clone(), sum)
    );
    assert_eq!(
        run::<_, LayoutLeft, CudaSpace>(cuda).expect("device, left"),
        (want, sum)
    );
}
