//! `NumaSpace`: one rayon-backend instance per pool, its workers bound to NUMA nodes.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

use hoplite_core::{
    ExecutionSpace, LayoutRight, RangePolicy, Result, TokenPool, UniqueTokenSpace, View, ViewValue,
    parallel_for,
};
use hoplite_rayon::{RayonGlobalToken, RayonSpace, RayonTeamMember, WorkerThread};
use hwlocality::cpu::binding::CpuBindingFlags;
use parking_lot::{Condvar, Mutex};

use crate::error::NumaError;
use crate::memory::NumaMemory;
use crate::topology::NumaTopology;

/// The NUMA execution space: an instance is one pool of threads spread over NUMA nodes, each
/// worker bound to the cores of its node.
///
/// [`NumaSpace::new`] spans every node: its ranks are laid out node after node, so a launch's
/// static split gives each node one contiguous part of the range and divides it among that
/// node's workers. [`node(k)`](Self::node) is the pool of node `k` alone (made on first use,
/// then the same instance), and [`partition_by_node`](Self::partition_by_node) gives them all.
/// Clones are the same instance.
///
/// ```
/// use hoplite_core::{ExecutionSpace, RangePolicy, Sum, parallel_reduce};
/// use hoplite_numa::{NumaSpace, NumaTopology};
/// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 core:2 pu:1")?, 0)?;
/// assert_eq!((space.concurrency(), space.node_count()), (4, 2));
/// let sum = parallel_reduce("sum", RangePolicy::new(space.node(1)?, 0..1000), |i, a| *a += *i, Sum::<usize>::new())?;
/// assert_eq!(sum, 499_500);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NumaSpace {
    inner: Arc<Instance>,
}

struct Instance {
    topology: NumaTopology,
    pool: RayonSpace,
    /// The node (logical index) of each rank; rank 0 is the launching thread.
    rank_nodes: Arc<[usize]>,
    /// The nodes this instance spans, in rank order, with their thread counts.
    spans: Vec<(usize, usize)>,
    kind: Kind,
    /// Threads per node asked for (0: one per processing unit), for the node pools.
    threads_per_node: usize,
    binding: Arc<BindingState>,
    /// The node pools of a whole-machine instance or a partition, made on first use.
    node_pools: Vec<OnceLock<NumaSpace>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Machine,
    Node(usize),
    Partition,
}

/// How the workers of an instance are bound, as they reported it when they started.
///
/// ```
/// use hoplite_numa::{NumaSpace, NumaTopology, ThreadBinding};
/// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 pu:1")?, 0)?;
/// assert!(matches!(space.thread_binding(), ThreadBinding::Unbound { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThreadBinding {
    /// Every worker is bound to the cores of its node. The launching thread (rank 0) is the
    /// caller's and keeps the caller's binding.
    Bound {
        /// Workers bound.
        workers: usize,
    },
    /// No worker is bound.
    Unbound {
        /// Why.
        reason: String,
    },
    /// Some workers could not be bound.
    Partial {
        /// Workers bound.
        bound: usize,
        /// Workers that run unbound.
        failed: usize,
        /// hwloc's first error.
        reason: String,
    },
}

/// What the workers report as they start.
struct BindingState {
    /// Why nothing is bound, when binding is not tried.
    skipped: Option<String>,
    bound: AtomicUsize,
    failed: AtomicUsize,
    first_error: Mutex<Option<String>>,
    started: Mutex<usize>,
    all_started: Condvar,
}

impl BindingState {
    fn report(&self, workers: usize) -> ThreadBinding {
        if let Some(reason) = &self.skipped {
            return ThreadBinding::Unbound {
                reason: reason.clone(),
            };
        }
        let (bound, failed) = (
            self.bound.load(Ordering::Acquire),
            self.failed.load(Ordering::Acquire),
        );
        let reason = self.first_error.lock().clone().unwrap_or_default();
        match (bound, failed) {
            (_, 0) => ThreadBinding::Bound { workers },
            (0, _) => ThreadBinding::Unbound { reason },
            _ => ThreadBinding::Partial {
                bound,
                failed,
                reason,
            },
        }
    }
}

/// How long a new instance waits for its workers to report their binding.
const START_TIMEOUT: Duration = Duration::from_secs(10);

impl NumaSpace {
    /// An instance over every node of [`NumaTopology::from_env`] (the machine, or the synthetic
    /// topology of [`TOPOLOGY_ENV`](crate::TOPOLOGY_ENV)), one thread per processing unit.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// let space = hoplite_numa::NumaSpace::new()?;
    /// assert!(space.concurrency() >= 1);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The topology's errors, [`NumaError::NoCpus`], or [`NumaError::Threads`] when the
    /// operating system refuses a thread.
    pub fn new() -> std::result::Result<Self, NumaError> {
        Self::with_topology(&NumaTopology::from_env()?, 0)
    }

    /// An instance over every node of `topology` with `threads_per_node` threads on each node
    /// that has processing units (0: one per processing unit of the node). On a synthetic
    /// topology the threads run unbound (and say so once on standard error).
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_numa::{NumaSpace, NumaTopology};
    /// let topo = NumaTopology::synthetic("pack:2 numa:2 core:4 pu:2")?;
    /// let space = NumaSpace::with_topology(&topo, 1)?;
    /// assert_eq!(space.concurrency(), 4);
    /// assert_eq!(space.threads_on_nodes(), [(0, 1), (1, 1), (2, 1), (3, 1)]);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), and [`NumaError::TooManyThreads`].
    pub fn with_topology(
        topology: &NumaTopology,
        threads_per_node: usize,
    ) -> std::result::Result<Self, NumaError> {
        let mut spans = Vec::new();
        for node in topology.nodes() {
            let threads = per_node(&node.pus, threads_per_node);
            if threads > 0 {
                spans.push((node.index, threads));
            }
        }
        Self::build(topology, spans, Kind::Machine, threads_per_node)
    }

    fn build(
        topology: &NumaTopology,
        spans: Vec<(usize, usize)>,
        kind: Kind,
        threads_per_node: usize,
    ) -> std::result::Result<Self, NumaError> {
        let total: usize = spans.iter().map(|&(_, t)| t).sum();
        if total == 0 {
            return Err(NumaError::NoCpus);
        }
        let limit = hoplite_rayon::max_threads();
        if total > limit {
            return Err(NumaError::TooManyThreads {
                requested: threads_per_node,
                nodes: spans.len(),
                limit,
            });
        }
        let rank_nodes: Arc<[usize]> = spans
            .iter()
            .flat_map(|&(node, threads)| std::iter::repeat_n(node, threads))
            .collect();
        let skipped = (!topology.can_bind_threads()).then(|| match topology.source() {
            crate::TopologySource::Synthetic(d) => format!("the topology is synthetic (\"{d}\")"),
            crate::TopologySource::Xml => "the topology was loaded from XML".to_owned(),
            crate::TopologySource::Discovered => "hwloc cannot bind threads on this system".to_owned(),
        });
        let binding = Arc::new(BindingState {
            skipped,
            bound: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            first_error: Mutex::new(None),
            started: Mutex::new(0),
            all_started: Condvar::new(),
        });
        let hook = {
            let (topology, rank_nodes, binding) =
                (topology.clone(), Arc::clone(&rank_nodes), Arc::clone(&binding));
            move |thread: WorkerThread| {
                let (rank, counted) = match thread {
                    WorkerThread::Hot(rank) => (rank, true),
                    WorkerThread::Stealing(i) => (i, false),
                };
                let node = rank_nodes[rank % rank_nodes.len()];
                bind_thread(&topology, node, &binding, counted);
            }
        };
        let pool = RayonSpace::with_thread_start(total, hook).map_err(|source| NumaError::Threads {
            nodes: spans.iter().map(|&(n, _)| n).collect(),
            source: Box::new(source),
        })?;
        // Wait for the workers' binding reports, so `thread_binding` is complete from the start.
        {
            let mut started = binding.started.lock();
            let deadline = std::time::Instant::now() + START_TIMEOUT;
            while *started < total - 1 {
                if binding.all_started.wait_until(&mut started, deadline).timed_out() {
                    break;
                }
            }
        }
        if let Some(reason) = &binding.skipped {
            static SAID: Once = Once::new();
            SAID.call_once(|| eprintln!("hoplite-numa: {reason}: the node pools run unbound"));
        } else if binding.failed.load(Ordering::Acquire) > 0 {
            static SAID: Once = Once::new();
            let reason = binding.first_error.lock().clone().unwrap_or_default();
            SAID.call_once(|| {
                eprintln!(
                    "hoplite-numa: some workers could not be bound to their node ({reason}); they run unbound"
                )
            });
        }
        let node_pools = match kind {
            Kind::Machine | Kind::Partition => (0..topology.node_count()).map(|_| OnceLock::new()).collect(),
            Kind::Node(_) => Vec::new(),
        };
        Ok(NumaSpace {
            inner: Arc::new(Instance {
                topology: topology.clone(),
                pool,
                rank_nodes,
                spans,
                kind,
                threads_per_node,
                binding,
                node_pools,
            }),
        })
    }

    /// The pool of node `k` alone: on a whole-machine instance (or a partition), a pool of the
    /// node's threads in it, made on first use and the same instance afterwards; on a node pool,
    /// itself for its own node.
    ///
    /// ```
    /// use hoplite_numa::{NumaError, NumaSpace, NumaTopology};
    /// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 pu:2")?, 0)?;
    /// assert_eq!(space.node(1)?, space.node(1)?);
    /// assert_eq!(space.node(1)?.nodes(), [1]);
    /// assert_eq!(space.node(2).expect_err("two nodes"), NumaError::NodeOutOfRange { node: 2, nodes: 2 });
    /// # Ok::<(), NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::NodeOutOfRange`], [`NumaError::EmptyCpuset`] for a node without processing
    /// units, [`NumaError::NodeNotSpanned`] when this instance has no thread on node `k` (a node
    /// pool asked for another node, a partition for a node it does not reach),
    /// [`NumaError::Threads`].
    pub fn node(&self, k: usize) -> std::result::Result<NumaSpace, NumaError> {
        let inner = &*self.inner;
        let node = inner.topology.node(k)?;
        if node.info.pus.is_empty() {
            return Err(NumaError::EmptyCpuset { node: k });
        }
        let not_spanned = || NumaError::NodeNotSpanned {
            node: k,
            spans: self.nodes(),
        };
        match inner.kind {
            Kind::Node(own) if own == k => Ok(self.clone()),
            Kind::Node(_) => Err(not_spanned()),
            Kind::Machine | Kind::Partition => {
                // The node's threads in this instance (a partition may hold part of them).
                let threads: usize = inner
                    .spans
                    .iter()
                    .filter(|&&(n, _)| n == k)
                    .map(|&(_, t)| t)
                    .sum();
                if threads == 0 {
                    return Err(not_spanned());
                }
                let cell = &inner.node_pools[k];
                if let Some(space) = cell.get() {
                    return Ok(space.clone());
                }
                let space = Self::build(
                    &inner.topology,
                    vec![(k, threads)],
                    Kind::Node(k),
                    inner.threads_per_node,
                )?;
                // Two threads may race to make it: the first one stored wins, the other is dropped.
                Ok(cell.get_or_init(|| space).clone())
            }
        }
    }

    /// One pool per node this instance spans, in node order (Kokkos `partition_space` by node).
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_numa::{NumaSpace, NumaTopology};
    /// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:3 pu:1")?, 0)?;
    /// let nodes = space.partition_by_node()?;
    /// assert_eq!(nodes.iter().map(|n| n.nodes()).collect::<Vec<_>>(), [[0], [1], [2]]);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`node`](Self::node).
    pub fn partition_by_node(&self) -> std::result::Result<Vec<NumaSpace>, NumaError> {
        match self.inner.kind {
            Kind::Node(_) => Ok(vec![self.clone()]),
            _ => self.nodes().into_iter().map(|k| self.node(k)).collect(),
        }
    }

    /// The topology the instance runs on.
    pub fn topology(&self) -> &NumaTopology {
        &self.inner.topology
    }

    /// Number of nodes of the topology (not only those this instance spans).
    pub fn node_count(&self) -> usize {
        self.inner.topology.node_count()
    }

    /// The nodes this instance spans, in rank order.
    pub fn nodes(&self) -> Vec<usize> {
        self.inner.spans.iter().map(|&(n, _)| n).collect()
    }

    /// `(node, threads)` for each node this instance spans, in rank order.
    pub fn threads_on_nodes(&self) -> Vec<(usize, usize)> {
        self.inner.spans.clone()
    }

    /// The node of each rank (rank 0 is the thread that launches).
    ///
    /// ```
    /// use hoplite_numa::{NumaSpace, NumaTopology};
    /// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 pu:2")?, 0)?;
    /// assert_eq!(space.rank_nodes(), [0, 0, 1, 1]);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    pub fn rank_nodes(&self) -> Vec<usize> {
        self.inner.rank_nodes.to_vec()
    }

    /// How the workers are bound (see [`ThreadBinding`]).
    pub fn thread_binding(&self) -> ThreadBinding {
        self.inner.binding.report(self.inner.rank_nodes.len() - 1)
    }

    /// The rayon-backend instance that runs this instance's launches.
    pub fn pool(&self) -> &RayonSpace {
        &self.inner.pool
    }

    /// Memory bound to node `k` of this instance's topology.
    ///
    /// # Errors
    ///
    /// [`NumaError::NodeOutOfRange`].
    pub fn memory_on(&self, k: usize) -> std::result::Result<NumaMemory, NumaError> {
        NumaMemory::bound_to(&self.inner.topology, k)
    }

    /// Memory interleaved over every node of this instance's topology.
    pub fn memory_interleaved(&self) -> NumaMemory {
        NumaMemory::interleaved(&self.inner.topology)
    }

    /// A view of `len` copies of `value` in first-touch memory, written by a launch on this
    /// instance: each page lands on the node whose workers a later static launch over
    /// `0..len` on this instance gives that part of the range to.
    ///
    /// ```
    /// use hoplite_numa::{NumaSpace, NumaTopology};
    /// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 pu:1")?, 0)?;
    /// let x = space.first_touch_view("x", 10_000, 1.5f64)?;
    /// assert!(x.to_vec()?.iter().all(|&v| v == 1.5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The allocation's errors.
    pub fn first_touch_view<T: ViewValue + Send + Sync>(
        &self,
        label: &str,
        len: usize,
        value: T,
    ) -> Result<View<T, 1, LayoutRight, NumaMemory>> {
        let view = View::without_initializing_in(NumaMemory::first_touch(), label, [len])?;
        parallel_for(
            label,
            (RangePolicy::new(self.clone(), 0..len), view.write()),
            |(i, w)| w.set(i, value),
        )?;
        Ok(view)
    }
}

/// Threads on a node with processing units `pus`: `asked`, or one per processing unit.
fn per_node(pus: &[usize], asked: usize) -> usize {
    match (pus.is_empty(), asked) {
        (true, _) => 0,
        (false, 0) => pus.len(),
        (false, n) => n,
    }
}

/// Binds the calling worker to the cores of `node` and reports the outcome (`counted`: a
/// hot-team worker, which the new instance waits for).
fn bind_thread(topology: &NumaTopology, node: usize, state: &BindingState, counted: bool) {
    if state.skipped.is_none() {
        let outcome = match topology.node(node) {
            Ok(n) => topology
                .hwloc()
                .bind_cpu(&n.cpuset, CpuBindingFlags::THREAD)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if counted {
            match outcome {
                Ok(()) => state.bound.fetch_add(1, Ordering::AcqRel),
                Err(e) => {
                    state.first_error.lock().get_or_insert(e);
                    state.failed.fetch_add(1, Ordering::AcqRel)
                }
            };
        }
    }
    if counted {
        *state.started.lock() += 1;
        state.all_started.notify_all();
    }
}

impl Default for NumaSpace {
    /// The process-wide default instance: [`NumaSpace::new`], made on first use. If the
    /// topology cannot be had (hwloc fails, or [`TOPOLOGY_ENV`](crate::TOPOLOGY_ENV) does not
    /// parse), it says why once on standard error and uses a one-node synthetic topology with
    /// one processing unit per available core, unbound.
    ///
    /// # Panics
    ///
    /// Only if hwloc cannot build even that synthetic topology, or the operating system
    /// refuses every thread.
    fn default() -> Self {
        static DEFAULT: OnceLock<NumaSpace> = OnceLock::new();
        DEFAULT
            .get_or_init(|| match NumaSpace::new() {
                Ok(space) => space,
                Err(e) => {
                    eprintln!("hoplite-numa: {e}; the default NUMA space falls back to one unbound node");
                    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
                    let fallback = NumaTopology::synthetic(&format!("numa:1 pu:{cores}"))
                        .and_then(|t| NumaSpace::with_topology(&t, 0));
                    match fallback {
                        Ok(space) => space,
                        Err(e) => panic!("hoplite-numa: no default NUMA space can be made: {e}"),
                    }
                }
            })
            .clone()
    }
}

impl Clone for NumaSpace {
    fn clone(&self) -> Self {
        NumaSpace {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl PartialEq for NumaSpace {
    /// Identity: clones of one instance are equal, distinct instances are not.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for NumaSpace {}

impl std::hash::Hash for NumaSpace {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.pool.instance_id().hash(state);
    }
}

impl fmt::Debug for NumaSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumaSpace")
            .field("instance", &self.inner.pool.instance_id())
            .field("kind", &self.inner.kind)
            .field("threads_on_nodes", &self.inner.spans)
            .finish()
    }
}

impl ExecutionSpace for NumaSpace {
    type MemorySpace = NumaMemory;
    type ScratchMemorySpace = hoplite_core::HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = RayonTeamMember<'t>;

    fn name(&self) -> &'static str {
        crate::NAME
    }

    fn fence(&self) -> Result<()> {
        // Reported to Kokkos Tools connectors by the pool's fence, with the pool's id.
        self.inner.pool.fence()
    }

    /// The id of the instance's thread pool (Kokkos' `Threads` device type).
    fn profiling_device_id(&self) -> hoplite_core::profiling::DeviceId {
        self.inner.pool.profiling_device_id()
    }

    fn in_parallel(&self) -> bool {
        self.inner.pool.in_parallel()
    }

    fn concurrency(&self) -> usize {
        self.inner.pool.concurrency()
    }

    fn max_team_size(&self) -> usize {
        self.inner.pool.max_team_size()
    }

    fn max_vector_length(&self) -> usize {
        self.inner.pool.max_vector_length()
    }

    fn max_scratch_size(&self, level: usize) -> usize {
        self.inner.pool.max_scratch_size(level)
    }

    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        let inner = &*self.inner;
        let kind = match inner.kind {
            Kind::Machine => "every node".to_owned(),
            Kind::Node(k) => format!("node {k}"),
            Kind::Partition => "a partition".to_owned(),
        };
        writeln!(
            out,
            "Numa execution space (instance {}, {kind}): {} threads, per node {:?}",
            inner.pool.instance_id(),
            self.concurrency(),
            inner.spans
        )?;
        let binding = match self.thread_binding() {
            ThreadBinding::Bound { workers } => format!("every worker bound to its node's cores ({workers})"),
            ThreadBinding::Unbound { reason } => format!("unbound: {reason}"),
            ThreadBinding::Partial {
                bound,
                failed,
                reason,
            } => {
                format!("{bound} workers bound, {failed} unbound ({reason})")
            }
        };
        writeln!(out, "  thread binding: {binding}")?;
        inner.topology.print(out)?;
        if detail {
            writeln!(
                out,
                "  memory space: NumaMemory (first touch, bound to a node, or interleaved)"
            )?;
            inner.pool.print_configuration(out, true)?;
            writeln!(out, "  hoplite-numa {}", env!("CARGO_PKG_VERSION"))?;
        }
        Ok(())
    }

    /// Pools of their own over consecutive ranks of this instance, with thread counts in
    /// proportion to the weights (each at least one); every thread keeps its rank's node, so
    /// weights equal to the nodes' thread counts give the node pools' layout.
    fn partition_space_weighted(&self, weights: &[f64]) -> Result<Vec<Self>> {
        let rank_nodes = &self.inner.rank_nodes;
        let total = rank_nodes.len();
        let mut parts = Vec::with_capacity(weights.len());
        let mut start = 0;
        for count in hoplite_rayon::partition_counts(total, weights) {
            let mut spans: Vec<(usize, usize)> = Vec::new();
            for rank in start..start + count {
                let node = rank_nodes[rank % total];
                match spans.last_mut() {
                    Some((last, n)) if *last == node => *n += 1,
                    _ => spans.push((node, 1)),
                }
            }
            start += count;
            parts.push(Self::build(
                &self.inner.topology,
                spans,
                Kind::Partition,
                self.inner.threads_per_node,
            )?);
        }
        Ok(parts)
    }
}

impl UniqueTokenSpace for NumaSpace {
    type InstanceToken = TokenPool;
    type GlobalToken = RayonGlobalToken;

    /// A lock-free pool of [`concurrency`](ExecutionSpace::concurrency) ids.
    fn unique_token(&self) -> TokenPool {
        match TokenPool::new(self.concurrency(), crate::NAME) {
            Ok(pool) => pool,
            Err(e) => unreachable!("concurrency is at least 1: {e}"),
        }
    }

    fn unique_token_with_size(&self, size: usize) -> Result<TokenPool> {
        TokenPool::new(size, crate::NAME)
    }

    /// The rayon backend's process-wide token: ids unique among every thread of the process.
    fn global_unique_token() -> RayonGlobalToken {
        RayonSpace::global_unique_token()
    }
}
