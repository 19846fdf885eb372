//! The execution phase: [`Graph`], made by [`create_graph`](crate::create_graph).

use std::fmt::{self, Write as _};
use std::sync::Arc;

use hoplite_core::ExecutionSpace;
use hoplite_core::view::AccessKind;

use crate::backend::{GraphBackend, NodeId};
use crate::node::{NodeKernel, NodeKind};
use crate::{GraphError, Result, UnorderedRace};

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
    nodes: Vec<Arc<dyn NodeKernel<S>>>,
    preds: Vec<Vec<NodeId>>,
    instantiated: bool,
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

fn noun(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "reads",
        AccessKind::Write => "writes",
        AccessKind::Atomic => "updates atomically",
    }
}

impl<S: ExecutionSpace> Graph<S> {
    pub(crate) fn new(
        space: S,
        backend: Box<dyn GraphBackend<S>>,
        nodes: Vec<Arc<dyn NodeKernel<S>>>,
        preds: Vec<Vec<NodeId>>,
    ) -> Self {
        Graph {
            space,
            backend,
            nodes,
            preds,
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
        self.backend.instantiate()?;
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
        self.backend.submit(None).map_err(GraphError::from)
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
        self.backend.submit(on).map_err(GraphError::from)
    }

    /// Finds two nodes with no path between them whose accesses conflict.
    fn check_races(&self) -> Result<()> {
        let n = self.nodes.len();
        let words = n.div_ceil(64);
        // ancestors[i]: bit j set when j == i or j must complete before i. Ids are a
        // topological order, so one pass suffices.
        let mut ancestors = vec![0u64; n * words];
        for i in 0..n {
            ancestors[i * words + i / 64] |= 1 << (i % 64);
            for p in &self.preds[i] {
                let (lo, hi) = ancestors.split_at_mut(i * words);
                let src = &lo[p.0 * words..p.0 * words + words];
                for (d, s) in hi[..words].iter_mut().zip(src) {
                    *d |= *s;
                }
            }
        }
        let ordered = |a: usize, b: usize| {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            ancestors[hi * words + lo / 64] & (1 << (lo % 64)) != 0
        };
        for j in 0..n {
            let second = self.nodes[j].accesses();
            if second.is_empty() {
                continue;
            }
            for i in 0..j {
                let first = self.nodes[i].accesses();
                if first.is_empty() || ordered(i, j) {
                    continue;
                }
                for a in first {
                    if let Some(b) = second.iter().find(|b| a.conflicts_with(b)) {
                        return Err(GraphError::UnorderedRace(Box::new(UnorderedRace {
                            first: self.nodes[i].label().to_owned(),
                            first_access: noun(a.kind),
                            first_view: a.view.to_string(),
                            second: self.nodes[j].label().to_owned(),
                            second_access: noun(b.kind),
                            second_view: b.view.to_string(),
                        })));
                    }
                }
            }
        }
        Ok(())
    }

    /// The graph in Graphviz DOT: one vertex per node labelled with its label, pattern and
    /// accesses (`W y`, `R x`, `A hist`), one edge per dependency.
    ///
    /// ```
    /// use hoplite_graph::create_graph;
    /// use hoplite_serial::Serial;
    /// let graph = create_graph(&Serial::default(), |g| {
    ///     g.host("load", || {}).then_host("solve", || {});
    /// })?;
    /// let dot = graph.to_dot();
    /// assert!(dot.starts_with("digraph"));
    /// assert!(dot.contains("load") && dot.contains("n1 -> n2"));
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn to_dot(&self) -> String {
        fn escape(s: &str) -> String {
            s.replace('\\', "\\\\").replace('"', "\\\"")
        }
        let mut out = String::from("digraph hoplite_graph {\n  node [shape=box];\n");
        for (i, node) in self.nodes.iter().enumerate() {
            let kind = node.kind();
            let mut label = escape(node.label());
            if !matches!(kind, NodeKind::Root | NodeKind::Aggregate) {
                label.push_str("\\n");
                label.push_str(kind.name());
            }
            let accesses: Vec<String> = node
                .accesses()
                .iter()
                .map(|a| {
                    let k = match a.kind {
                        AccessKind::Read => "R",
                        AccessKind::Write => "W",
                        AccessKind::Atomic => "A",
                    };
                    format!("{k} {}", escape(&a.view))
                })
                .collect();
            if !accesses.is_empty() {
                label.push_str("\\n");
                label.push_str(&accesses.join(", "));
            }
            let shape = match kind {
                NodeKind::Root => ", shape=circle",
                NodeKind::Aggregate => ", shape=diamond",
                NodeKind::Host => ", shape=hexagon",
                _ => "",
            };
            // Writing to a String cannot fail.
            let _ = writeln!(out, "  n{i} [label=\"{label}\"{shape}];");
        }
        for (i, preds) in self.preds.iter().enumerate() {
            for p in preds {
                let _ = writeln!(out, "  n{} -> n{i};", p.0);
            }
        }
        out.push_str("}\n");
        out
    }
}
