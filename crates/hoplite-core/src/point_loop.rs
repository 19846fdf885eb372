//! The point loops: where a host launch's kernel meets its points.
//!
//! A host backend splits a launch's points into *shares* — a range of indices, a range of
//! MDRange tiles, the teams a thread runs — and hands each share to the kernel at once
//! ([`run_share`](crate::ForKernel::run_share), [`fold_share`](crate::ReduceKernel::fold_share),
//! [`scan_share`](crate::ScanKernel::scan_share), [`run_teams`](crate::ForKernel::run_teams),
//! [`fold_teams`](crate::ReduceKernel::fold_teams)). The loop over a share lives here,
//! once for every backend, and it is where a kernel's speed is decided: the kernel body must be
//! inlined into it, or every point pays a call, copies the bound handles, reloads their
//! addresses and strides, redoes their checks and runs scalar (a 2-D stencil ran 14-16x slower).
//!
//! Three things make that hold for every way a kernel reaches a launch — a closure, `&closure`,
//! a named `fn`, a `#[kernel]`, a graph node, a DAG vertex — with nothing asked of the user:
//!
//! * **One loop per kernel type.** Eager launches, graph nodes and DAG vertices all lend the
//!   same `&F` to the loop, and the loop is generic over the kernel, the launch's handle types
//!   and the share type only — not over the space or the policy. So a kernel type has one loop
//!   on every host backend, and the kernel body one call site, which the compiler inlines
//!   whatever its size. (A graph node that passed `&F` as the kernel itself made a second
//!   kernel type, whose `Fn` impl is a separate function the loop called per point; the same
//!   kernel on two backends had two loops, and its body two call sites, neither inlined.)
//!   Team loops are generic over the backend's [`TeamShare`] instead: a team kernel's member
//!   type already ties it to one backend.
//! * **The loop sits beside the kernel.** The loop is a method of the kernel's own type
//!   (`PointLoops`), so rustc places it in the codegen unit of the kernel's module, where a
//!   named `fn` and the `Fn` impl of a `&closure` are also compiled; calls between codegen
//!   units are never inlined. (Checked with the kernels in one module and their launches in
//!   another. Across crates the compiler needs a function's body: closures and `#[kernel]`
//!   functions carry theirs, a plain named `fn` defined in another crate is inlined only with
//!   `#[inline]` on it or with LTO, as for any Rust function.)
//! * **Its own frame.** The loop is out of line and takes the kernel and the launch's prepared
//!   handles as two reference arguments, which the compiler knows nothing stores to
//!   (`noalias readonly`): captures, addresses and strides stay in registers across the
//!   kernel's stores, and the loop vectorizes.
//!
//! A reduction whose reducer is [commutative](crate::Reducer::is_commutative) and whose value
//! is small is folded in [`LANES`] partials of interleaved points (of a range, or of each line
//! of an MDRange tile), joined in lane order at the end of the share, so that its adds do not
//! wait on one chain.
//!
//! ```
//! use hoplite_core::{RangePolicy, Sum, parallel_reduce};
//! use hoplite_serial::Serial;
//! // A named function: it runs in its own point loop, inlined, like a closure.
//! fn square(i: hoplite_core::Idx<'_>, acc: &mut u64) {
//!     *acc += (*i as u64) * (*i as u64);
//! }
//! let total = parallel_reduce("squares", RangePolicy::new(Serial::default(), 0..10), square, Sum::new())?;
//! assert_eq!(total, 285);
//! # Ok::<(), hoplite_core::Error>(())
//! ```

use std::ops::Range;

use crate::index::{Idx, MdIdx};
use crate::policy::{ExecutionPolicy, MDRangePolicy, RangePolicy, TileShare, for_each_line, for_each_point};
use crate::reducer::Reducer;
use crate::space::ExecutionSpace;
use crate::view::LaunchArgs;

/// A set of points one thread walks: a range of indices, a range of MDRange tiles. It names no
/// execution space, so a kernel's point loop is the same code on every host backend.
///
/// # Safety
///
/// [`visit`](Self::visit) mints the items of its points: it visits each point of the set
/// once, and two sets a launch makes from disjoint parts of its policy (index ranges, tile
/// ranges) have no point in common.
pub unsafe trait PointSet: Send {
    /// The item of one point: `Idx` or `MdIdx`.
    type Point<'it>;

    /// Calls `visit` for every point, in the policy's order, on this thread.
    ///
    /// # Safety
    ///
    /// The caller is a launch that hands this set to this one call: no point of it is visited
    /// by another call while this one runs, and the set's points lie inside the launch's
    /// policy; `visit` is generic over the brand.
    unsafe fn visit<V>(self, visit: V)
    where
        V: for<'it> FnMut(Self::Point<'it>);

    /// As [`visit`](Self::visit), also handing each point a lane below [`LANES`]: points
    /// next to each other go to different lanes, so a fold into one partial per lane has
    /// independent chains. The provided body gives every point lane 0.
    ///
    /// # Safety
    ///
    /// As for [`visit`](Self::visit).
    #[inline(always)]
    unsafe fn visit_lanes<V>(self, mut visit: V)
    where
        Self: Sized,
        V: for<'it> FnMut(Self::Point<'it>, usize),
    {
        // SAFETY: the caller's contract.
        unsafe { self.visit(|p| visit(p, 0)) }
    }
}

/// How many partials a point loop folds a commutative reduction into (see
/// [`Reducer::is_commutative`]): enough independent chains to hide an addition's latency.
pub const LANES: usize = 4;

/// Reductions whose value is larger than this fold into one partial: lanes would only copy
/// them (a histogram's array gains nothing from them).
const MAX_LANE_VALUE: usize = 32;

// SAFETY: one visit per index of the range.
unsafe impl PointSet for Range<usize> {
    type Point<'it> = Idx<'it>;

    #[inline(always)]
    unsafe fn visit<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(Idx<'it>),
    {
        for i in self {
            // SAFETY: the caller hands this range to this call alone, on this thread.
            visit(unsafe { Idx::new_unchecked(i) });
        }
    }

    #[inline(always)]
    unsafe fn visit_lanes<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(Idx<'it>, usize),
    {
        in_lanes(self, |i, lane| {
            // SAFETY: as in `visit`: each index of the range once.
            visit(unsafe { Idx::new_unchecked(i) }, lane)
        });
    }
}

/// Calls `f(i, lane)` for every `i` of `range` in order: whole groups of [`LANES`] indices
/// with lanes `0..LANES` (constants once the inner loop is unrolled), the rest with lane 0.
#[inline(always)]
fn in_lanes(range: Range<usize>, mut f: impl FnMut(usize, usize)) {
    let mut i = range.start;
    while range.end.saturating_sub(i) >= LANES {
        for lane in 0..LANES {
            f(i + lane, lane);
        }
        i += LANES;
    }
    for j in i..range.end {
        f(j, 0);
    }
}

// SAFETY: the tiles of one tiling partition its box; each point of each tile once.
unsafe impl<const R: usize> PointSet for TileShare<R> {
    type Point<'it> = MdIdx<'it, R>;

    #[inline(always)]
    unsafe fn visit<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(MdIdx<'it, R>),
    {
        let inner = self.tiling.inner_order();
        for t in self.tiles {
            let (lo, hi) = self.tiling.tile_bounds(t);
            for_each_point(lo, hi, inner, |p| {
                // SAFETY: tiles partition the box and each point of a tile is visited once;
                // the caller hands the share to this call alone, on this thread.
                visit(unsafe { MdIdx::new_unchecked(p) })
            });
        }
    }

    #[inline(always)]
    unsafe fn visit_lanes<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(MdIdx<'it, R>, usize),
    {
        let inner = self.tiling.inner_order();
        for t in self.tiles {
            let (lo, hi) = self.tiling.tile_bounds(t);
            // Lanes along each line of the tile's fastest dimension.
            for_each_line(lo, hi, inner, |mut p, fast| {
                in_lanes(lo[fast]..hi[fast], |k, lane| {
                    p[fast] = k;
                    // SAFETY: as in `visit`: the lines of a tile hold its points once.
                    visit(unsafe { MdIdx::new_unchecked(p) }, lane)
                })
            });
        }
    }
}

/// A policy whose points a host backend hands out in shares, each walked by one thread with
/// [`ForKernel::run_share`](crate::ForKernel::run_share) and its siblings.
///
/// # Safety
///
/// A share a backend makes from a policy of this type (`begin()..end()` and its sub-ranges
/// for a range, [`MDRangePolicy::tile_share`] for an MDRange) names only points inside the
/// policy's `index_bounds`.
pub unsafe trait PointPolicy: ExecutionPolicy {
    /// A part of the points: indices for a range, tiles for an MDRange. Its points are the
    /// policy's items.
    type Share: for<'it> PointSet<Point<'it> = Self::Item<'it>>;
}

// SAFETY: a share is a sub-range of the policy's `begin()..end()`, its index space.
unsafe impl<S: ExecutionSpace> PointPolicy for RangePolicy<S> {
    type Share = Range<usize>;
}

// SAFETY: a share is a range of the tiles of the policy's tiling, which partition its box.
unsafe impl<S: ExecutionSpace, const R: usize> PointPolicy for MDRangePolicy<S, R> {
    type Share = TileShare<R>;
}

/// The teams one thread of a host backend runs in a team launch, with that thread's member
/// of each: what [`ForKernel::run_teams`](crate::ForKernel::run_teams) and
/// [`ReduceKernel::fold_teams`](crate::ReduceKernel::fold_teams) walk, so that a team
/// kernel, too, runs in a loop of its own type (see the module's docs).
///
/// # Safety
///
/// [`visit`](Self::visit) hands the kernel team members: it keeps the
/// [`TeamMember`](crate::TeamMember) contract of the members it makes (each `(league_rank,
/// team_rank)` once per launch, on one thread).
pub unsafe trait TeamShare {
    /// The item of one team: `&'it S::TeamMember<'it>`.
    type Member<'it>;

    /// Calls `visit(key, member)` for every team of this share, in order, on this thread.
    /// `key` numbers the contiguous runs of teams the share is made of: a reduction keeps one
    /// partial per key, in the order the keys come.
    ///
    /// # Safety
    ///
    /// The caller is a launch that hands this share to this one call, and `visit` is generic
    /// over the brand.
    unsafe fn visit<V>(self, visit: V)
    where
        V: for<'it> FnMut(usize, Self::Member<'it>);
}

/// The out-of-line loops of a kernel type: a method of the kernel's own type, so that the
/// compiler places each loop beside the kernel, generic over the launch's handles `A` and its
/// share type only, so that a kernel has one loop on every backend (see the module's docs).
/// Implemented for every type.
///
/// The `_bare` loops serve launches without handles (the kernel takes the point's item), the
/// others launches with handles (the kernel takes `(item, bound handles)`).
///
/// Every method has the same safety contract: `prepared` comes from `A::prepare` for the
/// policy the share belongs to, of handles still alive, and the caller hands the share to
/// this call alone (the [`PointSet::visit`] contract).
pub(crate) trait PointLoops: Sized {
    /// Calls the kernel for every point of `share` (a launch without handles).
    #[inline(never)]
    unsafe fn for_bare<Sh: PointSet>(&self, share: Sh)
    where
        Self: for<'it> Fn(Sh::Point<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| self(item)) }
    }

    /// Calls the kernel for every point of `share` with the launch's handles bound to it.
    #[inline(never)]
    unsafe fn for_args<A: LaunchArgs, Sh: PointSet>(&self, prepared: &A::Prepared, share: Sh)
    where
        Self: for<'it> Fn((Sh::Point<'it>, A::Bound<'it>)),
    {
        let prepared = &A::for_this_thread(prepared);
        // SAFETY: the caller's contract; the bound handles carry the brand of the item they
        // are bound with, which does not outlive the kernel call.
        unsafe {
            if A::UNROLL {
                share.visit_lanes(|item, _| self((item, A::bind(prepared))));
            } else {
                share.visit(|item| self((item, A::bind(prepared))));
            }
        }
    }

    /// Folds the kernel over every point of `share` into `acc` (a launch without handles),
    /// in [`LANES`] partials when `R` is commutative and its value small.
    #[inline(never)]
    unsafe fn fold_bare<R: Reducer, Sh: PointSet>(&self, share: Sh, reducer: &R, acc: &mut R::Value)
    where
        Self: for<'it> Fn(Sh::Point<'it>, &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { fold_in_lanes(share, reducer, acc, |item, acc| self(item, acc)) }
    }

    /// Folds the kernel over every point of `share` into `acc`, with the handles bound; in
    /// lanes as [`fold_bare`](Self::fold_bare).
    #[inline(never)]
    unsafe fn fold_args<R: Reducer, A: LaunchArgs, Sh: PointSet>(
        &self,
        prepared: &A::Prepared,
        share: Sh,
        reducer: &R,
        acc: &mut R::Value,
    ) where
        Self: for<'it> Fn((Sh::Point<'it>, A::Bound<'it>), &mut R::Value),
    {
        let prepared = &A::for_this_thread(prepared);
        // SAFETY: as in `for_args`.
        unsafe {
            fold_in_lanes(share, reducer, acc, |item, acc| {
                self((item, A::bind(prepared)), acc)
            })
        }
    }

    /// Runs the scan kernel over every point of `share` from `partial` (no handles).
    #[inline(never)]
    unsafe fn scan_bare<T, Sh: PointSet>(&self, share: Sh, partial: &mut T, is_final: bool)
    where
        Self: for<'it> Fn(Sh::Point<'it>, &mut T, bool),
    {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| self(item, partial, is_final)) }
    }

    /// Runs the scan kernel over every point of `share` from `partial`, with the handles bound.
    #[inline(never)]
    unsafe fn scan_args<T, A: LaunchArgs, Sh: PointSet>(
        &self,
        prepared: &A::Prepared,
        share: Sh,
        partial: &mut T,
        is_final: bool,
    ) where
        Self: for<'it> Fn((Sh::Point<'it>, A::Bound<'it>), &mut T, bool),
    {
        let prepared = &A::for_this_thread(prepared);
        // SAFETY: as in `for_args`.
        unsafe { share.visit(|item| self((item, A::bind(prepared)), partial, is_final)) }
    }
    /// Calls the kernel for every team of `teams` (a launch without handles).
    #[inline(never)]
    unsafe fn teams_bare<T: TeamShare>(&self, teams: T)
    where
        Self: for<'it> Fn(T::Member<'it>),
    {
        // SAFETY: the caller's contract.
        unsafe { teams.visit(|_, member| self(member)) }
    }

    /// Calls the kernel for every team of `teams` with the handles bound.
    #[inline(never)]
    unsafe fn teams_args<A: LaunchArgs, T: TeamShare>(&self, prepared: &A::Prepared, teams: T)
    where
        Self: for<'it> Fn((T::Member<'it>, A::Bound<'it>)),
    {
        // SAFETY: as in `for_args`.
        unsafe { teams.visit(|_, member| self((member, A::bind(prepared)))) }
    }

    /// Folds the kernel over every team of `teams`: one partial per key (a launch without
    /// handles).
    #[inline(never)]
    unsafe fn fold_teams_bare<R: Reducer, T: TeamShare>(
        &self,
        teams: T,
        reducer: &R,
    ) -> Vec<(usize, R::Value)>
    where
        Self: for<'it> Fn(T::Member<'it>, &mut R::Value),
    {
        // SAFETY: the caller's contract.
        unsafe { fold_teams(teams, reducer, |member, acc| self(member, acc)) }
    }

    /// Folds the kernel over every team of `teams` with the handles bound: one partial per
    /// key.
    #[inline(never)]
    unsafe fn fold_teams_args<R: Reducer, A: LaunchArgs, T: TeamShare>(
        &self,
        prepared: &A::Prepared,
        teams: T,
        reducer: &R,
    ) -> Vec<(usize, R::Value)>
    where
        Self: for<'it> Fn((T::Member<'it>, A::Bound<'it>), &mut R::Value),
    {
        // SAFETY: as in `for_args`.
        unsafe {
            fold_teams(teams, reducer, |member, acc| {
                self((member, A::bind(prepared)), acc)
            })
        }
    }
}

impl<F> PointLoops for F {}

/// Folds `fold` over the teams of `teams`, starting a partial from `reducer.init()` at every
/// new key.
///
/// # Safety
///
/// The [`TeamShare::visit`] contract for `teams`.
#[inline(always)]
pub(crate) unsafe fn fold_teams<R: Reducer, T: TeamShare>(
    teams: T,
    reducer: &R,
    mut fold: impl for<'it> FnMut(T::Member<'it>, &mut R::Value),
) -> Vec<(usize, R::Value)> {
    let mut partials: Vec<(usize, R::Value)> = Vec::new();
    // SAFETY: the caller's contract.
    unsafe {
        teams.visit(|key, member| {
            if partials.last().map(|p| p.0) != Some(key) {
                partials.push((key, reducer.init()));
            }
            if let Some((_, acc)) = partials.last_mut() {
                fold(member, acc);
            }
        });
    }
    partials
}

/// Folds `fold` over every point of `share` into `acc`: through [`LANES`] partials, joined
/// into `acc` in lane order, when the reducer is commutative and its value small; else
/// straight into `acc`, in order.
///
/// # Safety
///
/// The [`PointSet::visit`] contract for `share`.
#[inline(always)]
unsafe fn fold_in_lanes<R: Reducer, Sh: PointSet>(
    share: Sh,
    reducer: &R,
    acc: &mut R::Value,
    mut fold: impl for<'it> FnMut(Sh::Point<'it>, &mut R::Value),
) {
    if size_of::<R::Value>() <= MAX_LANE_VALUE && reducer.is_commutative() {
        let mut lanes: [R::Value; LANES] = std::array::from_fn(|_| reducer.init());
        // SAFETY: the caller's contract.
        unsafe { share.visit_lanes(|item, lane| fold(item, &mut lanes[lane])) };
        for lane in lanes {
            reducer.join(acc, lane);
        }
    } else {
        // SAFETY: the caller's contract.
        unsafe { share.visit(|item| fold(item, acc)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The indices and lanes a visit of `range` hands out, in order.
    fn lanes_of(range: Range<usize>) -> Vec<(usize, usize)> {
        let mut seen = Vec::new();
        // SAFETY: the range is this call's alone; the tokens do not leave the closure.
        unsafe { range.visit_lanes(|i, lane| seen.push((*i, lane))) };
        seen
    }

    #[test]
    fn lanes_visit_every_index_once_in_order() {
        for (start, len) in [(0, 0), (3, 1), (0, 4), (5, 7), (2, 9), (1, 33)] {
            let seen = lanes_of(start..start + len);
            let indices: Vec<usize> = seen.iter().map(|&(i, _)| i).collect();
            assert_eq!(indices, (start..start + len).collect::<Vec<_>>());
            assert!(seen.iter().all(|&(_, lane)| lane < LANES));
            // Whole groups of LANES points use every lane once; the rest go to lane 0.
            let groups = len / LANES;
            for (k, &(_, lane)) in seen.iter().enumerate() {
                let expected = if k < groups * LANES { k % LANES } else { 0 };
                assert_eq!(lane, expected, "point {k} of {start}..{}", start + len);
            }
        }
    }
}
