//! The machine as hwloc sees it: NUMA nodes, their processing units and memory, discovered or
//! synthetic.

use std::fmt;
use std::io;
use std::sync::Arc;

use hwlocality::Topology;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::object::types::ObjectType;

use crate::error::NumaError;

/// The environment variable that makes [`NumaTopology::from_env`] (and so
/// [`NumaSpace::new`](crate::NumaSpace::new) and the default instance) use a synthetic
/// topology: `HOPLITE_NUMA_TOPOLOGY="pack:2 numa:2 core:4 pu:2" cargo run` runs any program as
/// if on a four-node machine (the pools then run unbound: see the crate docs).
pub const TOPOLOGY_ENV: &str = "HOPLITE_NUMA_TOPOLOGY";

/// One NUMA node: its processing units and memory.
///
/// ```
/// let topo = hoplite_numa::NumaTopology::synthetic("numa:2 core:3 pu:2")?;
/// let node = &topo.nodes()[1];
/// assert_eq!((node.index, node.cores, node.pus.len()), (1, 3, 6));
/// # Ok::<(), hoplite_numa::NumaError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's logical index, `0..nodes`: what [`NumaSpace::node`](crate::NumaSpace::node)
    /// takes.
    pub index: usize,
    /// The operating system's number for the node (`numactl --hardware`).
    pub os_index: usize,
    /// Physical cores whose processing units all belong to the node.
    pub cores: usize,
    /// The operating system's numbers of the node's processing units (hardware threads).
    pub pus: Vec<usize>,
    /// Memory local to the node, in bytes (0 when hwloc does not know, as in most synthetic
    /// topologies).
    pub memory_bytes: u64,
}

/// A node as the backend keeps it: the public facts and hwloc's sets.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) info: NodeInfo,
    pub(crate) cpuset: CpuSet,
    pub(crate) nodeset: NodeSet,
}

/// Where a topology came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologySource {
    /// Discovered on this machine: threads and memory can be bound.
    Discovered,
    /// Built from a synthetic description: nothing can be bound, pools run unbound.
    Synthetic(String),
    /// Loaded from hwloc XML (`lstopo machine.xml` on another machine): nothing can be bound.
    Xml,
}

/// The machine's NUMA layout, shared by the pools and memory spaces built on it. Cheap to
/// clone (one reference count).
///
/// ```
/// use hoplite_numa::{NumaTopology, TopologySource};
/// let topo = NumaTopology::synthetic("pack:2 numa:2 core:4 pu:2")?;
/// assert_eq!(topo.nodes().len(), 4);
/// assert_eq!(topo.nodes().iter().map(|n| n.pus.len()).sum::<usize>(), 32);
/// assert!(matches!(topo.source(), TopologySource::Synthetic(_)));
/// assert!(!topo.can_bind());
/// # Ok::<(), hoplite_numa::NumaError>(())
/// ```
#[derive(Clone)]
pub struct NumaTopology {
    inner: Arc<Inner>,
}

struct Inner {
    hwloc: Topology,
    nodes: Vec<Node>,
    source: TopologySource,
}

impl NumaTopology {
    /// The topology of this machine, as hwloc discovers it.
    ///
    /// ```
    /// let topo = hoplite_numa::NumaTopology::discover()?;
    /// assert!(!topo.nodes().is_empty());
    /// assert!(topo.nodes().iter().any(|n| !n.pus.is_empty()));
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::TopologyUnavailable`] when hwloc cannot read the machine.
    pub fn discover() -> Result<Self, NumaError> {
        let hwloc = Topology::new().map_err(|e| NumaError::TopologyUnavailable {
            reason: e.to_string(),
        })?;
        Self::from_hwloc(hwloc, TopologySource::Discovered)
    }

    /// A synthetic topology from hwloc's description language: levels `type:count` from the
    /// top, such as `"pack:2 numa:2 core:4 pu:2"` (2 packages of 2 nodes of 4 cores of 2
    /// hardware threads). Pools on it run unbound and memory is not bound (see
    /// [`can_bind`](Self::can_bind)).
    ///
    /// ```
    /// let topo = hoplite_numa::NumaTopology::synthetic("numa:2 core:2 pu:1")?;
    /// assert_eq!(topo.nodes()[1].pus, [2, 3]);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::BadSynthetic`] naming the description when hwloc rejects it.
    pub fn synthetic(description: &str) -> Result<Self, NumaError> {
        Self::synthetic_from(description, false)
    }

    fn synthetic_from(description: &str, from_env: bool) -> Result<Self, NumaError> {
        let bad = |reason: String| NumaError::BadSynthetic {
            description: description.to_owned(),
            from_env,
            reason,
        };
        if description.trim().is_empty() {
            return Err(bad("it is empty".to_owned()));
        }
        let hwloc = Topology::builder()
            .from_synthetic(description)
            .map_err(|e| bad(e.to_string()))?
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Self::from_hwloc(hwloc, TopologySource::Synthetic(description.to_owned()))
    }

    /// A topology from hwloc's XML export (`lstopo machine.xml`, or `lstopo --of xml`), to
    /// run as if on the machine it describes. Like a synthetic topology, nothing can be bound.
    ///
    /// ```
    /// use hoplite_numa::{NumaError, NumaTopology, TopologySource};
    /// let err = NumaTopology::from_xml("<topology>").expect_err("not a topology");
    /// assert!(matches!(err, NumaError::BadXml { .. }), "{err}");
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::BadXml`] when hwloc rejects the document.
    pub fn from_xml(xml: &str) -> Result<Self, NumaError> {
        let bad = |reason: String| NumaError::BadXml { reason };
        let hwloc = Topology::builder()
            .from_xml(xml)
            .map_err(|e| bad(e.to_string()))?
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Self::from_hwloc(hwloc, TopologySource::Xml)
    }

    /// The synthetic topology named by the environment variable [`TOPOLOGY_ENV`] when it is
    /// set and not empty, the discovered one otherwise.
    ///
    /// ```
    /// // Unset here, so this is the machine's own topology.
    /// assert!(std::env::var_os(hoplite_numa::TOPOLOGY_ENV).is_none());
    /// let topo = hoplite_numa::NumaTopology::from_env()?;
    /// assert_eq!(topo.source(), &hoplite_numa::TopologySource::Discovered);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::BadSynthetic`] (saying it came from the variable) or
    /// [`NumaError::TopologyUnavailable`].
    pub fn from_env() -> Result<Self, NumaError> {
        match std::env::var(TOPOLOGY_ENV) {
            Ok(description) if !description.trim().is_empty() => Self::synthetic_from(&description, true),
            _ => Self::discover(),
        }
    }

    fn from_hwloc(hwloc: Topology, source: TopologySource) -> Result<Self, NumaError> {
        let cores: Vec<CpuSet> = hwloc
            .objects_with_type(ObjectType::Core)
            .filter_map(|core| core.cpuset().map(|set| (*set).clone()))
            .collect();
        let nodes = hwloc
            .objects_with_type(ObjectType::NUMANode)
            .enumerate()
            .map(|(index, node)| {
                let cpuset = node.cpuset().map(|set| (*set).clone()).unwrap_or_default();
                let nodeset = node.nodeset().map(|set| (*set).clone()).unwrap_or_default();
                let pus = cpuset.iter_set().map(usize::from).collect();
                let cores = cores
                    .iter()
                    .filter(|core| !core.is_empty() && cpuset.includes(*core))
                    .count();
                Node {
                    info: NodeInfo {
                        index,
                        os_index: node.os_index().unwrap_or(index),
                        cores,
                        pus,
                        memory_bytes: node.total_memory(),
                    },
                    cpuset,
                    nodeset,
                }
            })
            .collect();
        Ok(NumaTopology {
            inner: Arc::new(Inner { hwloc, nodes, source }),
        })
    }

    /// The nodes, by logical index.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.inner.nodes.iter().map(|n| n.info.clone()).collect()
    }

    /// Number of NUMA nodes.
    ///
    /// ```
    /// assert_eq!(hoplite_numa::NumaTopology::synthetic("numa:3 pu:1")?.node_count(), 3);
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    pub fn node_count(&self) -> usize {
        self.inner.nodes.len()
    }

    /// Where the topology came from.
    pub fn source(&self) -> &TopologySource {
        &self.inner.source
    }

    /// Whether threads and memory can be bound: only on a discovered topology of this machine
    /// (a synthetic one describes hardware that is not there).
    pub fn can_bind(&self) -> bool {
        matches!(self.inner.source, TopologySource::Discovered) && self.inner.hwloc.is_this_system()
    }

    /// Whether hwloc can bind memory areas here with `placement`'s policy (first touch needs
    /// no binding and is always possible).
    ///
    /// ```
    /// use hoplite_numa::{NumaTopology, Placement};
    /// let topo = NumaTopology::synthetic("numa:2 pu:1")?;
    /// assert!(topo.can_bind_memory(Placement::FirstTouch));
    /// assert!(!topo.can_bind_memory(Placement::Node(0)));
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    pub fn can_bind_memory(&self, placement: crate::Placement) -> bool {
        let support = self.inner.hwloc.feature_support().memory_binding();
        match placement {
            crate::Placement::FirstTouch => true,
            crate::Placement::Node(_) => {
                self.can_bind() && support.is_some_and(|s| s.set_area() && s.get_area() && s.bind_policy())
            }
            crate::Placement::Interleave => {
                self.can_bind()
                    && support.is_some_and(|s| s.set_area() && s.get_area() && s.interleave_policy())
            }
        }
    }

    /// Whether hwloc can bind the calling thread here.
    pub fn can_bind_threads(&self) -> bool {
        self.can_bind()
            && self
                .inner
                .hwloc
                .feature_support()
                .cpu_binding()
                .is_some_and(|s| s.set_current_thread())
    }

    /// Prints the nodes with their cores, processing units and memory (the topology part of
    /// [`NumaSpace::print_configuration`](hoplite_core::ExecutionSpace::print_configuration)).
    ///
    /// ```
    /// let topo = hoplite_numa::NumaTopology::synthetic("numa:2 core:2 pu:1")?;
    /// let mut out = Vec::new();
    /// topo.print(&mut out)?;
    /// let text = String::from_utf8(out).expect("utf-8");
    /// assert!(text.contains("node 1 (os 1): 2 cores, 2 PUs [2, 3]"), "{text}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn print(&self, out: &mut dyn io::Write) -> io::Result<()> {
        writeln!(out, "{self}")?;
        for node in &self.inner.nodes {
            let n = &node.info;
            let memory = if n.memory_bytes == 0 {
                "memory unknown".to_owned()
            } else {
                format!("{:.1} GiB", n.memory_bytes as f64 / f64::from(1u32 << 30))
            };
            writeln!(
                out,
                "  node {} (os {}): {} cores, {} PUs {:?}, {memory}",
                n.index,
                n.os_index,
                n.cores,
                n.pus.len(),
                n.pus
            )?;
        }
        Ok(())
    }

    pub(crate) fn hwloc(&self) -> &Topology {
        &self.inner.hwloc
    }

    pub(crate) fn node(&self, index: usize) -> Result<&Node, NumaError> {
        self.inner.nodes.get(index).ok_or(NumaError::NodeOutOfRange {
            node: index,
            nodes: self.inner.nodes.len(),
        })
    }
}

impl fmt::Display for NumaTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pus: usize = self.inner.nodes.iter().map(|n| n.info.pus.len()).sum();
        let source = match &self.inner.source {
            TopologySource::Discovered => "discovered".to_owned(),
            TopologySource::Synthetic(d) => format!("synthetic \"{d}\", unbound"),
            TopologySource::Xml => "from XML, unbound".to_owned(),
        };
        write!(
            f,
            "NUMA topology ({source}): {} node(s), {pus} PUs",
            self.inner.nodes.len()
        )
    }
}

impl fmt::Debug for NumaTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumaTopology")
            .field("source", &self.inner.source)
            .field("nodes", &self.nodes())
            .finish()
    }
}

impl NumaTopology {
    /// The processing units (operating-system numbers) the calling thread is bound to, and
    /// the one(s) it last ran on: hwloc's `cpu_binding` and `last_cpu_location` for the thread.
    /// How a test checks that a pool's workers are pinned.
    ///
    /// ```
    /// let topo = hoplite_numa::NumaTopology::discover()?;
    /// let (bound, last) = topo.current_thread_cpus()?;
    /// assert!(!bound.is_empty() && !last.is_empty());
    /// # Ok::<(), hoplite_numa::NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::BindingQuery`] on a synthetic topology, or when the system cannot say.
    pub fn current_thread_cpus(&self) -> Result<(Vec<usize>, Vec<usize>), NumaError> {
        let query = |reason: String| NumaError::BindingQuery { reason };
        if !self.can_bind() {
            return Err(query(
                "the topology is synthetic: no thread runs on its processing units".to_owned(),
            ));
        }
        let flags = hwlocality::cpu::binding::CpuBindingFlags::THREAD;
        let bound = self
            .inner
            .hwloc
            .cpu_binding(flags)
            .map_err(|e| query(e.to_string()))?;
        let last = self
            .inner
            .hwloc
            .last_cpu_location(flags)
            .map_err(|e| query(e.to_string()))?;
        Ok((
            bound.iter_set().map(usize::from).collect(),
            last.iter_set().map(usize::from).collect(),
        ))
    }

    /// Logical indices of the nodes whose node set meets `set`.
    pub(crate) fn nodes_in(&self, set: &NodeSet) -> Vec<usize> {
        self.inner
            .nodes
            .iter()
            .filter(|n| set.intersects(&n.nodeset))
            .map(|n| n.info.index)
            .collect()
    }
}
