//! A graph's structure as data ([`Graph::structure`]: nodes, their accesses and their
//! predecessors, serializable with the `serde` feature) and as Graphviz DOT
//! ([`Graph::to_dot`], written from that data).

use std::fmt::Write as _;

use hoplite_core::{AccessKind, ExecutionSpace, dot};

use crate::backend::NodeId;
use crate::graph::Graph;
use crate::node::NodeKind;

/// What a graph is made of, in node id order: what programs print, compare or store (with the
/// `serde` feature, as JSON or any serde format) rather than draw.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GraphStructure {
    /// Every node, the root first; a node's id is its index.
    pub nodes: Vec<GraphNodeInfo>,
}

/// One node of a [`GraphStructure`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GraphNodeInfo {
    /// Its id: its index in the graph.
    pub id: usize,
    /// The label it was given.
    pub label: String,
    /// What it runs.
    pub kind: NodeKind,
    /// The views it uses and how, in the order of its handles.
    pub accesses: Vec<NodeAccess>,
    /// The ids of the nodes it runs after.
    pub predecessors: Vec<usize>,
}

/// A view a node uses, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeAccess {
    /// The view's label.
    pub view: String,
    /// Read, write or atomic.
    pub kind: AccessKind,
}

impl<S: ExecutionSpace> Graph<S> {
    /// The graph's nodes, their accesses and their dependencies, as data.
    ///
    /// ```
    /// use hoplite_core::{AccessKind, RangePolicy, View};
    /// use hoplite_graph::{NodeKind, create_graph};
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let y: View<f64, 1> = View::new("y", [4])?;
    /// let graph = create_graph(&space, |g| {
    ///     g.parallel_for("fill", (RangePolicy::new(space.clone(), 0..4), (y.write(),)), |(i, (y,))| y.set(i, 1.0))
    ///         .then_host("report", || {});
    /// })?;
    /// let nodes = graph.structure().nodes;
    /// let fill = &nodes[1];
    /// assert_eq!((fill.label.as_str(), fill.kind, fill.predecessors.as_slice()), ("fill", NodeKind::For, &[0][..]));
    /// assert_eq!((fill.accesses[0].view.as_str(), fill.accesses[0].kind), ("y", AccessKind::Write));
    /// assert_eq!(nodes[2].predecessors, [1]);
    /// # Ok::<(), hoplite_graph::GraphError>(())
    /// ```
    pub fn structure(&self) -> GraphStructure {
        let nodes = self.nodes();
        GraphStructure {
            nodes: nodes
                .as_slice()
                .iter()
                .enumerate()
                .map(|(id, node)| GraphNodeInfo {
                    id,
                    label: node.label().to_owned(),
                    kind: node.kind(),
                    accesses: node
                        .accesses()
                        .iter()
                        .map(|a| NodeAccess {
                            view: a.view.to_string(),
                            kind: a.kind,
                        })
                        .collect(),
                    predecessors: nodes.preds(NodeId(id)).iter().map(|p| p.0).collect(),
                })
                .collect(),
        }
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
        self.structure().to_dot()
    }
}

impl GraphStructure {
    /// The structure in Graphviz DOT, as [`Graph::to_dot`] writes it.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph hoplite_graph {\n  node [shape=box];\n");
        for node in &self.nodes {
            let mut label = dot::escape(&node.label);
            if !matches!(node.kind, NodeKind::Root | NodeKind::Aggregate) {
                label.push_str("\\n");
                label.push_str(node.kind.name());
            }
            let accesses: Vec<String> = node
                .accesses
                .iter()
                .map(|a| {
                    let k = match a.kind {
                        AccessKind::Read => "R",
                        AccessKind::Write => "W",
                        AccessKind::Atomic => "A",
                    };
                    format!("{k} {}", dot::escape(&a.view))
                })
                .collect();
            if !accesses.is_empty() {
                label.push_str("\\n");
                label.push_str(&accesses.join(", "));
            }
            let shape = match node.kind {
                NodeKind::Root => ", shape=circle",
                NodeKind::Aggregate => ", shape=diamond",
                NodeKind::Host => ", shape=hexagon",
                _ => "",
            };
            // Writing to a String cannot fail.
            let _ = writeln!(out, "  n{} [label=\"{label}\"{shape}];", node.id);
        }
        for node in &self.nodes {
            for p in &node.predecessors {
                let _ = writeln!(out, "  n{p} -> n{};", node.id);
            }
        }
        out.push_str("}\n");
        out
    }
}
