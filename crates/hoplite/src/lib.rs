//! # hoplite
//!
//! Write a parallel algorithm once against a small set of concept traits, then run it on any
//! enabled backend. This facade re-exports [`hoplite_core`], enables backends through cargo
//! features (`serial` and `rayon` are on by default; `numa`, `cuda` and `mpi` are off) and
//! picks the [`DefaultExecutionSpace`] (rayon when it is on, else serial).
//!
//! The launch functions here accept, besides any policy, a plain `usize` (`0..n`) or a
//! `Range<usize>`, which run on the default execution space — the Kokkos
//! `parallel_for("label", n, functor)` shorthand:
//!
//! ```
//! use hoplite::prelude::*;
//! let x: Vec<f64> = (0..1000).map(|i| i as f64).collect();
//! let dot = parallel_reduce("dot", x.len(), |i, acc| *acc += x[*i] * x[*i], Sum::<f64>::new())?;
//! assert_eq!(dot, 332_833_500.0);
//! # Ok::<(), hoplite::Error>(())
//! ```
// On docs.rs (`--cfg docsrs`, nightly): each feature-gated item says which feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's example, compiled and run as a doctest so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctest;

/// The graphs guide's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/graphs.md")]
pub struct GraphsGuideDoctest;

/// The kernels guide's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/kernels.md")]
pub struct KernelsGuideDoctest;

/// The implicit DAG guide's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/dag.md")]
pub struct DagGuideDoctest;

/// The dynamic selection guide's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/select.md")]
pub struct SelectGuideDoctest;

/// The profiling guide's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/profiling.md")]
pub struct ProfilingGuideDoctest;

/// The CUDA guide's examples, run as doctests (with the `cuda` feature; without a GPU they
/// take the paths that report its absence).
#[cfg(all(doctest, feature = "cuda"))]
#[doc = include_str!("../../../docs/cuda.md")]
pub struct CudaGuideDoctest;

/// The NUMA guide's examples, run as doctests (with the `numa` feature).
#[cfg(all(doctest, feature = "numa"))]
#[doc = include_str!("../../../docs/numa.md")]
pub struct NumaGuideDoctest;

#[cfg(not(any(feature = "serial", feature = "rayon")))]
compile_error!("hoplite needs at least one backend feature: enable `rayon` or `serial` (both are default)");

pub use hoplite_core::*;

/// The core's launch functions, generic over the execution space: for code written for any
/// backend (`fn run<S: LaunchSpace>(..)`), where the root's [`parallel_for`](crate::parallel_for())
/// and its siblings take the default space and plain `usize` ranges.
///
/// ```
/// use hoplite::{LaunchSpace, RangePolicy, Serial, Sum};
/// fn total<S: LaunchSpace>(space: S, n: usize) -> hoplite::Result<usize> {
///     hoplite::dispatch::parallel_reduce("total", RangePolicy::new(space, 0..n), |i, acc| *acc += *i, Sum::new())
/// }
/// assert_eq!(total(Serial::default(), 10)?, 45);
/// # Ok::<(), hoplite::Error>(())
/// ```
pub mod dispatch {
    pub use hoplite_core::{parallel_for, parallel_reduce, parallel_reduce_into, parallel_scan};
}

/// Single-source kernels: `#[kernel]` keeps a function as a native kernel and translates it to
/// CUDA C (see `docs/kernels.md` and [`DeviceKernel`](device_kernel::DeviceKernel)).
///
/// ```
/// use hoplite::prelude::*;
/// use hoplite::{BoundReader, BoundWriter, kernel};
///
/// #[kernel]
/// fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
///     y.set(i, a * x.get(i) + y.get(i));
/// }
///
/// let x = View::<f64, 1>::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0])?;
/// let y = View::<f64, 1>::new("y", [4])?;
/// parallel_for("axpy", (4, (y.write(), x.read())), axpy::with(2.0))?;
/// assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0, 8.0]);
/// assert!(axpy::cuda_source().contains("extern \"C\" __global__ void axpy_for_range"));
/// # Ok::<(), hoplite::Error>(())
/// ```
pub use hoplite_macros::kernel;

/// Explicit graphs (Kokkos Graphs): build a DAG of kernels once, submit it many times. See
/// [`hoplite_graph`].
pub use hoplite_graph as graph;

/// The implicit DAG runtime (GrCUDA): launch as if eagerly; dependencies are inferred from the
/// view handles, independent launches overlap on streams. See [`hoplite_dag`].
pub use hoplite_dag as dag;

/// Dynamic selection (oneDPL style): policies that pick a resource — a pool instance, a
/// partition of one, any execution space — for each submission. See [`hoplite_select`].
pub use hoplite_select as select;

/// Multi-node hoplite on MPI (feature `mpi`, off by default; needs an MPI library such as
/// Debian's `libopenmpi-dev`): views sent, received and reduced across ranks, halo exchange,
/// communication as DAG vertices. See [`hoplite_mpi`].
#[cfg(feature = "mpi")]
pub use hoplite_mpi as mpi;

#[cfg(feature = "serial")]
pub use hoplite_serial::{self as serial, Serial};

// Named `rayon_backend`, not `rayon`: a glob import of the facade next to
// `use rayon::prelude::*` would make `rayon` ambiguous (E0659).
#[cfg(feature = "rayon")]
pub use hoplite_rayon::{self as rayon_backend, RayonSpace};

/// The NUMA backend (feature `numa`, off by default: it links the system's hwloc): a pool per
/// NUMA node and memory bound to nodes. See [`hoplite_numa`].
#[cfg(feature = "numa")]
pub use hoplite_numa::{self as numa, NumaSpace};

/// The CUDA backend (feature `cuda`, off by default): streams as instances, device memory,
/// `#[kernel]` kernels compiled with NVRTC and launched, reduced and scanned on the device,
/// device fills and strided copies, CUDA Graphs (`cuda::graph::CudaGraph`), DAG streams
/// (`cuda::dag::CudaDevice`), streams as dynamic-selection resources timed with CUDA events
/// (`CudaBackend`) and GrCUDA-style raw kernels from CUDA C and a signature (`RawKernel`,
/// with its arguments as `RawArg`). Builds without CUDA; without a GPU its calls return typed
/// errors. See [`hoplite_cuda`].
#[cfg(feature = "cuda")]
pub use hoplite_cuda::{
    self as cuda, Cuda, CudaError, CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, device_count,
    raw::{RawArg, RawKernel},
    select::CudaBackend,
};

/// The execution space used when a launch names none: the most parallel enabled backend
/// (rayon, else serial).
#[cfg(feature = "rayon")]
pub type DefaultExecutionSpace = hoplite_rayon::RayonSpace;

/// The execution space used when a launch names none: the most parallel enabled backend
/// (rayon, else serial).
#[cfg(all(feature = "serial", not(feature = "rayon")))]
pub type DefaultExecutionSpace = hoplite_serial::Serial;

/// The default execution space for host memory ([`HostSpace`]): the same as
/// [`DefaultExecutionSpace`], since every enabled backend runs on the host.
pub type DefaultHostExecutionSpace = DefaultExecutionSpace;

/// Starts hoplite's profiling (Kokkos `Kokkos::initialize`, as far as tools go): loads the
/// Kokkos Tools connector that `KOKKOS_TOOLS_LIBS` names and initializes it, and lets the
/// connector fence the default instances of the enabled backends (the fence of the
/// programming interface it is given). A program need not call it: without it the connector
/// is loaded at the first launch, allocation, fence or region, and a connector that fails to
/// load is reported on standard error instead of here. With the variable unset it does
/// nothing. See [`profiling`] and `docs/profiling.md`.
///
/// ```
/// hoplite::initialize()?;
/// hoplite::parallel_for("work", 100, |_i| {})?;
/// hoplite::finalize(); // the connector writes its report
/// # Ok::<(), hoplite::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::ToolLoad`] naming the library and why it did not load; [`Error::ToolsFinalized`]
/// after [`finalize`].
pub fn initialize() -> Result<()> {
    profiling::set_global_fence(fence_default_instances);
    profiling::initialize_tools()
}

/// Ends hoplite's profiling (Kokkos `Kokkos::finalize`, as far as tools go): finalizes the
/// connector, which writes its report, and stops every hook. Without a call it happens at
/// process exit. Runs once; see [`profiling::finalize_tools`].
///
/// ```
/// hoplite::finalize();
/// assert!(!hoplite::profiling::tools_loaded());
/// ```
pub fn finalize() {
    profiling::finalize_tools();
}

/// The fence a connector asks for: the default instance of every enabled backend (a device
/// backend's only when it has a device).
fn fence_default_instances() -> Result<()> {
    #[cfg(feature = "serial")]
    hoplite_serial::Serial::default().fence()?;
    #[cfg(feature = "rayon")]
    hoplite_rayon::RayonSpace::default().fence()?;
    #[cfg(feature = "cuda")]
    {
        let cuda = hoplite_cuda::Cuda::default();
        if cuda.is_available() {
            cuda.fence()?;
        }
    }
    Ok(())
}

/// The launch an argument `L` becomes on the default execution space.
pub type DefaultLaunch<L> = <L as IntoLaunch<DefaultExecutionSpace>>::Launch;

/// The policy of such a launch.
pub type DefaultPolicy<L> = <DefaultLaunch<L> as LaunchSpec>::Policy;

/// What the kernel of such a launch receives per iteration.
pub type DefaultItem<'it, L> = <DefaultLaunch<L> as LaunchSpec>::Item<'it>;

/// Runs `kernel` once for every point of the launch: a policy or a `usize` / `Range<usize>`
/// on the [`DefaultExecutionSpace`], optionally paired with view handles,
/// `(n, (y.write(), x.read()))`. See [`hoplite_core::parallel_for`].
///
/// ```
/// use hoplite::prelude::*;
/// let x: View<f64, 1> = View::from_slice("x", [3], &[1.0, 2.0, 3.0])?;
/// let y: View<f64, 1> = View::new("y", [3])?;
/// parallel_for("axpy", (3, (y.write(), x.read())), |(i, (y, x))| y.set(i, 2.0 * x.get(i) + y.get(i)))?;
/// assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0]);
/// # Ok::<(), hoplite::Error>(())
/// ```
///
/// # Errors
///
/// An invalid policy, a conflicting or too small view handle, a panicking kernel or a backend
/// failure, as a typed [`Error`].
// Inlined like the core's launch functions: the policy is then built in the caller's frame.
#[inline(always)]
pub fn parallel_for<L, F>(label: &str, launch: L, kernel: F) -> Result<()>
where
    L: IntoLaunch<DefaultExecutionSpace>,
    <DefaultPolicy<L> as ExecutionPolicy>::Space: ParallelFor<DefaultPolicy<L>>,
    F: for<'it> Fn(DefaultItem<'it, L>) + Send + Sync,
{
    hoplite_core::parallel_for(label, launch.into_launch(), kernel)
}

/// Folds `kernel`'s contributions with `reducer` and returns the result. See
/// [`hoplite_core::parallel_reduce`].
///
/// ```
/// use hoplite::prelude::*;
/// let x = [4, 1, 3, 1];
/// let min = parallel_reduce("min", x.len(), |i, acc: &mut ValLoc<i32>| acc.update_min(x[*i], *i), MinLoc::<i32>::new())?;
/// assert_eq!((min.val, min.loc), (1, Some(1)));
/// # Ok::<(), hoplite::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
// Inlined like the core's launch functions: the policy is then built in the caller's frame.
#[inline(always)]
pub fn parallel_reduce<L, F, R>(label: &str, launch: L, kernel: F, reducer: R) -> Result<R::Value>
where
    L: IntoLaunch<DefaultExecutionSpace>,
    R: Reducer,
    <DefaultPolicy<L> as ExecutionPolicy>::Space: ParallelReduce<DefaultPolicy<L>>,
    F: for<'it> Fn(DefaultItem<'it, L>, &mut R::Value) + Send + Sync,
{
    hoplite_core::parallel_reduce(label, launch.into_launch(), kernel, reducer)
}

/// As [`parallel_reduce`], storing the result into `target`: a rank-0 view, `&mut value`, or a
/// tuple of them for a tuple of reducers. See [`hoplite_core::parallel_reduce_into`].
///
/// ```
/// use hoplite::prelude::*;
/// let x = [4, 1, 3, 1];
/// let total: View<i32, 0> = View::new("total", [])?;
/// let mut count = 0;
/// parallel_reduce_into("sum and count", x.len(), |i, (s, c): &mut (i32, u32)| { *s += x[*i]; *c += 1 },
///     (Sum::<i32>::new(), Sum::<u32>::new()), (&total, &mut count))?;
/// assert_eq!((total.host_read()?.get([]), count), (9, 4));
/// # Ok::<(), hoplite::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`], and a borrow conflict on a target view.
#[inline(always)]
pub fn parallel_reduce_into<L, F, R, Tg>(
    label: &str,
    launch: L,
    kernel: F,
    reducer: R,
    target: Tg,
) -> Result<()>
where
    L: IntoLaunch<DefaultExecutionSpace>,
    R: Reducer,
    <DefaultPolicy<L> as ExecutionPolicy>::Space: ParallelReduce<DefaultPolicy<L>>,
    F: for<'it> Fn(DefaultItem<'it, L>, &mut R::Value) + Send + Sync,
    Tg: hoplite_core::ReduceInto<R::Value>,
{
    hoplite_core::parallel_reduce_into(label, launch.into_launch(), kernel, reducer, target)
}

/// Prefix sum with a Kokkos scan kernel `(i, partial, is_final)`; returns the total. See
/// [`hoplite_core::parallel_scan`].
///
/// ```
/// let total: u64 = hoplite::parallel_scan("count", 100, |_, partial, _| *partial += 1)?;
/// assert_eq!(total, 100);
/// # Ok::<(), hoplite::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
// Inlined like the core's launch functions: the policy is then built in the caller's frame.
#[inline(always)]
pub fn parallel_scan<L, F, T>(label: &str, launch: L, kernel: F) -> Result<T>
where
    L: IntoLaunch<DefaultExecutionSpace>,
    T: ScanValue,
    <DefaultPolicy<L> as ExecutionPolicy>::Space: ParallelScan<DefaultPolicy<L>>,
    F: for<'it> Fn(DefaultItem<'it, L>, &mut T, bool) + Send + Sync,
{
    hoplite_core::parallel_scan(label, launch.into_launch(), kernel)
}

/// Prints the configuration of every enabled backend's default instance (Kokkos
/// `print_configuration`).
///
/// ```
/// let mut out = Vec::new();
/// hoplite::print_configuration(&mut out, false)?;
/// assert!(String::from_utf8_lossy(&out).contains("default execution space"));
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
///
/// Only errors of `out`.
pub fn print_configuration(out: &mut dyn std::io::Write, detail: bool) -> std::io::Result<()> {
    writeln!(out, "hoplite {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "default execution space: {}",
        DefaultExecutionSpace::default().name()
    )?;
    #[cfg(feature = "rayon")]
    RayonSpace::default().print_configuration(out, detail)?;
    #[cfg(feature = "serial")]
    Serial::default().print_configuration(out, detail)?;
    #[cfg(feature = "numa")]
    NumaSpace::default().print_configuration(out, detail)?;
    Ok(())
}

/// The names most programs need: `use hoplite::prelude::*;`.
pub mod prelude {
    pub use crate::{
        DefaultExecutionSpace, DefaultHostExecutionSpace, Error, ExecutionPolicy, ExecutionSpace, FullSpace,
        Idx, IterationOrder, KernelToken, KernelTokenSpace, LaunchSpace, MDRangePolicy, MdIdx, PerTeam,
        PerThread, RangePolicy, Reducer, Result, Schedule, TeamMember, TeamPolicy, TeamSize, TeamThreadRange,
        TeamVectorRange, ThreadVectorRange, UniqueToken, UniqueTokenSpace, VectorLength, parallel_for,
        parallel_reduce, parallel_reduce_into, parallel_scan,
    };
    // The reducers and their value traits (every item of the core's reducer module).
    pub use hoplite_core::{
        BAnd, BOr, BitIdentity, Custom, FirstLoc, LAnd, LOr, LastLoc, Location, Max, MaxFirstLoc, MaxLoc,
        Min, MinFirstLoc, MinLoc, MinMax, MinMaxFirstLastLoc, MinMaxLoc, MinMaxLocScalar, MinMaxScalar,
        MinMaxValue, Prod, ProdValue, ReductionIdentity, ScanValue, Sum, SumValue, ValLoc,
    };
    pub use hoplite_core::{
        Complex, HostSpace, LayoutLeft, LayoutRight, LayoutStride, LockedAtomic, MemorySpace, ScatterMax,
        ScatterMin, ScatterProd, ScatterSum, ScatterView, Slice, View, create_mirror_view,
        create_mirror_view_and_copy, deep_copy, deep_copy_fill, deep_copy_on,
    };
}
