//! Dispatch: the traits a space implements per policy and kernel kind (the seed's
//! `ExecutionSpaceOf`), and the free functions `parallel_for`, `parallel_reduce` and
//! `parallel_scan` that route to them.
//!
//! The free functions check the policy, run the launch and turn a panic inside the kernel into
//! [`Error::KernelPanicked`], so the runtime stays usable after a failing kernel. Backends
//! implement only the traits and get all of that for free.
//!
//! Kernels are closures. A launch is generic over the iteration brand `'it`
//! (`for<'it> Fn(P::Item<'it>)`), which is what keeps iteration tokens inside their iteration.

use std::ops::Add;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, Result};
use crate::policy::ExecutionPolicy;
use crate::reducer::{Reducer, ReductionIdentity};
use crate::space::ExecutionSpace;

/// A value a scan can accumulate: summed, starting from zero.
pub trait ScanValue: Copy + Send + Sync + Add<Output = Self> + 'static {
    /// The identity of the sum.
    fn zero() -> Self;
}

impl<T> ScanValue for T
where
    T: ReductionIdentity + Copy + Send + Sync + Add<Output = T> + 'static,
{
    #[inline(always)]
    fn zero() -> Self {
        T::sum()
    }
}

/// A space that can run a `parallel_for` of kernel `F` over policy `P`.
///
/// Implementations may assume `policy.validate(label)` returned `Ok` and must call `kernel`
/// exactly once per point of the policy (the `ExecutionPolicy` axioms).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_for over `{P}` with this kernel",
    label = "no parallel_for dispatch for this policy and kernel",
    note = "the policy must belong to the space that runs it, and the kernel must take the policy's item: `Idx` for RangePolicy, `MdIdx<R>` for MDRangePolicy, `&TeamMember` for TeamPolicy"
)]
pub trait ParallelFor<P: ExecutionPolicy, F>: ExecutionSpace {
    /// Runs the launch. Returns when the kernel has been called for every point (synchronous
    /// spaces) or once it is enqueued (asynchronous spaces; `fence` waits).
    fn parallel_for(&self, label: &str, policy: &P, kernel: F) -> Result<()>;
}

/// A space that can run a `parallel_reduce` of kernel `F` with reducer `R` over policy `P`.
///
/// The result is returned to the host, so the launch has completed when this returns.
/// Implementations start every partial result from `reducer.init()`, join partials in index
/// order (lower indices as `dst`), and call `reducer.finalize` once on the total.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_reduce over `{P}` with reducer `{R}`",
    label = "no parallel_reduce dispatch for this policy, kernel and reducer",
    note = "the kernel takes the policy's item and `&mut R::Value` of the reducer, e.g. `|i, acc: &mut f64| *acc += x[*i]` with `Sum::<f64>::new()`"
)]
pub trait ParallelReduce<P: ExecutionPolicy, F, R: Reducer>: ExecutionSpace {
    /// Runs the reduction and returns the finalized total.
    fn parallel_reduce(&self, label: &str, policy: &P, kernel: F, reducer: &R) -> Result<R::Value>;
}

/// A space that can run a `parallel_scan` of kernel `F` over policy `P`, accumulating `T`.
///
/// The kernel is Kokkos' scan functor: `(i, partial, is_final)`. Implementations call it with
/// `is_final == true` exactly once per index, in which call `partial` holds the sum of the
/// contributions of all lower indices (so a kernel that stores before adding computes an
/// exclusive scan, one that adds before storing an inclusive scan). They may also call it with
/// `is_final == false` to compute partial sums; those calls must not have side effects the
/// kernel relies on.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_scan over `{P}` with this kernel",
    label = "no parallel_scan dispatch for this policy and kernel",
    note = "scans run over a RangePolicy with a kernel `|i, partial: &mut T, is_final: bool|`"
)]
pub trait ParallelScan<P: ExecutionPolicy, F, T: ScanValue>: ExecutionSpace {
    /// Runs the scan and returns the total over the whole range.
    fn parallel_scan(&self, label: &str, policy: &P, kernel: F) -> Result<T>;
}

/// Runs a validated launch, turning a panic in the kernel into [`Error::KernelPanicked`].
fn launch<P: ExecutionPolicy, T>(label: &str, policy: &P, run: impl FnOnce() -> Result<T>) -> Result<T> {
    policy.validate(label)?;
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|payload| Err(Error::from_panic(label, payload)))
}

/// Runs `kernel` once for every point of `policy` (Kokkos `parallel_for`).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use hoplite_core::{parallel_for, RangePolicy};
/// use hoplite_serial::Serial;
/// let hits = AtomicUsize::new(0);
/// parallel_for("count", RangePolicy::new(Serial::default(), 0..100), |i| {
///     hits.fetch_add(*i, Ordering::Relaxed);
/// })?;
/// assert_eq!(hits.into_inner(), 4950);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// An invalid policy ([`Error::InvalidRange`], [`Error::ZeroTile`], [`Error::TeamSizeTooLarge`],
/// ...), a panic in the kernel ([`Error::KernelPanicked`]), or a backend failure.
pub fn parallel_for<P, F>(label: &str, policy: P, kernel: F) -> Result<()>
where
    P: ExecutionPolicy,
    P::Space: ParallelFor<P, F>,
    F: for<'it> Fn(P::Item<'it>) + Send + Sync,
{
    launch(label, &policy, || {
        policy.space().parallel_for(label, &policy, kernel)
    })
}

/// Folds `kernel`'s contributions over `policy` with `reducer` and returns the result (Kokkos
/// `parallel_reduce` into a host scalar: the call waits for the launch).
///
/// ```
/// use hoplite_core::{parallel_reduce, MinLoc, RangePolicy, Sum, ValLoc};
/// use hoplite_serial::Serial;
/// let x = [3.0, -1.0, 4.0, -1.0, 5.0];
/// let space = Serial::default();
/// let sum = parallel_reduce("sum", RangePolicy::new(space.clone(), 0..5), |i, acc| *acc += x[*i], Sum::<f64>::new())?;
/// let min = parallel_reduce("min", RangePolicy::new(space, 0..5),
///     |i, acc: &mut ValLoc<f64>| acc.update_min(x[*i], *i), MinLoc::<f64>::new())?;
/// assert_eq!((sum, min.val, min.loc), (10.0, -1.0, Some(1)));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
pub fn parallel_reduce<P, F, R>(label: &str, policy: P, kernel: F, reducer: R) -> Result<R::Value>
where
    P: ExecutionPolicy,
    R: Reducer,
    P::Space: ParallelReduce<P, F, R>,
    F: for<'it> Fn(P::Item<'it>, &mut R::Value) + Send + Sync,
{
    launch(label, &policy, || {
        policy.space().parallel_reduce(label, &policy, kernel, &reducer)
    })
}

/// Prefix sum over `policy` with a Kokkos scan kernel `(i, partial, is_final)`; returns the
/// total. Store before adding for an exclusive scan, after adding for an inclusive one.
///
/// ```
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use hoplite_core::{parallel_scan, RangePolicy};
/// use hoplite_serial::Serial;
/// let x = [1i64, 2, 3, 4];
/// let exclusive: Vec<AtomicI64> = (0..4).map(|_| AtomicI64::new(0)).collect();
/// let total: i64 = parallel_scan("scan", RangePolicy::new(Serial::default(), 0..4), |i, partial, is_final| {
///     if is_final { exclusive[*i].store(*partial, Ordering::Relaxed); }
///     *partial += x[*i];
/// })?;
/// assert_eq!(total, 10);
/// assert_eq!(exclusive.iter().map(|v| v.load(Ordering::Relaxed)).collect::<Vec<_>>(), [0, 1, 3, 6]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
pub fn parallel_scan<P, F, T>(label: &str, policy: P, kernel: F) -> Result<T>
where
    P: ExecutionPolicy,
    T: ScanValue,
    P::Space: ParallelScan<P, F, T>,
    F: for<'it> Fn(P::Item<'it>, &mut T, bool) + Send + Sync,
{
    launch(label, &policy, || {
        policy.space().parallel_scan(label, &policy, kernel)
    })
}
