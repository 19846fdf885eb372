//! The construction phase: [`GraphBuilder`] and the node handles [`Node`] and [`NodeRef`].
//!
//! Both carry an invariant lifetime brand `'g` that [`create_graph`](crate::create_graph)
//! makes fresh for each graph (its closure is `for<'g> FnOnce(&GraphBuilder<'g, S>)`), so a
//! builder or node cannot leave the closure and nodes of two graphs cannot meet.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use hoplite_core::{
    ExecutionPolicy, ExecutionSpace, IntoLaunch, LaunchSpec, ParallelFor, ParallelReduce, ParallelScan,
    Reducer, ScanValue, ValidatedPolicy,
};

use crate::GraphError;
use crate::args::{GraphLaunch, HostArgs};
use crate::backend::{ArenaSlice, ArenaStr, GraphBackend, GraphNodes, NodeId};
use crate::node::{
    EmptyNode, ForPattern, HostNode, LaunchNode, NodeKernel, NodeKind, NodeParts, ReducePattern,
    ReduceResult, ReduceTarget, ScanPattern,
};
use hoplite_core::held::{Access, RecordedArgs};

/// The invariant brand of one graph's construction phase.
type Brand<'g> = PhantomData<fn(&'g ()) -> &'g ()>;

/// What the construction phase accumulates: the backend being built and the node list it
/// reads (also the front end's record of the nodes, for race detection and DOT export).
pub(crate) struct State<S: ExecutionSpace> {
    pub(crate) space: S,
    pub(crate) backend: Box<dyn GraphBackend<S>>,
    /// The one node list, which the backend reads (it keeps no copy).
    pub(crate) nodes: GraphNodes<S>,
    pub(crate) error: Option<GraphError>,
}

impl<S: ExecutionSpace> State<S> {
    pub(crate) fn new(space: S, mut backend: Box<dyn GraphBackend<S>>) -> Self {
        let root = backend.create_root_node();
        let mut state = State {
            space,
            backend,
            nodes: GraphNodes::default(),
            error: None,
        };
        let id = state.nodes.push_shared(root, &[]);
        state.backend.add_node(&state.nodes, id);
        state
    }

    /// Registers `node` after `preds` (the seed's `add_node` and `add_predecessor`).
    #[inline(always)]
    fn add<T: NodeKernel<S> + 'static>(&mut self, node: T, preds: &[NodeId]) -> NodeId {
        let id = self.nodes.push_node(|| node, preds);
        self.backend.add_node(&self.nodes, id);
        id
    }

    /// Registers the node `make` builds around its label (copied into the node list's arena),
    /// `views` and their accesses (which `record` lists; kept in the arena) after `preds`.
    #[inline(always)]
    fn add_recorded<V, T: NodeKernel<S> + 'static>(
        &mut self,
        label: &str,
        views: V,
        record: impl FnOnce(&V, &mut Vec<Access>),
        make: impl FnOnce(ArenaStr, V, ArenaSlice<Access>) -> T,
        preds: &[NodeId],
    ) -> NodeId {
        let id = self.nodes.push_recorded(label, views, record, make, preds);
        self.backend.add_node(&self.nodes, id);
        id
    }

    fn fail(&mut self, error: GraphError) {
        self.error.get_or_insert(error);
    }
}

/// The construction phase of a graph: adds root-level nodes and joins. It has no way to
/// submit; [`create_graph`](crate::create_graph) returns the runnable [`Graph`](crate::Graph)
/// once the closure is done.
///
/// ```
/// use hoplite_core::{RangePolicy, View};
/// use hoplite_graph::create_graph;
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let y: View<f64, 1> = View::new("y", [4])?;
/// let mut graph = create_graph(&space, |g| {
///     let fill = g.parallel_for("fill", (RangePolicy::new(space.clone(), 0..4), (y.write(),)), |(i, (y,))| {
///         y.set(i, 1.0)
///     });
///     fill.then_parallel_for("double", (RangePolicy::new(space.clone(), 0..4), (y.write(),)), |(i, (y,))| {
///         y.set(i, 2.0 * y.get(i))
///     });
/// })?;
/// graph.submit()?;
/// assert_eq!(y.to_vec()?, [2.0; 4]);
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct GraphBuilder<'g, S: ExecutionSpace> {
    root: NodeRef<'g, S>,
}

impl<'g, S: ExecutionSpace> GraphBuilder<'g, S> {
    pub(crate) fn new(state: &'g RefCell<State<S>>) -> Self {
        GraphBuilder {
            root: NodeRef {
                state,
                id: NodeId(0),
                brand: PhantomData,
            },
        }
    }

    /// The root node every node descends from: where a graph's first nodes hang.
    ///
    /// ```
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let graph = create_graph(&Serial::default(), |g| {
    ///     let root = g.root();
    ///     root.then_host("left", || {});
    ///     root.then_host("right", || {});
    /// })?;
    /// let nodes = graph.structure().nodes;
    /// assert_eq!((nodes[1].predecessors.as_slice(), nodes[2].predecessors.as_slice()), (&[0][..], &[0][..]));
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn root(&self) -> NodeRef<'g, S> {
        self.root
    }

    /// The graph's execution space instance.
    pub fn execution_space(&self) -> S {
        self.root.state.borrow().space.clone()
    }

    /// A `parallel_for` node with no predecessor but the root. See
    /// [`NodeRef::then_parallel_for`].
    pub fn parallel_for<L, F>(&self, label: &str, launch: L, kernel: F) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        self.root.then_parallel_for(label, launch, kernel)
    }

    /// A `parallel_reduce` node with no predecessor but the root. See
    /// [`NodeRef::then_parallel_reduce`].
    pub fn parallel_reduce<L, F, R, Tg>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
        target: Tg,
    ) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        Tg: ReduceTarget<R::Value>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        self.root
            .then_parallel_reduce(label, launch, kernel, reducer, target)
    }

    /// A `parallel_scan` node with no predecessor but the root. See
    /// [`NodeRef::then_parallel_scan`].
    pub fn parallel_scan<L, F, T>(&self, label: &str, launch: L, kernel: F) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        self.root.then_parallel_scan(label, launch, kernel)
    }

    /// A host-function node with no predecessor but the root. See [`NodeRef::then_host`].
    pub fn host<F>(&self, label: &str, f: F) -> Node<'g, S, F>
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.root.then_host(label, f)
    }

    /// A host-function node that uses views, with no predecessor but the root. See
    /// [`NodeRef::then_host_with`].
    pub fn host_with<A, F>(&self, label: &str, args: A, f: F) -> Node<'g, S, F>
    where
        A: HostArgs,
        F: for<'h> Fn(A::Guards<'h>) + Send + Sync + 'static,
    {
        self.root.then_host_with(label, args, f)
    }

    /// A node that completes when every node in `nodes` has (Kokkos `when_all`): its
    /// successors run after all of them. Any number of nodes; repeated and redundant ones are
    /// fine. With no node it follows the root.
    ///
    /// ```
    /// use hoplite_graph::{ReduceResult, create_graph};
    /// use hoplite_serial::Serial;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let runs = Arc::new(AtomicUsize::new(0));
    /// let (r1, r2, r3) = (runs.clone(), runs.clone(), runs.clone());
    /// let mut graph = create_graph(&Serial::default(), |g| {
    ///     let a = g.host("a", move || { r1.fetch_add(1, Ordering::Relaxed); });
    ///     let b = g.host("b", move || { r2.fetch_add(1, Ordering::Relaxed); });
    ///     g.when_all([a.erase(), b.erase(), a.erase()]).then_host("after", move || {
    ///         assert_eq!(r3.load(Ordering::Relaxed), 2);
    ///     });
    /// })?;
    /// graph.submit()?;
    /// assert_eq!(runs.load(Ordering::Relaxed), 2);
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn when_all<I>(&self, nodes: I) -> Node<'g, S, WhenAll>
    where
        I: IntoIterator,
        I::Item: Into<NodeRef<'g, S>>,
    {
        let mut preds: Vec<NodeId> = nodes.into_iter().map(|n| n.into().id).collect();
        preds.sort_unstable();
        preds.dedup();
        if preds.is_empty() {
            preds.push(self.root.id);
        }
        let mut state = self.root.state.borrow_mut();
        let state = &mut *state;
        let aggregate = state.backend.create_aggregate(&preds);
        let id = state.nodes.push_shared(aggregate, &preds);
        state.backend.add_node(&state.nodes, id);
        Node::new(self.root.state, id)
    }
}

impl<S: ExecutionSpace> fmt::Debug for GraphBuilder<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("nodes", &self.root.state.borrow().nodes.len())
            .finish()
    }
}

/// Marker kernel type of a `when_all` node.
#[derive(Debug, Clone, Copy)]
pub struct WhenAll;

/// An erased node of the graph under construction: cheap to copy (reference semantics), and
/// nameable in a struct as `NodeRef<'g, S>`. Its `then_*` methods add successors.
///
/// ```
/// use hoplite_core::ExecutionSpace;
/// use hoplite_graph::{GraphBuilder, NodeRef, create_graph};
/// use hoplite_serial::Serial;
///
/// struct Stages<'g, S: ExecutionSpace> {
///     setup: NodeRef<'g, S>,
///     solve: NodeRef<'g, S>,
/// }
///
/// fn stages<'g>(g: &GraphBuilder<'g, Serial>) -> Stages<'g, Serial> {
///     let setup = g.host("setup", || {}).erase();
///     let solve = setup.then_host("solve", || {}).erase();
///     Stages { setup, solve }
/// }
///
/// let graph = create_graph(&Serial::default(), |g| {
///     let s = stages(g);
///     g.when_all([s.setup, s.solve]).then_host("report", || {});
/// })?;
/// assert_eq!(graph.len(), 5); // root, setup, solve, when_all, report
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct NodeRef<'g, S: ExecutionSpace> {
    state: &'g RefCell<State<S>>,
    id: NodeId,
    brand: Brand<'g>,
}

impl<S: ExecutionSpace> Clone for NodeRef<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ExecutionSpace> Copy for NodeRef<'_, S> {}

impl<S: ExecutionSpace> fmt::Debug for NodeRef<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeRef")
            .field("id", &self.id.0)
            .field("label", &self.label())
            .finish()
    }
}

impl<'g, S: ExecutionSpace> NodeRef<'g, S> {
    /// The node's position in the graph (0 is the root).
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's label.
    pub fn label(&self) -> String {
        self.state.borrow().nodes.node(self.id).label().to_owned()
    }

    /// What the node does.
    pub fn kind(&self) -> NodeKind {
        self.state.borrow().nodes.node(self.id).kind()
    }

    /// Adds a host node after this one: it keeps the views of `args` (not the handles) and
    /// records their accesses.
    fn push_host<K, A, F>(&self, label: &str, args: A, f: F) -> Node<'g, S, K>
    where
        A: HostArgs,
        F: for<'h> Fn(A::Guards<'h>) + Send + Sync + 'static,
    {
        let views = args.detach();
        // `make` only moves its arguments into the node (no user code runs), so nothing can
        // reach the state while it is borrowed.
        let make = |label, views, accesses| HostNode::<A, F> {
            label,
            views,
            accesses,
            f,
        };
        let id = self
            .state
            .borrow_mut()
            .add_recorded(label, views, A::record, make, &[self.id]);
        Node::new(self.state, id)
    }

    /// Splits the launch, moves its policy to the graph's instance (unless it names an
    /// instance of its own) and validates it there — the only validation a run on that
    /// instance needs. A bad policy is remembered and returned by `create_graph` (`None`
    /// here). The flag says whether the policy keeps an instance of its own.
    // Inlined into each `then_*`: the launch then stays in registers instead of being copied
    // through the stack into a separate function (the copy showed in profiles of construction).
    #[inline(always)]
    fn launch_parts<L: GraphLaunch<S>>(
        state: &mut State<S>,
        label: &str,
        launch: L,
    ) -> Option<(ValidatedPolicy<L::Policy>, bool, L::Args)> {
        let (policy, args) = launch.into_parts();
        // The default instance is what a plain size or range gets, so it means "no instance
        // chosen": such a policy moves to the graph's instance. Any other instance is the
        // node's own, as Kokkos lets a node's policy name one: the node runs there.
        let own_instance = *policy.space() != state.space && *policy.space() != S::default();
        let policy = if *policy.space() == state.space || own_instance {
            policy
        } else {
            policy.clone().with_space(state.space.clone())
        };
        match ValidatedPolicy::new(label, policy) {
            Ok(policy) => Some((policy, own_instance, args)),
            Err(e) => {
                state.fail(e.into());
                None
            }
        }
    }

    /// Adds the launch node `make` builds from the validated policy and handles, or, when the
    /// policy is invalid, a node without work in its place (the graph is never returned then).
    #[inline(always)]
    fn push_launch<L: GraphLaunch<S>, T: NodeKernel<S> + 'static>(
        &self,
        label: &str,
        kind: NodeKind,
        launch: L,
        extra: Option<Access>,
        make: impl FnOnce(NodeParts<L>) -> T,
    ) -> NodeId {
        // One borrow for the whole node. `make` only moves its arguments into the node (no
        // user code runs), so nothing can reach the state while it is borrowed.
        let mut state = self.state.borrow_mut();
        match Self::launch_parts(&mut state, label, launch) {
            Some((policy, own_instance, args)) => {
                // The node keeps the handles' views, not the handles (and their borrows).
                let views = args.detach();
                let record = |views: &_, out: &mut Vec<Access>| {
                    <L::Args as RecordedArgs>::record(views, out);
                    out.extend(extra);
                };
                let make = |label, views, accesses| {
                    make(NodeParts {
                        label,
                        policy,
                        own_instance,
                        views,
                        accesses,
                    })
                };
                state.add_recorded(label, views, record, make, &[self.id])
            }
            None => state.add(empty_node(label, kind), &[self.id]),
        }
    }

    /// Adds a `parallel_for` node that runs after this one. The launch has the shape of an
    /// eager launch — a policy (or `usize` / range), alone or with handles
    /// `(policy, (y.write(), x.read()))` — and the kernel receives `i` or `(i, (y, x))`. The
    /// policy runs on the graph's instance (or the one given to
    /// [`submit_on`](crate::Graph::submit_on)).
    ///
    /// The node records the handles' views and intents and lets the handles go; each run
    /// borrows them afresh for the duration of the kernel.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let x: View<f64, 1> = View::from_slice("x", [3], &[1.0, 2.0, 3.0])?;
    /// let y: View<f64, 1> = View::new("y", [3])?;
    /// let mut graph = create_graph(&space, |g| {
    ///     g.root().then_parallel_for("axpy", (RangePolicy::new(space.clone(), 0..3), (y.write(), x.read())),
    ///         |(i, (y, x))| y.set(i, 2.0 * x.get(i) + y.get(i)));
    /// })?;
    /// graph.submit()?;
    /// graph.submit()?;
    /// assert_eq!(y.to_vec()?, [4.0, 8.0, 12.0]);
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn then_parallel_for<L, F>(&self, label: &str, launch: L, kernel: F) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        let id = self.push_launch(label, NodeKind::For, launch.into_launch(), None, |parts| {
            LaunchNode::<L::Launch, F, ForPattern>::new(parts, kernel, ForPattern)
        });
        Node::new(self.state, id)
    }

    /// Adds a `parallel_reduce` node that runs after this one and stores each run's result in
    /// `target`: a rank-0 view (written on the host after the reduction; a view write for race
    /// detection) or a [`ReduceResult`] read after the submit.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Sum, View};
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let x: View<f64, 1> = View::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0])?;
    /// let total: View<f64, 0> = View::new("total", [])?;
    /// let mut graph = create_graph(&space, |g| {
    ///     g.parallel_reduce("sum", (RangePolicy::new(space.clone(), 0..4), (x.read(),)),
    ///         |(i, (x,)), acc| *acc += x.get(i), Sum::<f64>::new(), total.clone());
    /// })?;
    /// graph.submit()?;
    /// assert_eq!(total.host_read()?.get([]), 10.0);
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn then_parallel_reduce<L, F, R, Tg>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
        target: Tg,
    ) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        Tg: ReduceTarget<R::Value>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        let extra = target.access();
        let id = self.push_launch(label, NodeKind::Reduce, launch.into_launch(), extra, |parts| {
            let pattern = ReducePattern { reducer, target };
            LaunchNode::<L::Launch, F, _>::new(parts, kernel, pattern)
        });
        Node::new(self.state, id)
    }

    /// Adds a `parallel_scan` node that runs after this one (the kernel as for
    /// [`hoplite_core::parallel_scan`]; name the scan type in the closure, `partial: &mut T`).
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let x: View<i64, 1> = View::from_slice("x", [4], &[1, 2, 3, 4])?;
    /// let offsets: View<i64, 1> = View::new("offsets", [4])?;
    /// let mut graph = create_graph(&space, |g| {
    ///     g.parallel_scan("offsets", (RangePolicy::new(space.clone(), 0..4), (offsets.write(), x.read())),
    ///         |(i, (out, x)), partial: &mut i64, is_final| {
    ///             if is_final { out.set(i, *partial); }
    ///             *partial += x.get(i);
    ///         });
    /// })?;
    /// graph.submit()?;
    /// assert_eq!(offsets.to_vec()?, [0, 1, 3, 6]);
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn then_parallel_scan<L, F, T>(&self, label: &str, launch: L, kernel: F) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        let id = self.push_launch(label, NodeKind::Scan, launch.into_launch(), None, |parts| {
            let pattern = ScanPattern::<T, ReduceResult<T>> {
                target: None,
                _value: PhantomData,
            };
            LaunchNode::<L::Launch, F, _>::new(parts, kernel, pattern)
        });
        Node::new(self.state, id)
    }

    /// As [`then_parallel_scan`](Self::then_parallel_scan), storing each run's total in
    /// `target` (a rank-0 view or a [`ReduceResult`]).
    pub fn then_parallel_scan_into<L, F, T, Tg>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        target: Tg,
    ) -> Node<'g, S, F>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + 'static,
        S: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue,
        Tg: ReduceTarget<T>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        let extra = target.access();
        let id = self.push_launch(label, NodeKind::Scan, launch.into_launch(), extra, |parts| {
            let pattern = ScanPattern::<T, Tg> {
                target: Some(target),
                _value: PhantomData,
            };
            LaunchNode::<L::Launch, F, _>::new(parts, kernel, pattern)
        });
        Node::new(self.state, id)
    }

    /// Adds a node that calls `f` after this one, on a thread of the submit (a panic becomes
    /// `Error::KernelPanicked`). A host function that touches views should declare them with
    /// [`then_host_with`](Self::then_host_with), so the race check sees them.
    pub fn then_host<F>(&self, label: &str, f: F) -> Node<'g, S, F>
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.push_host::<F, (), _>(label, (), move |()| f())
    }

    /// Adds a host-function node after this one that uses views: `args` are the same handles as
    /// a launch's (`(y.write(), x.read())`), and each run calls `f` with host guards for them —
    /// a [`HostWrite`](hoplite_core::HostWrite) for a writer, a
    /// [`HostRead`](hoplite_core::HostRead) for a reader, the
    /// [`AtomicHandle`](hoplite_core::AtomicHandle) for an atomic handle — borrowed for that
    /// call only. The node records the views, so a host node that races with another node on
    /// a view is [`GraphError::UnorderedRace`](crate::GraphError::UnorderedRace) at
    /// instantiation, as for launch nodes. A borrow refused at run time (a handle held
    /// elsewhere) is the submit's error, and `f` does not run.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let mut graph = create_graph(&space, |g| {
    ///     g.host_with("load x", (x.write(),), |(mut x,)| x.fill(1.5))
    ///         .then_parallel_for("double", (RangePolicy::new(space.clone(), 0..4), (x.write(),)),
    ///             |(i, (x,))| x.set(i, 2.0 * x.get(i)))
    ///         .then_host_with("check", (x.read(),), |(x,)| assert_eq!(x.get([3]), 3.0));
    /// })?;
    /// graph.submit()?;
    /// assert!(graph.to_dot().contains("W x"));
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn then_host_with<A, F>(&self, label: &str, args: A, f: F) -> Node<'g, S, F>
    where
        A: HostArgs,
        F: for<'h> Fn(A::Guards<'h>) + Send + Sync + 'static,
    {
        self.push_host(label, args, f)
    }
}

/// A typed node: a [`NodeRef`] that also names its kernel type `K` (kept for backends that
/// could fuse kernels). Derefs to [`NodeRef`], so it has the same `then_*` methods;
/// [`erase`](Node::erase) gives the `NodeRef`.
pub struct Node<'g, S: ExecutionSpace, K> {
    node: NodeRef<'g, S>,
    _kernel: PhantomData<fn() -> K>,
}

impl<'g, S: ExecutionSpace, K> Node<'g, S, K> {
    fn new(state: &'g RefCell<State<S>>, id: NodeId) -> Self {
        Node {
            node: NodeRef {
                state,
                id,
                brand: PhantomData,
            },
            _kernel: PhantomData,
        }
    }

    /// The erased node.
    pub fn erase(&self) -> NodeRef<'g, S> {
        self.node
    }
}

impl<S: ExecutionSpace, K> Clone for Node<'_, S, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ExecutionSpace, K> Copy for Node<'_, S, K> {}

impl<S: ExecutionSpace, K> fmt::Debug for Node<'_, S, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.node.fmt(f)
    }
}

impl<'g, S: ExecutionSpace, K> Deref for Node<'g, S, K> {
    type Target = NodeRef<'g, S>;
    fn deref(&self) -> &NodeRef<'g, S> {
        &self.node
    }
}

impl<'g, S: ExecutionSpace, K> From<Node<'g, S, K>> for NodeRef<'g, S> {
    fn from(node: Node<'g, S, K>) -> Self {
        node.node
    }
}

impl<'g, S: ExecutionSpace, K> From<&Node<'g, S, K>> for NodeRef<'g, S> {
    fn from(node: &Node<'g, S, K>) -> Self {
        node.node
    }
}

impl<'g, S: ExecutionSpace> From<&NodeRef<'g, S>> for NodeRef<'g, S> {
    fn from(node: &NodeRef<'g, S>) -> Self {
        *node
    }
}

pub(crate) fn empty_node(label: &str, kind: NodeKind) -> EmptyNode {
    EmptyNode {
        label: Arc::from(label),
        kind,
    }
}
