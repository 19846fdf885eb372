//! The errors of the NUMA backend: each names the value at fault and the fix.

/// What can go wrong building a topology, a pool or bound memory.
///
/// ```
/// use hoplite_numa::{NumaError, NumaTopology};
/// let err = NumaTopology::synthetic("numa:two").expect_err("not a count");
/// assert!(matches!(err, NumaError::BadSynthetic { .. }), "{err}");
/// assert!(err.to_string().contains("numa:two"));
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NumaError {
    /// hwloc could not discover the machine.
    #[error(
        "hwloc could not discover this machine's topology ({reason}); check that libhwloc (Debian: libhwloc15) is installed and /sys is mounted, or set {env}=\"numa:2 core:2 pu:1\" to run on a synthetic topology"
    , env = crate::TOPOLOGY_ENV)]
    TopologyUnavailable {
        /// hwloc's error.
        reason: String,
    },
    /// A synthetic description hwloc does not accept.
    #[error(
        "the synthetic topology `{description}`{from} does not parse ({reason}); write levels as `type:count` from the top, for example \"pack:2 numa:2 core:4 pu:2\" (see hwloc's lstopo --input)"
    , from = env_note(.from_env))]
    BadSynthetic {
        /// The description as given.
        description: String,
        /// Whether it came from the environment variable [`TOPOLOGY_ENV`](crate::TOPOLOGY_ENV).
        from_env: bool,
        /// hwloc's reason.
        reason: String,
    },
    /// An hwloc XML document hwloc does not accept.
    #[error("the XML topology does not load ({reason}); give what `lstopo --of xml` writes")]
    BadXml {
        /// hwloc's reason.
        reason: String,
    },
    /// A node index past the topology's nodes.
    #[error("NUMA node {node} does not exist: this topology has {nodes} node(s), 0..{nodes}")]
    NodeOutOfRange {
        /// The index asked for.
        node: usize,
        /// How many nodes the topology has.
        nodes: usize,
    },
    /// A node this instance does not span (a node pool asked for another node).
    #[error(
        "NUMA node {node} is not part of this instance (it spans nodes {spans:?}); ask the whole space (`NumaSpace::new`) for `node({node})`"
    )]
    NodeNotSpanned {
        /// The index asked for.
        node: usize,
        /// The nodes the instance spans.
        spans: Vec<usize>,
    },
    /// A node with no processing units (a memory-only node) cannot have a pool.
    #[error(
        "NUMA node {node} has an empty cpuset (a memory-only node, or one whose processing units this process may not use, as under a cgroup cpuset): it cannot run a pool; allocate memory on it with `NumaMemory::bound_to(&topology, {node})` and run on a node with usable cores"
    )]
    EmptyCpuset {
        /// The node.
        node: usize,
    },
    /// No node of the topology has a processing unit.
    #[error(
        "no NUMA node of this topology has a processing unit, so no pool can run; check the topology (lstopo) or the synthetic description"
    )]
    NoCpus,
    /// The pool's threads could not be started.
    #[error("the pool of NUMA node(s) {nodes:?} could not start its threads: {source}")]
    Threads {
        /// The nodes of the pool.
        nodes: Vec<usize>,
        /// The backend's error.
        source: Box<hoplite_core::Error>,
    },
    /// More threads per node than an instance may have.
    #[error(
        "{requested} threads per node on {nodes} node(s) is more than the {limit} threads an instance may have; ask for fewer threads per node (0 means one per processing unit)"
    )]
    TooManyThreads {
        /// Threads per node asked for.
        requested: usize,
        /// Nodes of the topology.
        nodes: usize,
        /// The limit ([`hoplite_rayon::max_threads`]).
        limit: usize,
    },
    /// The calling thread's binding cannot be asked for.
    #[error("cannot ask hwloc where this thread runs: {reason}")]
    BindingQuery {
        /// Why.
        reason: String,
    },
    /// A view whose memory binding cannot be asked for.
    #[error("cannot report the memory binding of view `{label}`: {reason}")]
    NoBindingReport {
        /// The view's label.
        label: String,
        /// Why.
        reason: String,
    },
}

fn env_note(from_env: &bool) -> String {
    if *from_env {
        format!(" (from the environment variable {})", crate::TOPOLOGY_ENV)
    } else {
        String::new()
    }
}

impl From<NumaError> for hoplite_core::Error {
    /// NUMA errors met where the core's API returns its own error (a partition, a launch's
    /// thread start): as [`hoplite_core::Error::ThreadsUnavailable`], with the message.
    fn from(e: NumaError) -> Self {
        match e {
            NumaError::Threads { source, .. } => *source,
            other => hoplite_core::Error::ThreadsUnavailable {
                space: crate::NAME,
                requested: 0,
                started: 0,
                reason: other.to_string(),
            },
        }
    }
}
