//! Explicit graphs as CUDA Graphs: [`CudaGraph`] implements hoplite-graph's [`GraphBackend`]
//! for `Cuda` and adds device-kernel nodes of its own.
//!
//! Nodes map one to one onto explicit CUDA graph nodes: the root and `when_all` joins are
//! empty nodes (`cuGraphAddEmptyNode`), host functions are host nodes (`cuGraphAddHostNode`;
//! the driver runs them on a thread of its own and they make no CUDA call), and `#[kernel]`
//! launches added with [`CudaGraph::kernel_range`], [`kernel_mdrange`](CudaGraph::kernel_mdrange)
//! and [`kernel_team`](CudaGraph::kernel_team) are kernel nodes (`cuGraphAddKernelNode`), with
//! their parameters packed and checked as an eager launch's. `instantiate` builds and
//! instantiates the graph once; every submit is one `cuGraphLaunch` on a stream, then waits for
//! it. A `Cuda` front-end graph has no closure launches (a GPU runs no closures), so no node
//! needs stream capture; such a node is refused with a typed error.
//!
//! Everything up to `instantiate` is checked without a device: node ids, predecessors that
//! come before their node, node kinds, and kernel arguments.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::sys;
use hoplite_core::device_kernel::DeviceKernel;
use hoplite_core::{Reducer, ScanValue, TeamPolicy};
use hoplite_graph::{Access, GraphBackend, GraphNodes, NodeId, NodeKernel, NodeKind};
use parking_lot::{Mutex, RwLock};

use crate::driver::{self, check};
use crate::geometry::{
    DeviceLimits, KernelResources, LaunchGeometry, fits, mdrange_geometry_in, range_geometry,
};
use crate::launch::{
    DeviceArg, Loaded, TeamLaunch, check_args, check_devices, checked_mdrange, checked_range, load,
    team_writer_ends,
};
use crate::params::{IterationArgs, ParamBuffer, pack_for_args, pack_reduce_args, pack_scan_args};
use crate::reduce::{
    DeviceReduceValue, decode, device_join_for, encode, exclusive_prefix, join_partials, partials_count,
    partials_geometry, value_layout,
};
use crate::{Cuda, CudaError};

type Geometry =
    Box<dyn Fn(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError> + Send + Sync>;

/// A `#[kernel]` launch checked and packed, waiting for `instantiate` to load it.
struct KernelNode {
    name: &'static str,
    load: fn(&driver::Device) -> Result<Arc<Loaded>, CudaError>,
    geometry: Geometry,
    params: ParamBuffer,
    /// Each argument's device (`None` for a scalar), checked against the graph's device.
    devices: Vec<Option<usize>>,
    /// Each argument's device where it updates memory atomically (`None` otherwise).
    atomic_devices: Vec<Option<usize>>,
    /// The views the kernel reads and writes, alive as long as the graph.
    _keep: Vec<Arc<dyn Any + Send + Sync>>,
}

impl KernelNode {
    /// The node launching `K` with `params` packed from `args`, whose devices it records and
    /// whose views it keeps alive.
    fn new<K: DeviceKernel>(geometry: Geometry, params: ParamBuffer, args: &[DeviceArg]) -> KernelNode {
        KernelNode {
            name: K::NAME,
            load: load::<K>,
            geometry,
            params,
            devices: args.iter().map(|a| a.device).collect(),
            atomic_devices: args.iter().map(DeviceArg::atomic_device).collect(),
            _keep: args.iter().filter_map(DeviceArg::keep).collect(),
        }
    }

    /// As a launch's `check_arg_devices`, from the devices recorded when the node was made.
    fn check_devices(&self, instance_device: usize) -> Result<(), CudaError> {
        check_devices(
            self.name,
            instance_device,
            self.devices.iter().copied(),
            driver::peer_access_enabled,
        )?;
        check_devices(
            self.name,
            instance_device,
            self.atomic_devices.iter().copied(),
            driver::peer_atomics_enabled,
        )
    }
}

enum Work {
    /// The root, a join, or an empty launch.
    Empty,
    /// A host function of the front end.
    Host(Box<HostPayload>),
    /// A device kernel.
    Kernel(KernelNode),
    /// A device reduction (kernel, copy of the partials to the host, join on the host) or
    /// scan (the same, the prefixes copied back and a final kernel pass).
    Reduce(Box<ReduceNode>),
}

/// Joins a reduction's partials (their device bytes, in thread order) and keeps the value;
/// a scan replaces them with their exclusive prefixes.
trait PartialsJoin: Send + Sync {
    fn join(&self, partials: &mut [u8]);
}

/// The join of a reducer `R`, storing into the slot a [`GraphReduction`] reads.
struct Joiner<R: Reducer> {
    reducer: R,
    result: Arc<Mutex<Option<R::Value>>>,
}

impl<R> PartialsJoin for Joiner<R>
where
    R: Reducer + Send + Sync,
    R::Value: DeviceReduceValue,
{
    fn join(&self, partials: &mut [u8]) {
        let value = join_partials(&self.reducer, decode::<R::Value>(partials));
        *self.result.lock() = Some(value);
    }
}

/// The host step of a scan: each thread's chunk sum becomes its exclusive prefix, and the
/// total is kept.
struct Prefixer<T> {
    total: Arc<Mutex<Option<T>>>,
}

impl<T: DeviceReduceValue + ScanValue + Sync> PartialsJoin for Prefixer<T> {
    fn join(&self, partials: &mut [u8]) {
        let mut sums: Vec<T> = decode::<T>(partials).collect();
        let total = exclusive_prefix(&mut sums);
        partials.copy_from_slice(&encode(&sums));
        *self.total.lock() = Some(total);
    }
}

/// The value of a reduction node after the graph ran ([`CudaGraph::reduce_range`]).
pub struct GraphReduction<V> {
    result: Arc<Mutex<Option<V>>>,
}

impl<V: Clone> GraphReduction<V> {
    /// The value the last run computed; `None` before the first run.
    pub fn value(&self) -> Option<V> {
        self.result.lock().clone()
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for GraphReduction<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphReduction")
            .field("value", &*self.result.lock())
            .finish()
    }
}

/// Device partials and the page-locked host copy of them, alive as long as the graph.
struct PartialsBuffers {
    device: Arc<driver::Device>,
    partials: sys::CUdeviceptr,
    host: *mut c_void,
}

impl Drop for PartialsBuffers {
    fn drop(&mut self) {
        if self.device.bind().is_err() {
            return;
        }
        // SAFETY: both were allocated by `build` in this context and are freed once; no
        // launch of the graph is in flight (every submit waits for its launch).
        unsafe {
            let _ = sys::cuMemFree_v2(self.partials);
            let _ = sys::cuMemFreeHost(self.host);
        }
    }
}

/// What the join's host node gets; boxed, so its address stays put.
struct JoinPayload {
    join: Arc<dyn PartialsJoin>,
    /// The page-locked copy of the partials (null with no partials).
    host: *mut u8,
    bytes: usize,
    label: &'static str,
    errors: Arc<Mutex<Option<hoplite_core::Error>>>,
}

/// The host function of a reduction's join node.
unsafe extern "C" fn run_join_node(user_data: *mut c_void) {
    // SAFETY: `user_data` is the address of a boxed `JoinPayload` owned by the graph's
    // nodes, which outlive the executable; it is only read.
    let payload = unsafe { &*user_data.cast::<JoinPayload>() };
    let partials: &mut [u8] = if payload.host.is_null() {
        &mut []
    } else {
        // SAFETY: `host` is page-locked memory of `bytes` bytes owned by the graph and used by
        // this node alone while it runs: the memcpy node before it finished writing it, the
        // scan's copy back runs after it, and the next launch cannot start before this one
        // was waited for (one submit at a time).
        unsafe { std::slice::from_raw_parts_mut(payload.host, payload.bytes) }
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| payload.join.join(partials))) {
        let mut slot = payload.errors.lock();
        if slot.is_none() {
            *slot = Some(hoplite_core::Error::from_panic(payload.label, p));
        }
    }
}

/// A reduction node before and after `build`.
struct ReduceNode {
    kernel: KernelNode,
    /// Bytes of one partial.
    value_size: usize,
    join: Arc<dyn PartialsJoin>,
    /// A scan: the host step writes prefixes, which are copied back for a final pass.
    scan: bool,
    /// The device joins each block's values: one partial per block, not per thread.
    joined_on_device: bool,
    buffers: Option<PartialsBuffers>,
    payload: Option<Box<JoinPayload>>,
}

struct Node {
    work: Work,
    preds: Vec<usize>,
}

/// What a host node's function gets: where its node is and where its error goes. Boxed, so its
/// address stays the same while the graph's executable may call it.
///
/// The node itself lives in the graph's node list ([`GraphNodes`]), which owns its nodes: the
/// payload names it by id, and reaches it through the list of the submit in progress.
struct HostPayload {
    id: usize,
    list: Arc<SubmitList>,
    errors: Arc<Mutex<Option<hoplite_core::Error>>>,
}

/// The node list of the submit in progress, for the host nodes: set by `launch` from the list
/// its submit borrows, and cleared before the launch returns.
#[derive(Default)]
struct SubmitList(RwLock<Option<ListPtr>>);

/// The address of a submit's node list.
#[derive(Clone, Copy)]
struct ListPtr(NonNull<GraphNodes<Cuda>>);

// SAFETY: a `ListPtr` is only dereferenced as a shared reference, while the list is borrowed by
// the submit that stored it (see `SubmitList::lease`), and `GraphNodes<Cuda>` is `Sync`: using
// `&GraphNodes` from a driver thread is what `Sync` allows.
unsafe impl Send for ListPtr {}
// SAFETY: as for `Send`; the pointer itself is only copied.
unsafe impl Sync for ListPtr {}

/// Clears a [`SubmitList`] when the launch that set it returns, by any path.
struct ListLease<'a>(&'a SubmitList);

impl Drop for ListLease<'_> {
    fn drop(&mut self) {
        // The write lock waits for every host node running now (each holds the read lock while
        // it uses the list); one that starts later finds no list.
        *self.0.0.write() = None;
    }
}

impl SubmitList {
    /// Lends `nodes` to the host nodes until the returned lease drops; the lease borrows
    /// `nodes`, so the list outlives every use a host node makes of it.
    fn lease<'a>(&'a self, nodes: Option<&'a GraphNodes<Cuda>>) -> ListLease<'a> {
        *self.0.write() = nodes.map(|n| ListPtr(NonNull::from(n)));
        ListLease(self)
    }

    /// Runs node `id` of the lent list.
    fn run(&self, id: usize) -> hoplite_core::Result<()> {
        let lent = self.0.read();
        let Some(list) = *lent else {
            return Err(CudaError::InvalidGraph {
                reason: "a host node ran without its graph's node list; submit the graph through `GraphBackend::submit` (or `Graph::submit`), which hands it over".into(),
            }
            .into());
        };
        // SAFETY: `list` was stored by `lease` from a `&GraphNodes` borrowed for as long as the
        // lease lives, and the lease clears it under the write lock before it drops — which
        // waits for this read guard. So while `lent` is held the list is alive and only
        // shared.
        let nodes = unsafe { list.0.as_ref() };
        let Some(node) = nodes.as_slice().get(id) else {
            return Err(CudaError::InvalidGraph {
                reason: format!("host node {id} is not in the node list of the submit"),
            }
            .into());
        };
        catch_unwind(AssertUnwindSafe(|| node.run()))
            .unwrap_or_else(|p| Err(hoplite_core::Error::from_panic(node.label(), p)))
    }
}

/// The host function of every host node.
unsafe extern "C" fn run_host_node(user_data: *mut c_void) {
    // SAFETY: `user_data` is the address of a `HostPayload` boxed in the graph's nodes, which
    // outlive the executable graph (dropped after `cuGraphExecDestroy`, and every launch is
    // waited for before a submit returns); the payload is only read.
    let payload = unsafe { &*user_data.cast::<HostPayload>() };
    // A panic must not unwind into the driver's thread (`SubmitList::run` catches the node's).
    let result = payload.list.run(payload.id);
    if let Err(e) = result {
        let mut slot = payload.errors.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

/// The instantiated graph and its executable, destroyed together.
struct Instantiated {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    device: Arc<driver::Device>,
}

impl Drop for Instantiated {
    fn drop(&mut self) {
        if self.device.bind().is_err() {
            return;
        }
        // SAFETY: both handles were created by `instantiate`, are destroyed once, and no
        // launch is in flight (every submit waits for its launch).
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}

/// A node of the front end that only stands for a join (its kind says so).
struct Empty;

/// An explicit graph on a `Cuda` instance, run as a CUDA Graph.
///
/// ```
/// use hoplite_cuda::Cuda;
/// use hoplite_cuda::graph::CudaGraph;
/// use hoplite_graph::create_graph_with;
///
/// let cuda = Cuda::default();
/// let built = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
///     let a = g.host("prepare", || {});
///     a.then_host("report", || {});
/// });
/// let mut graph = built?;
/// match graph.submit() {
///     Ok(()) => println!("ran as a CUDA graph"),
///     Err(e) => println!("{e}"), // no device here
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

    /// Checks `after` and appends a node that waits for them.
    fn push(&mut self, work: Work, after: &[NodeId]) -> Result<NodeId, CudaError> {
        let id = self.nodes.len();
        if self.instance.is_some() {
            return Err(CudaError::InvalidGraph {
                reason: "the graph is instantiated; add nodes before the first submit".into(),
            });
        }
        if let Some(p) = after.iter().find(|p| p.0 >= id) {
            return Err(CudaError::InvalidGraph {
                reason: format!("node {id} cannot wait for node {}, which does not exist yet", p.0),
            });
        }
        self.nodes.push(Node {
            work,
            preds: after.iter().map(|p| p.0).collect(),
        });
        Ok(NodeId(id))
    }

    fn kernel_node<K: DeviceKernel>(
        &mut self,
        iteration: IterationArgs,
        ends: &[u64],
        args: &[DeviceArg],
        geometry: Geometry,
        after: &[NodeId],
    ) -> Result<NodeId, CudaError> {
        let params = pack_for_args::<K>(&iteration, args)?;
        check_args(K::NAME, ends, args)?;
        let node = KernelNode::new::<K>(geometry, params, args);
        self.push(Work::Kernel(node), after)
    }

    /// Adds a kernel node launching `K` (a `#[kernel]` `parallel_for` over a range) over
    /// `range`, after the nodes `after`. The arguments are checked as
    /// [`Cuda::launch_range`] checks them, now, without a device; the views stay alive as long
    /// as the graph.
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundWriter, kernel};
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{Cuda, CudaSpace, DeviceArg};
    /// use hoplite_cuda::graph::CudaGraph;
    ///
    /// #[kernel]
    /// fn ones(i: Idx<'_>, y: BoundWriter<'_, f64, 1>) {
    ///     y.set(i, 1.0);
    /// }
    ///
    /// let y: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// let mut graph = CudaGraph::new(&Cuda::default());
    /// // A writer of extent 0 cannot take 10 indices: refused at once.
    /// assert!(graph.kernel_range::<ones>(0..10, &[DeviceArg::write(&y)], &[]).is_err());
    /// let node = graph.kernel_range::<ones>(0..0, &[DeviceArg::write(&y)], &[])?;
    /// assert_eq!(node.0, 0);
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`Cuda::launch_range`]'s checks; [`CudaError::InvalidGraph`] for a predecessor
    /// that is not an earlier node, or a graph already instantiated.
    pub fn kernel_range<K: DeviceKernel>(
        &mut self,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        after: &[NodeId],
    ) -> Result<NodeId, CudaError> {
        let (begin, end) = checked_range::<K>(range)?;
        let geometry: Geometry = Box::new(move |limits, _| Ok(range_geometry(limits, end - begin)));
        self.kernel_node::<K>(IterationArgs::Range { begin, end }, &[end], args, geometry, after)
    }

    /// Adds a kernel node launching `K` over an MDRange of rank `R`, as
    /// [`kernel_range`](Self::kernel_range) does.
    ///
    /// # Errors
    ///
    /// As for [`kernel_range`](Self::kernel_range) and [`Cuda::launch_mdrange`].
    pub fn kernel_mdrange<K: DeviceKernel, const R: usize>(
        &mut self,
        begins: [usize; R],
        ends: [usize; R],
        args: &[DeviceArg],
        after: &[NodeId],
    ) -> Result<NodeId, CudaError> {
        let (iteration, ends, (lengths, order)) = checked_mdrange::<K, R>(begins, ends, args)?;
        let geometry: Geometry = Box::new(move |limits, _| Ok(mdrange_geometry_in(limits, &lengths, order)));
        self.kernel_node::<K>(iteration, &ends, args, geometry, after)
    }

    /// Adds a kernel node launching `K` over the league of teams of `policy` (its scratch
    /// included), as [`kernel_range`](Self::kernel_range) does.
    ///
    /// # Errors
    ///
    /// As for [`kernel_range`](Self::kernel_range) and [`Cuda::launch_team`].
    pub fn kernel_team<K: DeviceKernel>(
        &mut self,
        policy: &TeamPolicy<Cuda>,
        args: &[DeviceArg],
        after: &[NodeId],
    ) -> Result<NodeId, CudaError> {
        let team = TeamLaunch::of::<K>(policy)?;
        let geometry: Geometry = Box::new(move |limits, resources| team.plan(limits, resources));
        self.kernel_node::<K>(
            team.iteration(),
            &team_writer_ends(args, team.league),
            args,
            geometry,
            after,
        )
    }

    /// Adds a reduction: `K` (a `#[kernel]` `parallel_reduce` over a range) over `range` with
    /// `reducer`, after the nodes `after`. In the CUDA graph it is three nodes: the kernel
    /// writing one partial per launched thread, a copy of the partials into page-locked host
    /// memory, and a host node joining them in the fixed order (as [`Cuda::reduce_range`]
    /// does). The returned [`GraphReduction`] holds the value of the last run; the returned
    /// node is the join, so nodes after it see the value.
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundReader, kernel};
    /// use hoplite_core::{LayoutLeft, Sum, View};
    /// use hoplite_cuda::{Cuda, CudaSpace, DeviceArg};
    /// use hoplite_cuda::graph::CudaGraph;
    ///
    /// #[kernel]
    /// fn total(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    ///     *acc += x.get(i);
    /// }
    ///
    /// let x: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// let mut graph = CudaGraph::new(&Cuda::default());
    /// // The reducer must be the kernel's accumulator: refused at once.
    /// assert!(graph.reduce_range::<total, _>(0..0, &[DeviceArg::read(&x)], Sum::<f32>::new(), &[]).is_err());
    /// let (_node, sum) = graph.reduce_range::<total, _>(0..0, &[DeviceArg::read(&x)], Sum::<f64>::new(), &[])?;
    /// match graph.run() {
    ///     Ok(()) => assert_eq!(sum.value(), Some(0.0)),
    ///     Err(e) => println!("{e}"), // no device here
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`Cuda::reduce_range`]'s checks; [`CudaError::InvalidGraph`] for a predecessor
    /// that is not an earlier node, or a graph already instantiated.
    pub fn reduce_range<K: DeviceKernel, R>(
        &mut self,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        reducer: R,
        after: &[NodeId],
    ) -> Result<(NodeId, GraphReduction<R::Value>), CudaError>
    where
        R: Reducer + Send + Sync + 'static,
        R::Value: DeviceReduceValue,
    {
        let (begin, end) = checked_range::<K>(range)?;
        self.reduce_node::<K, R>(
            IterationArgs::Range { begin, end },
            &[end],
            args,
            reducer,
            Box::new(move |limits, _| Ok(range_geometry(limits, end - begin))),
            after,
        )
    }

    /// Adds a reduction: `K` (a `#[kernel]` `parallel_reduce` over an MDRange of rank `N`)
    /// over `begins..ends` with `reducer`, after the nodes `after`, as
    /// [`reduce_range`](Self::reduce_range) adds one: the kernel node with the eager
    /// [`Cuda::reduce_mdrange`]'s geometry cut to the resident threads, the copy of the
    /// partials and the host join in the fixed order.
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundReader, kernel};
    /// use hoplite_core::{LayoutLeft, Sum, View};
    /// use hoplite_cuda::{Cuda, CudaSpace, DeviceArg};
    /// use hoplite_cuda::graph::CudaGraph;
    ///
    /// #[kernel]
    /// fn total2(i: MdIdx<'_, 2>, x: BoundReader<'_, f64, 2>, acc: &mut f64) {
    ///     *acc += x.get(i);
    /// }
    ///
    /// let x: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
    /// let mut graph = CudaGraph::new(&Cuda::default());
    /// // A range kernel's MDRange is refused at once, as the eager reduction refuses it.
    /// assert!(graph.reduce_mdrange::<total2, _, 1>([0], [0], &[DeviceArg::read(&x)], Sum::<f64>::new(), &[]).is_err());
    /// let (_node, sum) =
    ///     graph.reduce_mdrange::<total2, _, 2>([0, 0], [0, 0], &[DeviceArg::read(&x)], Sum::<f64>::new(), &[])?;
    /// match graph.run() {
    ///     Ok(()) => assert_eq!(sum.value(), Some(0.0)),
    ///     Err(e) => println!("{e}"), // no device here
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`Cuda::reduce_mdrange`]'s checks; [`CudaError::InvalidGraph`] for a
    /// predecessor that is not an earlier node, or a graph already instantiated.
    pub fn reduce_mdrange<K: DeviceKernel, R, const N: usize>(
        &mut self,
        begins: [usize; N],
        ends: [usize; N],
        args: &[DeviceArg],
        reducer: R,
        after: &[NodeId],
    ) -> Result<(NodeId, GraphReduction<R::Value>), CudaError>
    where
        R: Reducer + Send + Sync + 'static,
        R::Value: DeviceReduceValue,
    {
        let (iteration, ends, (lengths, order)) = checked_mdrange::<K, N>(begins, ends, args)?;
        self.reduce_node::<K, R>(
            iteration,
            &ends,
            args,
            reducer,
            Box::new(move |limits, _| Ok(mdrange_geometry_in(limits, &lengths, order))),
            after,
        )
    }

    /// Adds a reduction: `K` (a `#[kernel]` `parallel_reduce` over a `TeamPolicy`) over the
    /// league of `policy` (its team size and scratch included) with `reducer`, after the nodes
    /// `after`, as [`reduce_range`](Self::reduce_range) adds one; every thread of every team
    /// contributes its partial, as in [`Cuda::reduce_team`]. Writers as in
    /// [`Cuda::launch_team`].
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundReader, kernel};
    /// use hoplite_core::{LayoutLeft, Sum, TeamPolicy, View};
    /// use hoplite_cuda::{Cuda, CudaSpace, DeviceArg};
    /// use hoplite_cuda::graph::CudaGraph;
    ///
    /// #[kernel]
    /// fn row_sums(m: &impl TeamMember, x: BoundReader<'_, f64, 2>, cols: usize, acc: &mut f64) {
    ///     let row = m.league_rank();
    ///     let mut k = m.team_rank();
    ///     while k < cols {
    ///         *acc += x.get([row, k]);
    ///         k += m.team_size();
    ///     }
    /// }
    ///
    /// let cuda = Cuda::default();
    /// let x: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
    /// let mut graph = CudaGraph::new(&cuda);
    /// let policy = TeamPolicy::new(cuda.clone(), 0, 32);
    /// // The reducer must be the kernel's accumulator: refused at once.
    /// assert!(graph.reduce_team::<row_sums, _>(&policy, &[DeviceArg::read(&x), DeviceArg::scalar(0usize)], Sum::<f32>::new(), &[]).is_err());
    /// let (_node, sum) =
    ///     graph.reduce_team::<row_sums, _>(&policy, &[DeviceArg::read(&x), DeviceArg::scalar(0usize)], Sum::<f64>::new(), &[])?;
    /// if graph.run().is_ok() {
    ///     assert_eq!(sum.value(), Some(0.0));
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`Cuda::reduce_team`]'s checks; [`CudaError::InvalidGraph`] for a predecessor
    /// that is not an earlier node, or a graph already instantiated.
    pub fn reduce_team<K: DeviceKernel, R>(
        &mut self,
        policy: &TeamPolicy<Cuda>,
        args: &[DeviceArg],
        reducer: R,
        after: &[NodeId],
    ) -> Result<(NodeId, GraphReduction<R::Value>), CudaError>
    where
        R: Reducer + Send + Sync + 'static,
        R::Value: DeviceReduceValue,
    {
        let team = TeamLaunch::of::<K>(policy)?;
        self.reduce_node::<K, R>(
            team.iteration(),
            &team_writer_ends(args, team.league),
            args,
            reducer,
            Box::new(move |limits, resources| team.plan(limits, resources)),
            after,
        )
    }

    /// A reduction node of any iteration: packs and checks as the eager reduction does, cuts
    /// `geometry` to the resident threads (a partial each, or one per block where the device
    /// joins), and adds the node.
    fn reduce_node<K: DeviceKernel, R>(
        &mut self,
        iteration: IterationArgs,
        ends: &[u64],
        args: &[DeviceArg],
        reducer: R,
        geometry: Geometry,
        after: &[NodeId],
    ) -> Result<(NodeId, GraphReduction<R::Value>), CudaError>
    where
        R: Reducer + Send + Sync + 'static,
        R::Value: DeviceReduceValue,
    {
        let join = device_join_for(K::PATTERN, reducer.device_join());
        let params = pack_reduce_args::<K, R::Value>(&iteration, args, &reducer.init(), join)?;
        check_args(K::NAME, ends, args)?;
        let geometry: Geometry = Box::new(move |limits, resources| {
            Ok(geometry(limits, resources)?.map(|g| partials_geometry(limits, g)))
        });
        let result = Arc::new(Mutex::new(None));
        let node = ReduceNode {
            kernel: KernelNode::new::<K>(geometry, params, args),
            value_size: value_layout(<R::Value as DeviceReduceValue>::PATTERN).map_or(0, |l| l.size),
            join: Arc::new(Joiner {
                reducer,
                result: result.clone(),
            }),
            scan: false,
            joined_on_device: join.is_some(),
            buffers: None,
            payload: None,
        };
        let id = self.push(Work::Reduce(Box::new(node)), after)?;
        Ok((id, GraphReduction { result }))
    }

    /// Adds a scan: `K` (a `#[kernel]` `parallel_scan` over a range of `T`) over `range`,
    /// after the nodes `after`, as [`Cuda::scan_range`] runs it: a first kernel pass storing
    /// each thread's chunk sum, a copy of the sums into page-locked host memory, a host node
    /// replacing them with their exclusive prefix in thread order, a copy back, and the final
    /// pass. The returned node is the final pass; the [`GraphReduction`] holds the last run's
    /// total.
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundReader, BoundWriter, kernel};
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{Cuda, CudaSpace, DeviceArg};
    /// use hoplite_cuda::graph::CudaGraph;
    ///
    /// #[kernel]
    /// fn prefix(i: Idx<'_>, y: BoundWriter<'_, i64, 1>, x: BoundReader<'_, i64, 1>, acc: &mut i64, is_final: bool) {
    ///     *acc += x.get(i);
    ///     if is_final {
    ///         y.set(i, *acc);
    ///     }
    /// }
    ///
    /// let (x, y): (View<i64, 1, LayoutLeft, CudaSpace>, View<i64, 1, LayoutLeft, CudaSpace>) =
    ///     (View::default(), View::default());
    /// let mut graph = CudaGraph::new(&Cuda::default());
    /// assert!(graph.scan_range::<prefix, i32>(0..0, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[]).is_err());
    /// let (_, total) = graph.scan_range::<prefix, i64>(0..0, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[])?;
    /// if graph.run().is_ok() {
    ///     assert_eq!(total.value(), Some(0));
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`Cuda::scan_range`]'s checks; [`CudaError::InvalidGraph`] for a predecessor
    /// that is not an earlier node, or a graph already instantiated.
    pub fn scan_range<K: DeviceKernel, T>(
        &mut self,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        after: &[NodeId],
    ) -> Result<(NodeId, GraphReduction<T>), CudaError>
    where
        T: DeviceReduceValue + ScanValue + Sync,
    {
        let (begin, end) = checked_range::<K>(range)?;
        let params = pack_scan_args::<K, T>(&IterationArgs::Range { begin, end }, args)?;
        check_args(K::NAME, &[end], args)?;
        let geometry: Geometry = Box::new(move |limits, _| {
            Ok(range_geometry(limits, end - begin).map(|g| partials_geometry(limits, g)))
        });
        let result = Arc::new(Mutex::new(None));
        let node = ReduceNode {
            kernel: KernelNode::new::<K>(geometry, params, args),
            value_size: value_layout(T::PATTERN).map_or(0, |l| l.size),
            join: Arc::new(Prefixer {
                total: result.clone(),
            }),
            scan: true,
            joined_on_device: false,
            buffers: None,
            payload: None,
        };
        let id = self.push(Work::Reduce(Box::new(node)), after)?;
        Ok((id, GraphReduction { result }))
    }

    /// Adds an empty node after `after` (a join).
    ///
    /// # Errors
    ///
    /// As for [`kernel_range`](Self::kernel_range)'s predecessors.
    pub fn join(&mut self, after: &[NodeId]) -> Result<NodeId, CudaError> {
        self.push(Work::Empty, after)
    }

    /// Builds the CUDA graph and instantiates it: the device part of `instantiate`.
    fn build(&mut self) -> Result<(), CudaError> {
        if let Some(reason) = &self.invalid {
            return Err(CudaError::InvalidGraph {
                reason: reason.clone(),
            });
        }
        let device = self.space.stream()?.device.clone();
        device.bind()?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the device's context is current; live out pointer; flags must be 0.
        check("cuGraphCreate", unsafe { sys::cuGraphCreate(&mut graph, 0) })?;
        // Owns the graph from here, so an error below destroys it.
        let mut instance = Instantiated {
            graph,
            exec: std::ptr::null_mut(),
            device: device.clone(),
        };
        let mut handles: Vec<sys::CUgraphNode> = Vec::with_capacity(self.nodes.len());
        for node in &mut self.nodes {
            let deps: Vec<sys::CUgraphNode> = node.preds.iter().map(|&p| handles[p]).collect();
            let mut handle: sys::CUgraphNode = std::ptr::null_mut();
            let graph = instance.graph;
            let add_empty = |handle: &mut sys::CUgraphNode| {
                // SAFETY: the context is current; `deps` are nodes of this graph.
                check("cuGraphAddEmptyNode", unsafe {
                    sys::cuGraphAddEmptyNode(handle, graph, deps.as_ptr(), deps.len())
                })
            };
            match &mut node.work {
                Work::Kernel(k) => {
                    k.check_devices(device.ordinal)?;
                    let loaded = (k.load)(&device)?;
                    let Some(g) = (k.geometry)(&device.limits, &loaded.resources)? else {
                        add_empty(&mut handle)?; // an empty iteration space
                        handles.push(handle);
                        continue;
                    };
                    if !fits(&device.limits, &g) {
                        return Err(CudaError::InvalidLaunch {
                            kernel: k.name,
                            reason: format!("the geometry {g:?} does not fit the device"),
                        });
                    }
                    let mut pointers = k.params.pointers();
                    let params = kernel_node_params(loaded.function, &g, &mut pointers);
                    // SAFETY: the context is current; `deps` are nodes of this graph; the
                    // function is loaded on this device and its entry takes exactly the
                    // parameters `pack_for` packed against `K::params()` (checked when the
                    // node was added, with its writers containing the iteration space);
                    // `pointers` point into `k.params`, which the driver copies here; the
                    // views the addresses belong to are this device's memory (checked above)
                    // and live as long as the graph; the geometry
                    // fits the device.
                    check("cuGraphAddKernelNode_v2", unsafe {
                        sys::cuGraphAddKernelNode_v2(&mut handle, graph, deps.as_ptr(), deps.len(), &params)
                    })?;
                }
                Work::Host(payload) => {
                    let params = sys::CUDA_HOST_NODE_PARAMS {
                        fn_: Some(run_host_node),
                        userData: std::ptr::from_ref::<HostPayload>(payload).cast_mut().cast(),
                    };
                    // SAFETY: the context is current; `deps` are nodes of this graph; the
                    // function is `run_host_node`, which makes no CUDA call and catches
                    // panics, and its data is a boxed payload that outlives the executable.
                    check("cuGraphAddHostNode", unsafe {
                        sys::cuGraphAddHostNode(&mut handle, graph, deps.as_ptr(), deps.len(), &params)
                    })?;
                }
                Work::Empty => add_empty(&mut handle)?,
                Work::Reduce(r) => {
                    handle = add_reduction(r, &device, graph, &deps, &self.errors)?;
                }
            }
            handles.push(handle);
        }
        // SAFETY: `graph` is complete; live out pointer; flags 0 (launch as built).
        check("cuGraphInstantiateWithFlags", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut instance.exec, instance.graph, 0)
        })?;
        self.instance = Some(instance);
        Ok(())
    }

    /// One launch of the executable on `on`'s stream, waited for; the first host node error.
    fn launch(&self, on: &Cuda, nodes: Option<&GraphNodes<Cuda>>) -> Result<(), hoplite_core::Error> {
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
        stream.device.bind()?;
        // The host nodes run from `nodes` until the launch returns.
        let _lease = self.list.lease(nodes);
        // SAFETY: `exec` is the instantiated graph of this device; the stream is live; the
        // graph's kernels use views kept alive by the graph and its host nodes payloads the
        // graph owns; the launch is waited for below before anything is released.
        check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(instance.exec, stream.raw())
        })?;
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
        let work = match node.kind() {
            NodeKind::Root | NodeKind::Aggregate => Work::Empty,
            NodeKind::Host => Work::Host(Box::new(HostPayload {
                id: id.0,
                list: self.list.clone(),
                errors: self.errors.clone(),
            })),
            kind @ (NodeKind::For | NodeKind::Reduce | NodeKind::Scan) => {
                let reason = format!(
                    "node `{}` is a {} of a closure, which a GPU cannot run; add #[kernel] launches with CudaGraph::kernel_range and its siblings",
                    node.label(),
                    kind.name()
                );
                self.invalid(reason);
                Work::Empty
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
        self.launch(on.unwrap_or(&self.space), Some(nodes))
    }

    fn execution_space(&self) -> &Cuda {
        &self.space
    }
}

impl CudaGraph {
    /// Instantiates the graph built with the `kernel_*` and [`join`](Self::join) methods
    /// (graphs made by hoplite-graph's front end instantiate through it).
    ///
    /// # Errors
    ///
    /// [`CudaError::InvalidGraph`] for a structural problem; why the instance has no device;
    /// NVRTC's and the driver's errors.
    pub fn instantiate_now(&mut self) -> Result<(), CudaError> {
        if self.instance.is_some() {
            return Ok(());
        }
        self.build()
    }

    /// Runs the instantiated graph once on its instance's stream and waits for it. Host nodes
    /// of a front-end node list run from the list a submit hands over, so a graph that has
    /// them is submitted through [`GraphBackend::submit`]: here they report
    /// [`CudaError::InvalidGraph`].
    ///
    /// # Errors
    ///
    /// As for [`instantiate_now`](Self::instantiate_now) when it was not instantiated; the
    /// first failing host node; the driver's error.
    pub fn run(&mut self) -> hoplite_core::Result<()> {
        self.instantiate_now()?;
        let space = self.space.clone();
        self.launch(&space, None)
    }
}

/// Adds a reduction's nodes (kernel, copy of the partials to the host, join) after `deps`;
/// returns the join node. Allocates the partials for the device's geometry.
fn add_reduction(
    r: &mut ReduceNode,
    device: &Arc<driver::Device>,
    graph: sys::CUgraph,
    deps: &[sys::CUgraphNode],
    errors: &Arc<Mutex<Option<hoplite_core::Error>>>,
) -> Result<sys::CUgraphNode, CudaError> {
    r.kernel.check_devices(device.ordinal)?;
    let loaded = (r.kernel.load)(device)?;
    let geometry = (r.kernel.geometry)(&device.limits, &loaded.resources)?;
    let mut last: Vec<sys::CUgraphNode> = deps.to_vec();
    let mut host_ptr: *mut u8 = std::ptr::null_mut();
    let mut scan_tail: Option<(sys::CUDA_MEMCPY3D, ParamBuffer, LaunchGeometry, sys::CUfunction)> = None;
    let mut bytes = 0usize;
    if let Some(g) = geometry {
        if !fits(&device.limits, &g) {
            return Err(CudaError::InvalidLaunch {
                kernel: r.kernel.name,
                reason: format!("the geometry {g:?} does not fit the device"),
            });
        }
        let count = partials_count(&g, r.joined_on_device);
        bytes = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(r.value_size))
            .ok_or_else(|| CudaError::InvalidLaunch {
                kernel: r.kernel.name,
                reason: format!("{count} partials do not fit the address space"),
            })?
            .max(1);
        device.bind()?;
        let mut partials: sys::CUdeviceptr = 0;
        // SAFETY: the device's context is current; live out pointer.
        check("cuMemAlloc_v2", unsafe {
            sys::cuMemAlloc_v2(&mut partials, bytes)
        })?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: the context is current; live out pointer.
        let pinned = check("cuMemAllocHost_v2", unsafe {
            sys::cuMemAllocHost_v2(&mut host, bytes)
        });
        if let Err(e) = pinned {
            // SAFETY: allocated just above, not used anywhere.
            let _ = unsafe { sys::cuMemFree_v2(partials) };
            return Err(e);
        }
        r.buffers = Some(PartialsBuffers {
            device: device.clone(),
            partials,
            host,
        });
        host_ptr = host.cast();
        // A reduction's last parameter is the partials pointer; a scan's are the values
        // pointer and the final-pass flag.
        let params_count = r.kernel.params.offsets().len();
        let partials_param = if r.scan {
            params_count - 2
        } else {
            params_count - 1
        };
        r.kernel.params.set(partials_param, &partials.to_le_bytes());
        let mut pointers = r.kernel.params.pointers();
        let params = kernel_node_params(loaded.function, &g, &mut pointers);
        let mut kernel: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph; the entry takes
        // exactly the parameters `pack_reduce` packed against `K::params()` and the reducer's
        // pattern, with the partials pointer now a live allocation of one partial per
        // launched thread of `g`; `pointers` point into the params, which the driver copies;
        // the views are this device's memory (checked above) and live as long as the graph;
        // the geometry fits the device.
        check("cuGraphAddKernelNode_v2", unsafe {
            sys::cuGraphAddKernelNode_v2(&mut kernel, graph, deps.as_ptr(), deps.len(), &params)
        })?;
        let copy = partials_copy(partials, host, bytes, true);
        let mut memcpy: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current and passed as the copy's context; the copy reads
        // `bytes` bytes of the partials allocation and writes `bytes` bytes of the
        // page-locked host buffer, both owned by the graph; it runs after the kernel node.
        check("cuGraphAddMemcpyNode", unsafe {
            sys::cuGraphAddMemcpyNode(&mut memcpy, graph, &kernel, 1, &copy, device.context())
        })?;
        last = vec![memcpy];
        if r.scan {
            let mut final_params = r.kernel.params.clone();
            final_params.set(params_count - 1, &[1]);
            scan_tail = Some((
                partials_copy(partials, host, bytes, false),
                final_params,
                g,
                loaded.function,
            ));
        }
    }
    let payload = r.payload.insert(Box::new(JoinPayload {
        join: r.join.clone(),
        host: host_ptr,
        bytes,
        label: r.kernel.name,
        errors: errors.clone(),
    }));
    let params = sys::CUDA_HOST_NODE_PARAMS {
        fn_: Some(run_join_node),
        userData: std::ptr::from_ref::<JoinPayload>(payload).cast_mut().cast(),
    };
    let mut join: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: the context is current; `last` are nodes of this graph (the copy, or the
    // reduction's own predecessors for an empty range); `run_join_node` makes no CUDA call and
    // catches panics; its data is a boxed payload the graph owns, outliving the executable.
    check("cuGraphAddHostNode", unsafe {
        sys::cuGraphAddHostNode(&mut join, graph, last.as_ptr(), last.len(), &params)
    })?;
    let Some((copy, mut final_params, g, function)) = scan_tail else {
        return Ok(join);
    };
    let mut back: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: the context is current and passed as the copy's context; the copy reads the
    // prefixes the host node wrote into the page-locked buffer and writes the values
    // allocation, both `bytes` bytes owned by the graph; it runs after the host node.
    check("cuGraphAddMemcpyNode", unsafe {
        sys::cuGraphAddMemcpyNode(&mut back, graph, &join, 1, &copy, device.context())
    })?;
    let mut pointers = final_params.pointers();
    let params = kernel_node_params(function, &g, &mut pointers);
    let mut final_pass: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: as for the first pass (the same entry, geometry and arguments, packed by
    // `pack_scan`), with the final-pass flag set; it runs after the prefixes were copied back,
    // so each thread starts from its prefix; `pointers` point into `final_params`, which the
    // driver copies here.
    check("cuGraphAddKernelNode_v2", unsafe {
        sys::cuGraphAddKernelNode_v2(&mut final_pass, graph, &back, 1, &params)
    })?;
    Ok(final_pass)
}

/// The parameters of a kernel node launching `function` with geometry `g` and the kernel
/// parameters `pointers` points at (the driver copies them when the node is added).
fn kernel_node_params(
    function: sys::CUfunction,
    g: &LaunchGeometry,
    pointers: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: function,
        gridDimX: g.grid[0],
        gridDimY: g.grid[1],
        gridDimZ: g.grid[2],
        blockDimX: g.block[0],
        blockDimY: g.block[1],
        blockDimZ: g.block[2],
        sharedMemBytes: g.shared_bytes,
        kernelParams: pointers.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        // `func` names the function: no CUkernel, and the context that is current.
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// A one-dimensional copy of `bytes` bytes between the device buffer `device` and the host
/// buffer `host` (to the host when `to_host`), as a memcpy node takes it.
fn partials_copy(
    device: sys::CUdeviceptr,
    host: *mut c_void,
    bytes: usize,
    to_host: bool,
) -> sys::CUDA_MEMCPY3D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let (src_type, dst_type) = if to_host {
        (CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST)
    } else {
        (CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE)
    };
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: if to_host {
            std::ptr::null()
        } else {
            host.cast_const()
        },
        srcDevice: if to_host { device } else { 0 },
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: bytes,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: if to_host { host } else { std::ptr::null_mut() },
        dstDevice: if to_host { 0 } else { device },
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: bytes,
        dstHeight: 1,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}
