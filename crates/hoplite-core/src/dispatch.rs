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
//!
//! A launch is a policy, or a policy with the view handles it uses — `(policy, (y.write(),
//! x.read()))` — in which case each iteration receives `(token, (bound_y, bound_x))`. Backends
//! never see the handles: the free functions check them once against the policy and bind them
//! inside the kernel they pass on.

use std::ops::Add;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, Result};
use crate::point_loop::{PointLoops, PointPolicy, PointSet, TeamShare};
use crate::policy::{ExecutionPolicy, MDRangePolicy, RangePolicy, TeamPolicy};
use crate::reducer::{Reducer, ReductionIdentity};
use crate::space::ExecutionSpace;
use crate::unique_token::UniqueTokenSpace;
use crate::view::LaunchArgs;

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

/// A `parallel_for` kernel over policy `P`, as backends call it. Every closure
/// `for<'it> Fn(P::Item<'it>) + Send + Sync` is one.
pub trait ForKernel<P: ExecutionPolicy>: Send + Sync {
    /// Runs one iteration.
    fn call<'it>(&self, item: P::Item<'it>);

    /// Runs the iterations of every point of `share`, in order, on this thread: how a host
    /// backend runs a range or MDRange launch. The kernels launches make run the share in
    /// their own out-of-line loop (see [`point_loop`](crate::point_loop)); the provided body
    /// calls [`call`](Self::call) per point.
    ///
    /// # Safety
    ///
    /// The [`PointSet::visit`] contract: `share` is a part of the points of the
    /// policy this kernel was launched over, handed to this call alone, on this thread.
    #[inline(always)]
    unsafe fn run_share(&self, share: P::Share)
    where
        P: PointPolicy,
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| self.call(item)) }
    }

    /// Runs the kernel for every team of `teams` on this thread: how a host backend runs its
    /// share of a team launch. The kernels launches make run in their own loop (see
    /// [`point_loop`](crate::point_loop)); the provided body calls [`call`](Self::call) per
    /// team.
    ///
    /// # Safety
    ///
    /// The [`TeamShare::visit`] contract: `teams` is this thread's part of the launch of this
    /// kernel, handed to this call alone.
    #[inline(always)]
    unsafe fn run_teams<T>(&self, teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
    {
        // SAFETY: the caller's contract.
        unsafe { teams.visit(|_, member| self.call(member)) }
    }
}

impl<P: ExecutionPolicy, F> ForKernel<P> for F
where
    F: for<'it> Fn(P::Item<'it>) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: P::Item<'it>) {
        self(item)
    }
}

/// A `parallel_reduce` kernel over policy `P` accumulating `V`. Every closure
/// `for<'it> Fn(P::Item<'it>, &mut V) + Send + Sync` is one.
pub trait ReduceKernel<P: ExecutionPolicy, V>: Send + Sync {
    /// Runs one iteration, adding its contribution to `acc`.
    fn call<'it>(&self, item: P::Item<'it>, acc: &mut V);

    /// Folds the iterations of every point of `share` into `acc` on this thread (see
    /// [`ForKernel::run_share`]). The kernels launches make fold in lanes joined with
    /// `reducer` when it is [commutative](Reducer::is_commutative); the provided body folds in
    /// order.
    ///
    /// # Safety
    ///
    /// As for [`ForKernel::run_share`].
    #[inline(always)]
    unsafe fn fold_share<R: Reducer<Value = V>>(&self, share: P::Share, reducer: &R, acc: &mut V)
    where
        P: PointPolicy,
    {
        let _ = reducer;
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| self.call(item, acc)) }
    }

    /// Folds the kernel over every team of `teams` on this thread, one partial per key of the
    /// share, each started from `reducer.init()`, in the order the keys come (see
    /// [`ForKernel::run_teams`]).
    ///
    /// # Safety
    ///
    /// As for [`ForKernel::run_teams`].
    #[inline(always)]
    unsafe fn fold_teams<T, R: Reducer<Value = V>>(&self, teams: T, reducer: &R) -> Vec<(usize, V)>
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
    {
        // SAFETY: the caller's contract.
        unsafe { crate::point_loop::fold_teams(teams, reducer, |member, acc| self.call(member, acc)) }
    }
}

impl<P: ExecutionPolicy, V, F> ReduceKernel<P, V> for F
where
    F: for<'it> Fn(P::Item<'it>, &mut V) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: P::Item<'it>, acc: &mut V) {
        self(item, acc)
    }
}

/// A `parallel_scan` kernel over policy `P` accumulating `T` (Kokkos scan functor). Every
/// closure `for<'it> Fn(P::Item<'it>, &mut T, bool) + Send + Sync` is one.
pub trait ScanKernel<P: ExecutionPolicy, T>: Send + Sync {
    /// Runs one iteration: adds its contribution to `partial`; when `is_final`, `partial`
    /// holds the sum over all lower indices on entry.
    fn call<'it>(&self, item: P::Item<'it>, partial: &mut T, is_final: bool);

    /// Runs the iterations of every point of `share`, in order, on this thread, from
    /// `partial` (see [`ForKernel::run_share`]).
    ///
    /// # Safety
    ///
    /// As for [`ForKernel::run_share`].
    #[inline(always)]
    unsafe fn scan_share(&self, share: P::Share, partial: &mut T, is_final: bool)
    where
        P: PointPolicy,
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| self.call(item, partial, is_final)) }
    }
}

impl<P: ExecutionPolicy, T, F> ScanKernel<P, T> for F
where
    F: for<'it> Fn(P::Item<'it>, &mut T, bool) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: P::Item<'it>, partial: &mut T, is_final: bool) {
        self(item, partial, is_final)
    }
}

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
///   implementation that keeps its own contract.
///
/// Breaking any of these lets safe user code race or store out of bounds, which is why this
/// trait is `unsafe` to implement even when the implementation itself needs no `unsafe` block.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run a parallel_for over `{P}`",
    label = "no parallel_for dispatch for this policy",
    note = "a policy launches on the execution space it names; that space's backend implements `ParallelFor` for it",
    note = "a device space (`Cuda`) runs no closures: write the kernel as a `#[kernel]` function and launch it with the space's `launch_range`, `reduce_range`, `launch_team` or their siblings"
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
    note = "a device space (`Cuda`) runs no closures: write the kernel as a `#[kernel]` function and launch it with the space's `launch_range`, `reduce_range`, `launch_team` or their siblings"
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
    note = "a device space (`Cuda`) runs no closures: write the scan as a `#[kernel]` function and launch it with the space's `scan_range`"
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

/// What a launch runs over: a policy alone, or `(policy, args)` with the view handles the
/// kernel uses. The kernel receives [`Item`](Self::Item): the policy's item, or
/// `(item, bound_args)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a launch",
    label = "expected a policy, or `(policy, (handles...))`",
    note = "e.g. `RangePolicy::new(space, 0..n)` or `(RangePolicy::new(space, 0..n), (y.write(), x.read()))`"
)]
pub trait LaunchSpec {
    /// The policy.
    type Policy: ExecutionPolicy;
    /// The handles handed to the launch (`()` for none).
    type Args: LaunchArgs;
    /// What the kernel receives per iteration.
    type Item<'it>;
    /// Separates the policy from the handles.
    fn into_parts(self) -> (Self::Policy, Self::Args);
    /// The handles, without giving them up (a front end that records launches reads their
    /// views before handing the launch on unchanged).
    fn args(&self) -> &Self::Args;
    /// Combines a policy item with the handles bound to the same iteration.
    fn item<'it>(
        item: <Self::Policy as ExecutionPolicy>::Item<'it>,
        args: <Self::Args as LaunchArgs>::Bound<'it>,
    ) -> Self::Item<'it>;

    /// Calls `kernel` for every point of `share` with the handles bound: the point loop of a
    /// launch of this shape. The provided body loops here; a policy alone and `(policy, args)`
    /// run the kernel's own loop, which is the same on every space (see
    /// [`point_loop`](crate::point_loop)).
    ///
    /// # Safety
    ///
    /// `prepared` comes from `Self::Args::prepare` for the policy `share` belongs to, of
    /// handles still alive, and the [`PointSet::visit`] contract holds for `share`.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn run_share<F>(
        kernel: &F,
        prepared: &<Self::Args as LaunchArgs>::Prepared,
        share: <Self::Policy as PointPolicy>::Share,
    ) where
        Self::Policy: PointPolicy,
        F: for<'it> Fn(Self::Item<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| kernel(Self::item(item, Self::Args::bind(prepared)))) }
    }

    /// As [`run_share`](Self::run_share), folding into `acc` (in lanes joined with `reducer`
    /// when it is commutative).
    ///
    /// # Safety
    ///
    /// As for [`run_share`](Self::run_share).
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn fold_share<F, R: Reducer>(
        kernel: &F,
        prepared: &<Self::Args as LaunchArgs>::Prepared,
        share: <Self::Policy as PointPolicy>::Share,
        reducer: &R,
        acc: &mut R::Value,
    ) where
        Self::Policy: PointPolicy,
        F: for<'it> Fn(Self::Item<'it>, &mut R::Value),
    {
        let _ = reducer;
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| kernel(Self::item(item, Self::Args::bind(prepared)), acc)) }
    }

    /// As [`run_share`](Self::run_share) for a scan kernel, from `partial`.
    ///
    /// # Safety
    ///
    /// As for [`run_share`](Self::run_share).
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn scan_share<F, T>(
        kernel: &F,
        prepared: &<Self::Args as LaunchArgs>::Prepared,
        share: <Self::Policy as PointPolicy>::Share,
        partial: &mut T,
        is_final: bool,
    ) where
        Self::Policy: PointPolicy,
        F: for<'it> Fn(Self::Item<'it>, &mut T, bool),
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| kernel(Self::item(item, Self::Args::bind(prepared)), partial, is_final)) }
    }

    /// Calls `kernel` for every team of `teams` with the handles bound: the team loop of a
    /// launch of this shape (see [`run_share`](Self::run_share)).
    ///
    /// # Safety
    ///
    /// `prepared` as for [`run_share`](Self::run_share); the [`TeamShare::visit`] contract
    /// holds for `teams`.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn run_teams<F, T>(kernel: &F, prepared: &<Self::Args as LaunchArgs>::Prepared, teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = <Self::Policy as ExecutionPolicy>::Item<'it>>,
        F: for<'it> Fn(Self::Item<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { teams.visit(|_, member| kernel(Self::item(member, Self::Args::bind(prepared)))) }
    }

    /// As [`run_teams`](Self::run_teams), folding one partial per key of `teams`.
    ///
    /// # Safety
    ///
    /// As for [`run_teams`](Self::run_teams).
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn fold_teams<F, T, R: Reducer>(
        kernel: &F,
        prepared: &<Self::Args as LaunchArgs>::Prepared,
        teams: T,
        reducer: &R,
    ) -> Vec<(usize, R::Value)>
    where
        T: for<'it> TeamShare<Member<'it> = <Self::Policy as ExecutionPolicy>::Item<'it>>,
        F: for<'it> Fn(Self::Item<'it>, &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe {
            crate::point_loop::fold_teams(teams, reducer, |member, acc| {
                kernel(Self::item(member, Self::Args::bind(prepared)), acc)
            })
        }
    }
}

impl<P: ExecutionPolicy> LaunchSpec for P {
    type Policy = P;
    type Args = ();
    type Item<'it> = P::Item<'it>;

    #[inline(always)]
    fn into_parts(self) -> (P, ()) {
        (self, ())
    }

    fn args(&self) -> &() {
        &()
    }

    #[inline(always)]
    fn item<'it>(item: P::Item<'it>, _args: ()) -> P::Item<'it> {
        item
    }

    #[inline(always)]
    unsafe fn run_share<F>(kernel: &F, _prepared: &(), share: P::Share)
    where
        P: PointPolicy,
        F: for<'it> Fn(P::Item<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::for_bare::<P::Share>(kernel, share) }
    }

    #[inline(always)]
    unsafe fn fold_share<F, R: Reducer>(
        kernel: &F,
        _prepared: &(),
        share: P::Share,
        reducer: &R,
        acc: &mut R::Value,
    ) where
        P: PointPolicy,
        F: for<'it> Fn(P::Item<'it>, &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::fold_bare::<R, P::Share>(kernel, share, reducer, acc) }
    }

    #[inline(always)]
    unsafe fn scan_share<F, T>(kernel: &F, _prepared: &(), share: P::Share, partial: &mut T, is_final: bool)
    where
        P: PointPolicy,
        F: for<'it> Fn(P::Item<'it>, &mut T, bool),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::scan_bare::<T, P::Share>(kernel, share, partial, is_final) }
    }

    #[inline(always)]
    unsafe fn run_teams<F, T>(kernel: &F, _prepared: &(), teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
        F: for<'it> Fn(P::Item<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::teams_bare::<T>(kernel, teams) }
    }

    #[inline(always)]
    unsafe fn fold_teams<F, T, R: Reducer>(
        kernel: &F,
        _prepared: &(),
        teams: T,
        reducer: &R,
    ) -> Vec<(usize, R::Value)>
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
        F: for<'it> Fn(P::Item<'it>, &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::fold_teams_bare::<R, T>(kernel, teams, reducer) }
    }
}

impl<P: ExecutionPolicy, A: LaunchArgs> LaunchSpec for (P, A) {
    type Policy = P;
    type Args = A;
    type Item<'it> = (P::Item<'it>, A::Bound<'it>);

    #[inline(always)]
    fn into_parts(self) -> (P, A) {
        self
    }

    fn args(&self) -> &A {
        &self.1
    }

    #[inline(always)]
    fn item<'it>(item: P::Item<'it>, args: A::Bound<'it>) -> Self::Item<'it> {
        (item, args)
    }

    #[inline(always)]
    unsafe fn run_share<F>(kernel: &F, prepared: &A::Prepared, share: P::Share)
    where
        P: PointPolicy,
        F: for<'it> Fn((P::Item<'it>, A::Bound<'it>)),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::for_args::<A, P::Share>(kernel, prepared, share) }
    }

    #[inline(always)]
    unsafe fn fold_share<F, R: Reducer>(
        kernel: &F,
        prepared: &A::Prepared,
        share: P::Share,
        reducer: &R,
        acc: &mut R::Value,
    ) where
        P: PointPolicy,
        F: for<'it> Fn((P::Item<'it>, A::Bound<'it>), &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::fold_args::<R, A, P::Share>(kernel, prepared, share, reducer, acc) }
    }

    #[inline(always)]
    unsafe fn scan_share<F, T>(
        kernel: &F,
        prepared: &A::Prepared,
        share: P::Share,
        partial: &mut T,
        is_final: bool,
    ) where
        P: PointPolicy,
        F: for<'it> Fn((P::Item<'it>, A::Bound<'it>), &mut T, bool),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::scan_args::<T, A, P::Share>(kernel, prepared, share, partial, is_final) }
    }

    #[inline(always)]
    unsafe fn run_teams<F, T>(kernel: &F, prepared: &A::Prepared, teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
        F: for<'it> Fn((P::Item<'it>, A::Bound<'it>)),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::teams_args::<A, T>(kernel, prepared, teams) }
    }

    #[inline(always)]
    unsafe fn fold_teams<F, T, R: Reducer>(
        kernel: &F,
        prepared: &A::Prepared,
        teams: T,
        reducer: &R,
    ) -> Vec<(usize, R::Value)>
    where
        T: for<'it> TeamShare<Member<'it> = P::Item<'it>>,
        F: for<'it> Fn((P::Item<'it>, A::Bound<'it>), &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { PointLoops::fold_teams_args::<R, A, T>(kernel, prepared, teams, reducer) }
    }
}

/// A user kernel with the launch's prepared handles: binds them for every iteration it runs.
///
/// The kernel is borrowed, by eager launches, graph nodes and DAG vertices alike, so that one
/// kernel type meets one point loop (see [`point_loop`](crate::point_loop)). The prepared
/// handles are held by value: a backend that calls the kernel per item behind a shared
/// reference has the addresses and strides one load away from an argument the compiler knows
/// nothing stores to.
struct BoundKernel<'k, L: LaunchSpec, F> {
    kernel: &'k F,
    prepared: <L::Args as LaunchArgs>::Prepared,
}

impl<L: LaunchSpec, F> BoundKernel<'_, L, F> {
    /// The iteration's item with the handles bound to its brand.
    #[inline(always)]
    fn item<'it>(&self, item: <L::Policy as ExecutionPolicy>::Item<'it>) -> L::Item<'it> {
        // SAFETY: a `BoundKernel` is made only by `launch` and the `*_validated` functions,
        // each of which prepares the handles for the index space of the policy it then
        // dispatches this kernel over (and over no other), and keeps the handles alive until
        // that dispatch has returned (it owns them, or borrows them for the whole call). The
        // bound handles carry the brand of this iteration's item, which the backend hands to
        // one iteration at a time and which cannot outlive the kernel call.
        L::item(item, unsafe { <L::Args as LaunchArgs>::bind(&self.prepared) })
    }
}

impl<L, F> ForKernel<L::Policy> for BoundKernel<'_, L, F>
where
    L: LaunchSpec,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: <L::Policy as ExecutionPolicy>::Item<'it>) {
        (self.kernel)(self.item(item))
    }

    #[inline(always)]
    unsafe fn run_share(&self, share: <L::Policy as PointPolicy>::Share)
    where
        L::Policy: PointPolicy,
    {
        // SAFETY: the caller's contract, and the `BoundKernel` one for `prepared` (see `item`).
        unsafe { L::run_share(self.kernel, &self.prepared, share) }
    }

    #[inline(always)]
    unsafe fn run_teams<T>(&self, teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = <L::Policy as ExecutionPolicy>::Item<'it>>,
    {
        // SAFETY: as in `run_share`.
        unsafe { L::run_teams(self.kernel, &self.prepared, teams) }
    }
}

impl<L, F, V> ReduceKernel<L::Policy, V> for BoundKernel<'_, L, F>
where
    L: LaunchSpec,
    F: for<'it> Fn(L::Item<'it>, &mut V) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: <L::Policy as ExecutionPolicy>::Item<'it>, acc: &mut V) {
        (self.kernel)(self.item(item), acc)
    }

    #[inline(always)]
    unsafe fn fold_share<R: Reducer<Value = V>>(
        &self,
        share: <L::Policy as PointPolicy>::Share,
        reducer: &R,
        acc: &mut V,
    ) where
        L::Policy: PointPolicy,
    {
        // SAFETY: as in `run_share`.
        unsafe { L::fold_share(self.kernel, &self.prepared, share, reducer, acc) }
    }

    #[inline(always)]
    unsafe fn fold_teams<T, R: Reducer<Value = V>>(&self, teams: T, reducer: &R) -> Vec<(usize, V)>
    where
        T: for<'it> TeamShare<Member<'it> = <L::Policy as ExecutionPolicy>::Item<'it>>,
    {
        // SAFETY: as in `run_share`.
        unsafe { L::fold_teams(self.kernel, &self.prepared, teams, reducer) }
    }
}

impl<L, F, T> ScanKernel<L::Policy, T> for BoundKernel<'_, L, F>
where
    L: LaunchSpec,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    #[inline(always)]
    fn call<'it>(&self, item: <L::Policy as ExecutionPolicy>::Item<'it>, partial: &mut T, is_final: bool) {
        (self.kernel)(self.item(item), partial, is_final)
    }

    #[inline(always)]
    unsafe fn scan_share(&self, share: <L::Policy as PointPolicy>::Share, partial: &mut T, is_final: bool)
    where
        L::Policy: PointPolicy,
    {
        // SAFETY: as in `run_share`.
        unsafe { L::scan_share(self.kernel, &self.prepared, share, partial, is_final) }
    }
}

/// Validates the policy and the handles, runs the launch, and turns a panic in the kernel into
/// [`Error::KernelPanicked`]. The handles (and their borrows) live until the launch returns.
///
/// Inlined so that the policy is built in place in the caller's frame: passed by value it was
/// copied through memory, which cost more than the serial launch itself.
#[inline(always)]
fn launch<L: LaunchSpec, F, T>(
    label: &str,
    pattern: Pattern,
    spec: L,
    kernel: F,
    run: impl FnOnce(&L::Policy, BoundKernel<'_, L, F>) -> Result<T>,
) -> Result<T> {
    let (policy, args) = spec.into_parts();
    policy.validate(label)?;
    let prepared = args.prepare(label, &policy.index_bounds())?;
    let bound = BoundKernel {
        kernel: &kernel,
        prepared,
    };
    let _span = pattern.span(label, &policy);
    let result = catch_unwind(AssertUnwindSafe(|| run(&policy, bound)));
    // The handles, and so their borrows, are released only now that the launch is over.
    drop(args);
    result.unwrap_or_else(|payload| Err(Error::from_panic(label, payload)))
}

/// A policy that passed [`ExecutionPolicy::validate`] once, to launch any number of times with
/// [`parallel_for_validated`], [`parallel_reduce_validated`] or [`parallel_scan_validated`]
/// without checking it again. It cannot be changed: [`policy`](Self::policy) gives only a
/// shared reference.
///
/// This is for front ends that record a launch and replay it (explicit graphs): they validate
/// when the launch is recorded and pay only for the dispatch on every replay.
///
/// ```
/// use hoplite_core::{RangePolicy, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let ok = ValidatedPolicy::new("fill", RangePolicy::new(Serial::default(), 0..4))?;
/// assert_eq!(ok.policy().len(), 4);
/// #[expect(clippy::reversed_empty_ranges, reason = "an invalid range on purpose")]
/// let bad = ValidatedPolicy::new("fill", RangePolicy::new(Serial::default(), 4..0));
/// assert!(bad.is_err());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ValidatedPolicy<P> {
    policy: P,
}

impl<P: ExecutionPolicy> ValidatedPolicy<P> {
    /// Validates `policy` for a launch labelled `label`.
    ///
    /// # Errors
    ///
    /// What [`ExecutionPolicy::validate`] reports: [`Error::InvalidRange`],
    /// [`Error::ZeroTile`], [`Error::TeamSizeTooLarge`], ...
    pub fn new(label: &str, policy: P) -> Result<Self> {
        policy.validate(label)?;
        Ok(ValidatedPolicy { policy })
    }

    /// The policy.
    #[inline(always)]
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy, given back.
    pub fn into_inner(self) -> P {
        self.policy
    }
}

/// Prepares `args` for `policy`'s index space and hands `dispatch` the kernel with them bound;
/// `dispatch` must run it over `policy` and no other policy (the `BoundKernel` contract).
#[inline(always)]
fn dispatch_validated<L: LaunchSpec, F, T>(
    label: &str,
    pattern: Pattern,
    policy: &L::Policy,
    args: &L::Args,
    kernel: &F,
    dispatch: impl FnOnce(BoundKernel<'_, L, F>) -> Result<T>,
) -> Result<T> {
    let prepared = args.prepare(label, &policy.index_bounds())?;
    let _span = pattern.span(label, policy);
    dispatch(BoundKernel { kernel, prepared })
}

/// The pattern a launch runs, as profiling names it.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    For,
    Reduce,
    Scan,
}

impl Pattern {
    /// With the `tracing` feature, enters an `INFO` span `launch` (target `hoplite::launch`)
    /// with the launch's label, pattern and space, which ends when the launch returns: the
    /// Kokkos Tools begin/end hooks of a kernel, for any `tracing` subscriber. Without the
    /// feature it does nothing and costs nothing.
    #[inline(always)]
    fn span<P: ExecutionPolicy>(self, label: &str, policy: &P) -> LaunchSpan {
        #[cfg(feature = "tracing")]
        {
            // Until a subscriber is set anywhere, skip even the span's callsite check: a
            // process that enables the feature but listens to nothing pays one load.
            if !tracing::dispatcher::has_been_set() {
                return LaunchSpan(None);
            }
            LaunchSpan(Some(enter_launch_span(label, self, policy.space().name())))
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (self, label, policy);
            LaunchSpan
        }
    }
}

/// Opens and enters a launch's span. Out of line, like the span's end, so that the launch
/// functions stay small enough to inline into their callers with the feature on.
#[cfg(feature = "tracing")]
#[inline(never)]
fn enter_launch_span(label: &str, pattern: Pattern, space: &'static str) -> tracing::span::EnteredSpan {
    let pattern = match pattern {
        Pattern::For => "parallel_for",
        Pattern::Reduce => "parallel_reduce",
        Pattern::Scan => "parallel_scan",
    };
    tracing::info_span!(target: "hoplite::launch", "launch", label, pattern, space).entered()
}

/// The open profiling span of a launch (nothing without the `tracing` feature).
#[cfg(feature = "tracing")]
struct LaunchSpan(Option<tracing::span::EnteredSpan>);

#[cfg(feature = "tracing")]
impl Drop for LaunchSpan {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            close_launch_span(&mut self.0);
        }
    }
}

/// Exits and closes a launch's span (see [`enter_launch_span`]).
#[cfg(feature = "tracing")]
#[inline(never)]
fn close_launch_span(span: &mut Option<tracing::span::EnteredSpan>) {
    span.take();
}

/// The open profiling span of a launch (nothing without the `tracing` feature).
#[cfg(not(feature = "tracing"))]
struct LaunchSpan;

/// [`parallel_for`] over a policy validated once, with the launch's handles borrowed from the
/// caller: checks the handles against the policy (borrow conflicts, extents) and dispatches.
/// `L` is the launch type the kernel's argument comes from: the policy type for a launch
/// without handles, `(policy, args)` otherwise.
///
/// Unlike [`parallel_for`], a panic in the kernel is not caught: it unwinds out of this call
/// (the handles stay with the caller, which releases them as it unwinds). A front end that runs
/// many launches in a row catches once around all of them.
///
/// ```
/// use hoplite_core::{parallel_for_validated, HostSpace, LayoutRight, RangePolicy, ValidatedPolicy, View, Writer};
/// use hoplite_serial::Serial;
/// type Launch = (RangePolicy<Serial>, (Writer<u32, 1, LayoutRight, HostSpace>,));
/// let y: View<u32, 1> = View::new("y", [4])?;
/// let policy = ValidatedPolicy::new("inc", RangePolicy::new(Serial::default(), 0..4))?;
/// for _ in 0..3 {
///     let args = (y.write(),); // borrowed for this launch only
///     parallel_for_validated::<Launch, _>("inc", &policy, &args, &|(i, (y,))| y.set(i, y.get(i) + 1))?;
/// }
/// assert_eq!(y.to_vec()?, [3; 4]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// A handle that conflicts ([`Error::BorrowConflict`]) or is too small for the policy
/// ([`Error::OutOfExtent`]), or a backend failure.
#[inline]
pub fn parallel_for_validated<L, F>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
) -> Result<()>
where
    L: LaunchSpec,
    <L::Policy as ExecutionPolicy>::Space: ParallelFor<L::Policy>,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, ()>(label, Pattern::For, policy, args, kernel, |k| {
        policy.space().parallel_for(label, policy, k)
    })
}

/// [`parallel_reduce`] over a policy validated once; see [`parallel_for_validated`] (a panic
/// in the kernel unwinds out of this call).
///
/// ```
/// use hoplite_core::{parallel_reduce_validated, RangePolicy, Sum, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let policy = ValidatedPolicy::new("sum", RangePolicy::new(Serial::default(), 0..10))?;
/// let total = parallel_reduce_validated::<RangePolicy<Serial>, _, _>("sum", &policy, &(), &|i, acc| *acc += *i, &Sum::<usize>::new())?;
/// assert_eq!(total, 45);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for_validated`].
#[inline]
pub fn parallel_reduce_validated<L, F, R>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
    reducer: &R,
) -> Result<R::Value>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, R::Value>(label, Pattern::Reduce, policy, args, kernel, |k| {
        policy.space().parallel_reduce(label, policy, k, reducer)
    })
}

/// [`parallel_scan`] over a policy validated once; see [`parallel_for_validated`] (a panic in
/// the kernel unwinds out of this call).
///
/// ```
/// use hoplite_core::{parallel_scan_validated, RangePolicy, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let policy = ValidatedPolicy::new("count", RangePolicy::new(Serial::default(), 0..4))?;
/// let total: u64 = parallel_scan_validated::<RangePolicy<Serial>, _, _>("count", &policy, &(), &|_i, partial, _is_final| *partial += 1)?;
/// assert_eq!(total, 4);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for_validated`].
#[inline]
pub fn parallel_scan_validated<L, F, T>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
) -> Result<T>
where
    L: LaunchSpec,
    T: ScanValue,
    <L::Policy as ExecutionPolicy>::Space: ParallelScan<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, T>(label, Pattern::Scan, policy, args, kernel, |k| {
        policy.space().parallel_scan(label, policy, k)
    })
}

/// Runs `kernel` once for every point of the launch (Kokkos `parallel_for`).
///
/// The launch is a policy, or `(policy, handles)`; see [`LaunchSpec`].
///
/// ```
/// use hoplite_core::{parallel_for, RangePolicy, View};
/// use hoplite_serial::Serial;
/// let x: View<f64, 1> = View::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0])?;
/// let y: View<f64, 1> = View::new("y", [4])?;
/// let policy = RangePolicy::new(Serial::default(), 0..4);
/// parallel_for("axpy", (policy, (y.write(), x.read())), |(i, (y, x))| {
///     y.set(i, 2.0 * x.get(i) + y.get(i))
/// })?;
/// assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0, 8.0]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// An invalid policy ([`Error::InvalidRange`], [`Error::ZeroTile`], [`Error::TeamSizeTooLarge`],
/// ...), a handle that conflicts ([`Error::BorrowConflict`]) or is too small for the policy
/// ([`Error::OutOfExtent`]), a panic in the kernel ([`Error::KernelPanicked`]), or a backend
/// failure.
#[inline(always)]
pub fn parallel_for<L, F>(label: &str, launch_spec: L, kernel: F) -> Result<()>
where
    L: LaunchSpec,
    <L::Policy as ExecutionPolicy>::Space: ParallelFor<L::Policy>,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    launch(label, Pattern::For, launch_spec, kernel, |policy, k| {
        policy.space().parallel_for(label, policy, k)
    })
}

/// Folds `kernel`'s contributions over the launch with `reducer` and returns the result
/// (Kokkos `parallel_reduce` into a host scalar: the call waits for the launch).
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
#[inline(always)]
pub fn parallel_reduce<L, F, R>(label: &str, launch_spec: L, kernel: F, reducer: R) -> Result<R::Value>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
{
    launch(label, Pattern::Reduce, launch_spec, kernel, |policy, k| {
        policy.space().parallel_reduce(label, policy, k, &reducer)
    })
}

/// Where [`parallel_reduce_into`] puts a reduction's result: a rank-0 view (Kokkos' reduction
/// into a view), a host variable (`&mut value`), or a tuple of targets for a tuple of reducers,
/// one per component.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot receive a reduction result of type `{V}`",
    label = "expected a rank-0 view, `&mut value`, or a tuple of them for a tuple of reducers",
    note = "a reduction stores into `&View<T, 0>` (written on the host), `&mut T`, or one target per reducer of a tuple"
)]
pub trait ReduceInto<V> {
    /// Stores the result.
    ///
    /// # Errors
    ///
    /// A borrow conflict on a target view (a handle of it is held elsewhere).
    fn store(self, value: V) -> Result<()>;
}

impl<V> ReduceInto<V> for &mut V {
    fn store(self, value: V) -> Result<()> {
        *self = value;
        Ok(())
    }
}

impl<T, L, S> ReduceInto<T> for &crate::view::View<T, 0, L, S>
where
    T: crate::view::ViewValue,
    L: crate::space::ArrayLayout,
    S: crate::view::copy::HostAccessibleSpace,
{
    fn store(self, value: T) -> Result<()> {
        self.host_write()?.set([], value);
        Ok(())
    }
}

macro_rules! tuple_reduce_into {
    ($($target:ident $value:ident $idx:tt),+) => {
        impl<$($target: ReduceInto<$value>, $value),+> ReduceInto<($($value,)+)> for ($($target,)+) {
            fn store(self, value: ($($value,)+)) -> Result<()> {
                $(self.$idx.store(value.$idx)?;)+
                Ok(())
            }
        }
    };
}

tuple_reduce_into!(A VA 0, B VB 1);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5, G VG 6);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5, G VG 6, H VH 7);

/// As [`parallel_reduce`], storing the result into `target` (Kokkos' `parallel_reduce` into a
/// view or a host scalar): a rank-0 view, `&mut value`, or — for a tuple of reducers — a tuple
/// with one target per component. The launch's handles are released before the store, so the
/// target may be a view the kernel read.
///
/// ```
/// use hoplite_core::{Max, RangePolicy, Sum, View, parallel_reduce_into};
/// use hoplite_serial::Serial;
/// let x: View<i64, 1> = View::from_slice("x", [4], &[3, -1, 7, 2])?;
/// let total: View<i64, 0> = View::new("total", [])?;
/// let mut largest = 0;
/// parallel_reduce_into(
///     "sum and max",
///     (RangePolicy::new(Serial::default(), 0..4), (x.read(),)),
///     |(i, (x,)), (sum, max): &mut (i64, i64)| {
///         *sum += x.get(i);
///         *max = (*max).max(x.get(i));
///     },
///     (Sum::<i64>::new(), Max::<i64>::new()),
///     (&total, &mut largest),
/// )?;
/// assert_eq!((total.host_read()?.get([]), largest), (11, 7));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_reduce`], and a borrow conflict on a target view.
#[inline(always)]
pub fn parallel_reduce_into<L, F, R, Tg>(
    label: &str,
    launch_spec: L,
    kernel: F,
    reducer: R,
    target: Tg,
) -> Result<()>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
    Tg: ReduceInto<R::Value>,
{
    target.store(parallel_reduce(label, launch_spec, kernel, reducer)?)
}

/// Prefix sum over the launch with a Kokkos scan kernel `(i, partial, is_final)`; returns the
/// total. Store before adding for an exclusive scan, after adding for an inclusive one.
///
/// ```
/// use hoplite_core::{parallel_scan, RangePolicy, View};
/// use hoplite_serial::Serial;
/// let x: View<i64, 1> = View::from_slice("x", [4], &[1, 2, 3, 4])?;
/// let offsets: View<i64, 1> = View::new("offsets", [4])?;
/// let policy = RangePolicy::new(Serial::default(), 0..4);
/// let total: i64 = parallel_scan("scan", (policy, (offsets.write(), x.read())), |(i, (out, x)), partial, is_final| {
///     if is_final { out.set(i, *partial); } // exclusive: store, then add
///     *partial += x.get(i);
/// })?;
/// assert_eq!((total, offsets.to_vec()?), (10, vec![0, 1, 3, 6]));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
#[inline(always)]
pub fn parallel_scan<L, F, T>(label: &str, launch_spec: L, kernel: F) -> Result<T>
where
    L: LaunchSpec,
    T: ScanValue,
    <L::Policy as ExecutionPolicy>::Space: ParallelScan<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    launch(label, Pattern::Scan, launch_spec, kernel, |policy, k| {
        policy.space().parallel_scan(label, policy, k)
    })
}

/// Every launch a conforming backend supports, in one bound: backend-generic application code
/// writes `S: FullSpace` instead of a bound per policy kind and MDRange rank.
///
/// A full space is an execution space with unique tokens that runs `parallel_for` and
/// `parallel_reduce` over range policies, MDRange policies of every rank (1 to
/// [`MAX_MDRANGE_RANK`](crate::MAX_MDRANGE_RANK)) and team policies, and `parallel_scan` over
/// range policies. The blanket implementation makes every such space a `FullSpace`; the
/// conformance suite tests exactly these.
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
    message = "`{Self}` does not run every launch of the concepts",
    label = "not a full execution space",
    note = "a full space runs range, MDRange (ranks 1-6) and team policies; a backend that passes the conformance suite is one"
)]
pub trait FullSpace:
    ExecutionSpace
    + UniqueTokenSpace
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

impl<S> FullSpace for S where
    S: ExecutionSpace
        + UniqueTokenSpace
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
