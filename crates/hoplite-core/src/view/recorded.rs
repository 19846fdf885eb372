//! Launches a runtime records rather than runs at once: the accesses they make ([`Access`])
//! and the launch arguments that can be detached to their views and attached afresh
//! ([`RecordedArgs`]). Explicit graphs and the implicit DAG both build on it; the items are
//! public in [`held`](crate::held), the runtime module.

use std::sync::Arc;

use crate::error::Error;
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::access::{AtomicHandle, AtomicValue, LaunchArgs, Lookup, Reader, TeamSlots, Writer};
use crate::view::held::{AllocationKey, BorrowGroup, GroupedHandle, HeldBorrow};
use crate::view::{AccessKind, Footprint, View, ViewValue};

/// One access a recorded launch makes: which allocation, which part of it, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The allocation the view uses.
    pub allocation: AllocationKey,
    /// The elements of the allocation the view covers.
    pub footprint: Footprint,
    /// Read, write or atomic.
    pub kind: AccessKind,
    /// The view's label.
    pub view: Arc<str>,
    /// The bytes the view covers (its elements times their size): what moving it costs.
    pub bytes: usize,
    /// Where the view's memory is ([`MemorySpace::location`]: an accelerator's ordinal, `None`
    /// for host memory): where a runtime that places work by its data runs the launch.
    pub location: Option<usize>,
}

impl Access {
    /// Whether two accesses can touch one element in a conflicting way (the borrow rules: one
    /// writer, or many readers, or many atomic handles).
    pub fn conflicts_with(&self, other: &Access) -> bool {
        let compatible = matches!(
            (self.kind, other.kind),
            (AccessKind::Read, AccessKind::Read) | (AccessKind::Atomic, AccessKind::Atomic)
        );
        !compatible && self.allocation == other.allocation && self.footprint.overlaps(&other.footprint)
    }

    /// The first two of one launch's `accesses` that conflict, as the error an eager launch
    /// of the same handles gives (`(x.write(), x.read())` over overlapping elements). A
    /// runtime that moves a launch's handles into its own borrow group needs this: inside a
    /// group, borrows are not checked against each other.
    ///
    /// ```
    /// use hoplite_core::View;
    /// use hoplite_core::AccessKind;
    /// use hoplite_core::held::Access;
    ///
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let y: View<f64, 1> = View::new("y", [4])?;
    /// let write_x = Access::of_view(&x, AccessKind::Write);
    /// assert!(Access::conflict_within(&[write_x.clone(), Access::of_view(&y, AccessKind::Read)]).is_none());
    /// assert!(Access::conflict_within(&[write_x, Access::of_view(&x, AccessKind::Read)]).is_some());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn conflict_within(accesses: &[Access]) -> Option<Error> {
        accesses.iter().enumerate().find_map(|(k, later)| {
            accesses[..k]
                .iter()
                .find(|earlier| earlier.conflicts_with(later))
                .map(|earlier| Error::BorrowConflict {
                    label: later.view.to_string(),
                    kind: later.kind.noun(),
                    other_label: earlier.view.to_string(),
                    other_kind: earlier.kind.noun(),
                })
        })
    }

    /// The access `kind` makes to `view`.
    pub fn of_view<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
        view: &View<T, R, L, S>,
        kind: AccessKind,
    ) -> Self {
        Access {
            allocation: view.allocation_key(),
            footprint: view.footprint(),
            kind,
            view: view.shared_label(),
            bytes: view.len().saturating_mul(std::mem::size_of::<T>()),
            location: view.space().location(),
        }
    }
}

/// Where a runtime keeps the borrows it holds for the handles of its launches
/// ([`RecordedArgs::into_held`]): one slot per allocation, elements and access kind.
pub trait HeldBorrows {
    /// The slot for a handle's borrow of `footprint` of `allocation` for `kind`: empty, or
    /// holding a borrow of exactly those elements for that kind.
    fn slot(
        &mut self,
        allocation: AllocationKey,
        kind: AccessKind,
        footprint: &Footprint,
    ) -> &mut Option<HeldBorrow>;
}

/// Launch arguments a runtime records instead of running them at once — a graph node's, an
/// implicit-DAG vertex's (a handle or a tuple of up to eight).
///
/// A recorded launch keeps the *views* of its handles, not the handles: handles hold borrows,
/// and a graph that held them for its whole life would keep the host from reading results
/// between submits. Each run makes fresh handles ([`attach`](Self::attach)), so borrows are
/// held exactly while the kernel runs, as for an eager launch; a runtime that orders launches
/// itself holds them in a [`BorrowGroup`] or as [`HeldBorrow`]s instead.
///
/// ```
/// use hoplite_core::held::{Access, RecordedArgs};
/// use hoplite_core::{AccessKind, View};
///
/// /// What a runtime does with a launch's handles: keeps their views, lists their accesses,
/// /// and makes them afresh when the launch runs.
/// fn record_and_rerun<A: RecordedArgs>(handles: A) -> (Vec<Access>, A) {
///     let views = handles.detach();
///     let mut accesses = Vec::new();
///     A::record(&views, &mut accesses);
///     (accesses, A::attach(&views))
/// }
///
/// let x: View<f64, 1> = View::new("x", [4])?;
/// let y: View<f64, 1> = View::new("y", [4])?;
/// let (accesses, fresh) = record_and_rerun((y.write(), x.read()));
/// assert_eq!(accesses, [Access::of_view(&y, AccessKind::Write), Access::of_view(&x, AccessKind::Read)]);
/// assert!(fresh.conflict().is_none(), "fresh borrows for this run");
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be handed to a recorded launch (a graph node or a DAG vertex)",
    label = "expected view handles such as `(y.write(), x.read())`",
    note = "graph nodes and DAG vertices take the same handles as eager launches: `read()`, `write()`, `lookup()`, `atomic()` or `team_slots()` of views"
)]
pub trait RecordedArgs: LaunchArgs + Sized + 'static {
    /// The views and access kinds, without borrows.
    type Views: Send + Sync + 'static;
    /// Gives up the handles (and their borrows), keeping their views.
    fn detach(self) -> Self::Views;
    /// Makes fresh handles of the same kinds (new borrows; a conflict is carried by the handle
    /// and reported when the launch prepares it).
    fn attach(views: &Self::Views) -> Self;
    /// Appends the accesses the handles make.
    fn record(views: &Self::Views, out: &mut Vec<Access>);
    /// Makes handles of the same kinds in borrow `group`: checked against every borrow
    /// outside the group, not against the group's other handles (see
    /// [`BorrowGroup`](BorrowGroup)). A runtime that orders
    /// launches itself holds them from the moment it accepts a launch until the launch ends.
    ///
    /// # Safety
    ///
    /// As for [`GroupedHandle::new_in`]: the caller never lets two conflicting handles of
    /// `group` be used at the same time.
    unsafe fn attach_in(views: &Self::Views, group: &BorrowGroup) -> Self;
    /// The handles with their borrows moved into `group` (a refused one is asked for anew in
    /// the group): what [`attach_in`](Self::attach_in) gives for the handles' views, without
    /// borrowing them a second time.
    ///
    /// # Safety
    ///
    /// As for [`attach_in`](Self::attach_in).
    unsafe fn into_group(self, group: &BorrowGroup) -> Self;
    /// The handles relying on borrows `held` keeps ([`GroupedHandle::into_held`], with the
    /// slot `held` gives for each handle's view and kind), holding none of their own. The
    /// default, for handles that cannot, is [`into_group`](Self::into_group).
    ///
    /// # Safety
    ///
    /// As for [`into_group`](Self::into_group); and the caller keeps every borrow a slot
    /// holds after the call until no use of the handles returned can follow (dropping them is
    /// none).
    unsafe fn into_held(self, group: &BorrowGroup, held: &mut dyn HeldBorrows) -> Self {
        let _ = held;
        // SAFETY: the caller's contract includes `into_group`'s.
        unsafe { self.into_group(group) }
    }
    /// The first borrow conflict among the handles, if any (a handle refused its borrow).
    fn conflict(&self) -> Option<&Error>;
    /// Appends the accesses the handles make, from the handles themselves.
    fn record_handles(&self, out: &mut Vec<Access>);
}

impl RecordedArgs for () {
    type Views = ();
    fn detach(self) {}
    fn attach(_views: &()) {}
    fn record(_views: &(), _out: &mut Vec<Access>) {}
    unsafe fn attach_in(_views: &(), _group: &BorrowGroup) {}
    unsafe fn into_group(self, _group: &BorrowGroup) {}
    unsafe fn into_held(self, _group: &BorrowGroup, _held: &mut dyn HeldBorrows) {}
    fn conflict(&self) -> Option<&Error> {
        None
    }
    fn record_handles(&self, _out: &mut Vec<Access>) {}
}

/// `RecordedArgs` for one handle type: `[impl generics] handle type, views type, the view's
/// method that makes the handle, its access kind`.
macro_rules! handle_args {
    ([$($generics:tt)*] $handle:ty, $views:ty, $make:ident, $kind:expr) => {
        impl<$($generics)*> RecordedArgs for $handle {
            type Views = $views;
            fn detach(self) -> Self::Views {
                self.view().clone()
            }
            fn attach(views: &Self::Views) -> Self {
                views.$make()
            }
            fn record(views: &Self::Views, out: &mut Vec<Access>) {
                out.push(Access::of_view(views, $kind));
            }
            unsafe fn attach_in(views: &Self::Views, group: &BorrowGroup) -> Self {
                // SAFETY: the caller's contract is that of `GroupedHandle::new_in`.
                unsafe { <Self as GroupedHandle>::new_in(views, group) }
            }
            unsafe fn into_group(self, group: &BorrowGroup) -> Self {
                // SAFETY: the caller's contract is that of `GroupedHandle::into_group`.
                unsafe { <Self as GroupedHandle>::into_group(self, group) }
            }
            unsafe fn into_held(self, group: &BorrowGroup, held: &mut dyn HeldBorrows) -> Self {
                let view = self.view();
                let slot = held.slot(view.allocation_key(), $kind, &view.footprint());
                // SAFETY: the caller's contract is that of `into_held`.
                unsafe { <Self as GroupedHandle>::into_held(self, group, slot) }
            }
            fn conflict(&self) -> Option<&Error> {
                <$handle>::conflict(self)
            }
            fn record_handles(&self, out: &mut Vec<Access>) {
                out.push(Access::of_view(self.view(), $kind));
            }
        }
    };
}

handle_args!([T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Reader<T, R, L, S>, View<T, R, L, S>, read, AccessKind::Read);
handle_args!([T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Lookup<T, R, L, S>, View<T, R, L, S>, lookup, AccessKind::Read);
handle_args!([T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Writer<T, R, L, S>, View<T, R, L, S>, write, AccessKind::Write);
handle_args!([T: ViewValue, L: ArrayLayout, S: MemorySpace]
    TeamSlots<T, L, S>, View<T, 2, L, S>, team_slots, AccessKind::Write);
// Of views in any memory space, as for the other handles: a launch binds the atomic handles of
// device views too (only a host node's guards need the host to reach the memory).
handle_args!([T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    AtomicHandle<T, R, L, S>, View<T, R, L, S>, atomic, AccessKind::Atomic);

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: RecordedArgs),+> RecordedArgs for ($($name,)+) {
            type Views = ($($name::Views,)+);
            fn detach(self) -> Self::Views {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                ($($name.detach(),)+)
            }
            fn attach(views: &Self::Views) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                ($(<$name as RecordedArgs>::attach($name),)+)
            }
            fn record(views: &Self::Views, out: &mut Vec<Access>) {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                $(<$name as RecordedArgs>::record($name, out);)+
            }
            unsafe fn attach_in(views: &Self::Views, group: &BorrowGroup) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as RecordedArgs>::attach_in($name, group) },)+)
            }
            unsafe fn into_group(self, group: &BorrowGroup) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as RecordedArgs>::into_group($name, group) },)+)
            }
            unsafe fn into_held(self, group: &BorrowGroup, held: &mut dyn HeldBorrows) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as RecordedArgs>::into_held($name, group, held) },)+)
            }
            fn conflict(&self) -> Option<&Error> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                None$(.or_else(|| <$name as RecordedArgs>::conflict($name)))+
            }
            fn record_handles(&self, out: &mut Vec<Access>) {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                $(<$name as RecordedArgs>::record_handles($name, out);)+
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
