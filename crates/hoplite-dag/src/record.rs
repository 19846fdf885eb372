//! Capture: launches written as for a context become an explicit graph whose edges are the
//! inferred dependencies — implicit dependencies once, graph launch cost on every replay.

use hoplite_core::held::{Access, RecordedArgs};
use hoplite_core::{
    ExecutionSpace, IntoLaunch, LaunchSpec, ParallelFor, ParallelReduce, ParallelScan, RangePolicy, Reducer,
    ScanValue,
};
use hoplite_graph::{
    Graph, GraphBackend, GraphBuilder, GraphLaunch, HostGraph, NodeRef, ReduceTarget, create_graph_with,
};

use crate::Result;
use crate::model::{DependencyModel, DependencyPolicy};

/// Records launches into a graph (see [`record`]): each launch becomes a node whose
/// predecessors are the launches it depends on, inferred from its handles as a
/// [`Context`](crate::Context) infers them.
pub struct Recorder<'b, 'g, S: ExecutionSpace> {
    builder: &'b GraphBuilder<'g, S>,
    model: DependencyModel,
    nodes: Vec<NodeRef<'g, S>>,
}

impl<'b, 'g, S: ExecutionSpace> Recorder<'b, 'g, S> {
    /// The node a launch with these accesses hangs from: the root, its one parent, or a join
    /// of its parents.
    fn predecessor(&mut self, accesses: Vec<Access>) -> NodeRef<'g, S> {
        let (_, edges) = self.model.add(accesses);
        match edges.as_slice() {
            [] => self.builder.root(),
            [one] => self.nodes[one.parent],
            many => self
                .builder
                .when_all(many.iter().map(|e| self.nodes[e.parent]))
                .erase(),
        }
    }

    fn accesses<L: LaunchSpec<Args: RecordedArgs>>(launch: &L) -> Vec<Access> {
        let mut accesses = Vec::new();
        launch.args().record_handles(&mut accesses);
        accesses
    }

    /// Records a `parallel_for`, in the shapes eager launches take.
    pub fn launch<L, F>(&mut self, label: &str, launch_spec: L, kernel: F) -> NodeRef<'g, S>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        let launch = launch_spec.into_launch();
        let pred = self.predecessor(Self::accesses(&launch));
        let node = pred.then_parallel_for(label, launch, kernel).erase();
        self.nodes.push(node);
        node
    }

    /// Records a `parallel_reduce` whose result each replay stores in `target` (a rank-0 view,
    /// which takes part in the inference as a write, or a [`ReduceResult`](hoplite_graph::ReduceResult)).
    pub fn reduce<L, F, R, Tg>(
        &mut self,
        label: &str,
        launch_spec: L,
        kernel: F,
        reducer: R,
        target: Tg,
    ) -> NodeRef<'g, S>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        Tg: ReduceTarget<R::Value>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        let launch = launch_spec.into_launch();
        let mut accesses = Self::accesses(&launch);
        accesses.extend(target.access());
        let pred = self.predecessor(accesses);
        let node = pred
            .then_parallel_reduce(label, launch, kernel, reducer, target)
            .erase();
        self.nodes.push(node);
        node
    }

    /// Records a `parallel_scan`.
    pub fn scan<L, F, T>(&mut self, label: &str, launch_spec: L, kernel: F) -> NodeRef<'g, S>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        let launch = launch_spec.into_launch();
        let pred = self.predecessor(Self::accesses(&launch));
        let node = pred.then_parallel_scan(label, launch, kernel).erase();
        self.nodes.push(node);
        node
    }
}

/// Records the launches `build` makes into an explicit graph on `space`, with the
/// dependencies a context would infer under `policy` as its edges. The graph can then be
/// submitted any number of times (and checked for races at instantiation, as any graph).
///
/// ```
/// use hoplite_core::{RangePolicy, View};
/// use hoplite_dag::{DependencyPolicy, record};
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let range = RangePolicy::new(space.clone(), 0..4);
/// let (x, y) = (View::<f64, 1>::new("x", [4])?, View::<f64, 1>::new("y", [4])?);
/// let mut graph = record(&space, DependencyPolicy::WithConst, |r| {
///     r.launch("bump x", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, x.get(i) + 1.0));
///     r.launch("y = 2x", (range.clone(), (y.write(), x.read())), |(i, (y, x))| y.set(i, 2.0 * x.get(i)));
/// })?;
/// for _ in 0..3 {
///     graph.submit()?;
/// }
/// assert_eq!(y.to_vec()?, [6.0; 4]);
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
///
/// # Errors
///
/// The graph's errors ([`DagError::Graph`](crate::DagError::Graph)): an invalid policy given to
/// a launch.
pub fn record<S, F>(space: &S, policy: DependencyPolicy, build: F) -> Result<Graph<S>>
where
    S: ExecutionSpace + ParallelFor<RangePolicy<S>>,
    F: for<'b, 'g> FnOnce(&mut Recorder<'b, 'g, S>),
{
    record_with(space, HostGraph::new(space.clone()), policy, build)
}

/// [`record`] into the graph of a chosen backend (as
/// [`create_graph_with`](hoplite_graph::create_graph_with) builds one): a backend's own
/// graphs, such as a CUDA Graph on a `Cuda` instance, replay the recorded launches without
/// host work between them.
///
/// ```
/// use hoplite_core::{RangePolicy, View};
/// use hoplite_dag::{DependencyPolicy, record_with};
/// use hoplite_graph::HostGraph;
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let x = View::<f64, 1>::new("x", [4])?;
/// let mut graph = record_with(&space, HostGraph::new(space.clone()), DependencyPolicy::WithConst, |r| {
///     r.launch("fill", (RangePolicy::new(space.clone(), 0..4), (x.write(),)), |(i, (x,))| x.set(i, 1.0));
/// })?;
/// graph.submit()?;
/// assert_eq!(x.to_vec()?, [1.0; 4]);
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
///
/// # Errors
///
/// As for [`record`].
pub fn record_with<S, B, F>(space: &S, backend: B, policy: DependencyPolicy, build: F) -> Result<Graph<S>>
where
    S: ExecutionSpace,
    B: GraphBackend<S> + 'static,
    F: for<'b, 'g> FnOnce(&mut Recorder<'b, 'g, S>),
{
    Ok(create_graph_with(space, backend, |g| {
        let mut recorder = Recorder {
            builder: g,
            model: DependencyModel::new(policy),
            nodes: Vec::new(),
        };
        build(&mut recorder);
    })?)
}
