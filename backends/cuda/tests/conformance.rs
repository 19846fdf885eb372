//! The conformance suite on `Cuda`. A GPU runs `#[kernel]` kernels, never host closures, so
//! of the suite's checks `Cuda` runs those whose launches are `#[kernel]` kernels (the
//! `kernels` module: the same kernels through the same `parallel_for` / `parallel_reduce`,
//! the same data, compared with the serial backend's results); every other check launches
//! closures and is reported skipped. Without a device
//! every check is reported skipped, with the reason and the count.

use hoplite_conformance::kernels::{axpy, five_point, team_row_norms, weighted_count};
use hoplite_core::{
    LayoutRight, MDRangePolicy, ParallelFor, RangePolicy, Sum, TeamPolicy, TeamSize, View, parallel_for,
    parallel_reduce,
};
use hoplite_cuda::{Cuda, CudaError, CudaSpace, copy_to_device, copy_to_host};
use hoplite_serial::Serial;

type Check = fn(&Cuda) -> Result<(), String>;

/// The suite's `#[kernel]` checks, by the suite's names, with what runs them on `Cuda`.
const KERNEL_CHECKS: [(&str, Check); 4] = [
    ("kernels::kernel_range_for_matches_closure", range_for),
    ("kernels::kernel_mdrange_for_matches_closure", mdrange_for),
    ("kernels::kernel_reduce_matches_closure", reduce),
    ("kernels::kernel_team_reduce_matches_closure", team_reduce),
];

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A device view holding `data`.
fn device<T: hoplite_cuda::DeviceScalar, const R: usize>(
    label: &str,
    extents: [usize; R],
    data: &[T],
) -> Result<View<T, R, LayoutRight, CudaSpace>, String> {
    let v = View::without_initializing(label, extents).map_err(err)?;
    copy_to_device(&v, data).map_err(err)?;
    Ok(v)
}

fn to_host<T: hoplite_cuda::DeviceScalar + Default, const R: usize>(
    v: &View<T, R, LayoutRight, CudaSpace>,
) -> Result<Vec<T>, String> {
    let mut out = vec![T::default(); v.extents().iter().product()];
    copy_to_host(&mut out, v).map_err(err)?;
    Ok(out)
}

fn range_for(cuda: &Cuda) -> Result<(), String> {
    for n in [0, 1, 1000, 10_007] {
        let xs: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
        let want: View<f64, 1> = View::from_slice("want", [n], &vec![1.0; n]).map_err(err)?;
        let x_host: View<f64, 1> = View::from_slice("x", [n], &xs).map_err(err)?;
        parallel_for(
            "axpy on serial",
            (
                RangePolicy::new(Serial::default(), 0..n),
                (want.write(), x_host.read()),
            ),
            axpy::with(3.0),
        )
        .map_err(err)?;
        let (x, y) = (device("x", [n], &xs)?, device("y", [n], &vec![1.0; n])?);
        parallel_for(
            "axpy on Cuda",
            (RangePolicy::new(cuda.clone(), 0..n), (y.write(), x.read())),
            axpy::with(3.0),
        )
        .map_err(err)?;
        if to_host(&y)? != want.to_vec().map_err(err)? {
            return Err(format!(
                "axpy over {n} elements differs from the serial backend's"
            ));
        }
    }
    Ok(())
}

fn mdrange_for(cuda: &Cuda) -> Result<(), String> {
    let (rows, cols) = (37, 29);
    let data: Vec<f64> = (0..rows * cols).map(|k| ((k * 7) % 23) as f64).collect();
    let u_host: View<f64, 2> = View::from_slice("u", [rows, cols], &data).map_err(err)?;
    let want: View<f64, 2> = View::new("want", [rows, cols]).map_err(err)?;
    let interior = MDRangePolicy::new(Serial::default(), [1, 1], [rows - 1, cols - 1]);
    parallel_for(
        "stencil on serial",
        (interior, (want.write(), u_host.read())),
        five_point::with(),
    )
    .map_err(err)?;
    let u = device("u", [rows, cols], &data)?;
    let out = device("out", [rows, cols], &vec![0.0; rows * cols])?;
    parallel_for(
        "stencil on Cuda",
        (
            MDRangePolicy::new(cuda.clone(), [1, 1], [rows - 1, cols - 1]),
            (out.write(), u.read()),
        ),
        five_point::with(),
    )
    .map_err(err)?;
    if to_host(&out)? != want.to_vec().map_err(err)? {
        return Err(format!(
            "a {rows}x{cols} stencil differs from the serial backend's"
        ));
    }
    Ok(())
}

fn reduce(cuda: &Cuda) -> Result<(), String> {
    for n in [0, 1, 999, 10_007] {
        let xs: Vec<i64> = (0..n as i64).map(|k| (k * 37) % 101).collect();
        let x_host: View<i64, 1> = View::from_slice("x", [n], &xs).map_err(err)?;
        let want = parallel_reduce(
            "count on serial",
            (RangePolicy::new(Serial::default(), 0..n), (x_host.read(),)),
            weighted_count::with(50),
            Sum::<i64>::new(),
        )
        .map_err(err)?;
        let x = device("x", [n], &xs)?;
        let got = parallel_reduce(
            "count on Cuda",
            (RangePolicy::new(cuda.clone(), 0..n), (x.read(),)),
            weighted_count::with(50),
            Sum::<i64>::new(),
        )
        .map_err(err)?;
        if got != want {
            return Err(format!(
                "the weighted count over {n} elements: {got}, serial {want}"
            ));
        }
    }
    Ok(())
}

fn team_reduce(cuda: &Cuda) -> Result<(), String> {
    let (rows, cols) = (13, 37);
    let data: Vec<i64> = (0..(rows * cols) as i64).map(|k| (k * 7) % 19 - 9).collect();
    let a_host: View<i64, 2> = View::from_slice("a", [rows, cols], &data).map_err(err)?;
    let a = device("a", [rows, cols], &data)?;
    // Serial teams have one member; the total does not depend on the team size.
    let want = parallel_reduce(
        "team on serial",
        (
            TeamPolicy::new(Serial::default(), rows, TeamSize::Fixed(1)),
            (a_host.read(),),
        ),
        team_row_norms::with::<Serial>(cols),
        Sum::<i64>::new(),
    )
    .map_err(err)?;
    for team in [1, 2, 3, 4, 32, 128] {
        let got = parallel_reduce(
            "team on Cuda",
            (
                TeamPolicy::new(cuda.clone(), rows, TeamSize::Fixed(team)),
                (a.read(),),
            ),
            team_row_norms::with::<Cuda>(cols),
            Sum::<i64>::new(),
        )
        .map_err(err)?;
        if got != want {
            return Err(format!("row norms by teams of {team}: {got}, serial {want}"));
        }
    }
    Ok(())
}

#[test]
fn the_conformance_suite_on_cuda() {
    let suite: Vec<&str> = hoplite_conformance::checks::<Serial>()
        .iter()
        .map(|c| c.axiom)
        .collect();
    for (name, _) in KERNEL_CHECKS {
        assert!(suite.contains(&name), "the suite has no check `{name}`");
    }
    let closures_only = suite.len() - KERNEL_CHECKS.len();
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => {
            assert!(
                matches!(
                    e,
                    CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
                ),
                "{e}"
            );
            println!("skipped all {} conformance checks on Cuda: {e}", suite.len());
            return;
        }
    };
    if let Err(e) = hoplite_cuda::nvrtc::Nvrtc::get() {
        println!("skipped all {} conformance checks on Cuda: {e}", suite.len());
        return;
    }
    println!(
        "skipped {closures_only} conformance checks on Cuda: they launch host closures, which cannot run on a GPU"
    );
    let failures: Vec<String> = KERNEL_CHECKS
        .iter()
        .filter_map(|(name, run)| run(&cuda).err().map(|e| format!("{name}: {e}")))
        .collect();
    println!("ran {} #[kernel] checks on Cuda", KERNEL_CHECKS.len());
    assert_eq!(failures, Vec::<String>::new());
}

// `Cuda` takes the core's launches (for `#[kernel]` kernels; a closure is refused when it
// launches, see tests/one_launch.rs).
static_assertions::assert_impl_all!(
    Cuda: ParallelFor<RangePolicy<Cuda>>,
    ParallelFor<MDRangePolicy<Cuda, 3>>,
    ParallelFor<TeamPolicy<Cuda>>,
    hoplite_core::ParallelReduce<RangePolicy<Cuda>>,
    hoplite_core::ParallelReduce<TeamPolicy<Cuda>>,
    hoplite_core::ParallelScan<RangePolicy<Cuda>>
);
