//! The execution phase: [`Graph`], made by [`create_graph`](crate::create_graph).

use std::fmt;

use hoplite_core::AccessKind;
use hoplite_core::ExecutionSpace;
use hoplite_core::held::AllocationKey;
use rustc_hash::FxHashMap;

use crate::backend::{GraphBackend, GraphNodes, NodeId};
use crate::{GraphError, Result, UnorderedRace};
use hoplite_core::held::Access;

/// A graph ready to run: it has no way to add nodes. [`submit`](Self::submit) runs it on its
/// instance, any number of times; the first submit instantiates it unless
/// [`instantiate`](Self::instantiate) was called.
///
/// ```
/// use hoplite_core::{ExecutionSpace, RangePolicy, View};
/// use hoplite_graph::create_graph;
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let y: View<u32, 1> = View::new("y", [8])?;
/// let mut graph = create_graph(&space, |g| {
///     g.parallel_for("inc", (RangePolicy::new(space.clone(), 0..8), (y.write(),)), |(i, (y,))| {
///         y.set(i, y.get(i) + 1)
///     });
/// })?;
/// graph.instantiate()?;
/// for _ in 0..3 {
///     graph.submit()?;
/// }
/// graph.execution_space().fence()?;
/// assert_eq!(y.to_vec()?, [3; 8]); // the host reads between submits
/// assert!(graph.instantiate().is_err()); // only once
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct Graph<S: ExecutionSpace> {
    space: S,
    backend: Box<dyn GraphBackend<S>>,
    nodes: GraphNodes<S>,
    instantiated: bool,
}

/// For each node, the nodes that must complete before it starts (a bit set per node).
struct Ancestors {
    words: usize,
    bits: Vec<u64>,
}

impl Ancestors {
    fn new<S: ExecutionSpace>(preds: &GraphNodes<S>) -> Self {
        let n = preds.len();
        let words = n.div_ceil(64);
        // bits[i]: bit j set when j == i or j must complete before i. Ids are a topological
        // order, so one pass suffices.
        let mut bits = vec![0u64; n * words];
        for i in 0..n {
            bits[i * words + i / 64] |= 1 << (i % 64);
            for p in preds.preds(NodeId(i)) {
                let (lo, hi) = bits.split_at_mut(i * words);
                let src = &lo[p.0 * words..p.0 * words + words];
                for (d, s) in hi[..words].iter_mut().zip(src) {
                    *d |= *s;
                }
            }
        }
        Ancestors { words, bits }
    }

    /// Whether a path joins `a` and `b` (in either direction).
    fn ordered(&self, a: usize, b: usize) -> bool {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        self.bits[hi * self.words + lo / 64] & (1 << (lo % 64)) != 0
    }
}

/// Whether a path joins two nodes, for the race check: a direct edge is read from the node
/// list; anything else from the table of [`Ancestors`], made the first time it is needed. A
/// chain of writers (each access compared with the previous writer, its predecessor) and a
/// fan-out of readers (never compared) then never make the table, whose size grows with the
/// square of the number of nodes.
struct Order<'a, S: ExecutionSpace> {
    nodes: &'a GraphNodes<S>,
    ancestors: Option<Ancestors>,
}

impl<'a, S: ExecutionSpace> Order<'a, S> {
    fn new(nodes: &'a GraphNodes<S>) -> Self {
        Order {
            nodes,
            ancestors: None,
        }
    }

    /// Whether a path joins `a` and `b` (in either direction).
    fn ordered(&mut self, a: usize, b: usize) -> bool {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        if lo == hi || self.nodes.preds(NodeId(hi)).contains(&NodeId(lo)) {
            return true;
        }
        self.ancestors().ordered(lo, hi)
    }

    fn ancestors(&mut self) -> &Ancestors {
        self.ancestors.get_or_insert_with(|| Ancestors::new(self.nodes))
    }
}

impl<S: ExecutionSpace> fmt::Debug for Graph<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("space", &self.space)
            .field("nodes", &self.nodes.len())
            .field("instantiated", &self.instantiated)
            .finish()
    }
}

/// Every access kind, in the order of [`kind_index`].
const KINDS: [AccessKind; 3] = [AccessKind::Read, AccessKind::Write, AccessKind::Atomic];

/// The position of `kind` in the race check's per-kind lists.
fn kind_index(kind: AccessKind) -> usize {
    match kind {
        AccessKind::Read => 0,
        AccessKind::Write => 1,
        AccessKind::Atomic => 2,
    }
}

fn noun(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "reads",
        AccessKind::Write => "writes",
        AccessKind::Atomic => "updates atomically",
    }
}

impl<S: ExecutionSpace> Graph<S> {
    pub(crate) fn new(space: S, backend: Box<dyn GraphBackend<S>>, nodes: GraphNodes<S>) -> Self {
        Graph {
            space,
            backend,
            nodes,
            instantiated: false,
        }
    }

    /// The instance the graph runs on by default.
    pub fn execution_space(&self) -> &S {
        &self.space
    }

    /// Number of nodes, counting the root and `when_all` joins.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The graph's nodes and edges (what its backend runs).
    pub fn nodes(&self) -> &GraphNodes<S> {
        &self.nodes
    }

    /// Whether the graph has no node but its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// Whether the graph was instantiated.
    pub fn is_instantiated(&self) -> bool {
        self.instantiated
    }

    /// Ends the construction phase for the backend: checks for unordered data races, then
    /// lets the backend compute its schedule (a topological order, once).
    ///
    /// # Errors
    ///
    /// [`GraphError::AlreadyInstantiated`] on a second call (or after a submit, which
    /// instantiates); [`GraphError::UnorderedRace`] naming both nodes if two nodes with no
    /// path between them touch overlapping elements and one of them writes (or one reads and
    /// the other updates atomically); a backend error.
    pub fn instantiate(&mut self) -> Result<()> {
        if self.instantiated {
            return Err(GraphError::AlreadyInstantiated);
        }
        self.check_races()?;
        self.backend.instantiate(&self.nodes)?;
        self.instantiated = true;
        Ok(())
    }

    fn ensure_instantiated(&mut self) -> Result<()> {
        if self.instantiated {
            Ok(())
        } else {
            self.instantiate()
        }
    }

    /// Runs the graph once on its instance (instantiating it first if needed). Host backends
    /// return when the run has completed; `execution_space().fence()` waits on any backend.
    /// Each node borrows its views only while its kernel runs.
    ///
    /// # Errors
    ///
    /// An instantiation error, or the first node error: a borrow conflict with a handle held
    /// elsewhere ([`hoplite_core::Error::BorrowConflict`]), a panic
    /// ([`hoplite_core::Error::KernelPanicked`]), a backend failure. The run stops at the
    /// first failing node: nodes that depend on it, and nodes not yet started, do not run. The
    /// graph can be submitted again.
    pub fn submit(&mut self) -> Result<()> {
        self.ensure_instantiated()?;
        self.backend.submit(&self.nodes, None).map_err(GraphError::from)
    }

    /// Runs the graph once on another instance of its space (every node's policy moves to
    /// `space`, for example one of `partition_space`'s instances).
    ///
    /// # Errors
    ///
    /// As for [`submit`](Self::submit), plus a policy that is invalid on `space`.
    pub fn submit_on(&mut self, space: &S) -> Result<()> {
        self.ensure_instantiated()?;
        let on = (*space != self.space).then_some(space);
        self.backend.submit(&self.nodes, on).map_err(GraphError::from)
    }

    /// Finds two nodes with no path between them whose accesses conflict.
    ///
    /// Accesses are compared only with earlier accesses of the same allocation, and a writer
    /// retires the earlier accesses of exactly its footprint: they are ordered before it (or
    /// the check already failed), so any later access that conflicts with one of them
    /// conflicts with the writer too, and is unordered with the writer if it is unordered with
    /// them. A chain of writers of one view then costs one comparison per node instead of one
    /// per pair, and readers are never compared with readers. The first node found racing is
    /// the first in id order with a race; the report names its first racing predecessor in id
    /// order, as a comparison of all pairs would.
    fn check_races(&self) -> Result<()> {
        let nodes = self.nodes.as_slice();
        if self.nodes.accessing < 2 {
            return Ok(());
        }
        let mut order = Order::new(&self.nodes);
        // Per allocation and access kind: the accesses (and their nodes) a later access must
        // still be compared with.
        let mut open: FxHashMap<AllocationKey, [Vec<(usize, &Access)>; 3]> = FxHashMap::default();
        for (j, node) in nodes.iter().enumerate() {
            let second = node.accesses();
            for b in second {
                let Some(earlier) = open.get(&b.allocation) else {
                    continue;
                };
                // Readers never conflict with readers, nor atomic updates with atomic updates.
                let races = KINDS
                    .iter()
                    .filter(|&&kind| kind == AccessKind::Write || kind != b.kind)
                    .flat_map(|&kind| &earlier[kind_index(kind)])
                    .any(|&(i, a)| a.conflicts_with(b) && !order.ordered(i, j));
                if races {
                    let ancestors = order.ancestors();
                    if let Some(race) = self.race_report(j, ancestors) {
                        return Err(race);
                    }
                }
            }
            for b in second {
                let lists = open.entry(b.allocation).or_default();
                if b.kind == AccessKind::Write {
                    for list in lists.iter_mut() {
                        list.retain(|&(_, a)| a.footprint != b.footprint);
                    }
                }
                lists[kind_index(b.kind)].push((j, b));
            }
        }
        Ok(())
    }

    /// The race of node `j` with its first unordered, conflicting predecessor in id order
    /// (`check_races` found one).
    #[cold]
    fn race_report(&self, j: usize, ancestors: &Ancestors) -> Option<GraphError> {
        let nodes = self.nodes.as_slice();
        let second = nodes[j].accesses();
        for i in 0..j {
            if ancestors.ordered(i, j) {
                continue;
            }
            for a in nodes[i].accesses() {
                if let Some(b) = second.iter().find(|b| a.conflicts_with(b)) {
                    return Some(GraphError::UnorderedRace(Box::new(UnorderedRace {
                        first: nodes[i].label().to_owned(),
                        first_access: noun(a.kind),
                        first_view: a.view.to_string(),
                        second: nodes[j].label().to_owned(),
                        second_access: noun(b.kind),
                        second_view: b.view.to_string(),
                    })));
                }
            }
        }
        None
    }
}
