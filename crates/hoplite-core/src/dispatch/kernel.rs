//! The kernel kinds a launch takes: [`ForKernel`], [`ReduceKernel`] and [`ScanKernel`], with
//! the blanket impls that make closures and `fn` items kernels.

use crate::device_kernel::DeviceLaunch;
use crate::point_loop::{PointPolicy, PointSet, TeamShare};
use crate::policy::ExecutionPolicy;
use crate::reducer::Reducer;

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

    /// The `#[kernel]` launch this kernel is, for a device backend: `Some` for a kernel made
    /// with a `#[kernel]`'s `with` and bound to its handles by a launch, `None` for any other
    /// (a closure, which runs on the host only). See
    /// [`device_kernel`](crate::device_kernel#launches-on-a-device).
    #[doc(hidden)]
    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        None
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

    /// The `#[kernel]` launch this kernel is, for a device backend: `Some` for a kernel made
    /// with a `#[kernel]`'s `with` and bound to its handles by a launch, `None` for any other
    /// (a closure, which runs on the host only). See
    /// [`device_kernel`](crate::device_kernel#launches-on-a-device).
    #[doc(hidden)]
    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        None
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

    /// The `#[kernel]` launch this kernel is, for a device backend: `Some` for a kernel made
    /// with a `#[kernel]`'s `with` and bound to its handles by a launch, `None` for any other
    /// (a closure, which runs on the host only). See
    /// [`device_kernel`](crate::device_kernel#launches-on-a-device).
    #[doc(hidden)]
    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        None
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
