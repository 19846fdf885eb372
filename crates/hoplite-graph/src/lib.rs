//! # hoplite-graph
//!
//! Explicit graphs (Kokkos Graphs / CUDA Graphs): build a DAG of kernels once, inside a
//! closure, then submit it any number of times to amortize launch costs.
//!
//! ```
//! use hoplite_core::{RangePolicy, Sum, View};
//! use hoplite_graph::{ReduceResult, create_graph};
//! use hoplite_serial::Serial;
//!
//! let space = Serial::default();
//! let n = 1000;
//! let x: View<f64, 1> = View::new("x", [n])?;
//! let y: View<f64, 1> = View::new("y", [n])?;
//! let dot = ReduceResult::<f64>::new();
//! let range = RangePolicy::new(space.clone(), 0..n);
//!
//! let mut graph = create_graph(&space, |g| {
//!     let fill_x = g.parallel_for("fill x", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 1.0));
//!     let fill_y = g.parallel_for("fill y", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 2.0));
//!     g.when_all([fill_x.erase(), fill_y.erase()]).then_parallel_reduce(
//!         "dot",
//!         (range.clone(), (x.read(), y.read())),
//!         |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
//!         Sum::<f64>::new(),
//!         dot.clone(),
//!     );
//! })?;
//!
//! for _ in 0..10 {
//!     graph.submit()?;
//! }
//! assert_eq!(dot.get(), Some(2000.0));
//! println!("{}", graph.to_dot());
//! # Ok::<(), hoplite_graph::GraphError>(())
//! ```
//!
//! # Phases in the types
//!
//! The closure given to [`create_graph`] *is* the construction phase. It receives a
//! [`GraphBuilder<'g, S>`](GraphBuilder) whose brand `'g` is fresh for each graph and
//! invariant; every node handle ([`Node`], [`NodeRef`]) carries it. So a builder or node
//! cannot leave the closure, nodes of two graphs cannot be joined, a builder has no `submit`,
//! and the returned [`Graph`] has no way to add nodes — all compile errors.
//!
//! # Nodes
//!
//! `parallel_for`, `parallel_reduce` (into a rank-0 view or a [`ReduceResult`]),
//! `parallel_scan` and host functions (`host`, or `host_with` handles whose views the host
//! function gets as [`HostRead`](hoplite_core::HostRead)/[`HostWrite`](hoplite_core::HostWrite)
//! guards), on the builder (after the root) or as `then_*` on a node;
//! [`GraphBuilder::when_all`] joins any number of nodes. Node handles have reference
//! semantics (`Copy`). Launches take the same shape as eager ones: a policy (or `usize` /
//! range), or `(policy, (y.write(), x.read()))` with a kernel `|(i, (y, x))| ...`.
//!
//! A node's policy moves to the graph's instance and is validated once, when the node is made
//! (an invalid policy is the error of [`create_graph`]); runs on that instance do not check it
//! again. [`Graph::submit_on`] another instance validates the moved policies there. A policy
//! that names the default instance (what a plain size or range gets) means "no instance
//! chosen" and moves so. A policy that names another instance of the graph's space keeps it,
//! as in Kokkos (diamonds and fan-ins spread over instances): the node is validated and runs
//! there, after its predecessors, whatever instance the graph is submitted on, and on the
//! host backend the nodes of one wave on different instances run at the same time.
//!
//! # Data
//!
//! A node records the *views and intents* of its handles, not the handles: each run of the
//! node makes fresh handles, borrowing the views exactly while its kernel runs (as an eager
//! launch does), so the host can read results between submits and a conflict with a handle
//! held elsewhere is a typed error at submit. At instantiation the graph checks the recorded
//! accesses: two nodes with no path between them that touch overlapping elements of one
//! allocation, one of them writing (or one reading while the other updates atomically), are an
//! unordered data race — [`GraphError::UnorderedRace`], naming both nodes. Host nodes made
//! with `host_with`/`then_host_with` take part; a plain `host`/`then_host` function declares
//! no views, so views it borrows itself are not checked.
//!
//! # Backends
//!
//! [`GraphBackend`] holds the customization points of the Kokkos Graphs design
//! (`create_root_node`, `add_node`, `create_aggregate`, `instantiate`, `submit`,
//! `execution_space`); the graph owns the one node list ([`GraphNodes`]) and hands it to the
//! backend. [`HostGraph`] is the generic host implementation that
//! [`create_graph`] uses for every space that can run a range `parallel_for`: one pass in a
//! topological order computed at instantiation on serial; wave by wave on concurrent
//! instances such as rayon (see [`HostGraph`] for when independent nodes run at the same
//! time). A device backend passes its own implementation to [`create_graph_with`].

mod args;
mod backend;
mod builder;
mod graph;
mod node;
mod structure;

use std::cell::RefCell;

use hoplite_core::{ExecutionSpace, HostAccessibleSpace, ParallelFor, RangePolicy};

pub use args::{DevicePolicy, GraphLaunch, GraphPolicy, HostArgs};
pub use backend::{
    GraphBackend, GraphNodes, HostGraph, INLINE_MAX_WORK, NodeEntry, NodeId, SEQUENCE_MAX, SHARE_MAX_WORK,
    WAVE_MIN_WORK,
};
pub use builder::{GraphBuilder, Node, NodeRef, WhenAll};
pub use graph::Graph;
pub use node::{NodeKernel, NodeKind, NodeResult, ReduceResult, ReduceTarget};
pub use structure::{GraphNodeInfo, GraphStructure, NodeAccess};

use builder::State;

/// Errors of graph construction, instantiation and submission.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// `instantiate` was called on a graph that is already instantiated.
    #[error(
        "the graph is already instantiated (by an earlier `instantiate` or its first `submit`); instantiate a graph at most once"
    )]
    AlreadyInstantiated,
    /// A node added to a [`GraphNodes`] list directly names a predecessor that is not an
    /// earlier node (the front end never does).
    #[error("node {node} cannot wait for node {predecessor}: a predecessor is an earlier node")]
    InvalidPredecessor {
        /// The node being added.
        node: usize,
        /// The predecessor it named.
        predecessor: usize,
    },
    /// Two nodes with no path between them make conflicting accesses to the same elements.
    #[error("{0}")]
    UnorderedRace(Box<UnorderedRace>),
    /// An error of the core: an invalid policy, a borrow conflict, a panicking kernel, ...
    #[error(transparent)]
    Core(#[from] hoplite_core::Error),
}

/// A graph error as the core's [`hoplite_core::Error`], so that `?` takes it into a
/// `hoplite::Result`: a core error as itself, any other as [`Error::Runtime`]
/// (`runtime: "graph"`) with the graph error as its source.
///
/// [`Error::Runtime`]: hoplite_core::Error::Runtime
///
/// ```
/// use hoplite_core::Error;
/// use hoplite_graph::GraphError;
/// let e: Error = GraphError::AlreadyInstantiated.into();
/// let Error::Runtime { runtime: "graph", source } = &e else { panic!("{e:?}") };
/// assert_eq!(source.downcast_ref::<GraphError>(), Some(&GraphError::AlreadyInstantiated));
/// ```
impl From<GraphError> for hoplite_core::Error {
    fn from(e: GraphError) -> Self {
        match e {
            GraphError::Core(core) => core,
            other => hoplite_core::Error::Runtime {
                runtime: "graph",
                source: hoplite_core::RuntimeError::new(other),
            },
        }
    }
}

/// The two nodes of an unordered data race found at instantiation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "graph nodes `{first}` ({first_access} `{first_view}`) and `{second}` ({second_access} `{second_view}`) have no path between them: an unordered data race; order them with `then_*` or `when_all`, or give them disjoint subviews"
)]
pub struct UnorderedRace {
    /// The label of the earlier node.
    pub first: String,
    /// How the earlier node uses the view ("writes", "reads", ...).
    pub first_access: &'static str,
    /// The view the earlier node touches.
    pub first_view: String,
    /// The label of the later node.
    pub second: String,
    /// How the later node uses the view.
    pub second_access: &'static str,
    /// The view the later node touches (same allocation, overlapping elements).
    pub second_view: String,
}

impl GraphError {
    /// The core error, if this is one.
    pub fn as_core(&self) -> Option<&hoplite_core::Error> {
        match self {
            GraphError::Core(e) => Some(e),
            _ => None,
        }
    }
}

/// `Result` with [`GraphError`].
pub type Result<T, E = GraphError> = std::result::Result<T, E>;

/// An execution space's own graph implementation: what [`create_graph`] builds on its
/// instances (Kokkos' `create_graph(exec, ..)` makes a graph of the instance's backend).
/// Every space whose memory the host reaches gets the generic host implementation,
/// [`HostGraph`]; a device backend implements it with its own (`Cuda`: a CUDA Graph).
///
/// ```
/// use hoplite_graph::{GraphSpace, HostGraph};
/// use hoplite_serial::Serial;
/// let backend: HostGraph<Serial> = Serial::default().graph_backend();
/// # let _ = backend;
/// ```
pub trait GraphSpace: ExecutionSpace {
    /// The graph implementation.
    type Backend: GraphBackend<Self> + 'static;
    /// A graph implementation for a graph on this instance.
    fn graph_backend(&self) -> Self::Backend;
}

impl<S> GraphSpace for S
where
    S: ExecutionSpace + ParallelFor<RangePolicy<S>>,
    S::MemorySpace: HostAccessibleSpace,
{
    type Backend = HostGraph<S>;
    fn graph_backend(&self) -> HostGraph<S> {
        HostGraph::new(self.clone())
    }
}

/// Builds a graph on `space` with the space's own graph implementation ([`GraphSpace`]: the
/// generic host backend [`HostGraph`] on host spaces, a CUDA Graph on `Cuda`): `build` adds
/// the nodes; the graph is returned once it is done.
///
/// ```
/// use hoplite_graph::create_graph;
/// use hoplite_serial::Serial;
/// let mut empty = create_graph(&Serial::default(), |_g| {})?;
/// empty.submit()?;
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
///
/// # Errors
///
/// The first invalid policy given to a node (reported here rather than at the node, so that
/// the closure needs no `?`).
pub fn create_graph<S, F>(space: &S, build: F) -> Result<Graph<S>>
where
    S: GraphSpace,
    F: for<'g> FnOnce(&GraphBuilder<'g, S>),
{
    create_graph_with(space, space.graph_backend(), build)
}

/// As [`create_graph`] with a given backend implementation (a device backend's graphs, such
/// as `CudaGraph` on a `Cuda` instance; here the generic host one).
///
/// ```
/// use hoplite_core::{RangePolicy, View};
/// use hoplite_graph::{HostGraph, create_graph_with};
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let y: View<u32, 1> = View::new("y", [4])?;
/// let mut graph = create_graph_with(&space, HostGraph::new(space.clone()), |g| {
///     g.root()
///         .then_parallel_for("inc", (RangePolicy::new(space.clone(), 0..4), (y.write(),)), |(i, (y,))| y.set(i, y.get(i) + 1));
/// })?;
/// graph.submit()?;
/// graph.submit()?;
/// assert_eq!(y.to_vec()?, [2; 4]);
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
///
/// # Errors
///
/// As for [`create_graph`].
pub fn create_graph_with<S, B, F>(space: &S, backend: B, build: F) -> Result<Graph<S>>
where
    S: ExecutionSpace,
    B: GraphBackend<S> + 'static,
    F: for<'g> FnOnce(&GraphBuilder<'g, S>),
{
    let state = RefCell::new(State::new(space.clone(), Box::new(backend)));
    build(&GraphBuilder::new(&state));
    let state = state.into_inner();
    if let Some(e) = state.error {
        return Err(e);
    }
    Ok(Graph::new(state.space, state.backend, state.nodes))
}
