//! What a graph node records about its launch: the views and intents of its handles (made
//! afresh each time the node runs) and a policy it can move to another instance.

use std::sync::Arc;

use hoplite_core::held::{AllocationKey, BorrowGroup, GroupedHandle, HeldBorrow};
use hoplite_core::{AccessKind, Footprint};
use hoplite_core::{
    ArrayLayout, AtomicHandle, AtomicValue, ExecutionPolicy, ExecutionSpace, HostAccessibleSpace, HostRead,
    HostWrite, IterationOrder, LaunchArgs, LaunchSpec, Lookup, MDRangePolicy, MemorySpace, RangePolicy,
    Reader, TeamPolicy, TeamSlots, View, ViewValue, Writer,
};

/// One access a node makes: which allocation, which part of it, and how.
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
    /// use hoplite_graph::Access;
    ///
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let y: View<f64, 1> = View::new("y", [4])?;
    /// let write_x = Access::of_view(&x, AccessKind::Write);
    /// assert!(Access::conflict_within(&[write_x.clone(), Access::of_view(&y, AccessKind::Read)]).is_none());
    /// assert!(Access::conflict_within(&[write_x, Access::of_view(&x, AccessKind::Read)]).is_some());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn conflict_within(accesses: &[Access]) -> Option<hoplite_core::Error> {
        accesses.iter().enumerate().find_map(|(k, later)| {
            accesses[..k]
                .iter()
                .find(|earlier| earlier.conflicts_with(later))
                .map(|earlier| hoplite_core::Error::BorrowConflict {
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
/// ([`GraphArgs::into_held`]): one slot per allocation, elements and access kind.
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

/// The handles of a graph node's launch (a handle or a tuple of up to eight).
///
/// A node keeps the *views* of its handles, not the handles: handles hold borrows, and a graph
/// that held them for its whole life would keep the host from reading results between
/// submits. Each run of the node makes fresh handles ([`attach`](Self::attach)), so borrows
/// are held exactly while the node's kernel runs, as for an eager launch.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be handed to a graph node",
    label = "expected view handles such as `(y.write(), x.read())`",
    note = "graph nodes take the same handles as eager launches: `read()`, `write()`, `lookup()`, `atomic()` or `team_slots()` of views"
)]
pub trait GraphArgs: LaunchArgs + Sized + 'static {
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
    /// [`BorrowGroup`](hoplite_core::held::BorrowGroup)). A runtime that orders
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
    fn conflict(&self) -> Option<&hoplite_core::Error>;
    /// Appends the accesses the handles make, from the handles themselves.
    fn record_handles(&self, out: &mut Vec<Access>);
}

impl GraphArgs for () {
    type Views = ();
    fn detach(self) {}
    fn attach(_views: &()) {}
    fn record(_views: &(), _out: &mut Vec<Access>) {}
    unsafe fn attach_in(_views: &(), _group: &BorrowGroup) {}
    unsafe fn into_group(self, _group: &BorrowGroup) {}
    unsafe fn into_held(self, _group: &BorrowGroup, _held: &mut dyn HeldBorrows) {}
    fn conflict(&self) -> Option<&hoplite_core::Error> {
        None
    }
    fn record_handles(&self, _out: &mut Vec<Access>) {}
}

macro_rules! handle_args {
    ($handle:ident, $bound:ident, $space:ident, $make:ident, $kind:expr) => {
        impl<T: $bound, const R: usize, L: ArrayLayout, S: $space> GraphArgs for $handle<T, R, L, S> {
            type Views = View<T, R, L, S>;
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
            fn conflict(&self) -> Option<&hoplite_core::Error> {
                $handle::conflict(self)
            }
            fn record_handles(&self, out: &mut Vec<Access>) {
                out.push(Access::of_view(self.view(), $kind));
            }
        }
    };
}

handle_args!(Reader, ViewValue, MemorySpace, read, AccessKind::Read);
handle_args!(Lookup, ViewValue, MemorySpace, lookup, AccessKind::Read);
handle_args!(Writer, ViewValue, MemorySpace, write, AccessKind::Write);

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> GraphArgs for TeamSlots<T, L, S> {
    type Views = View<T, 2, L, S>;
    fn detach(self) -> Self::Views {
        self.view().clone()
    }
    fn attach(views: &Self::Views) -> Self {
        views.team_slots()
    }
    fn record(views: &Self::Views, out: &mut Vec<Access>) {
        out.push(Access::of_view(views, AccessKind::Write));
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
        let slot = held.slot(view.allocation_key(), AccessKind::Write, &view.footprint());
        // SAFETY: the caller's contract is that of `into_held`.
        unsafe { <Self as GroupedHandle>::into_held(self, group, slot) }
    }
    fn conflict(&self) -> Option<&hoplite_core::Error> {
        TeamSlots::conflict(self)
    }
    fn record_handles(&self, out: &mut Vec<Access>) {
        out.push(Access::of_view(self.view(), AccessKind::Write));
    }
}
// Of views in any memory space, as for the other handles: a launch binds the atomic handles of
// device views too (only a host node's guards need the host to reach the memory).
handle_args!(AtomicHandle, AtomicValue, MemorySpace, atomic, AccessKind::Atomic);

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: GraphArgs),+> GraphArgs for ($($name,)+) {
            type Views = ($($name::Views,)+);
            fn detach(self) -> Self::Views {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                ($($name.detach(),)+)
            }
            fn attach(views: &Self::Views) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                ($(<$name as GraphArgs>::attach($name),)+)
            }
            fn record(views: &Self::Views, out: &mut Vec<Access>) {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                $(<$name as GraphArgs>::record($name, out);)+
            }
            unsafe fn attach_in(views: &Self::Views, group: &BorrowGroup) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as GraphArgs>::attach_in($name, group) },)+)
            }
            unsafe fn into_group(self, group: &BorrowGroup) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as GraphArgs>::into_group($name, group) },)+)
            }
            unsafe fn into_held(self, group: &BorrowGroup, held: &mut dyn HeldBorrows) -> Self {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                // SAFETY: the caller's contract covers every handle of the tuple.
                ($(unsafe { <$name as GraphArgs>::into_held($name, group, held) },)+)
            }
            fn conflict(&self) -> Option<&hoplite_core::Error> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                None$(.or_else(|| <$name as GraphArgs>::conflict($name)))+
            }
            fn record_handles(&self, out: &mut Vec<Access>) {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                $(<$name as GraphArgs>::record_handles($name, out);)+
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

/// A policy a graph node can run on another instance of its space (for
/// [`Graph::submit_on`](crate::Graph::submit_on)). Implemented for [`RangePolicy`],
/// [`MDRangePolicy`] and [`TeamPolicy`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a graph node's policy on `{S}`",
    label = "expected a RangePolicy, MDRangePolicy or TeamPolicy of the graph's space",
    note = "a graph runs every node on the graph's space instance; use a policy of that space (or a plain `usize` / range)"
)]
pub trait GraphPolicy<S: ExecutionSpace>: ExecutionPolicy<Space = S> + 'static {
    /// The same policy on `space`.
    fn on_instance(&self, space: &S) -> Self;

    /// The policy as a device backend lays out a launch over it.
    fn device_policy(&self) -> DevicePolicy<'_, S>;
}

/// A node's policy as a device backend that builds its own launches from the nodes (a CUDA
/// Graph) needs it: the iteration space, whatever the policy's rank.
#[derive(Debug)]
pub enum DevicePolicy<'p, S: ExecutionSpace> {
    /// A range policy.
    Range(&'p RangePolicy<S>),
    /// An MDRange policy: its box, its tiles and the orders it visits them in.
    MdRange {
        /// The first index per dimension.
        begin: Vec<usize>,
        /// One past the last index per dimension.
        end: Vec<usize>,
        /// The tile extents ([`MDRangePolicy::tiles`]).
        tiles: Vec<usize>,
        /// The order tiles are walked in ([`MDRangePolicy::outer_order`]).
        outer_order: IterationOrder,
        /// The order within a tile ([`MDRangePolicy::inner_order`]).
        inner_order: IterationOrder,
        /// Whether the walk is the box's nested loops in `inner_order`
        /// ([`MDRangePolicy::visits_in_nested_order`]): where a reducer that is not
        /// commutative may join in a device's order.
        nested_order: bool,
    },
    /// A team policy.
    Team(&'p TeamPolicy<S>),
}

impl<S: ExecutionSpace> GraphPolicy<S> for RangePolicy<S> {
    fn on_instance(&self, space: &S) -> Self {
        self.clone().with_space(space.clone())
    }
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::Range(self)
    }
}

impl<S: ExecutionSpace, const R: usize> GraphPolicy<S> for MDRangePolicy<S, R> {
    fn on_instance(&self, space: &S) -> Self {
        self.clone().with_space(space.clone())
    }
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::MdRange {
            begin: self.begin().to_vec(),
            end: self.end().to_vec(),
            tiles: self.tiles().to_vec(),
            outer_order: self.outer_order(),
            inner_order: self.inner_order(),
            nested_order: self.visits_in_nested_order(),
        }
    }
}

impl<S: ExecutionSpace> GraphPolicy<S> for TeamPolicy<S> {
    fn on_instance(&self, space: &S) -> Self {
        self.clone().with_space(space.clone())
    }
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::Team(self)
    }
}

/// A launch a graph node accepts: a [`GraphPolicy`] of the graph's space, alone or with
/// [`GraphArgs`] handles — the same shapes as an eager launch. Implemented for every such
/// [`LaunchSpec`].
pub trait GraphLaunch<S: ExecutionSpace>: LaunchSpec<Policy: GraphPolicy<S>, Args: GraphArgs> {}

impl<S: ExecutionSpace, L> GraphLaunch<S> for L where L: LaunchSpec<Policy: GraphPolicy<S>, Args: GraphArgs> {}

/// The handles of a host-function node ([`NodeRef::then_host_with`](crate::NodeRef::then_host_with)):
/// the same `read()`, `write()` and `atomic()` handles (or a tuple of up to eight) as a launch.
///
/// The node records their views and intents, so the race check at instantiation sees host
/// nodes too. Each run borrows the views for the call and hands the host function guards:
/// a reader becomes a [`HostRead`], a writer a [`HostWrite`] (any index, on the host), an
/// atomic handle stays an [`AtomicHandle`]. A borrow refused because a handle is held
/// elsewhere is the node's error, before the function runs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be handed to a host node",
    label = "expected view handles such as `(y.write(), x.read())`",
    note = "host nodes take the same handles as launches: `read()`, `write()` or `atomic()` of host views"
)]
pub trait HostArgs: GraphArgs {
    /// What the host function receives for the handles, borrowed for one call.
    type Guards<'h>;
    /// Borrows the views as the handles' intents say.
    ///
    /// # Errors
    ///
    /// [`hoplite_core::Error::BorrowConflict`] when a handle held elsewhere forbids the borrow.
    fn guards(views: &Self::Views) -> hoplite_core::Result<Self::Guards<'_>>;
}

impl HostArgs for () {
    type Guards<'h> = ();
    fn guards(_views: &()) -> hoplite_core::Result<()> {
        Ok(())
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> HostArgs for Reader<T, R, L, S> {
    type Guards<'h> = HostRead<'h, T, R, L, S>;
    fn guards(views: &Self::Views) -> hoplite_core::Result<Self::Guards<'_>> {
        views.host_read()
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> HostArgs for Writer<T, R, L, S> {
    type Guards<'h> = HostWrite<'h, T, R, L, S>;
    fn guards(views: &Self::Views) -> hoplite_core::Result<Self::Guards<'_>> {
        views.host_write()
    }
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> HostArgs
    for AtomicHandle<T, R, L, S>
{
    type Guards<'h> = AtomicHandle<T, R, L, S>;
    fn guards(views: &Self::Views) -> hoplite_core::Result<Self::Guards<'_>> {
        let handle = views.atomic();
        match handle.conflict() {
            Some(conflict) => Err(conflict.clone()),
            None => Ok(handle),
        }
    }
}

macro_rules! host_tuple_args {
    ($($name:ident),+) => {
        impl<$($name: HostArgs),+> HostArgs for ($($name,)+) {
            type Guards<'h> = ($($name::Guards<'h>,)+);
            fn guards(views: &Self::Views) -> hoplite_core::Result<Self::Guards<'_>> {
                #[allow(non_snake_case)]
                let ($($name,)+) = views;
                Ok(($(<$name as HostArgs>::guards($name)?,)+))
            }
        }
    };
}

host_tuple_args!(A);
host_tuple_args!(A, B);
host_tuple_args!(A, B, C);
host_tuple_args!(A, B, C, D);
host_tuple_args!(A, B, C, D, E);
host_tuple_args!(A, B, C, D, E, F);
host_tuple_args!(A, B, C, D, E, F, G);
host_tuple_args!(A, B, C, D, E, F, G, H);
