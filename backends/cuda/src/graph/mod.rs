//! Explicit graphs as CUDA Graphs: [`CudaGraph`] implements hoplite-graph's [`GraphBackend`]
//! for `Cuda`, so the generic builder's graphs run as CUDA Graphs.
//!
//! Nodes map one to one onto explicit CUDA graph nodes: the root and `when_all` joins are
//! empty nodes (`cuGraphAddEmptyNode`), host functions are host nodes (`cuGraphAddHostNode`;
//! the driver runs them on a thread of its own and they make no CUDA call), and the builder's
//! `#[kernel]` launches (`then_parallel_for`) are kernel nodes (`cuGraphAddKernelNode`), with
//! their parameters packed and checked as an eager launch's. The builder's reductions and
//! scans of `#[kernel]`s (`then_parallel_reduce`, `then_parallel_scan_into`) are a kernel
//! node writing partials, a copy of them to page-locked memory and a host node that joins them
//! with the node's own reducer in the eager reduction's fixed order and stores the value where
//! the node stores it (for a scan: the prefixes, a copy back and the final pass).
//! `instantiate` builds and instantiates the graph once; every submit is one `cuGraphLaunch` on
//! a stream, then waits for it. A `Cuda` front-end graph has no closure launches (a GPU runs no
//! closures), so no node needs stream capture; such a node is refused with a typed error.
//!
//! Everything up to `instantiate` is checked without a device: node ids, predecessors that
//! come before their node, node kinds, and kernel arguments.
//!
//! The module is split by node kind: `kernel` holds the `#[kernel]` nodes, `reduce` the
//! reductions and scans with their partials and host join, `front_end_reduce` the builder's
//! reduce and scan nodes on top of it, and `host` the host nodes with the node list they run
//! from; this file holds the graph, its build and launch, and the `GraphBackend`
//! implementation.

mod front_end_reduce;
mod host;
mod kernel;
mod reduce;

use std::sync::Arc;

use hoplite_core::held::Access;
use hoplite_core::held::BorrowGroup;
use hoplite_graph::{GraphBackend, GraphNodes, GraphSpace, NodeId, NodeKernel, NodeKind};
use parking_lot::Mutex;

use self::host::{HostPayload, SubmitList, run_host_node};
use self::kernel::KernelNode;
use self::reduce::{ReduceNode, add_reduction};
use crate::driver::{self, GraphNode};
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry, fits};
use crate::{Cuda, CudaError};

type Geometry =
    Box<dyn Fn(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError> + Send + Sync>;

enum Work {
    /// The root, a join, or an empty launch.
    Empty,
    /// A host function of the front end.
    Host(Box<HostPayload>),
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

/// The instantiated graph and its executable, destroyed together (the executable first, as
/// the fields are dropped in order) once no launch is in flight: every submit waits for its
/// launch.
struct Instantiated {
    exec: driver::GraphExec,
    _graph: driver::Graph,
    device: Arc<driver::Device>,
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

/// `create_graph(&cuda, ..)` builds the generic host graph, whose nodes run as the eager
/// `Cuda` launches, one by one, in the graph's order: it keeps every graph axiom of the
/// conformance suite. A [`CudaGraph`] (`create_graph_with(&cuda, CudaGraph::new(&cuda), ..)`)
/// runs the whole graph as one CUDA graph launch, about eight times cheaper per node, but
/// keeps two of them only in part, which is why it is not the default (measured on an H100,
/// where the suite's graph checks failed as CUDA Graphs): its kernel nodes' borrows are held
/// for the whole submit, so a host node that reads a view a kernel node uses (`to_vec` in a
/// host function) meets a borrow conflict; and a host node's panic cannot stop the kernel
/// nodes after it, which the device runs anyway (the submit still returns the panic).
impl GraphSpace for Cuda {
    type Backend = hoplite_graph::HostGraph<Cuda>;
    fn graph_backend(&self) -> hoplite_graph::HostGraph<Cuda> {
        hoplite_graph::HostGraph::new(self.clone())
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
        // Owns the graph from here, so an error below destroys it.
        let mut graph = driver::Graph::new(device.clone())?;
        let mut handles: Vec<GraphNode> = Vec::with_capacity(self.nodes.len());
        for node in &mut self.nodes {
            let deps: Vec<GraphNode> = node.preds.iter().map(|&p| handles[p]).collect();
            let handle = match &mut node.work {
                Work::Kernel(k) => {
                    k.check_devices(device.ordinal)?;
                    let loaded = k.load(&device)?;
                    match (k.geometry)(&device.limits, &loaded.resources)? {
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
                Work::Host(payload) => {
                    let data = std::ptr::from_ref::<HostPayload>(payload).cast_mut().cast();
                    // SAFETY: the function is `run_host_node`, which makes no CUDA call and
                    // catches panics, and its data is a boxed payload that outlives the
                    // executable.
                    unsafe { graph.add_host(&deps, run_host_node, data) }?
                }
                Work::Empty => graph.add_empty(&deps)?,
                Work::Reduce(r) => add_reduction(r, &device, &mut graph, &deps, &self.errors)?,
            };
            handles.push(handle);
        }
        let exec = graph.instantiate()?;
        self.instance = Some(Instantiated {
            exec,
            _graph: graph,
            device,
        });
        Ok(())
    }

    /// One launch of the executable on `on`'s stream, waited for; the first host node error.
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
        // The host nodes run from `nodes` until the launch returns.
        let _lease = self.list.lease(nodes);
        // The kernels of a CUDA Graph run on the device with no host call per node: Kokkos
        // Tools connectors see the whole run as one region (it is waited for below).
        let _profiled = hoplite_core::profiling::ScopedRegion::new("hoplite::CudaGraph::launch");
        // SAFETY: `exec` is the instantiated graph of this device; the stream is live; the
        // graph's kernels use views kept alive by the graph and its host nodes payloads the
        // graph owns; the launch is waited for below before anything is released.
        unsafe { instance.exec.launch(stream) }?;
        stream.synchronize()?;
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
            NodeKind::Host => Work::Host(Box::new(HostPayload {
                id: id.0,
                list: self.list.clone(),
                errors: self.errors.clone(),
            })),
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
        // The front end's kernel nodes run here, not through their `run`: hold their handles'
        // borrows until the graph has run (a launch waits for it), all in one group, since a
        // node writing a view and a later node reading it are both held for the whole run.
        let group = BorrowGroup::new();
        let mut held = Vec::new();
        if self.holds_handles {
            for entry in nodes.as_slice() {
                if !matches!(entry.kind(), NodeKind::For | NodeKind::Reduce | NodeKind::Scan) {
                    continue;
                }
                // SAFETY: the graph runs each node after its predecessors (its edges are the
                // list's), and the front end refused conflicting nodes without a path between
                // them before instantiation, so no two conflicting handles of `group` are used
                // at once; the handles are only held, and dropped after the launch returned.
                if let Some(handles) = unsafe { entry.hold_handles_in(&group) }? {
                    held.push(handles);
                }
            }
        }
        let result = self.launch(on.unwrap_or(&self.space), nodes);
        drop(held);
        result
    }

    fn execution_space(&self) -> &Cuda {
        &self.space
    }
}
