//! The traits a space implements per policy and pattern ([`ParallelFor`], [`ParallelReduce`],
//! [`ParallelScan`]), [`LaunchSpace`], a space that implements all of them, and [`FullSpace`], one
//! that also has unique tokens.

use super::kernel::{ForKernel, ReduceKernel, ScanKernel};
use crate::error::Result;
use crate::policy::{ExecutionPolicy, MDRangePolicy, RangePolicy, TeamPolicy};
use crate::reducer::{Reducer, ScanValue};
use crate::space::{ExecutionSpace, SpaceAccessibility};
use crate::unique_token::UniqueTokenSpace;

/// A space that can run `parallel_for` over policy `P` (the seed's `ExecutionSpaceOf`).
///
/// Implementations may assume `policy.validate(label)` returned `Ok` and must call the kernel
/// exactly once per point of the policy (the `ExecutionPolicy` axioms), handing each token to
/// one iteration at a time.
///
/// # Safety
///
/// The kernel a dispatch receives stores into views through the tokens it is called with,
/// with no bounds check and no synchronization (see [`Idx::new_unchecked`](crate::Idx::new_unchecked)).
/// An implementation promises, for every call:
///
/// * the kernel is called only with items of points inside `policy.index_bounds()`, each point
///   at most once, and never while another call with the same point is running — also not
///   through a second dispatch of the same kernel (forwarding the kernel to another space's
///   dispatch is fine only if that is the only dispatch it reaches);
/// * each item is used only on the thread that calls the kernel with it, inside that call;
/// * every call to the kernel has returned when `parallel_for` returns (or, for an
///   asynchronous space, before the launch is reported complete by `fence`), and the kernel
///   is not called after that;
/// * team members passed to the kernel come from a [`TeamMember`](crate::TeamMember)
///   implementation that keeps its own contract;
/// * a space whose kernels run elsewhere than on host threads (a GPU) gets the launch's
///   handles as [`DeviceHandle`](crate::device_kernel::DeviceHandle)s, and passes the
///   address of a view of a host-accessible memory space (which every space's launches take,
///   see [`SpaceAccessibility`](crate::SpaceAccessibility)) to its device only where the
///   device reaches that memory.
///
/// Breaking any of these lets safe user code race or store out of bounds, which is why this
/// trait is `unsafe` to implement even when the implementation itself needs no `unsafe` block.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_for over `{P}`",
    label = "no parallel_for dispatch for this policy",
    note = "a policy launches on the execution space it names; that space's backend implements `ParallelFor` for it",
    note = "a device space (`Cuda`) runs `#[kernel]` kernels: write the kernel as a `#[kernel]` function and pass `name::with(captures..)`"
)]
pub unsafe trait ParallelFor<P: ExecutionPolicy>: ExecutionSpace {
    /// Runs the launch. Returns when the kernel has been called for every point (synchronous
    /// spaces) or once it is enqueued (asynchronous spaces; `fence` waits).
    fn parallel_for<K: ForKernel<P>>(&self, label: &str, policy: &P, kernel: K) -> Result<()>;
}

/// A space that can run `parallel_reduce` over policy `P`.
///
/// The result is returned to the host, so the launch has completed when this returns.
/// Implementations start every partial result from `reducer.init()`, join partials in index
/// order (lower indices as `dst`), and call `reducer.finalize` once on the total.
///
/// # Safety
///
/// The same contract as [`ParallelFor`]: every point at most once, inside the policy's index
/// bounds, one thread per item, and no call to the kernel after the dispatch returns. (The
/// reduction's own axioms — identity, index-order joins, one finalize — are checked by the
/// conformance suite; breaking those gives wrong numbers, not undefined behaviour.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_reduce over `{P}`",
    label = "no parallel_reduce dispatch for this policy",
    note = "a policy launches on the execution space it names; that space's backend implements `ParallelReduce` for it",
    note = "a device space (`Cuda`) runs `#[kernel]` kernels: write the kernel as a `#[kernel]` function and pass `name::with(captures..)`"
)]
pub unsafe trait ParallelReduce<P: ExecutionPolicy>: ExecutionSpace {
    /// Runs the reduction and returns the finalized total.
    fn parallel_reduce<R: Reducer, K: ReduceKernel<P, R::Value>>(
        &self,
        label: &str,
        policy: &P,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value>;
}

/// A space that can run `parallel_scan` over policy `P`.
///
/// Implementations call the kernel with `is_final == true` exactly once per index, in which
/// call `partial` holds the sum of the contributions of all lower indices (so a kernel that
/// stores before adding computes an exclusive scan, one that adds before storing an inclusive
/// scan). They may also call it with `is_final == false` to compute partial sums; those calls
/// must not have side effects the kernel relies on.
///
/// # Safety
///
/// The same contract as [`ParallelFor`], per pass: calls with the same index never overlap in
/// time (a second pass starts on an index only after the first pass's call on it returned),
/// every index lies inside the policy's index bounds, and no call happens after the dispatch
/// returns.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_scan over `{P}`",
    label = "no parallel_scan dispatch for this policy",
    note = "scans run over a RangePolicy with a kernel `|i, partial: &mut T, is_final: bool|`",
    note = "a device space (`Cuda`) runs `#[kernel]` kernels: write the scan as a `#[kernel]` function and pass `name::with(captures..)`"
)]
pub unsafe trait ParallelScan<P: ExecutionPolicy>: ExecutionSpace {
    /// Runs the scan and returns the total over the whole range.
    fn parallel_scan<T: ScanValue, K: ScanKernel<P, T>>(
        &self,
        label: &str,
        policy: &P,
        kernel: K,
    ) -> Result<T>;
}

/// Every launch of the concepts, in one bound: backend-generic code writes `S: LaunchSpace`
/// instead of a bound per policy kind and MDRange rank, and runs on every backend, a GPU
/// included (with `#[kernel]` kernels there, and views of memory `S` reaches:
/// [`SpaceAccessibility`](crate::SpaceAccessibility)).
///
/// A launch space runs `parallel_for` and `parallel_reduce` over range policies, MDRange
/// policies of every rank (1 to [`MAX_MDRANGE_RANK`](crate::MAX_MDRANGE_RANK)) and team
/// policies, and `parallel_scan` over range policies, and its launches take handles of views
/// in its own memory space, `S::MemorySpace` (Kokkos:
/// `SpaceAccessibility<ExecSpace, ExecSpace::memory_space>` always holds), and unique tokens
/// its kernels acquire from ([`KernelTokenSpace`](crate::KernelTokenSpace)). The blanket
/// implementation makes every such space a `LaunchSpace`; [`FullSpace`] adds host unique
/// tokens (ids held on the host, `try_acquire`).
///
/// Code written once for every backend, a GPU's included, keeps its data in the space's own
/// memory: `View::<T, R, LayoutRight, S::MemorySpace>` is made with `from_slice` and read back
/// with `to_vec` on every backend.
///
/// ```
/// use hoplite_core::{ExecutionSpace, LaunchSpace, LayoutRight, RangePolicy, Sum, View, parallel_reduce};
///
/// /// The sum of `data`, computed in `S`'s memory.
/// fn total<S: LaunchSpace>(space: &S, data: &[i64]) -> hoplite_core::Result<i64> {
///     let x = View::<i64, 1, LayoutRight, S::MemorySpace>::from_slice("x", [data.len()], data)?;
///     let all = RangePolicy::new(space.clone(), 0..data.len());
///     parallel_reduce("total", (all, (x.read(),)), |(i, (x,)), acc: &mut i64| *acc += x.get(i), Sum::new())
/// }
/// assert_eq!(total(&hoplite_serial::Serial::default(), &[1, 2, 3])?, 6);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// Views of other memory reach a launch where the space allows it:
///
/// ```
/// use hoplite_core::{HostSpace, LaunchSpace, MemorySpace, RangePolicy, SpaceAccessibility, Sum, View, parallel_reduce};
///
/// /// The sum of `x`, on any space that reaches `x`'s memory.
/// fn total<S: LaunchSpace + SpaceAccessibility<M>, M: MemorySpace>(space: &S, x: &View<f64, 1, hoplite_core::LayoutRight, M>) -> hoplite_core::Result<f64> {
///     let all = RangePolicy::new(space.clone(), 0..x.extent(0));
///     parallel_reduce("total", (all, (x.read(),)), |(i, (x,)), acc: &mut f64| *acc += x.get(i), Sum::new())
/// }
/// let x: View<f64, 1> = View::from_slice("x", [3], &[1.0, 2.0, 3.0])?;
/// assert_eq!(total::<_, HostSpace>(&hoplite_serial::Serial::default(), &x)?, 6.0);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not run every launch of the concepts",
    label = "not a launch space",
    note = "a launch space runs range, MDRange (ranks 1-6) and team policies; a backend that passes the conformance suite is one"
)]
pub trait LaunchSpace:
    ExecutionSpace
    + SpaceAccessibility<<Self as ExecutionSpace>::MemorySpace>
    + crate::KernelTokenSpace
    + ParallelFor<RangePolicy<Self>>
    + ParallelReduce<RangePolicy<Self>>
    + ParallelScan<RangePolicy<Self>>
    + ParallelFor<MDRangePolicy<Self, 1>>
    + ParallelReduce<MDRangePolicy<Self, 1>>
    + ParallelFor<MDRangePolicy<Self, 2>>
    + ParallelReduce<MDRangePolicy<Self, 2>>
    + ParallelFor<MDRangePolicy<Self, 3>>
    + ParallelReduce<MDRangePolicy<Self, 3>>
    + ParallelFor<MDRangePolicy<Self, 4>>
    + ParallelReduce<MDRangePolicy<Self, 4>>
    + ParallelFor<MDRangePolicy<Self, 5>>
    + ParallelReduce<MDRangePolicy<Self, 5>>
    + ParallelFor<MDRangePolicy<Self, 6>>
    + ParallelReduce<MDRangePolicy<Self, 6>>
    + ParallelFor<TeamPolicy<Self>>
    + ParallelReduce<TeamPolicy<Self>>
{
}

impl<S> LaunchSpace for S where
    S: ExecutionSpace
        + SpaceAccessibility<<S as ExecutionSpace>::MemorySpace>
        + crate::KernelTokenSpace
        + ParallelFor<RangePolicy<S>>
        + ParallelReduce<RangePolicy<S>>
        + ParallelScan<RangePolicy<S>>
        + ParallelFor<MDRangePolicy<S, 1>>
        + ParallelReduce<MDRangePolicy<S, 1>>
        + ParallelFor<MDRangePolicy<S, 2>>
        + ParallelReduce<MDRangePolicy<S, 2>>
        + ParallelFor<MDRangePolicy<S, 3>>
        + ParallelReduce<MDRangePolicy<S, 3>>
        + ParallelFor<MDRangePolicy<S, 4>>
        + ParallelReduce<MDRangePolicy<S, 4>>
        + ParallelFor<MDRangePolicy<S, 5>>
        + ParallelReduce<MDRangePolicy<S, 5>>
        + ParallelFor<MDRangePolicy<S, 6>>
        + ParallelReduce<MDRangePolicy<S, 6>>
        + ParallelFor<TeamPolicy<S>>
        + ParallelReduce<TeamPolicy<S>>
{
}

/// Every launch a conforming host backend supports, and its unique tokens, in one bound:
/// [`LaunchSpace`] and [`UniqueTokenSpace`]. The conformance suite tests exactly these.
///
/// ```
/// use hoplite_core::{FullSpace, MDRangePolicy, RangePolicy, Sum, View, parallel_for, parallel_reduce};
///
/// /// Fills a grid and sums it, on any backend.
/// fn fill_and_sum<S: FullSpace>(space: &S, n: usize) -> hoplite_core::Result<f64> {
///     let grid: View<f64, 2> = View::new("grid", [n, n])?;
///     let whole = MDRangePolicy::new(space.clone(), [0, 0], [n, n]);
///     parallel_for("fill", (whole.clone(), (grid.write(),)), |(ij, (g,))| g.set(ij, 0.5))?;
///     parallel_reduce("sum", (whole, (grid.read(),)), |(ij, (g,)), acc| *acc += g.get(ij), Sum::new())
/// }
/// assert_eq!(fill_and_sum(&hoplite_serial::Serial::default(), 4)?, 8.0);
/// # let _ = RangePolicy::new(hoplite_serial::Serial::default(), 0..1);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not run every launch of the concepts with host unique tokens",
    label = "not a full execution space",
    note = "a full space is a `LaunchSpace` (range, MDRange ranks 1-6 and team policies) with `UniqueTokenSpace`; a backend that passes the conformance suite is one"
)]
pub trait FullSpace: LaunchSpace + UniqueTokenSpace {}

impl<S: LaunchSpace + UniqueTokenSpace> FullSpace for S {}
