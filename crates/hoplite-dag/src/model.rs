//! Layer 1: the dependency model, as pure code over recorded accesses (no threads, no streams).
//!
//! It follows GrCUDA's computation of dependencies. Every vertex keeps an *active set*: the
//! accesses through which a later vertex can still depend on it. A new vertex's candidate
//! parents are the *frontier* vertices (unfinished, active set not empty) with an active access
//! it conflicts with — under [`DependencyPolicy::NoConst`] any access to shared elements, under
//! [`DependencyPolicy::WithConst`] any such pair that is not two reads. The parent's access
//! then leaves its active set when the new vertex covers it for all later vertices: when the
//! new access writes (or, without const, uses) every element the parent's access touches.
//! With const, a read keeps the parent's write active, so that a second reader also depends on
//! the writer. Finally, with const, a candidate from which another candidate is reachable is
//! dropped: its edge is implied.

use std::collections::HashMap;
use std::sync::Arc;

use hoplite_core::view::AccessKind;
use hoplite_graph::Access;

/// Which pairs of accesses to one view order two launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DependencyPolicy {
    /// Two reads of a view never order each other (GrCUDA's `with-const`).
    #[default]
    WithConst,
    /// Any two launches that share elements of a view are ordered (GrCUDA's `no-const`).
    NoConst,
}

/// A vertex of the DAG: its number in launch order, from 0.
pub type VertexId = usize;

/// An edge of the DAG: the parent, and the view whose accesses caused it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The earlier vertex.
    pub parent: VertexId,
    /// The label of the view through which the new vertex depends on it.
    pub view: Arc<str>,
}

/// What adding a vertex would do (see [`DependencyModel::plan`]).
#[derive(Clone, Debug)]
pub struct Plan {
    edges: Vec<Edge>,
    /// Active accesses of earlier vertices the new vertex covers: `(vertex, access index)`.
    covered: Vec<(VertexId, usize)>,
}

impl Plan {
    /// The parents the vertex would have, in launch order, each with the view that caused
    /// the edge.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }
}

struct Vertex {
    accesses: Arc<[Access]>,
    /// `active[i]`: access `i` can still make a later vertex depend on this one.
    active: Vec<bool>,
    parents: Vec<VertexId>,
}

/// The dependency model: vertices still unfinished, their active sets and the frontier.
///
/// ```
/// use hoplite_dag::model::{DependencyModel, DependencyPolicy};
/// # use hoplite_core::View;
/// # use hoplite_graph::{Access, GraphArgs};
/// # fn accesses<A: GraphArgs>(a: A) -> Vec<Access> { let mut v = Vec::new(); A::record(&a.detach(), &mut v); v }
/// let x: View<f64, 1> = View::new("x", [8])?;
/// let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
/// let (a, _) = dag.add(accesses(x.write()));
/// let (b, b_parents) = dag.add(accesses(x.read()));
/// let (c, c_parents) = dag.add(accesses(x.read()));
/// assert_eq!(b_parents[0].parent, a);
/// assert_eq!(c_parents.iter().map(|e| e.parent).collect::<Vec<_>>(), [a], "no B-C edge");
/// let (_, d_parents) = dag.add(accesses(x.write()));
/// assert_eq!(d_parents.iter().map(|e| e.parent).collect::<Vec<_>>(), [b, c]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct DependencyModel {
    policy: DependencyPolicy,
    next: VertexId,
    /// Unfinished vertices (finished ones are forgotten: nothing can depend on them any more).
    live: HashMap<VertexId, Vertex>,
    /// Unfinished vertices with a non-empty active set, in launch order.
    frontier: Vec<VertexId>,
}

impl DependencyModel {
    /// An empty model.
    pub fn new(policy: DependencyPolicy) -> Self {
        DependencyModel {
            policy,
            next: 0,
            live: HashMap::new(),
            frontier: Vec::new(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> DependencyPolicy {
        self.policy
    }

    /// Whether two accesses order their launches under this policy.
    pub fn conflicts(&self, earlier: &Access, later: &Access) -> bool {
        conflicts(self.policy, earlier, later)
    }

    /// Adds a vertex that makes `accesses`; returns its id and its parents (in launch order),
    /// each with the view that caused the edge.
    pub fn add(&mut self, accesses: Vec<Access>) -> (VertexId, Vec<Edge>) {
        let plan = self.plan(&accesses);
        self.commit(accesses.into(), plan)
    }

    /// What adding a vertex that makes `accesses` would do, without doing it: a caller that
    /// may still give the launch up (a stream it cannot get, a policy invalid on the chosen
    /// instance) plans first and [`commit`](Self::commit)s only once nothing can fail, so that
    /// no earlier vertex's active set loses an access to a launch that never happened.
    pub fn plan(&self, accesses: &[Access]) -> Plan {
        let mut edges: Vec<Edge> = Vec::new();
        let mut covered = Vec::new();
        for &f in &self.frontier {
            let Some(vertex) = self.live.get(&f) else { continue };
            let mut edge_view = None;
            for (i, earlier) in vertex.accesses.iter().enumerate() {
                if !vertex.active[i] {
                    continue;
                }
                for later in accesses {
                    if !conflicts(self.policy, earlier, later) {
                        continue;
                    }
                    edge_view.get_or_insert_with(|| later.view.clone());
                    // The new vertex covers the parent's access for every later vertex when it
                    // touches all of its elements and, with const, writes them (a reader
                    // leaves the parent's write for the next reader to depend on).
                    let covers = later.footprint.covers(&earlier.footprint)
                        && (self.policy == DependencyPolicy::NoConst || later.kind != AccessKind::Read);
                    if covers {
                        covered.push((f, i));
                        break;
                    }
                }
            }
            if let Some(view) = edge_view {
                edges.push(Edge { parent: f, view });
            }
        }
        if self.policy == DependencyPolicy::WithConst && edges.len() > 1 {
            let ids: Vec<VertexId> = edges.iter().map(|e| e.parent).collect();
            edges.retain(|e| {
                !ids.iter()
                    .any(|&other| other != e.parent && self.reaches(e.parent, other))
            });
        }
        Plan { edges, covered }
    }

    /// Adds the vertex `plan` was made for (with the same `accesses`, and no other change to
    /// the model in between); returns its id and its parents.
    pub fn commit(&mut self, accesses: Arc<[Access]>, plan: Plan) -> (VertexId, Vec<Edge>) {
        let id = self.next;
        self.next += 1;
        for (f, i) in plan.covered {
            if let Some(active) = self.live.get_mut(&f).and_then(|v| v.active.get_mut(i)) {
                *active = false;
            }
        }
        let live = &self.live;
        self.frontier
            .retain(|f| live.get(f).is_some_and(|v| v.active.iter().any(|&a| a)));
        let active = vec![true; accesses.len()];
        let has_active = !accesses.is_empty();
        self.live.insert(
            id,
            Vertex {
                accesses,
                active,
                parents: plan.edges.iter().map(|e| e.parent).collect(),
            },
        );
        if has_active {
            self.frontier.push(id);
        }
        (id, plan.edges)
    }

    /// Whether `to` descends from `from` through unfinished vertices (a finished vertex's
    /// ancestors are finished too, so no path to an unfinished vertex passes through one).
    fn reaches(&self, from: VertexId, to: VertexId) -> bool {
        let mut stack = vec![to];
        let mut seen = Vec::new();
        while let Some(v) = stack.pop() {
            if v == from {
                return true;
            }
            // Ancestors have smaller ids: nothing below `from` can lead to it.
            if v < from || seen.contains(&v) {
                continue;
            }
            seen.push(v);
            if let Some(vertex) = self.live.get(&v) {
                stack.extend(vertex.parents.iter().copied());
            }
        }
        false
    }

    /// Marks a vertex finished: it leaves the frontier, and nothing depends on it any more.
    pub fn finish(&mut self, id: VertexId) {
        if self.live.remove(&id).is_some() {
            self.frontier.retain(|&f| f != id);
        }
    }

    /// Whether a vertex is unfinished.
    pub fn is_live(&self, id: VertexId) -> bool {
        self.live.contains_key(&id)
    }

    /// The frontier: unfinished vertices that a new launch may still depend on, in order.
    pub fn frontier(&self) -> &[VertexId] {
        &self.frontier
    }

    /// The unfinished vertices whose accesses conflict with `access` under this policy (for
    /// host access: the launches the host must wait for), in launch order.
    pub fn conflicting(&self, access: &Access) -> Vec<VertexId> {
        let mut out: Vec<VertexId> = self
            .live
            .iter()
            .filter(|(_, v)| v.accesses.iter().any(|a| conflicts(self.policy, a, access)))
            .map(|(&id, _)| id)
            .collect();
        out.sort_unstable();
        out
    }
}

fn conflicts(policy: DependencyPolicy, earlier: &Access, later: &Access) -> bool {
    let both_read = earlier.kind == AccessKind::Read && later.kind == AccessKind::Read;
    let ordered = match policy {
        DependencyPolicy::WithConst => !both_read,
        DependencyPolicy::NoConst => true,
    };
    ordered && earlier.allocation == later.allocation && earlier.footprint.overlaps(&later.footprint)
}
