//! # hoplite-core
//!
//! The concepts of hoplite as Rust traits with documented axioms, plus the policies,
//! reducers, iteration tokens and dispatch functions every backend shares.
//!
//! | Concept (Kokkos)   | hoplite                                                         |
//! |--------------------|-----------------------------------------------------------------|
//! | `ExecutionSpace`   | [`ExecutionSpace`] (+ dispatch traits [`ParallelFor`], ...)     |
//! | `MemorySpace`      | [`MemorySpace`], [`MemorySpaceAccess`], [`HostSpace`]           |
//! | `ExecutionPolicy`  | [`ExecutionPolicy`]: [`RangePolicy`], [`MDRangePolicy`], [`TeamPolicy`] |
//! | `TeamMember`       | [`TeamMember`], [`TeamThreadRange`], [`ThreadVectorRange`], [`TeamVectorRange`] |
//! | `Reducer`          | [`Reducer`] and the built-ins ([`Sum`], [`MinLoc`], ...)        |
//! | `UniqueToken`      | [`UniqueToken`], [`UniqueTokenSpace`]                           |
//! | `MemoryLayout`     | [`ArrayLayout`]: [`LayoutRight`], [`LayoutLeft`]                |
//! | Functor            | closures `for<'it> Fn(P::Item<'it>, ..)` taking an [`Idx`] token |
//!
//! Applications usually depend on the facade crate `hoplite`, which re-exports all of this,
//! picks a default execution space from the enabled backends and accepts plain `usize`
//! ranges. Backend authors implement the traits here; `docs/concepts.md` states every axiom.
//!
//! ```
//! use hoplite_core::{parallel_reduce, RangePolicy, Sum};
//! use hoplite_serial::Serial;
//! let x: Vec<f64> = (0..1000).map(|i| i as f64).collect();
//! let total = parallel_reduce("sum", RangePolicy::new(Serial::default(), 0..x.len()),
//!     |i, acc| *acc += x[*i], Sum::<f64>::new())?;
//! assert_eq!(total, 499_500.0);
//! # Ok::<(), hoplite_core::Error>(())
//! ```

// One path per item: the concepts live in private modules and are re-exported here, at the
// crate root, deliberately; the public modules are namespaces of their own (what device
// backends, runtimes and tools use), whose items are not also at the root.
pub mod device_kernel;
mod dispatch;
pub mod dot;
mod error;
mod index;
mod kernel_token;
pub mod loom_locks;
mod parallel_copy;
pub mod point_loop;
mod policy;
pub mod profiling;
mod reducer;
mod space;
mod sync_prims;
mod team;
mod unique_token;
mod view;

pub mod held {
    //! Hooks for runtimes that order launches themselves (the implicit DAG, explicit graphs):
    //! recorded launches, the allocation identity they compare accesses by, borrow groups and
    //! held borrows — what such a runtime needs from views beyond the handles of an eager
    //! launch.
    //!
    //! **Allocation identity.** A front end that records launches instead of running them keeps a
    //! node's views and access kinds ([`AccessKind`](crate::AccessKind)) rather than its handles, and makes fresh
    //! handles each time the node runs. To tell whether two recorded accesses touch the same
    //! memory it needs to compare allocations across views of any element type, rank and layout,
    //! which [`View::same_allocation`](crate::View::same_allocation) cannot do once the views are type-erased.
    //! [`View::allocation_key`](crate::View::allocation_key) gives a plain key for that; together
    //! with [`View::footprint`](crate::View::footprint) it
    //! says exactly which elements two accesses share.
    //!
    //! **Borrow groups.** The DAG runtime must also keep the views of launches it has accepted but
    //! not yet finished borrowed — so that the host cannot touch them behind its back — while the
    //! launches' own borrows overlap. A [`BorrowGroup`] does that: the handles made in one group
    //! ([`GroupedHandle::new_in`]) or moved into it ([`GroupedHandle::into_group`]) are checked
    //! against every borrow outside the group and against none inside it; the runtime promises,
    //! by calling those `unsafe fn`s, to order the group's conflicting handles itself.
    //!
    //! **Held borrows.** Such a runtime can also hold one borrow per view and access kind for all
    //! its pending launches ([`HeldBorrow`]) and give it to each launch's handles
    //! ([`GroupedHandle::into_held`]), which then hold none of their own: the view is borrowed once
    //! for as long as launches use it, and a launch's end touches no borrow table.
    //!
    //! **Recorded launches.** A runtime keeps a launch's handles as their views
    //! ([`RecordedArgs::detach`]), lists the accesses they make ([`Access`]) to order launches by
    //! their data, and makes handles afresh for each run, in a group or on held borrows.
    //!
    //! **Runtime hooks.** These operations on handles are the methods of [`GroupedHandle`], a trait
    //! of this module, so that the handles' own documentation shows only what kernels and users
    //! do with them; a runtime imports the trait.

    pub use crate::view::held::{AllocationKey, BorrowGroup, GroupedHandle, HeldBorrow};
    pub use crate::view::recorded::{Access, HeldBorrows, RecordedArgs};
}

pub use dispatch::{
    ForKernel, FullSpace, IntoLaunch, LaunchSpace, LaunchSpec, ParallelFor, ParallelReduce, ParallelScan,
    ReduceInto, ReduceKernel, ScanKernel, ValidatedPolicy, parallel_for, parallel_for_validated,
    parallel_reduce, parallel_reduce_into, parallel_reduce_validated, parallel_scan, parallel_scan_validated,
};
pub use error::{Error, IoError, Result, RuntimeError, drop_panic_payload};
pub use index::{Idx, IndexBounds, LeagueIdx, LeagueToken, MdIdx, TeamIdx, TeamSlotIdx, team_owner};
#[doc(hidden)]
pub use kernel_token::device_token_on_host;
pub use kernel_token::{DeviceUniqueToken, KernelToken, KernelTokenSpace, NoHostToken};
/// Complex numbers (the `num-complex` crate): views hold them, `Sum`/`Prod` reduce them and
/// atomic handles update them under the lock table.
pub use num_complex::{self, Complex};
pub use parallel_copy::deep_copy_on;
pub use policy::{
    DEFAULT_LINE_TILE, ExecutionPolicy, IntoPolicy, IterationOrder, MAX_MDRANGE_RANK, MDRangePolicy, MdBound,
    PerTeam, PerThread, RangePolicy, SCRATCH_LEVELS, Schedule, TeamPolicy, TeamSize, TileShare, Tiling,
    VectorLength, for_each_point,
};
pub use reducer::*;
pub use space::{
    AllocationRecord, AllocationRecords, ArrayLayout, ExecutionSpace, HostAccessibleSpace, HostSpace,
    LayoutLeft, LayoutRight, LayoutStride, MAX_PARTITIONS, MemorySpace, MemorySpaceAccess,
    SpaceAccessibility, check_partition_count,
};
pub use team::{
    NestedBounds, NestedLevel, ScratchBuffer, ScratchElement, ScratchPad, ScratchSlice, TeamMember,
    TeamThreadRange, TeamVectorRange, ThreadVectorRange,
};
pub use unique_token::{
    PreferredId, TeamTokenGuard, TokenGuard, TokenPool, UniqueToken, UniqueTokenSpace, lease_rank_id,
    prefer_id, return_parked_id,
};
pub use view::access::{
    BoundAtomic, PreparedAtomic, PreparedReader, PreparedScatter, PreparedWriter, ReadIndex, Token,
};
pub use view::{
    AccessKind, AccessibleArgs, AtomicHandle, AtomicValue, BoundLookup, BoundReader, BoundScatter,
    BoundTeamSlots, BoundWriter, Footprint, HostRead, HostWrite, LaunchArgs, LockedAtomic, LockedCell,
    Lookup, MAX_VIEW_RANK, PlaneRow, Reader, RowReader, ScatterAccess, ScatterMax, ScatterMin, ScatterOp,
    ScatterProd, ScatterSum, ScatterView, Slice, TeamPlane, TeamRow, TeamSlots, View, ViewIndex, ViewValue,
    Writer, create_mirror_view, create_mirror_view_and_copy, deep_copy, deep_copy_fill,
};
