//! Explicit graphs as CUDA Graphs: [`CudaGraph`] implements hoplite-graph's [`GraphBackend`]
//! for `Cuda`, so the generic builder's graphs run as CUDA Graphs.
//!
//! Device nodes map one to one onto explicit CUDA graph nodes: the root and `when_all` joins
//! are empty nodes (`cuGraphAddEmptyNode`) and the builder's `#[kernel]` launches
//! (`then_parallel_for`) are kernel nodes (`cuGraphAddKernelNode`), with their parameters
//! packed and checked as an eager launch's. The front end's host functions run on the
//! submitting thread between CUDA graphs: a graph with host nodes is cut into *stages*
//! (`stages` below), each one CUDA graph of device nodes followed by the host nodes that come
//! after it, so a host node runs while no kernel node holds its views (a host function may
//! read any view, `to_vec` included) and a failing host node stops every stage after it, as
//! on the host graph. A graph without host nodes is one CUDA graph. The builder's reductions and
//! scans of `#[kernel]`s (`then_parallel_reduce`, `then_parallel_scan_into`) are a kernel
//! node writing partials, a copy of them to page-locked memory and a host node that joins them
//! with the node's own reducer in the eager reduction's fixed order and stores the value where
//! the node stores it (for a scan: the prefixes, a copy back and the final pass).
//! `instantiate` builds and instantiates the graphs once; every submit is one `cuGraphLaunch`
//! per stage on a stream, each waited for. A `Cuda` front-end graph has no closure launches (a GPU runs no
//! closures), so no node needs stream capture; such a node is refused with a typed error.
//!
//! Everything up to `instantiate` is checked without a device: node ids, predecessors that
//! come before their node, node kinds, and kernel arguments.
//!
//! The module is split by node kind: `kernel` holds the `#[kernel]` nodes, `reduce` the
//! reductions and scans with their partials and host join, `front_end_reduce` the builder's
//! reduce and scan nodes on top of it, and `host` the node list of the submit in progress that
//! host nodes and reduction joins run from; this file holds the graph, its stages, build and
//! launch, and the `GraphBackend` implementation.

mod front_end_reduce;
mod host;
mod kernel;
mod reduce;
mod stages;

use std::sync::Arc;

use hoplite_core::held::Access;
use hoplite_core::held::BorrowGroup;
use hoplite_graph::{GraphBackend, GraphNodes, GraphSpace, NodeId, NodeKernel, NodeKind};
use parking_lot::Mutex;

use self::host::SubmitList;
use self::kernel::KernelNode;
use self::reduce::{ReduceNode, add_reduction};
use self::stages::{StageKind, stages};
use crate::driver::{self, GraphNode};
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry, fits};
use crate::{Cuda, CudaError};

type Geometry =
    Box<dyn Fn(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError> + Send + Sync>;

enum Work {
    /// The root, a join, or an empty launch.
    Empty,
    /// A host function of the front end, run on the submitting thread after its stage's
    /// CUDA graph.
    Host,
    /// A device kernel.
    Kernel(Box<KernelNode>),
    /// A device reduction (kernel, copy of the partials to the host, join on the host) or
    /// scan (the same, the prefixes copied back and a final kernel pass).
    Reduce(Box<ReduceNode>),
}

struct Node {
    work: Work,
    preds: Vec<usize>,
}

/// The instantiated graphs of every stage, with the device they were built on.
struct Instantiated {
    /// Per stage, its CUDA graph (none for a stage without device nodes) and, in id order,
    /// the host nodes that run after it.
    stages: Vec<(Option<Segment>, Vec<usize>)>,
    device: Arc<driver::Device>,
}

/// One stage's CUDA graph and its executable, destroyed together (the executable first, as
/// the fields are dropped in order) once no launch is in flight: every submit waits for its
/// launches.
struct Segment {
    exec: driver::GraphExec,
    _graph: driver::Graph,
    /// The front end's launches in it, whose handles a submit holds while it runs.
    launches: Vec<usize>,
}

/// A node of the front end that only stands for a join (its kind says so).
struct Empty;

/// An explicit graph on a `Cuda` instance, run as a CUDA Graph: the generic builder's graph
/// (`create_graph_with(&cuda, CudaGraph::new(&cuda), ..)`), with the same nodes as on any
/// space.
///
/// ```
/// use hoplite::prelude::*;
/// use hoplite::{BoundReader, kernel};
/// use hoplite_core::{LayoutRight, View};
/// use hoplite_cuda::graph::CudaGraph;
/// use hoplite_cuda::{Cuda, CudaSpace};
/// use hoplite_graph::{ReduceResult, create_graph_with};
///
/// #[kernel]
/// fn total(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
///     *acc += x.get(i);
/// }
///
/// let cuda = Cuda::default();
/// let x: View<f64, 1, LayoutRight, CudaSpace> = View::default();
/// let sum = ReduceResult::new();
/// let mut graph = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
///     let prepare = g.host("prepare", || {});
///     let all = RangePolicy::new(cuda.clone(), 0..x.extent(0));
///     prepare.then_parallel_reduce("total", (all, (x.read(),)), total::with(), Sum::<f64>::new(), sum.clone());
/// })?;
/// match graph.submit() {
///     Ok(()) => assert_eq!(sum.get(), Some(0.0)), // the sum of no element
///     Err(e) => println!("{e}"),                  // no device here
/// }
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct CudaGraph {
    space: Cuda,
    nodes: Vec<Node>,
    /// The first structural problem, reported by `instantiate`.
    invalid: Option<String>,
    instance: Option<Instantiated>,
    errors: Arc<Mutex<Option<hoplite_core::Error>>>,
    /// The node list of the submit in progress, which the host nodes run from.
    list: Arc<SubmitList>,
    /// One submit at a time: host-node errors are collected per submit.
    submitting: Mutex<()>,
    /// Whether some node is a front-end launch whose handles a submit borrows.
    holds_handles: bool,
}

// SAFETY: the raw graph handles are used only under `&mut self` (instantiate) or the submit
// lock, and driver handles may be used from any thread; the host payloads are `Send + Sync`,
// and the reductions' buffers and join payloads hold addresses that only the driver and the
// join host node (during a launch, under the submit lock) use.
unsafe impl Send for CudaGraph {}
// SAFETY: as for `Send`: shared access only launches the executable, under the submit lock.
unsafe impl Sync for CudaGraph {}

impl std::fmt::Debug for CudaGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraph")
            .field("nodes", &self.nodes.len())
            .field("instantiated", &self.instance.is_some())
            .finish()
    }
}

/// `create_graph(&cuda, ..)` builds a [`CudaGraphBackend`]: the generic host graph, whose nodes
/// run as the eager `Cuda` launches, one by one, in the graph's order, which keeps every graph
/// axiom of the conformance suite; or, with `HOPLITE_CUDA_GRAPHS=device` in the environment, a
/// [`CudaGraph`] (what `create_graph_with(&cuda, CudaGraph::new(&cuda), ..)` always builds),
/// which runs the graph as one CUDA graph launch per stage, about eight times cheaper per
/// node. On an H100 the suite's graph checks failed twice with CUDA graphs as the default,
/// when a submit was one CUDA graph with the host nodes inside it: its kernel nodes' borrows
/// were held for the whole submit, so a host node that read a view a kernel node used
/// (`to_vec` in a host function) met a borrow conflict, and a host node's panic could not stop
/// the kernel nodes after it. Stages answer both; until the suite has passed with them on a
/// device (the GPU bundle runs it both ways), the host graph stays the default.
impl GraphSpace for Cuda {
    type Backend = CudaGraphBackend;
    fn graph_backend(&self) -> CudaGraphBackend {
        if device_graphs() {
            CudaGraphBackend::Device(CudaGraph::new(self))
        } else {
            CudaGraphBackend::Host(hoplite_graph::HostGraph::new(self.clone()))
        }
    }
}

/// Whether `create_graph(&cuda, ..)` builds CUDA graphs (`HOPLITE_CUDA_GRAPHS=device`), read
/// once per process. Any other value than `device` or `host` is reported once on standard
/// error and taken as `host`, so that a misspelt setting does not pass unnoticed.
fn device_graphs() -> bool {
    static DEVICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEVICE.get_or_init(|| graph_mode(std::env::var("HOPLITE_CUDA_GRAPHS").ok().as_deref()))
}

/// The graph backend a `HOPLITE_CUDA_GRAPHS` value asks for: CUDA graphs or not.
fn graph_mode(value: Option<&str>) -> bool {
    crate::switch_setting(
        "HOPLITE_CUDA_GRAPHS",
        value,
        ["device", "host"],
        "`create_graph` on Cuda builds the host graph",
    )
}

/// The graph implementation `create_graph(&cuda, ..)` picks ([`GraphSpace`] for `Cuda`): the
/// host graph, or a [`CudaGraph`] when `HOPLITE_CUDA_GRAPHS=device`.
///
/// ```
/// use hoplite_cuda::Cuda;
/// use hoplite_cuda::graph::CudaGraphBackend;
/// use hoplite_graph::GraphSpace;
/// // Without the variable, the host graph.
/// if std::env::var_os("HOPLITE_CUDA_GRAPHS").is_none() {
///     assert!(matches!(Cuda::default().graph_backend(), CudaGraphBackend::Host(_)));
/// }
/// ```
#[derive(Debug)]
pub enum CudaGraphBackend {
    /// The generic host graph: every node an eager `Cuda` launch.
    Host(hoplite_graph::HostGraph<Cuda>),
    /// A CUDA graph per stage.
    Device(CudaGraph),
}

impl GraphBackend<Cuda> for CudaGraphBackend {
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<Cuda>> {
        match self {
            CudaGraphBackend::Host(g) => g.create_root_node(),
            CudaGraphBackend::Device(g) => g.create_root_node(),
        }
    }
    fn add_node(&mut self, nodes: &GraphNodes<Cuda>, id: NodeId) {
        match self {
            CudaGraphBackend::Host(g) => g.add_node(nodes, id),
            CudaGraphBackend::Device(g) => g.add_node(nodes, id),
        }
    }
    fn create_aggregate(&mut self, predecessors: &[NodeId]) -> Arc<dyn NodeKernel<Cuda>> {
        match self {
            CudaGraphBackend::Host(g) => g.create_aggregate(predecessors),
            CudaGraphBackend::Device(g) => g.create_aggregate(predecessors),
        }
    }
    fn instantiate(&mut self, nodes: &GraphNodes<Cuda>) -> hoplite_core::Result<()> {
        match self {
            CudaGraphBackend::Host(g) => g.instantiate(nodes),
            CudaGraphBackend::Device(g) => g.instantiate(nodes),
        }
    }
    fn submit(&self, nodes: &GraphNodes<Cuda>, on: Option<&Cuda>) -> hoplite_core::Result<()> {
        match self {
            CudaGraphBackend::Host(g) => g.submit(nodes, on),
            CudaGraphBackend::Device(g) => g.submit(nodes, on),
        }
    }
    fn execution_space(&self) -> &Cuda {
        match self {
            CudaGraphBackend::Host(g) => g.execution_space(),
            CudaGraphBackend::Device(g) => g.execution_space(),
        }
    }
}

impl CudaGraph {
    /// An empty graph whose submits run on `space`'s stream.
    pub fn new(space: &Cuda) -> CudaGraph {
        CudaGraph {
            space: space.clone(),
            nodes: Vec::new(),
            invalid: None,
            instance: None,
            errors: Arc::new(Mutex::new(None)),
            list: Arc::default(),
            submitting: Mutex::new(()),
            holds_handles: false,
        }
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn invalid(&mut self, reason: String) {
        if self.invalid.is_none() {
            self.invalid = Some(reason);
        }
    }

    /// Builds the CUDA graph and instantiates it: the device part of `instantiate`.
    fn build(&mut self) -> Result<(), CudaError> {
        if let Some(reason) = &self.invalid {
            return Err(CudaError::InvalidGraph {
                reason: reason.clone(),
            });
        }
        let device = self.space.stream()?.device.clone();
        let stage = stages(self.nodes.iter().map(|n| {
            let kind = match n.work {
                Work::Host => StageKind::Host,
                Work::Empty => StageKind::Empty,
                Work::Kernel(_) | Work::Reduce(_) => StageKind::Device,
            };
            (kind, n.preds.as_slice())
        }));
        let count = stage.iter().max().map_or(1, |last| last + 1);
        // Each stage's device nodes and host nodes, in id order, from one pass.
        let mut members: Vec<(Vec<usize>, Vec<usize>)> = vec![(Vec::new(), Vec::new()); count];
        for (i, node) in self.nodes.iter().enumerate() {
            let (device_nodes, host_nodes) = &mut members[stage[i]];
            if matches!(node.work, Work::Host) {
                host_nodes.push(i);
            } else {
                device_nodes.push(i);
            }
        }
        // The graph node of each node of the stage being built; reset after each stage.
        let mut handles: Vec<Option<GraphNode>> = vec![None; self.nodes.len()];
        let mut built = Vec::with_capacity(count);
        for (device_nodes, hosts) in members {
            let segment = self.build_stage(&device, &device_nodes, &mut handles)?;
            for &i in &device_nodes {
                handles[i] = None;
            }
            built.push((segment, hosts));
        }
        self.instance = Some(Instantiated {
            stages: built,
            device,
        });
        Ok(())
    }

    /// Builds and instantiates the CUDA graph of one stage's device nodes, `members` in id
    /// order (none if there are none). Predecessors of earlier stages have run when the stage
    /// starts, so only edges within the stage become graph edges: `handles` holds the graph
    /// nodes of this stage's members only (`None` everywhere else).
    fn build_stage(
        &mut self,
        device: &Arc<driver::Device>,
        members: &[usize],
        handles: &mut [Option<GraphNode>],
    ) -> Result<Option<Segment>, CudaError> {
        if members.is_empty() {
            return Ok(None);
        }
        // Owns the graph from here, so an error below destroys it.
        let mut graph = driver::Graph::new(device.clone())?;
        let mut launches = Vec::new();
        for &i in members {
            let node = &mut self.nodes[i];
            let deps: Vec<GraphNode> = node.preds.iter().filter_map(|&p| handles[p]).collect();
            if matches!(node.work, Work::Kernel(_) | Work::Reduce(_)) {
                launches.push(i);
            }
            let handle = match &mut node.work {
                Work::Kernel(k) => {
                    k.check_devices(device.ordinal)?;
                    let loaded = k.load(device)?;
                    match k.geometry(&device.limits, &loaded.resources)? {
                        None => graph.add_empty(&deps)?, // an empty iteration space
                        Some(g) => {
                            if !fits(&device.limits, &g) {
                                return Err(CudaError::InvalidLaunch {
                                    kernel: k.name,
                                    reason: format!("the geometry {g:?} does not fit the device"),
                                });
                            }
                            let mut pointers = k.params.pointers();
                            // SAFETY: the function is loaded on this device and its entry takes
                            // exactly the parameters `pack_for` packed against `K::params()`
                            // (checked when the node was added, with its writers containing the
                            // iteration space); `pointers` point into `k.params`, which the
                            // driver copies here; the views the addresses belong to are this
                            // device's memory (checked above) and live as long as the graph;
                            // the geometry fits the device.
                            unsafe { graph.add_kernel(&deps, loaded.function, &g, &mut pointers) }?
                        }
                    }
                }
                // Not a member: host nodes run on the submitting thread.
                Work::Host => continue,
                Work::Empty => graph.add_empty(&deps)?,
                Work::Reduce(r) => add_reduction(r, device, &mut graph, &deps, &self.errors)?,
            };
            handles[i] = Some(handle);
        }
        let exec = graph.instantiate()?;
        Ok(Some(Segment {
            exec,
            _graph: graph,
            launches,
        }))
    }

    /// One submit on `on`'s stream: per stage, the stage's CUDA graph with its launches'
    /// handles held (launched and waited for), then its host nodes on this thread. The first
    /// error ends the submit: a failed host node or reduction join, or a refused borrow.
    fn launch(&self, on: &Cuda, nodes: &GraphNodes<Cuda>) -> Result<(), hoplite_core::Error> {
        let _one = self.submitting.lock();
        let Some(instance) = &self.instance else {
            return Err(CudaError::InvalidGraph {
                reason: "submit before instantiate".into(),
            }
            .into());
        };
        let stream = on.stream()?;
        if stream.device.ordinal != instance.device.ordinal {
            return Err(CudaError::InvalidGraph {
                reason: format!(
                    "the graph was built on device {}, the instance is a stream of device {}",
                    instance.device.ordinal, stream.device.ordinal
                ),
            }
            .into());
        }
        *self.errors.lock() = None;
        // Reduction joins and host nodes run from `nodes` until the submit returns.
        let _lease = self.list.lease(nodes);
        // The kernels of a CUDA Graph run on the device with no host call per node: Kokkos
        // Tools connectors see each stage as part of one region.
        let _profiled = hoplite_core::profiling::ScopedRegion::new("hoplite::CudaGraph::launch");
        for (segment, hosts) in &instance.stages {
            if let Some(segment) = segment {
                self.launch_segment(segment, on, stream, nodes)?;
            }
            for &id in hosts {
                self.list.run(id)?;
            }
        }
        Ok(())
    }

    /// Launches one stage's CUDA graph and waits for it, holding the handles of its launches
    /// until it has run.
    fn launch_segment(
        &self,
        segment: &Segment,
        on: &Cuda,
        stream: &driver::Stream,
        nodes: &GraphNodes<Cuda>,
    ) -> Result<(), hoplite_core::Error> {
        // The front end's launches run here, not through their `run`: their handles' borrows
        // are held until the stage has run, all in one group, since a node writing a view and
        // a later node of the stage reading it are both held for the whole stage.
        let group = BorrowGroup::new();
        let mut held = Vec::new();
        if self.holds_handles {
            for &id in &segment.launches {
                let Some(entry) = nodes.as_slice().get(id) else {
                    continue;
                };
                // SAFETY: the graph runs each node after its predecessors (its edges are the
                // list's), and the front end refused conflicting nodes without a path between
                // them before instantiation, so no two conflicting handles of `group` are used
                // at once; the handles are only held, and dropped after the stage has run.
                if let Some(handles) = unsafe { entry.hold_handles_in(&group) }? {
                    held.push(handles);
                }
            }
        }
        // Work queued on other instances (asynchronous launches, fills, copies) may still
        // touch the stage's views: wait for all of it (the graph's byte ranges are its
        // kernels' parameters, so all queued work counts as conflicting).
        let everything = crate::pending::Access {
            lo: 0,
            hi: u64::MAX,
            writes: true,
        };
        on.wait_for_queued(&[everything])?;
        // SAFETY: `exec` is an instantiated graph of this device (checked by the caller); the
        // stream is live; the graph's kernels use views kept alive by the graph (and, for the
        // front end's launches, held above), and its reduction joins payloads the graph owns;
        // the launch is waited for below before anything is released.
        unsafe { segment.exec.launch(stream) }?;
        stream.synchronize()?;
        drop(held);
        match self.errors.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl NodeKernel<Cuda> for Empty {
    fn label(&self) -> &str {
        "join"
    }
    fn kind(&self) -> NodeKind {
        NodeKind::Aggregate
    }
    fn accesses(&self) -> &[Access] {
        &[]
    }
    fn work(&self) -> Option<usize> {
        None
    }
    fn run(&self) -> hoplite_core::Result<()> {
        Ok(())
    }
    fn run_on(&self, _space: &Cuda) -> hoplite_core::Result<()> {
        Ok(())
    }
}

impl GraphBackend<Cuda> for CudaGraph {
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<Cuda>> {
        Arc::new(Empty)
    }

    fn add_node(&mut self, nodes: &GraphNodes<Cuda>, id: NodeId) {
        let Some(node) = nodes.as_slice().get(id.0) else {
            self.invalid(format!("node {} is not in the graph's node list", id.0));
            return;
        };
        if id.0 != self.nodes.len() {
            let reason = format!(
                "node {} added as node {}; nodes are added in id order",
                self.nodes.len(),
                id.0
            );
            self.invalid(reason);
        }
        // A node on an instance of its own (another stream) runs in the graph like the others:
        // a CUDA graph is launched on one stream, its nodes ordered by its edges. A node on
        // another GPU would need a multi-device graph, which is not built here.
        if let Some(own) = node.own_instance()
            && let (Ok(node_gpu), Ok(graph_gpu)) = (own.device(), self.space.device())
            && node_gpu != graph_gpu
        {
            let reason = format!(
                "node `{}` runs on GPU {node_gpu}, the graph on GPU {graph_gpu}; a CUDA graph runs on one GPU: make a graph per GPU",
                node.label()
            );
            self.invalid(reason);
        }
        let work = match node.kind() {
            NodeKind::Root | NodeKind::Aggregate => Work::Empty,
            NodeKind::Host => Work::Host,
            NodeKind::For => match kernel::front_end_kernel_node(&**node) {
                Ok(Some(kernel)) => {
                    self.holds_handles = true;
                    Work::Kernel(Box::new(kernel))
                }
                Ok(None) => {
                    let reason = format!(
                        "node `{}` is a parallel_for of a closure, which a GPU cannot run; write the kernel as a #[kernel] fn and pass `name::with(..)`",
                        node.label()
                    );
                    self.invalid(reason);
                    Work::Empty
                }
                Err(e) => {
                    self.invalid(format!("node `{}`: {e}", node.label()));
                    Work::Empty
                }
            },
            kind @ (NodeKind::Reduce | NodeKind::Scan) => {
                match front_end_reduce::front_end_reduction(&**node, id.0, &self.list) {
                    Ok(Some(reduction)) => {
                        self.holds_handles = true;
                        Work::Reduce(Box::new(reduction))
                    }
                    Ok(None) => {
                        let reason = format!(
                            "node `{}` is a {} of a closure, which a GPU cannot run; write the kernel as a #[kernel] fn and pass `name::with(..)`",
                            node.label(),
                            kind.name()
                        );
                        self.invalid(reason);
                        Work::Empty
                    }
                    Err(e) => {
                        self.invalid(format!("node `{}`: {e}", node.label()));
                        Work::Empty
                    }
                }
            }
        };
        self.nodes.push(Node {
            work,
            preds: Vec::new(),
        });
        for &predecessor in nodes.preds(id) {
            if predecessor.0 >= id.0 {
                let reason = format!(
                    "node {} cannot wait for node {}: a predecessor is an earlier node",
                    id.0, predecessor.0
                );
                self.invalid(reason);
                continue;
            }
            if let Some(node) = self.nodes.get_mut(id.0) {
                node.preds.push(predecessor.0);
            }
        }
    }

    fn create_aggregate(&mut self, _predecessors: &[NodeId]) -> Arc<dyn NodeKernel<Cuda>> {
        Arc::new(Empty)
    }

    fn instantiate(&mut self, _nodes: &GraphNodes<Cuda>) -> hoplite_core::Result<()> {
        self.build().map_err(Into::into)
    }

    fn submit(&self, nodes: &GraphNodes<Cuda>, on: Option<&Cuda>) -> hoplite_core::Result<()> {
        self.launch(on.unwrap_or(&self.space), nodes)
    }

    fn execution_space(&self) -> &Cuda {
        &self.space
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cuda_graphs_are_built_only_when_asked_for() {
        assert!(super::graph_mode(Some("device")));
        assert!(!super::graph_mode(Some("host")));
        assert!(!super::graph_mode(None));
        assert!(
            !super::graph_mode(Some("cuda")),
            "a misspelt value is reported, the host graph kept"
        );
    }
}
