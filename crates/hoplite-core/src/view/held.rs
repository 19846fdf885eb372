//! Borrows held by a runtime that orders launches itself, and allocation identity; public
//! through [`crate::held`], whose documentation explains them.

use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::alloc::TrackedAllocation;
use crate::view::borrow::BorrowId;
use crate::view::{AccessKind, Footprint, View, ViewValue};

/// A borrow of one view's elements for one access kind, held on behalf of handles that hold
/// none of their own ([`GroupedHandle::into_held`]), outside any group or in a
/// [`BorrowGroup`]. Dropping it ends the borrow; forgetting it leaves the elements borrowed,
/// which is never unsound.
///
/// Outside a group, a whole-allocation borrow is counted in the allocation's borrow word,
/// where handles of the same kind made meanwhile (`x.read()` while the holder reads `x`) take
/// and end their own borrows without a lock; a holder that needs a conflicting borrow of the
/// allocation as well moves this one into its group first ([`into_group`](Self::into_group)).
///
/// ```
/// use hoplite_core::View;
/// use hoplite_core::held::{BorrowGroup, GroupedHandle};
/// let x: View<f64, 1> = View::new("x", [4])?;
/// let group = BorrowGroup::new();
/// let mut held = None;
/// // SAFETY: the handles are only held, never used, and dropped before `held`.
/// let (a, b) = unsafe { (x.write().into_held(&group, &mut held), x.write().into_held(&group, &mut held)) };
/// assert!(a.conflict().is_none() && b.conflict().is_none(), "both rely on one borrow");
/// drop((a, b));
/// assert!(x.host_read().is_err(), "the held borrow keeps the host out");
/// drop(held);
/// assert!(x.host_read().is_ok());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct HeldBorrow {
    owner: Arc<dyn ReleaseBorrow>,
    id: BorrowId,
    /// The group it is in, if any.
    group: Option<u64>,
    allocation: AllocationKey,
    kind: AccessKind,
    footprint: Footprint,
}

/// The allocation a held borrow came from, whatever its memory space.
trait ReleaseBorrow: Send + Sync {
    fn release_borrow(&self, id: &BorrowId);
    fn regroup_borrow(
        &self,
        id: BorrowId,
        kind: AccessKind,
        footprint: &Footprint,
        group: u64,
    ) -> Result<BorrowId>;
}

impl<S: MemorySpace> ReleaseBorrow for TrackedAllocation<S> {
    fn release_borrow(&self, id: &BorrowId) {
        self.release(id);
    }
    fn regroup_borrow(
        &self,
        id: BorrowId,
        kind: AccessKind,
        footprint: &Footprint,
        group: u64,
    ) -> Result<BorrowId> {
        self.regroup(id, kind, footprint, group)
    }
}

impl HeldBorrow {
    /// The borrow `id` of `view`'s elements for `kind`, granted in `group` or outside any.
    pub(crate) fn new<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
        view: &View<T, R, L, S>,
        kind: AccessKind,
        id: BorrowId,
        group: Option<u64>,
    ) -> Self {
        HeldBorrow {
            owner: view.alloc.clone(),
            id,
            group,
            allocation: view.allocation_key(),
            kind,
            footprint: view.footprint(),
        }
    }

    /// Whether it is a borrow of exactly `view`'s elements for `kind`.
    pub(crate) fn covers<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
        &self,
        view: &View<T, R, L, S>,
        kind: AccessKind,
    ) -> bool {
        self.allocation == view.allocation_key() && self.kind == kind && self.footprint == view.footprint
    }

    /// The allocation it borrows.
    pub fn allocation(&self) -> AllocationKey {
        self.allocation
    }

    /// The access kind it borrows for.
    pub fn kind(&self) -> AccessKind {
        self.kind
    }

    /// The elements it borrows.
    pub fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    /// Moves the borrow into `group`, in one step (see [`GroupedHandle::into_group`]): from
    /// then on it is checked against every borrow outside the group and against none inside
    /// it. A borrow in a group already stays there.
    ///
    /// # Errors
    ///
    /// Only for a borrow the allocation no longer knows (never for one this value holds,
    /// which the allocation keeps until it is dropped).
    ///
    /// # Safety
    ///
    /// As for [`GroupedHandle::new_in`]: the caller never lets two conflicting handles of
    /// `group` be used at the same time, the handles relying on this borrow among them.
    pub unsafe fn into_group(&mut self, group: &BorrowGroup) -> Result<()> {
        if self.group.is_some() {
            return Ok(());
        }
        // Empty while it moves: should the move fail, the drop ends nothing twice.
        let id = std::mem::replace(&mut self.id, BorrowId::Empty);
        self.id = self
            .owner
            .regroup_borrow(id, self.kind, &self.footprint, group.id())?;
        self.group = Some(group.id());
        Ok(())
    }

    /// Whether it is in a group.
    pub fn is_grouped(&self) -> bool {
        self.group.is_some()
    }

    /// Whether a view of the allocation is left anywhere (the borrow keeps the allocation
    /// alive, not a view of it). Once none is, nobody can ask for its elements again: a
    /// runtime may end the borrow as soon as its handles are gone, and free the memory.
    pub fn has_views(&self) -> bool {
        // Only views and held borrows own the allocation, and this one's reference is never
        // cloned: a count of one cannot grow again.
        Arc::strong_count(&self.owner) > 1
    }
}

impl Drop for HeldBorrow {
    fn drop(&mut self) {
        self.owner.release_borrow(&self.id);
    }
}

impl fmt::Debug for HeldBorrow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldBorrow")
            .field("allocation", &self.allocation)
            .field("kind", &self.kind)
            .field("footprint", &self.footprint)
            .finish()
    }
}

/// The identity of one allocation (all views made from it, subviews included, share it).
///
/// Two keys are equal exactly when they were taken from views of the same allocation. Keys are
/// never reused, even after every view of an allocation is gone, so a key kept past its views
/// (a failed launch's record, a data location) never names a later allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllocationKey(u64);

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    /// The key of the allocation this view uses (see [`AllocationKey`]).
    ///
    /// ```
    /// use hoplite_core::{Slice, View};
    /// let m: View<f64, 2> = View::new("m", [4, 5])?;
    /// let row: View<f64, 1> = m.subview([Slice::Index(2), Slice::All])?;
    /// let other: View<i32, 1> = View::new("other", [3])?;
    /// assert_eq!(m.allocation_key(), row.allocation_key());
    /// assert_ne!(m.allocation_key(), other.allocation_key());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn allocation_key(&self) -> AllocationKey {
        AllocationKey(self.alloc.id())
    }

    /// The view's label, shared with the allocation (no copy): for front ends that keep a
    /// label per recorded access.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// assert_eq!(&*x.shared_label(), "x");
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn shared_label(&self) -> std::sync::Arc<str> {
        self.alloc.label().clone()
    }
}

/// A set of borrows that are checked against every borrow outside the set and against none
/// inside it (see the [module documentation](crate::held)). Each group is distinct from every other
/// group of the process; making one is harmless, only the `unsafe` constructors of handles in
/// a group ([`GroupedHandle::new_in`]) carry an obligation.
///
/// ```
/// use hoplite_core::{View, Writer};
/// use hoplite_core::held::{BorrowGroup, GroupedHandle};
/// let x: View<f64, 1> = View::new("x", [4])?;
/// let group = BorrowGroup::new();
/// // SAFETY: the two writers are never used (they are only held).
/// let (a, b) = unsafe { (Writer::new_in(&x, &group), Writer::new_in(&x, &group)) };
/// assert!(a.conflict().is_none() && b.conflict().is_none());
/// assert!(x.host_read().is_err(), "the group's writers keep the host out");
/// drop((a, b));
/// assert!(x.host_read().is_ok());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BorrowGroup(NonZeroU64);

impl BorrowGroup {
    /// A new group, distinct from every other.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        // 2^64 groups cannot be made in the life of a process; a wrap would be the only way
        // to reach 0, and it would also repeat group ids, so refuse it.
        BorrowGroup(NonZeroU64::new(id).expect("borrow group ids exhausted"))
    }

    pub(crate) fn id(&self) -> u64 {
        self.0.get()
    }
}

impl Default for BorrowGroup {
    fn default() -> Self {
        Self::new()
    }
}

/// The runtime hooks of the access handles ([`Reader`](crate::Reader),
/// [`Lookup`](crate::Lookup), [`Writer`](crate::Writer), [`TeamSlots`](crate::TeamSlots),
/// [`AtomicHandle`](crate::AtomicHandle)): making a handle in a [`BorrowGroup`], and moving a
/// handle's borrow into a group or a [`HeldBorrow`]. A runtime that orders launches itself
/// (the implicit DAG, through the core's `held::RecordedArgs`) uses them; kernels and eager
/// launches never do, which is why they are not methods of the handles themselves.
///
/// Sealed: only the core's handles implement it, since runtimes rely on what its methods do to
/// the allocation's borrow table (a handle made or moved here keeps its elements borrowed
/// against everything outside the group).
pub trait GroupedHandle: Sized + sealed::Sealed {
    /// The view the handle borrows.
    type View;

    /// A handle of `view` in `group`: as the view's constructor of this kind
    /// ([`read`](View::read), [`lookup`](View::lookup), [`write`](View::write),
    /// [`team_slots`](View::team_slots), [`atomic`](View::atomic)), but not checked against the
    /// group's other handles.
    ///
    /// ```
    /// use hoplite_core::{AtomicHandle, TeamSlots, View};
    /// use hoplite_core::held::{BorrowGroup, GroupedHandle};
    /// let x: View<u32, 2> = View::new("x", [2, 2])?;
    /// let group = BorrowGroup::new();
    /// // SAFETY: the handles are only held, never used.
    /// let (s, a) = unsafe { (TeamSlots::new_in(&x, &group), AtomicHandle::new_in(&x, &group)) };
    /// assert!(s.conflict().is_none() && a.conflict().is_none(), "one group: not checked");
    /// assert!(x.read().conflict().is_some(), "checked against borrows outside the group");
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// Handles of one group are not checked against each other. The caller guarantees that no
    /// two handles of `group` whose footprints overlap, one of them a writer (or one a reader
    /// and the other an atomic handle), are ever used at the same time: every use of one
    /// happens before every use of the other (a kernel using one has returned, and that return
    /// is synchronized with the start of the kernel using the other).
    unsafe fn new_in(view: &Self::View, group: &BorrowGroup) -> Self;

    /// The handle, its borrow moved into `group`: checked from now on against every borrow
    /// outside the group and against none inside it, as if made with
    /// [`new_in`](Self::new_in), but in one step and without ending the borrow meanwhile. A
    /// handle whose borrow was refused asks for it anew in the group (and carries the conflict
    /// if that is refused too). A runtime that accepts a launch's handles keeps them this way
    /// instead of borrowing the views a second time.
    ///
    /// ```
    /// use hoplite_core::{View, Writer};
    /// use hoplite_core::held::{BorrowGroup, GroupedHandle};
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let group = BorrowGroup::new();
    /// // SAFETY: the handles are only held, never used.
    /// let (r, w) = unsafe { (x.read().into_group(&group), Writer::new_in(&x, &group)) };
    /// assert!(r.conflict().is_none() && w.conflict().is_none(), "one group: not checked");
    /// assert!(x.host_read().is_err(), "the group keeps the host out");
    /// drop((r, w));
    /// assert!(x.host_write().is_ok());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// As for [`new_in`](Self::new_in): the caller never lets two conflicting handles of
    /// `group` be used at the same time.
    unsafe fn into_group(self, group: &BorrowGroup) -> Self;

    /// The handle, relying on `held` for its borrow instead of holding one: if `held` holds a
    /// borrow already (which must be of this handle's allocation, elements and access kind: a
    /// panic otherwise), the handle's own borrow ends; if not, the handle's borrow moves into
    /// `held` as it is (outside the group: see [`HeldBorrow::into_group`]), or, if it was
    /// refused, is asked for anew in `group` and goes there. The handle returned holds no
    /// borrow of its own, and dropping it ends nothing. A borrow refused by the group too stays
    /// the handle's conflict, and `held` stays empty.
    ///
    /// A runtime that keeps one `HeldBorrow` per view and kind for all its pending launches
    /// borrows each view once, however many launches use it, and ends no borrow when a launch
    /// ends.
    ///
    /// # Safety
    ///
    /// As for `into_group`; and the caller keeps `held`'s borrow (does not drop the
    /// `HeldBorrow`) until no use of the handle returned can follow (dropping it is none: it
    /// ends nothing).
    unsafe fn into_held(self, group: &BorrowGroup, held: &mut Option<HeldBorrow>) -> Self;
}

/// The seal of [`GroupedHandle`]: public inside a module the crate does not export, so only
/// the core can implement it.
pub(crate) mod sealed {
    /// Implemented by the core's access handles only.
    pub trait Sealed {}
}
