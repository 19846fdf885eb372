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

use std::collections::VecDeque;
use std::sync::Arc;

use hoplite_core::AccessKind;
use hoplite_core::held::Access;
use hoplite_core::held::AllocationKey;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use crate::vertex_table::VertexTable;

/// Which pairs of accesses to one view order two launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DependencyPolicy {
    /// Two reads of a view never order each other (GrCUDA's `with-const`), nor do two atomic
    /// updates of it (`x.atomic()` handles, which commute as the borrow table lets them share
    /// a view); a read and an atomic update do.
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

/// How many emptied access lists the model keeps for the next launches to record into.
const SPARE_LISTS: usize = 64;

/// The edges of one vertex: inline for up to two parents, the common case, so that adding a
/// vertex allocates no list for them.
pub type Edges = SmallVec<[Edge; 2]>;

/// What adding a vertex would do (see [`DependencyModel::plan`]).
#[derive(Clone, Debug)]
pub struct Plan {
    edges: Edges,
    /// Active accesses of earlier vertices the new vertex covers: `(vertex, access index)`.
    covered: SmallVec<[(VertexId, usize); 4]>,
}

impl Plan {
    /// The parents the vertex would have, in launch order, each with the view that caused
    /// the edge.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }
}

struct Vertex {
    accesses: Vec<Access>,
    /// Bit `i`: access `i` can still make a later vertex depend on this one.
    active: Flags,
    /// How many entries of `active` are true.
    active_count: usize,
    parents: SmallVec<[VertexId; 4]>,
}

/// A set of access indices, one bit each: a launch has a handful of accesses, so one word
/// holds them and making the set is a store, not a loop over a list.
#[derive(Debug)]
struct Flags(SmallVec<[u64; 1]>);

impl Flags {
    /// Indices `0..n`.
    fn all(n: usize) -> Self {
        let mut words = SmallVec::new();
        let mut left = n;
        while left > 0 {
            let take = left.min(64);
            words.push(if take == 64 { u64::MAX } else { (1 << take) - 1 });
            left -= take;
        }
        Flags(words)
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Takes `i` out; whether it was in.
    fn clear(&mut self, i: usize) -> bool {
        let Some(word) = self.0.get_mut(i / 64) else {
            return false;
        };
        let bit = 1 << (i % 64);
        let was = *word & bit != 0;
        *word &= !bit;
        was
    }
}

/// The active accesses of unfinished vertices to one allocation, `(vertex, access index)` in
/// launch order: reads apart from writes and atomic accesses, because under
/// [`DependencyPolicy::WithConst`] a new read is ordered only after the latter, and a view read
/// by many pending launches (a coefficient table) would otherwise make every later reader scan
/// all of them.
///
/// Sorted queues rather than trees: a vertex's accesses enter at the back (ids grow) and
/// mostly leave at the front (vertices finish in about launch order), and a queue that
/// empties keeps its buffer for the next launches on the allocation.
#[derive(Default)]
struct ActiveAccesses {
    reads: VecDeque<(VertexId, usize)>,
    others: VecDeque<(VertexId, usize)>,
}

impl ActiveAccesses {
    fn set_of(&mut self, kind: AccessKind) -> &mut VecDeque<(VertexId, usize)> {
        match kind {
            AccessKind::Read => &mut self.reads,
            AccessKind::Write | AccessKind::Atomic => &mut self.others,
        }
    }

    fn insert(&mut self, kind: AccessKind, entry: (VertexId, usize)) {
        let set = self.set_of(kind);
        // Ids grow, so the new vertex's entries go at the back.
        debug_assert!(set.back().is_none_or(|&last| last < entry));
        set.push_back(entry);
    }

    fn remove(&mut self, kind: AccessKind, entry: (VertexId, usize)) {
        let set = self.set_of(kind);
        if set.front() == Some(&entry) {
            set.pop_front();
        } else if let Ok(pos) = set.binary_search(&entry) {
            set.remove(pos);
        }
    }

    fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.others.is_empty()
    }
}

/// How many allocations the model keeps an index entry for before it drops the empty ones.
const EMPTY_ENTRIES_LIMIT: usize = 1 << 12;

/// The dependency model: vertices still unfinished, their active sets and the frontier.
///
/// ```
/// use hoplite_dag::{DependencyModel, DependencyPolicy};
/// # use hoplite_core::View;
/// # use hoplite_core::held::{Access, RecordedArgs};
/// # fn accesses<A: RecordedArgs>(a: A) -> Vec<Access> { let mut v = Vec::new(); A::record(&a.detach(), &mut v); v }
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
    live: VertexTable<Vertex>,
    /// The active accesses of unfinished vertices, by allocation: a launch looks only at
    /// those of the allocations it uses, so planning costs the same however many launches are
    /// pending on other views.
    active: HashMap<AllocationKey, ActiveAccesses>,
    /// The size of `active` past which `finish` drops its empty entries.
    prune_active_at: usize,
    /// Emptied access lists of finished vertices (see [`DependencyModel::access_list`]).
    spare_lists: Vec<Vec<Access>>,
}

impl DependencyModel {
    /// An empty model.
    pub fn new(policy: DependencyPolicy) -> Self {
        DependencyModel {
            policy,
            next: 0,
            live: VertexTable::default(),
            active: HashMap::default(),
            prune_active_at: EMPTY_ENTRIES_LIMIT,
            spare_lists: Vec::new(),
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
        let (id, edges) = self.commit(accesses, plan);
        (id, edges.into_vec())
    }

    /// What adding a vertex that makes `accesses` would do, without doing it: a caller that
    /// may still give the launch up (a stream it cannot get, a policy invalid on the chosen
    /// instance) plans first and [`commit`](Self::commit)s only once nothing can fail, so that
    /// no earlier vertex's active set loses an access to a launch that never happened.
    pub fn plan(&self, accesses: &[Access]) -> Plan {
        // Every conflicting pair: (earlier vertex, its access, the new access, whether the new
        // access covers the earlier one for every later vertex).
        let mut hits: SmallVec<[(VertexId, usize, usize, bool); 8]> = SmallVec::new();
        for (j, later) in accesses.iter().enumerate() {
            let Some(active) = self.active.get(&later.allocation) else {
                continue;
            };
            // With const, two reads never conflict: a read looks at writes and atomics only.
            let reads_too = self.policy == DependencyPolicy::NoConst || later.kind != AccessKind::Read;
            let reads = if reads_too {
                Some(active.reads.iter())
            } else {
                None
            };
            let candidates = active.others.iter().chain(reads.into_iter().flatten());
            for &(f, i) in candidates {
                let Some(earlier) = self.live.get(f).and_then(|v| v.accesses.get(i)) else {
                    continue;
                };
                if !conflicts(self.policy, earlier, later) {
                    continue;
                }
                // The new vertex covers the parent's access for every later vertex when it
                // touches all of its elements and every access that would order after the
                // parent's orders after the new one: with const, only a write does (a reader
                // leaves the parent's write for the next reader to depend on, an atomic update
                // for the next atomic update).
                let covers = later.footprint.covers(&earlier.footprint)
                    && match self.policy {
                        DependencyPolicy::NoConst => true,
                        DependencyPolicy::WithConst => later.kind == AccessKind::Write,
                    };
                hits.push((f, i, j, covers));
            }
        }
        // In launch order of the parents; each edge names the view of the parent's first
        // conflicting access, met by the new vertex's first access that conflicts with it.
        hits.sort_unstable();
        let mut edges = Edges::new();
        let mut covered: SmallVec<[(VertexId, usize); 4]> = SmallVec::new();
        for &(f, i, j, covers) in &hits {
            if edges.last().is_none_or(|e| e.parent != f) {
                edges.push(Edge {
                    parent: f,
                    view: accesses[j].view.clone(),
                });
            }
            if covers && covered.last() != Some(&(f, i)) {
                covered.push((f, i));
            }
        }
        if self.policy == DependencyPolicy::WithConst && edges.len() > 1 {
            let ids: SmallVec<[VertexId; 4]> = edges.iter().map(|e| e.parent).collect();
            edges.retain(|e| {
                !ids.iter()
                    .any(|&other| other != e.parent && self.reaches(e.parent, other))
            });
        }
        Plan { edges, covered }
    }

    /// Adds the vertex `plan` was made for (with the same `accesses`, and no other change to
    /// the model in between); returns its id and its parents.
    pub fn commit(&mut self, accesses: Vec<Access>, plan: Plan) -> (VertexId, Edges) {
        let id = self.next;
        self.next += 1;
        for (f, i) in plan.covered {
            self.deactivate(f, i);
        }
        for (i, a) in accesses.iter().enumerate() {
            self.active
                .entry(a.allocation)
                .or_default()
                .insert(a.kind, (id, i));
        }
        self.live.insert(
            id,
            Vertex {
                active: Flags::all(accesses.len()),
                active_count: accesses.len(),
                accesses,
                parents: plan.edges.iter().map(|e| e.parent).collect(),
            },
        );
        (id, plan.edges)
    }

    /// Takes access `i` of vertex `f` out of its active set.
    fn deactivate(&mut self, f: VertexId, i: usize) {
        let Some(vertex) = self.live.get_mut(f) else {
            return;
        };
        if !vertex.active.clear(i) {
            return;
        }
        vertex.active_count -= 1;
        let access = &vertex.accesses[i];
        Self::unindex(&mut self.active, access, f, i);
    }

    fn unindex(active: &mut HashMap<AllocationKey, ActiveAccesses>, access: &Access, f: VertexId, i: usize) {
        if let Some(entry) = active.get_mut(&access.allocation) {
            entry.remove(access.kind, (f, i));
        }
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
            if let Some(vertex) = self.live.get(v) {
                stack.extend(vertex.parents.iter().copied());
            }
        }
        false
    }

    /// Marks a vertex finished: it leaves the frontier, and nothing depends on it any more.
    pub fn finish(&mut self, id: VertexId) {
        let Some(mut vertex) = self.live.remove(id) else {
            return;
        };
        if vertex.active_count > 0 {
            for (i, access) in vertex.accesses.iter().enumerate() {
                if vertex.active.get(i) {
                    Self::unindex(&mut self.active, access, id, i);
                }
            }
        }
        // The list goes back for the next launch to record into.
        if self.spare_lists.len() < SPARE_LISTS {
            vertex.accesses.clear();
            self.spare_lists.push(std::mem::take(&mut vertex.accesses));
        }
        // Entries of allocations no unfinished vertex uses stay for the next launches on
        // them, up to a bound.
        if self.active.len() > self.prune_active_at {
            self.active.retain(|_, entry| !entry.is_empty());
            // What unfinished vertices still use stays; scan again only once that has doubled.
            self.prune_active_at = EMPTY_ENTRIES_LIMIT.max(2 * self.active.len());
        }
    }

    /// An empty list to record a launch's accesses into before [`plan`](Self::plan) and
    /// [`commit`](Self::commit): one a finished vertex left, so that a launch neither
    /// allocates a list nor copies its accesses from one list to another.
    ///
    /// ```
    /// use hoplite_dag::{DependencyModel, DependencyPolicy};
    /// let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    /// assert!(dag.access_list().is_empty());
    /// ```
    pub fn access_list(&mut self) -> Vec<Access> {
        self.spare_lists.pop().unwrap_or_default()
    }

    /// The accesses of an unfinished vertex.
    pub fn accesses(&self, id: VertexId) -> Option<&[Access]> {
        self.live.get(id).map(|v| &v.accesses[..])
    }

    /// Whether an unfinished vertex accesses `allocation`.
    pub fn uses(&self, allocation: AllocationKey) -> bool {
        self.live
            .values()
            .any(|v| v.accesses.iter().any(|a| a.allocation == allocation))
    }

    /// Whether a vertex is unfinished.
    pub fn is_live(&self, id: VertexId) -> bool {
        self.live.contains(id)
    }

    /// The frontier: unfinished vertices that a new launch may still depend on (those with a
    /// non-empty active set), in order.
    pub fn frontier(&self) -> Vec<VertexId> {
        let mut out: Vec<VertexId> = self
            .live
            .iter()
            .filter(|(_, v)| v.active_count > 0)
            .map(|(id, _)| id)
            .collect();
        out.sort_unstable();
        out
    }

    /// The unfinished vertices whose accesses conflict with `access` under this policy (for
    /// host access: the launches the host must wait for), in launch order.
    pub fn conflicting(&self, access: &Access) -> Vec<VertexId> {
        let mut out: Vec<VertexId> = self
            .live
            .iter()
            .filter(|(_, v)| v.accesses.iter().any(|a| conflicts(self.policy, a, access)))
            .map(|(id, _)| id)
            .collect();
        out.sort_unstable();
        out
    }
}

fn conflicts(policy: DependencyPolicy, earlier: &Access, later: &Access) -> bool {
    // With const, accesses of one kind that commute never order each other: two reads, and
    // two atomic updates (as the borrow table lets atomic handles share a view).
    let commute = earlier.kind == later.kind && matches!(later.kind, AccessKind::Read | AccessKind::Atomic);
    let ordered = match policy {
        DependencyPolicy::WithConst => !commute,
        DependencyPolicy::NoConst => true,
    };
    ordered && earlier.allocation == later.allocation && earlier.footprint.overlaps(&later.footprint)
}
