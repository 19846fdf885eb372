//! How `NumaSpace` launches run: each policy goes, on the same index space, to the rayon
//! instance of the space's pool, with the kernel wrapped in [`Forward`] so that the rayon
//! backend's shares still run in the kernel's own point loop.

use std::ops::Range;

use hoplite_core::point_loop::{PointPolicy, TeamShare};
use hoplite_core::{
    ForKernel, Idx, MDRangePolicy, MdIdx, ParallelFor, ParallelReduce, ParallelScan, RangePolicy,
    ReduceKernel, Reducer, Result, ScanKernel, ScanValue, TeamPolicy,
};
use hoplite_rayon::{RayonSpace, RayonTeamMember};

use crate::NumaSpace;

/// A kernel of a `NumaSpace` policy, handed to the rayon instance as a kernel of the same
/// policy on it: the items (tokens, members) and the shares are the same types. It forwards
/// the share methods too, so the rayon backend's shares still run in the kernel's own point
/// loop (`hoplite_core::point_loop`), with the kernel and its handles behind `noalias`
/// references.
struct Forward<K>(K);

impl<K: ForKernel<RangePolicy<NumaSpace>>> ForKernel<RangePolicy<RayonSpace>> for Forward<K> {
    #[inline(always)]
    fn call<'it>(&self, item: Idx<'it>) {
        self.0.call(item);
    }

    #[inline(always)]
    unsafe fn run_share(&self, share: Range<usize>) {
        // SAFETY: the share is the rayon launch's, of the same points (the caller's contract).
        unsafe { self.0.run_share(share) }
    }
}

impl<V, K: ReduceKernel<RangePolicy<NumaSpace>, V>> ReduceKernel<RangePolicy<RayonSpace>, V> for Forward<K> {
    #[inline(always)]
    fn call<'it>(&self, item: Idx<'it>, acc: &mut V) {
        self.0.call(item, acc);
    }

    #[inline(always)]
    unsafe fn fold_share<R: Reducer<Value = V>>(&self, share: Range<usize>, reducer: &R, acc: &mut V) {
        // SAFETY: as in `run_share`.
        unsafe { self.0.fold_share(share, reducer, acc) }
    }
}

impl<T, K: ScanKernel<RangePolicy<NumaSpace>, T>> ScanKernel<RangePolicy<RayonSpace>, T> for Forward<K> {
    #[inline(always)]
    fn call<'it>(&self, item: Idx<'it>, partial: &mut T, is_final: bool) {
        self.0.call(item, partial, is_final);
    }

    #[inline(always)]
    unsafe fn scan_share(&self, share: Range<usize>, partial: &mut T, is_final: bool) {
        // SAFETY: as in `run_share`.
        unsafe { self.0.scan_share(share, partial, is_final) }
    }
}

impl<const R: usize, K: ForKernel<MDRangePolicy<NumaSpace, R>>> ForKernel<MDRangePolicy<RayonSpace, R>>
    for Forward<K>
{
    #[inline(always)]
    fn call<'it>(&self, item: MdIdx<'it, R>) {
        self.0.call(item);
    }

    #[inline(always)]
    unsafe fn run_share(&self, share: <MDRangePolicy<RayonSpace, R> as PointPolicy>::Share) {
        // SAFETY: as in `run_share` of ranges.
        unsafe { self.0.run_share(share) }
    }
}

impl<const R: usize, V, K: ReduceKernel<MDRangePolicy<NumaSpace, R>, V>>
    ReduceKernel<MDRangePolicy<RayonSpace, R>, V> for Forward<K>
{
    #[inline(always)]
    fn call<'it>(&self, item: MdIdx<'it, R>, acc: &mut V) {
        self.0.call(item, acc);
    }

    #[inline(always)]
    unsafe fn fold_share<Red: Reducer<Value = V>>(
        &self,
        share: <MDRangePolicy<RayonSpace, R> as PointPolicy>::Share,
        reducer: &Red,
        acc: &mut V,
    ) {
        // SAFETY: as in `run_share` of ranges.
        unsafe { self.0.fold_share(share, reducer, acc) }
    }
}

impl<K: ForKernel<TeamPolicy<NumaSpace>>> ForKernel<TeamPolicy<RayonSpace>> for Forward<K> {
    #[inline(always)]
    fn call<'it>(&self, item: &'it RayonTeamMember<'it>) {
        self.0.call(item);
    }

    #[inline(always)]
    unsafe fn run_teams<T>(&self, teams: T)
    where
        T: for<'it> TeamShare<Member<'it> = &'it RayonTeamMember<'it>>,
    {
        // SAFETY: the teams are the rayon launch's, of the same members (the caller's contract).
        unsafe { self.0.run_teams(teams) }
    }
}

impl<V, K: ReduceKernel<TeamPolicy<NumaSpace>, V>> ReduceKernel<TeamPolicy<RayonSpace>, V> for Forward<K> {
    #[inline(always)]
    fn call<'it>(&self, item: &'it RayonTeamMember<'it>, acc: &mut V) {
        self.0.call(item, acc);
    }

    #[inline(always)]
    unsafe fn fold_teams<T, R: Reducer<Value = V>>(&self, teams: T, reducer: &R) -> Vec<(usize, V)>
    where
        T: for<'it> TeamShare<Member<'it> = &'it RayonTeamMember<'it>>,
    {
        // SAFETY: as in `run_teams`.
        unsafe { self.0.fold_teams(teams, reducer) }
    }
}

/// `ParallelFor` and `ParallelReduce` for one policy kind: the same policy on the instance's
/// rayon pool, with the kernel forwarded.
macro_rules! forward_dispatch {
    ($([$($gen:tt)*] $numa:ty => $rayon:ty;)*) => {$(
        // SAFETY: the kernel goes, once and by reference, to one dispatch of the rayon
        // backend over the same index space (`on_space` keeps every field of the policy), which
        // keeps the `ParallelFor` contract for it; nothing else calls it.
        unsafe impl<$($gen)*> ParallelFor<$numa> for NumaSpace {
            #[inline]
            fn parallel_for<K: ForKernel<$numa>>(&self, label: &str, policy: &$numa, kernel: K) -> Result<()> {
                let policy: $rayon = policy.clone().on_space(self.pool().clone());
                ParallelFor::parallel_for(self.pool(), label, &policy, Forward(kernel))
            }
        }

        // SAFETY: as for `ParallelFor`: one rayon dispatch of the same policy.
        unsafe impl<$($gen)*> ParallelReduce<$numa> for NumaSpace {
            #[inline]
            fn parallel_reduce<R: Reducer, K: ReduceKernel<$numa, R::Value>>(
                &self,
                label: &str,
                policy: &$numa,
                kernel: K,
                reducer: &R,
            ) -> Result<R::Value> {
                let policy: $rayon = policy.clone().on_space(self.pool().clone());
                ParallelReduce::parallel_reduce(self.pool(), label, &policy, Forward(kernel), reducer)
            }
        }
    )*};
}

forward_dispatch! {
    [] RangePolicy<NumaSpace> => RangePolicy<RayonSpace>;
    [const D: usize] MDRangePolicy<NumaSpace, D> => MDRangePolicy<RayonSpace, D>;
    [] TeamPolicy<NumaSpace> => TeamPolicy<RayonSpace>;
}

// SAFETY: one rayon-backend scan of the same range, which keeps the `ParallelScan` contract
// for the forwarded kernel.
unsafe impl ParallelScan<RangePolicy<NumaSpace>> for NumaSpace {
    #[inline]
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<NumaSpace>, T>>(
        &self,
        label: &str,
        policy: &RangePolicy<NumaSpace>,
        kernel: K,
    ) -> Result<T> {
        let policy = policy.clone().on_space(self.pool().clone());
        ParallelScan::parallel_scan(self.pool(), label, &policy, Forward(kernel))
    }
}
