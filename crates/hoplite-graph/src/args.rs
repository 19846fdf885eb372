//! What a graph node's launch must be beyond an eager launch's: a policy a device backend
//! can lay out, handles the core can record ([`RecordedArgs`]), and the handles of host
//! nodes.

use hoplite_core::held::RecordedArgs;
use hoplite_core::{
    ArrayLayout, AtomicHandle, AtomicValue, ExecutionPolicy, ExecutionSpace, HostAccessibleSpace, HostRead,
    HostWrite, IterationOrder, LaunchSpec, MDRangePolicy, RangePolicy, Reader, TeamPolicy, ViewValue, Writer,
};

/// A policy a graph node can take: one a device backend can lay out as its own launch (moved
/// to another instance of the space with [`ExecutionPolicy::with_space`], as
/// [`Graph::submit_on`](crate::Graph::submit_on) does). Implemented for [`RangePolicy`],
/// [`MDRangePolicy`] and [`TeamPolicy`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a graph node's policy on `{S}`",
    label = "expected a RangePolicy, MDRangePolicy or TeamPolicy of the graph's space",
    note = "a graph runs every node on the graph's space instance; use a policy of that space (or a plain `usize` / range)"
)]
pub trait GraphPolicy<S: ExecutionSpace>: ExecutionPolicy<Space = S> + 'static {
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
        /// The desired occupancy ([`MDRangePolicy::desired_occupancy`]).
        occupancy: Option<u8>,
    },
    /// A team policy.
    Team(&'p TeamPolicy<S>),
}

impl<S: ExecutionSpace> DevicePolicy<'_, S> {
    /// The share of the device's resident blocks the launch may fill, in percent, if the
    /// policy asked for one (`with_desired_occupancy`).
    ///
    /// ```
    /// use hoplite_core::RangePolicy;
    /// use hoplite_graph::GraphPolicy;
    /// use hoplite_serial::Serial;
    /// let p = RangePolicy::new(Serial::default(), 0..64).with_desired_occupancy(40);
    /// assert_eq!(p.device_policy().desired_occupancy(), Some(40));
    /// ```
    pub fn desired_occupancy(&self) -> Option<u8> {
        match self {
            DevicePolicy::Range(range) => range.desired_occupancy(),
            DevicePolicy::MdRange { occupancy, .. } => *occupancy,
            DevicePolicy::Team(team) => team.desired_occupancy(),
        }
    }
}

impl<S: ExecutionSpace> GraphPolicy<S> for RangePolicy<S> {
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::Range(self)
    }
}

impl<S: ExecutionSpace, const R: usize> GraphPolicy<S> for MDRangePolicy<S, R> {
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::MdRange {
            begin: self.begin().to_vec(),
            end: self.end().to_vec(),
            tiles: self.tiles().to_vec(),
            outer_order: self.outer_order(),
            inner_order: self.inner_order(),
            nested_order: self.visits_in_nested_order(),
            occupancy: self.desired_occupancy(),
        }
    }
}

impl<S: ExecutionSpace> GraphPolicy<S> for TeamPolicy<S> {
    fn device_policy(&self) -> DevicePolicy<'_, S> {
        DevicePolicy::Team(self)
    }
}

/// A launch a graph node accepts: a [`GraphPolicy`] of the graph's space, alone or with
/// [`RecordedArgs`] handles — the same shapes as an eager launch. Implemented for every such
/// [`LaunchSpec`].
pub trait GraphLaunch<S: ExecutionSpace>: LaunchSpec<Policy: GraphPolicy<S>, Args: RecordedArgs> {}

impl<S: ExecutionSpace, L> GraphLaunch<S> for L where L: LaunchSpec<Policy: GraphPolicy<S>, Args: RecordedArgs>
{}

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
pub trait HostArgs: RecordedArgs {
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
