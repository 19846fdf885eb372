//! [`LaunchSpec`]: a policy, or a policy with the view handles it uses, and how a launch binds
//! the handles to the kernel it passes on (`BoundKernel`).

use std::ops::Range;

use super::kernel::{ForKernel, ReduceKernel, ScanKernel};
use crate::device_kernel::{DeviceLaunch, device_launch_of};
use crate::point_loop::{PointLoops, PointPolicy, PointSet, TeamShare};
use crate::policy::{ExecutionPolicy, IntoPolicy, MDRangePolicy, RangePolicy, TeamPolicy};
use crate::reducer::Reducer;
use crate::space::ExecutionSpace;
use crate::view::{AccessibleArgs, LaunchArgs};

/// What a launch runs over: a policy alone, or `(policy, args)` with the view handles the
/// kernel uses. The kernel receives [`Item`](Self::Item): the policy's item, or
/// `(item, bound_args)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a launch",
    label = "expected a policy, or `(policy, (handles...))`",
    note = "e.g. `RangePolicy::new(space, 0..n)` or `(RangePolicy::new(space, 0..n), (y.write(), x.read()))`",
    note = "the handles must be of views the policy's space reaches (`SpaceAccessibility`): host spaces take views of host memory, a device space views of its device's memory"
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
        let prepared = &Self::Args::for_this_thread(prepared);
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
        let prepared = &Self::Args::for_this_thread(prepared);
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
        let prepared = &Self::Args::for_this_thread(prepared);
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

impl<P: ExecutionPolicy, A: AccessibleArgs<P::Space>> LaunchSpec for (P, A) {
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
pub(super) struct BoundKernel<'k, L: LaunchSpec, F> {
    pub(super) kernel: &'k F,
    /// The handles, which a device backend reads (see [`DeviceLaunch`]); host backends use
    /// only `prepared`.
    pub(super) args: &'k L::Args,
    pub(super) prepared: <L::Args as LaunchArgs>::Prepared,
}

impl<L: LaunchSpec, F> BoundKernel<'_, L, F> {
    /// The launch as a device backend runs it, if the kernel is a `#[kernel]`'s `with`.
    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        let mut handles = Vec::new();
        self.args.device_handles(&mut handles);
        device_launch_of(self.kernel, handles)
    }

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

    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        BoundKernel::device_launch(self)
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

    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        BoundKernel::device_launch(self)
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

    fn device_launch(&self) -> Option<DeviceLaunch<'_>> {
        BoundKernel::device_launch(self)
    }
}

/// Turns something into a launch on space `S`: a policy or `usize` / `Range<usize>` (see
/// [`IntoPolicy`]), optionally paired with view handles: `(n, (y.write(), x.read()))`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a launch on `{S}`",
    label = "expected `n`, `begin..end`, a policy, or `(n, (handles..))`",
    note = "e.g. `ctx.launch(\"axpy\", (n, (y.write(), x.read())), kernel)`; one handle is still a tuple: `(n, (y.write(),))`",
    note = "the handles must be of views the space reaches (`SpaceAccessibility`)"
)]
pub trait IntoLaunch<S: ExecutionSpace> {
    /// The launch it becomes.
    type Launch: crate::dispatch::LaunchSpec;
    /// Converts.
    fn into_launch(self) -> Self::Launch;
}

macro_rules! into_launch_alone {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<S: ExecutionSpace, $($g)*> IntoLaunch<S> for $t {
            type Launch = <$t as IntoPolicy<S>>::Policy;
            fn into_launch(self) -> Self::Launch {
                IntoPolicy::<S>::into_policy(self)
            }
        }
    )*};
}

into_launch_alone! {
    impl[] usize;
    impl[] Range<usize>;
    impl[S2: ExecutionSpace] RangePolicy<S2>;
    impl[S2: ExecutionSpace, const R: usize] MDRangePolicy<S2, R>;
    impl[S2: ExecutionSpace] TeamPolicy<S2>;
}

/// A policy by reference launches a copy of it (see [`IntoPolicy`]'s impls for references):
/// `parallel_for("step", &policy, ..)` in a loop, with no `.clone()` per launch.
macro_rules! into_launch_by_reference {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<'p, S: ExecutionSpace, $($g)*> IntoLaunch<S> for &'p $t {
            type Launch = $t;
            fn into_launch(self) -> $t {
                IntoPolicy::<S>::into_policy(self)
            }
        }
    )*};
}

into_launch_by_reference! {
    impl[S2: ExecutionSpace] RangePolicy<S2>;
    impl[S2: ExecutionSpace, const R: usize] MDRangePolicy<S2, R>;
    impl[S2: ExecutionSpace] TeamPolicy<S2>;
}

impl<S: ExecutionSpace, P: IntoPolicy<S>, A: AccessibleArgs<<P::Policy as ExecutionPolicy>::Space>>
    IntoLaunch<S> for (P, A)
{
    type Launch = (P::Policy, A);
    fn into_launch(self) -> (P::Policy, A) {
        (self.0.into_policy(), self.1)
    }
}
