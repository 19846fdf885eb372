// Over 800 lines: the graph backend trait, the node arena every backend shares, and the host implementation that runs it; splitting them would split one protocol.
//! The backend customization points (the seed's `GraphImpl`) and [`HostGraph`], the generic
//! host implementation that serial, rayon and any other host space use.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bumpalo::Bump;
use hoplite_core::{ExecutionSpace, Idx, ParallelFor, RangePolicy};
use parking_lot::Mutex;

use crate::builder::empty_node;
use crate::node::{NodeKernel, NodeKind};
use hoplite_core::held::Access;

/// The position of a node in its graph; the root is `NodeId(0)` and a node's predecessors
/// always have smaller ids (a topological order by construction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// The nodes of a graph and its edges: one list, owned by the graph and shared by its front end
/// (race check, DOT export) and its backend (which gets it at every call that needs it), so a
/// node is stored once and no backend keeps its own copy of the list.
///
/// Node `i`'s predecessors all have smaller ids; the root is node 0.
///
/// The nodes the front end makes live in one arena owned by the list (a bump allocator: one
/// heap allocation per few hundred nodes instead of one per node, and no reference count), as
/// do their labels; the list drops them with itself. So a node is reached through the list
/// only, as a [`NodeEntry`] that derefs to the node's [`NodeKernel`], and no backend can keep
/// a node beyond the list: one that needs a node while a submit runs uses the list that
/// [`submit`](GraphBackend::submit) hands it.
///
/// ```
/// use hoplite_graph::{NodeId, NodeKind, create_graph};
/// use hoplite_serial::Serial;
/// let graph = create_graph(&Serial::default(), |g| {
///     g.host("a", || {}).then_host("b", || {});
/// })?;
/// let nodes = graph.nodes();
/// assert_eq!(nodes.len(), 3);
/// assert_eq!(nodes.node(NodeId(0)).kind(), NodeKind::Root);
/// assert_eq!(nodes.node(NodeId(1)).label(), "a");
/// assert_eq!(nodes.preds(NodeId(2)), [NodeId(1)]);
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct GraphNodes<S: ExecutionSpace> {
    /// Every node, in id order; each points into `arena`.
    nodes: Vec<NodeEntry<S>>,
    /// Where each node's predecessors start in `pred_list`; node `i`'s end where node
    /// `i + 1`'s start (one list for the whole graph, no allocation per node).
    pred_starts: Vec<usize>,
    pred_list: Vec<NodeId>,
    /// Number of nodes that make accesses (the race check has nothing to do below two).
    pub(crate) accessing: usize,
    /// Where a node's accesses are listed before they move into the arena (kept between
    /// nodes, so listing them allocates nothing).
    scratch: Vec<Access>,
    /// Where the nodes and labels live. Dropped after the nodes (see `Drop`).
    arena: NodeArena,
}

/// The bump arena of one node list.
struct NodeArena(Bump);

// SAFETY: `Bump` is `!Sync` because it allocates through `&self` (a shared `Bump` on two
// threads would race on its bump pointer). `NodeArena` never lends its `Bump` out through a
// shared reference: the field is private to this module, and it is only used through
// `&mut NodeArena` (`alloc_with` and `recycle`, and the `alloc_str` / `alloc_slice_fill_iter`
// of `GraphNodes::push_labelled` / `push_recorded`, all reached through `&mut GraphNodes`); no
// code takes `&NodeArena`. A `&NodeArena` on several threads (a `&GraphNodes` shared by a
// concurrent submit) therefore gives none of them any access to the `Bump`, which is what
// `Sync` requires. The values in the arena are reached through `NodeEntry`, `ArenaStr` and
// `ArenaSlice`, whose `Sync` is argued with them.
unsafe impl Sync for NodeArena {}

/// The largest arena a thread keeps for its next node list (see [`NodeArena::recycle`]).
const SPARE_ARENA_MAX: usize = 1 << 20;

thread_local! {
    /// An emptied arena of a node list this thread dropped, for the next list it makes.
    static SPARE_ARENA: Cell<Option<Bump>> = const { Cell::new(None) };
}

impl NodeArena {
    /// The thread's spare arena (emptied, its largest chunk kept), or a new one.
    fn new() -> Self {
        let spare = SPARE_ARENA.try_with(Cell::take).ok().flatten();
        NodeArena(spare.unwrap_or_default())
    }

    /// Empties the arena and keeps it, if it is at most [`SPARE_ARENA_MAX`] bytes, as the
    /// thread's spare: a program that rebuilds a graph then makes the next one in the memory of
    /// the last, instead of allocating the arena's chunks anew (and, for large chunks, taking
    /// fresh pages from the system, page fault by page fault). The caller has dropped every
    /// value in the arena.
    fn recycle(&mut self) {
        let mut bump = std::mem::take(&mut self.0);
        if bump.allocated_bytes() <= SPARE_ARENA_MAX {
            // Keeps the largest chunk; frees the others.
            bump.reset();
            // A thread being torn down keeps nothing.
            let _ = SPARE_ARENA.try_with(|spare| spare.set(Some(bump)));
        }
    }

    /// Moves the value `make` returns into the arena; it stays there, at this address, until
    /// the arena is dropped or recycled (which frees or reuses the memory without running the
    /// value's destructor: the caller runs it first).
    #[inline(always)]
    fn alloc_with<T>(&mut self, make: impl FnOnce() -> T) -> &mut T {
        self.0.alloc_with(make)
    }
}

/// A string in a node list's arena: a node's label, with no reference count and no allocation
/// of its own.
pub(crate) struct ArenaStr(NonNull<str>);

// SAFETY: an `ArenaStr` is a shared reference to immutable bytes (`&str` is `Send + Sync`);
// the bytes live as long as the node holding it (the invariant of `ArenaStr::new`).
unsafe impl Send for ArenaStr {}
// SAFETY: as for `Send`.
unsafe impl Sync for ArenaStr {}

impl ArenaStr {
    /// # Safety
    ///
    /// `s` points to a string in a node list's arena, and the value made here is only moved
    /// into a node stored in that same arena (so it is dropped, at the latest, when the list
    /// drops its nodes — before the arena frees or reuses its memory).
    unsafe fn new(s: &str) -> Self {
        ArenaStr(NonNull::from(s))
    }

    /// The string, valid as long as `self` is.
    pub(crate) fn as_str(&self) -> &str {
        // SAFETY: by the invariant of `ArenaStr::new`, `self` lives in a node of the arena
        // that holds the string and is dropped before the arena frees or reuses that memory,
        // so the string is alive and unchanged (the arena does not write to memory it handed
        // out until it is recycled) for as long as `&self` is borrowed.
        unsafe { self.0.as_ref() }
    }
}

/// Values in a node list's arena, owned: dropped in place when this drops (their memory goes
/// with the arena). A node's accesses, with no allocation of their own.
pub(crate) struct ArenaSlice<T>(NonNull<[T]>);

// SAFETY: an `ArenaSlice` owns its values as a `Box<[T]>` would (it is their only pointer and
// drops them), so it is `Send` when `T` is.
unsafe impl<T: Send> Send for ArenaSlice<T> {}
// SAFETY: a shared `ArenaSlice` gives only `&[T]`, so it is `Sync` when `T` is.
unsafe impl<T: Sync> Sync for ArenaSlice<T> {}

impl<T> ArenaSlice<T> {
    /// No values (no memory).
    fn empty() -> Self {
        ArenaSlice(NonNull::slice_from_raw_parts(NonNull::dangling(), 0))
    }

    /// # Safety
    ///
    /// `values` is in a node list's arena, nothing else will read, write or drop them, and
    /// the value made here is only moved into a node stored in that same arena (so it is
    /// dropped, at the latest, when the list drops its nodes — before the arena frees or
    /// reuses its memory).
    unsafe fn new(values: &mut [T]) -> Self {
        ArenaSlice(NonNull::from(values))
    }

    /// The values, as long as `self` is borrowed.
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: by the invariant of `ArenaSlice::new`, the values are alive in the arena
        // (or the slice is empty, and a dangling, aligned pointer is a valid empty slice), and
        // only `self` reaches them; `&self` gives shared access only.
        unsafe { self.0.as_ref() }
    }
}

impl<T> Drop for ArenaSlice<T> {
    #[inline]
    fn drop(&mut self) {
        // Most nodes have no accesses: no call for them.
        if self.0.is_empty() {
            return;
        }
        // SAFETY: by the invariant of `ArenaSlice::new`, the values are alive and owned by
        // `self` alone, and this runs once (`drop`); the arena's memory outlives this call.
        unsafe { std::ptr::drop_in_place(self.0.as_ptr()) }
    }
}

/// One node of a [`GraphNodes`] list, as the list stores it: derefs to the node's
/// [`NodeKernel`]. Entries are only ever borrowed from their list (they cannot be cloned or
/// moved out of it), so a node lives as long as the list.
///
/// ```
/// use hoplite_graph::{NodeKind, create_graph};
/// use hoplite_serial::Serial;
/// let graph = create_graph(&Serial::default(), |g| {
///     g.host("a", || {});
/// })?;
/// let kinds: Vec<NodeKind> = graph.nodes().as_slice().iter().map(|node| node.kind()).collect();
/// assert_eq!(kinds, [NodeKind::Root, NodeKind::Host]);
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct NodeEntry<S: ExecutionSpace> {
    /// A node in the list's arena, owned by the list (dropped in place by `GraphNodes::drop`).
    node: NonNull<dyn NodeKernel<S>>,
    /// The node's kind and work, read once when it was added (instantiation reads them for
    /// every node, without a virtual call each).
    pub(crate) kind: NodeKind,
    pub(crate) work: Option<usize>,
    /// Whether the node runs on an instance of its own ([`NodeKernel::own_instance`]).
    pub(crate) own: bool,
}

// SAFETY: an entry owns its node as a `Box<dyn NodeKernel<S>>` would (it is the only pointer
// to it, and the list drops the node through it), and `NodeKernel` requires `Send + Sync`: a
// `Box` of such a value is `Send`, and moving the entry to another thread moves only the
// right to reach that value.
unsafe impl<S: ExecutionSpace> Send for NodeEntry<S> {}
// SAFETY: a shared entry gives only `&dyn NodeKernel<S>` (through `Deref`), and the node is
// `Sync`, so sharing it between threads is sound, as for `&Box<dyn NodeKernel<S>>`.
unsafe impl<S: ExecutionSpace> Sync for NodeEntry<S> {}

impl<S: ExecutionSpace> std::ops::Deref for NodeEntry<S> {
    type Target = dyn NodeKernel<S>;

    #[inline(always)]
    fn deref(&self) -> &(dyn NodeKernel<S> + 'static) {
        // SAFETY: `node` was made from a live `&mut` into the list's arena by
        // `GraphNodes::push_node`, which moved the node there; the arena keeps it at that
        // address until the list drops it. An entry is only reachable through a borrow of its
        // list (entries are not `Clone`, and the list hands out `&NodeEntry` / `&[NodeEntry]`
        // only), and the list drops its nodes only in `Drop`, which no borrow can outlive; it
        // only ever reads the node through `&`, and mutates it only in `Drop`. So for the
        // lifetime of `&self` the node is alive and not mutably aliased.
        unsafe { self.node.as_ref() }
    }
}

impl<S: ExecutionSpace> fmt::Debug for NodeEntry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeEntry")
            .field("label", &self.label())
            .field("kind", &self.kind())
            .finish()
    }
}

/// A node given to [`GraphNodes::add`] as an `Arc` (a backend's root and joins, nodes made
/// outside the front end), stored in the arena like the others.
struct SharedNode<S: ExecutionSpace>(Arc<dyn NodeKernel<S>>);

impl<S: ExecutionSpace> NodeKernel<S> for SharedNode<S> {
    fn label(&self) -> &str {
        self.0.label()
    }
    fn kind(&self) -> NodeKind {
        self.0.kind()
    }
    fn accesses(&self) -> &[Access] {
        self.0.accesses()
    }
    fn work(&self) -> Option<usize> {
        self.0.work()
    }
    fn run(&self) -> hoplite_core::Result<()> {
        self.0.run()
    }
    fn run_on(&self, space: &S) -> hoplite_core::Result<()> {
        self.0.run_on(space)
    }
    fn describe_device_launch(
        &self,
        f: &mut dyn FnMut(hoplite_core::device_kernel::DeviceLaunch<'_>, crate::DevicePolicy<'_, S>),
    ) -> bool {
        self.0.describe_device_launch(f)
    }
    fn device_result(&self) -> Option<&dyn crate::NodeResult> {
        self.0.device_result()
    }
    fn own_instance(&self) -> Option<&S> {
        self.0.own_instance()
    }
    unsafe fn hold_handles_in(
        &self,
        group: &hoplite_core::held::BorrowGroup,
    ) -> hoplite_core::Result<Option<Box<dyn std::any::Any>>> {
        // SAFETY: the caller's contract is the same.
        unsafe { self.0.hold_handles_in(group) }
    }
}

impl<S: ExecutionSpace> Default for GraphNodes<S> {
    fn default() -> Self {
        GraphNodes {
            nodes: Vec::new(),
            pred_starts: vec![0],
            pred_list: Vec::new(),
            accessing: 0,
            scratch: Vec::new(),
            arena: NodeArena::new(),
        }
    }
}

impl<S: ExecutionSpace> Drop for GraphNodes<S> {
    fn drop(&mut self) {
        // Drop each node in place; the arena frees their memory when it drops, after this.
        // `take` first: a node whose destructor panics leaves the rest undropped (leaked,
        // their memory still freed with the arena) rather than dropped twice.
        for entry in std::mem::take(&mut self.nodes) {
            // SAFETY: `entry.node` points to a live node in `self.arena` that `push_node`
            // moved there and that nothing has dropped (each entry is dropped here once, and
            // the list is being dropped, so no borrow of it or of the node is alive). The
            // arena's memory stays allocated until the field `arena` drops, after this.
            unsafe { std::ptr::drop_in_place(entry.node.as_ptr()) };
        }
        // Every node is dropped, and with them their accesses; labels need no drop. Nothing
        // points into the arena any more, so it can be reused.
        self.arena.recycle();
    }
}

impl<S: ExecutionSpace> GraphNodes<S> {
    /// An empty list (add the root first). Graphs made by
    /// [`create_graph`](crate::create_graph) come with theirs; a list made here is for
    /// driving a backend directly, as its tests do.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `node`, which runs after `preds`; returns its id. A backend's
    /// [`add_node`](GraphBackend::add_node) is not called: that is the caller's.
    ///
    /// # Errors
    ///
    /// [`GraphError::InvalidPredecessor`](crate::GraphError::InvalidPredecessor) if a
    /// predecessor is not an earlier node (the list keeps ids a topological order); nothing
    /// is added then.
    pub fn add(&mut self, node: Arc<dyn NodeKernel<S>>, preds: &[NodeId]) -> crate::Result<NodeId> {
        let id = self.nodes.len();
        if let Some(p) = preds.iter().find(|p| p.0 >= id) {
            return Err(crate::GraphError::InvalidPredecessor {
                node: id,
                predecessor: p.0,
            });
        }
        Ok(self.push_node(|| SharedNode(node), preds))
    }

    /// Makes the node `make` returns in the arena and appends it after `preds`, which the
    /// front end made earlier nodes; returns its id.
    #[inline(always)]
    pub(crate) fn push_node<T: NodeKernel<S> + 'static>(
        &mut self,
        make: impl FnOnce() -> T,
        preds: &[NodeId],
    ) -> NodeId {
        debug_assert!(
            preds.iter().all(|p| p.0 < self.nodes.len()),
            "predecessors are earlier nodes"
        );
        let id = NodeId(self.nodes.len());
        // Made in place in the arena (`alloc_with`), not moved there from the stack.
        let node: &mut T = self.arena.alloc_with(make);
        // Statically dispatched here (`T` is known): instantiation reads the copies.
        let (kind, work, own) = (node.kind(), node.work(), node.own_instance().is_some());
        self.accessing += usize::from(!node.accesses().is_empty());
        let node: &mut (dyn NodeKernel<S> + 'static) = node;
        self.nodes.push(NodeEntry {
            node: NonNull::from(node),
            kind,
            work,
            own,
        });
        self.pred_list.extend_from_slice(preds);
        self.pred_starts.push(self.pred_list.len());
        id
    }

    /// Appends `node` (a backend's root or join) after `preds`, which the front end made
    /// earlier nodes; returns its id.
    pub(crate) fn push_shared(&mut self, node: Arc<dyn NodeKernel<S>>, preds: &[NodeId]) -> NodeId {
        self.push_node(|| SharedNode(node), preds)
    }

    /// Appends the node `make` builds around `label` (copied into the arena: a bump of the
    /// arena's pointer and a copy of the bytes, cheaper than comparing it with the previous
    /// node's to share one copy), after `preds`; returns its id.
    #[inline(always)]
    pub(crate) fn push_labelled<T: NodeKernel<S> + 'static>(
        &mut self,
        label: &str,
        make: impl FnOnce(ArenaStr) -> T,
        preds: &[NodeId],
    ) -> NodeId {
        let stored: &str = self.arena.0.alloc_str(label);
        // SAFETY: `stored` is in this list's arena, and the value moves into the node pushed
        // into this list below (`make` only moves it into the node).
        let shared = unsafe { ArenaStr::new(stored) };
        self.push_node(|| make(shared), preds)
    }

    /// Appends the node `make` builds around `label` (as for
    /// [`push_labelled`](Self::push_labelled)), `views` and the accesses `record` lists for
    /// them, moved into the arena; returns its id.
    #[inline(always)]
    pub(crate) fn push_recorded<V, T: NodeKernel<S> + 'static>(
        &mut self,
        label: &str,
        views: V,
        record: impl FnOnce(&V, &mut Vec<Access>),
        make: impl FnOnce(ArenaStr, V, ArenaSlice<Access>) -> T,
        preds: &[NodeId],
    ) -> NodeId {
        // Empty unless an earlier listing unwound.
        if !self.scratch.is_empty() {
            self.scratch.clear();
        }
        record(&views, &mut self.scratch);
        let accesses = if self.scratch.is_empty() {
            ArenaSlice::empty()
        } else {
            let stored = self.arena.0.alloc_slice_fill_iter(self.scratch.drain(..));
            // SAFETY: `stored` is in this list's arena, and only this value reaches it (the
            // accesses were moved there out of `scratch`); it moves into the node pushed into
            // this list below (`make` only moves it into the node).
            unsafe { ArenaSlice::new(stored) }
        };
        self.push_labelled(label, |label| make(label, views, accesses), preds)
    }

    /// Number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there is no node (not even the root).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `id`.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this graph.
    pub fn node(&self, id: NodeId) -> &dyn NodeKernel<S> {
        &*self.nodes[id.0]
    }

    /// Every node, in id order (a topological order).
    pub fn as_slice(&self) -> &[NodeEntry<S>] {
        &self.nodes
    }

    /// The predecessors of node `id`, each added once, in the order given.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this graph.
    pub fn preds(&self, id: NodeId) -> &[NodeId] {
        &self.pred_list[self.pred_starts[id.0]..self.pred_starts[id.0 + 1]]
    }
}

impl<S: ExecutionSpace> fmt::Debug for GraphNodes<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphNodes")
            .field("nodes", &self.nodes.len())
            .field("edges", &self.pred_list.len())
            .finish()
    }
}

/// What a backend implements to run explicit graphs: the customization points of the Kokkos
/// Graphs design (`GraphImpl`). The graph owns its nodes ([`GraphNodes`]) and hands them to
/// the backend; the front end calls
///
/// 1. [`create_root_node`](Self::create_root_node) once, and adds its node as node 0;
/// 2. per node, after adding it and its predecessors to the list,
///    [`add_node`](Self::add_node) (a `when_all` first asks
///    [`create_aggregate`](Self::create_aggregate) for its trivial node);
/// 3. [`instantiate`](Self::instantiate) once (explicitly or at the first submit), after the
///    front end has checked the graph for unordered data races;
/// 4. [`submit`](Self::submit) any number of times, with the same list.
///
/// Axioms: a submit runs every node of the list exactly once, each after all its
/// predecessors have completed; it returns an error (and may skip nodes that had not started)
/// if a node fails; the backend stays usable after an error.
pub trait GraphBackend<S: ExecutionSpace>: Send + Sync {
    /// The node every other node descends from (no work).
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<S>>;
    /// Node `id` and its predecessors ([`GraphNodes::preds`]) were just added to `nodes`.
    /// A backend that builds its own structure node by node does it here; the provided
    /// implementation does nothing (the host backend reads the list at instantiation).
    fn add_node(&mut self, nodes: &GraphNodes<S>, id: NodeId) {
        let _ = (nodes, id);
    }
    /// A node with no work for joining `predecessors` (`when_all`).
    fn create_aggregate(&mut self, predecessors: &[NodeId]) -> Arc<dyn NodeKernel<S>>;
    /// Ends the construction phase: compute whatever each submit of `nodes` needs.
    ///
    /// # Errors
    ///
    /// Backend-specific (a device graph that fails to instantiate).
    fn instantiate(&mut self, nodes: &GraphNodes<S>) -> hoplite_core::Result<()>;
    /// Runs the graph's `nodes` once (the list given to `instantiate`), on the graph's
    /// instance (`on == None`: each node's [`run`](NodeKernel::run)) or on another instance
    /// of the same space (each node's [`run_on`](NodeKernel::run_on)).
    ///
    /// # Errors
    ///
    /// The first error of a node (borrow conflicts, panics as `KernelPanicked`, ...).
    fn submit(&self, nodes: &GraphNodes<S>, on: Option<&S>) -> hoplite_core::Result<()>;
    /// The instance the graph was created on.
    fn execution_space(&self) -> &S;
}

/// A node whose kernel takes fewer iterations than this may share a thread with other nodes
/// of its wave; larger kernels run alone, parallel over the whole instance.
pub const SHARE_MAX_WORK: usize = 1 << 16;

/// The nodes of a wave that may share threads run at the same time (one fork-join launch on
/// the instance, one node per iteration) only when their iterations add up to at least this;
/// otherwise a fork costs more than it saves.
pub const WAVE_MIN_WORK: usize = 1 << 12;

/// On a concurrent instance, a kernel of fewer iterations than this that does not run at the
/// same time as others runs inline on the submitting thread: consecutive such nodes run inside
/// one launch on the instance, each node's own launch nested in it and so run inline, with no
/// fork and no per-node launch lock.
pub const INLINE_MAX_WORK: usize = 1 << 11;

/// The serial pass hands at most this many nodes to one [`NodeKernel::run_sequence`]: optimized
/// builds run a sequence without nesting calls, unoptimized ones nest one call per node, and
/// this bounds how deep.
pub const SEQUENCE_MAX: usize = 32;

/// One step of the concurrent schedule.
#[derive(Debug, Clone)]
enum Step {
    /// Independent small kernels that run at the same time, one node per iteration of one
    /// launch on the instance.
    Together(Vec<usize>),
    /// Tiny kernels, one after another inside one launch on the instance (nested, so inline).
    Inline(Vec<usize>),
    /// A large kernel, a team launch or a host function, with the whole instance.
    Alone(usize),
    /// Nodes of one wave of which some run on instances of their own: each on a thread of its
    /// own at the same time, so that the instances work side by side.
    Apart(Vec<usize>),
}

/// How a submit runs one node: [`NodeKernel::run`] or [`NodeKernel::run_on`].
trait RunNode<S: ExecutionSpace>: Fn(&dyn NodeKernel<S>) -> hoplite_core::Result<()> + Sync {}

impl<S: ExecutionSpace, R: Fn(&dyn NodeKernel<S>) -> hoplite_core::Result<()> + Sync> RunNode<S> for R {}

/// What `instantiate` computes once.
struct Plan {
    /// Every node with work, in id order (a topological order: the serial pass), as runs of
    /// consecutive ids: slices of the graph's node list, for [`NodeKernel::run_sequence`],
    /// with no copy of the list and no reference count per node.
    runs: Vec<Range<usize>>,
    /// The concurrent schedule, computed at instantiation on a concurrent instance, and
    /// otherwise at the first submit on one (a serial graph never needs it).
    schedule: OnceLock<Schedule>,
    /// Whether a node runs on an instance of its own: the graph then runs by waves on any
    /// instance, so that nodes of a wave on different instances run at the same time.
    apart: bool,
}

/// The concurrent schedule: the nodes with work, wave by wave.
struct Schedule {
    steps: Vec<Step>,
    /// Number of waves.
    waves: usize,
}

/// The generic host implementation of [`GraphBackend`], for any space that can run a
/// `parallel_for` over a [`RangePolicy`].
///
/// `instantiate` computes, once, a topological order of the nodes with work (the root and
/// `when_all` joins disappear) and, on an instance of concurrency above 1, a schedule by waves
/// (a node's wave is one past the last wave of its predecessors; a graph on a serial instance
/// computes it at its first submit on a concurrent one, if any). It reads the graph's node
/// list ([`GraphNodes`]) and keeps no copy of it. A submit then
///
/// * on an instance of concurrency 1 (serial): runs the order in one pass, each kernel through
///   the space's dispatch. On the graph's own instance the pass is the nodes'
///   [`run_sequence`](NodeKernel::run_sequence), [`SEQUENCE_MAX`] nodes at a time, where each
///   node jumps to the next rather than returning to a loop: a node costs its kernel and an
///   indirect jump, less than an eager launch of the same kernel;
/// * on a concurrent instance (rayon): follows the schedule. In each wave, the kernels of
///   fewer than [`SHARE_MAX_WORK`] iterations run *at the same time* — one launch over the
///   wave on the instance, one node per iteration, each node's own launch nested and so run on
///   that thread — when they are at least two and their iterations add up to at least
///   [`WAVE_MIN_WORK`]. Otherwise kernels of fewer than [`INLINE_MAX_WORK`] iterations run
///   inline: consecutive ones (across waves) inside one launch on the instance, without a fork.
///   Every other node — a larger kernel (itself parallel over the whole instance), a team
///   launch, a host function — runs alone;
/// * on an instance whose launches may return before they complete (a device space such as
///   `Cuda`, whose [`synchronous_launches`](ExecutionSpace::synchronous_launches) is
///   `false`): runs the order node by node, each kernel through its own launch on the instance
///   (which runs them in submission order), and fences the instance before each host
///   function, so that it sees what the kernels before it did. The waves above are host
///   closures launched on the instance, whose results are read when the launch returns; a
///   device runs no closures.
///
/// Each node borrows its handles for its own run only, so nodes that read the same view can
/// share it, and the host may use the views between submits.
pub struct HostGraph<S: ExecutionSpace> {
    space: S,
    plan: Plan,
    /// Identifies the graph in traces (unique in the process).
    trace_id: u64,
    /// Submits so far, numbering them in traces.
    submits: AtomicU64,
}

/// The next graph's trace id.
static NEXT_TRACE_ID: AtomicU64 = AtomicU64::new(1);

impl<S: ExecutionSpace> HostGraph<S> {
    /// An empty graph on `space`.
    pub fn new(space: S) -> Self {
        HostGraph {
            space,
            plan: Plan {
                runs: Vec::new(),
                schedule: OnceLock::new(),
                apart: false,
            },
            trace_id: NEXT_TRACE_ID.fetch_add(1, Ordering::Relaxed),
            submits: AtomicU64::new(0),
        }
    }

    /// Runs `f`, turning a panic into `KernelPanicked` labelled with the node `current` names.
    fn guarded(
        nodes: &GraphNodes<S>,
        current: &AtomicUsize,
        f: impl FnOnce() -> hoplite_core::Result<()>,
    ) -> hoplite_core::Result<()> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            let label = nodes.nodes[current.load(Ordering::Relaxed)].label();
            Err(hoplite_core::Error::from_panic(label, payload))
        })
    }

    /// Whether a submit on `space` follows the schedule by waves: on an instance of concurrency
    /// above 1 whose launches have completed when they return (see [`HostGraph`]).
    fn by_waves(space: &S) -> bool {
        space.concurrency() > 1 && space.synchronous_launches()
    }

    /// Runs the nodes with work one after another on this thread, in id order; on a space
    /// with asynchronous launches, fences `space` before each host function.
    fn run_in_order<R: RunNode<S>>(
        &self,
        nodes: &GraphNodes<S>,
        space: &S,
        run: &R,
        current: &AtomicUsize,
    ) -> hoplite_core::Result<()> {
        let fence_hosts = !space.synchronous_launches();
        // Under the built-in trace, each node's run is recorded with its edges.
        let traced = hoplite_core::profiling::tracing_graphs();
        let submit = self.submits.fetch_add(1, Ordering::Relaxed);
        for n in self.plan.runs.iter().flat_map(Range::clone) {
            current.store(n, Ordering::Relaxed);
            let node = &nodes.nodes[n];
            if fence_hosts && node.kind == NodeKind::Host {
                space.fence()?;
            }
            if !traced {
                run(&**node)?;
                continue;
            }
            let start = std::time::Instant::now();
            let result = run(&**node);
            let predecessors = work_predecessors(nodes, n);
            hoplite_core::profiling::trace_graph_node(hoplite_core::profiling::GraphNodeRun {
                graph: self.trace_id,
                submit,
                node: n,
                label: node.label(),
                predecessors: &predecessors,
                start,
                end: std::time::Instant::now(),
            });
            result?;
        }
        Ok(())
    }

    /// Runs `ids` one after another on this thread.
    fn run_sequential<R: RunNode<S>>(
        nodes: &GraphNodes<S>,
        ids: impl IntoIterator<Item = usize>,
        run: &R,
        current: &AtomicUsize,
    ) -> hoplite_core::Result<()> {
        for n in ids {
            current.store(n, Ordering::Relaxed);
            run(&*nodes.nodes[n])?;
        }
        Ok(())
    }
}

impl<S: ExecutionSpace + ParallelFor<RangePolicy<S>>> HostGraph<S> {
    /// One submit on `space`, each node run by `run` (monomorphized separately for the
    /// graph's own instance, so that its hot loop has no per-node check of where it runs).
    fn submit_with<R: RunNode<S>>(
        &self,
        nodes: &GraphNodes<S>,
        space: &S,
        run: &R,
    ) -> hoplite_core::Result<()> {
        let current = AtomicUsize::new(0);
        // While a Kokkos Tools connector is loaded, nodes run one after another on this thread:
        // connectors that keep one stack of kernels need each node's begin and end together.
        let waves = Self::by_waves(space) || (self.plan.apart && space.synchronous_launches());
        if !waves || hoplite_core::profiling::tools_loaded() {
            return Self::guarded(nodes, &current, || self.run_in_order(nodes, space, run, &current));
        }
        Self::guarded(nodes, &current, || {
            let schedule = self.plan.schedule.get_or_init(|| schedule_of(nodes));
            for step in &schedule.steps {
                match step {
                    Step::Together(ids) => Self::run_together(nodes, space, ids, run)?,
                    Step::Inline(ids) if ids.len() > 1 => Self::run_inline(nodes, space, ids, run, &current)?,
                    Step::Inline(ids) => Self::run_sequential(nodes, ids.iter().copied(), run, &current)?,
                    Step::Alone(n) => Self::run_sequential(nodes, [*n], run, &current)?,
                    Step::Apart(ids) => Self::run_apart(nodes, ids, run)?,
                }
            }
            Ok(())
        })
    }

    /// Runs `ids` at the same time, each on a thread of its own (the first on this one), so
    /// that nodes on instances of their own run side by side. Every node runs even if another
    /// fails; the error of the lowest node id is returned.
    fn run_apart<R: RunNode<S>>(nodes: &GraphNodes<S>, ids: &[usize], run: &R) -> hoplite_core::Result<()> {
        let run_one = |n: usize| {
            let node = &nodes.nodes[n];
            catch_unwind(AssertUnwindSafe(|| run(&**node)))
                .unwrap_or_else(|payload| Err(hoplite_core::Error::from_panic(node.label(), payload)))
                .err()
                .map(|e| (n, e))
        };
        let Some((&first, rest)) = ids.split_first() else {
            return Ok(());
        };
        let errors: Vec<(usize, hoplite_core::Error)> = std::thread::scope(|scope| {
            let others: Vec<_> = rest.iter().map(|&n| scope.spawn(move || run_one(n))).collect();
            let mut errors: Vec<_> = run_one(first).into_iter().collect();
            for (handle, &n) in others.into_iter().zip(rest) {
                // `run_one` catches the node's panic; a join error would be a panic outside it.
                match handle.join() {
                    Ok(error) => errors.extend(error),
                    Err(payload) => errors.push((
                        n,
                        hoplite_core::Error::from_panic(nodes.nodes[n].label(), payload),
                    )),
                }
            }
            errors
        });
        match errors.into_iter().min_by_key(|(n, _)| *n) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs `ids` at the same time: one launch on `space`, one node per iteration. Every node
    /// runs even if another fails; the error of the lowest node id is returned.
    fn run_together<R: RunNode<S>>(
        nodes: &GraphNodes<S>,
        space: &S,
        ids: &[usize],
        run: &R,
    ) -> hoplite_core::Result<()> {
        let first_error: Mutex<Option<(usize, hoplite_core::Error)>> = Mutex::new(None);
        let policy = RangePolicy::new(space.clone(), 0..ids.len());
        let kernel = |i: Idx<'_>| {
            let n = ids[*i];
            let node = &nodes.nodes[n];
            let result = catch_unwind(AssertUnwindSafe(|| run(&**node)))
                .unwrap_or_else(|payload| Err(hoplite_core::Error::from_panic(node.label(), payload)));
            if let Err(e) = result {
                let mut slot = first_error.lock();
                if slot.as_ref().is_none_or(|(k, _)| n < *k) {
                    *slot = Some((n, e));
                }
            }
        };
        space.parallel_for("hoplite-graph wave", &policy, kernel)?;
        match first_error.into_inner() {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs `ids` one after another inside one launch of one iteration on `space`, so that
    /// their own launches are nested and run inline. Stops at the first error; a panic
    /// unwinds through the launch to the caller's guard.
    fn run_inline<R: RunNode<S>>(
        nodes: &GraphNodes<S>,
        space: &S,
        ids: &[usize],
        run: &R,
        current: &AtomicUsize,
    ) -> hoplite_core::Result<()> {
        let error: Mutex<Option<hoplite_core::Error>> = Mutex::new(None);
        let policy = RangePolicy::new(space.clone(), 0..1);
        space.parallel_for("hoplite-graph inline", &policy, |_i: Idx<'_>| {
            if let Err(e) = Self::run_sequential(nodes, ids.iter().copied(), run, current) {
                *error.lock() = Some(e);
            }
        })?;
        match error.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<S: ExecutionSpace> fmt::Debug for HostGraph<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostGraph")
            .field("space", &self.space)
            .field("waves", &self.plan.schedule.get().map(|s| s.waves))
            .finish()
    }
}

impl<S: ExecutionSpace + ParallelFor<RangePolicy<S>>> GraphBackend<S> for HostGraph<S> {
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<S>> {
        Arc::new(empty_node("root", NodeKind::Root))
    }

    fn create_aggregate(&mut self, _predecessors: &[NodeId]) -> Arc<dyn NodeKernel<S>> {
        Arc::new(empty_node("when_all", NodeKind::Aggregate))
    }

    fn instantiate(&mut self, nodes: &GraphNodes<S>) -> hoplite_core::Result<()> {
        // The serial pass: the nodes with work in id order, as runs of consecutive ids.
        let mut runs: Vec<Range<usize>> = Vec::new();
        for (n, node) in nodes.nodes.iter().enumerate() {
            if node.kind.is_trivial() {
                continue;
            }
            match runs.last_mut() {
                Some(run) if run.end == n => run.end = n + 1,
                _ => runs.push(n..n + 1),
            }
        }
        let apart = self.space.synchronous_launches() && nodes.nodes.iter().any(|n| n.own);
        let schedule = OnceLock::new();
        if Self::by_waves(&self.space) || apart {
            let _ = schedule.set(schedule_of(nodes));
        }
        self.plan = Plan {
            runs,
            schedule,
            apart,
        };
        Ok(())
    }

    fn submit(&self, nodes: &GraphNodes<S>, on: Option<&S>) -> hoplite_core::Result<()> {
        match on {
            None if !self.plan.apart
                && self.space.concurrency() <= 1
                && self.space.synchronous_launches()
                && !hoplite_core::profiling::tools_loaded() =>
            {
                self.run_pass(nodes)
            }
            None => self.submit_with(nodes, &self.space, &|node: &dyn NodeKernel<S>| node.run()),
            Some(space) => self.submit_with(nodes, space, &|node: &dyn NodeKernel<S>| node.run_on(space)),
        }
    }

    fn execution_space(&self) -> &S {
        &self.space
    }
}

impl<S: ExecutionSpace> HostGraph<S> {
    /// The serial pass on the graph's own instance: the nodes' [`run_sequence`]
    /// (NodeKernel::run_sequence), [`SEQUENCE_MAX`] nodes at a time.
    fn run_pass(&self, nodes: &GraphNodes<S>) -> hoplite_core::Result<()> {
        for run in &self.plan.runs {
            for chunk in nodes.nodes[run.clone()].chunks(SEQUENCE_MAX) {
                if let Some((first, rest)) = chunk.split_first() {
                    first.run_sequence(rest).map_err(|e| *e)?;
                }
            }
        }
        Ok(())
    }
}

/// The concurrent schedule of `nodes`: waves (a node's wave is one past the last wave of its
/// predecessors), then the steps that run them.
/// The nodes with work that node `n` waits for, looking through the joins and the root
/// (trivial nodes), in id order: the edges a trace draws.
fn work_predecessors<S: ExecutionSpace>(nodes: &GraphNodes<S>, n: usize) -> Vec<usize> {
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut pending: Vec<usize> = nodes.preds(NodeId(n)).iter().map(|p| p.0).collect();
    while let Some(p) = pending.pop() {
        if !seen.insert(p) {
            continue;
        }
        if nodes.nodes[p].kind.is_trivial() {
            pending.extend(nodes.preds(NodeId(p)).iter().map(|q| q.0));
        } else {
            found.push(p);
        }
    }
    found.sort_unstable();
    found
}

fn schedule_of<S: ExecutionSpace>(nodes: &GraphNodes<S>) -> Schedule {
    let entries = nodes.as_slice();
    // Ids are a topological order: a node is added after its predecessors. A trivial
    // node takes its predecessors' wave, so joins add no wave.
    let mut level: Vec<usize> = Vec::with_capacity(entries.len());
    // The nodes with work, in id order, and whether their waves never decrease in that order
    // (a graph added wave by wave: a chain, a fan-out); then they are already wave by wave.
    let mut order: Vec<usize> = Vec::with_capacity(entries.len());
    let mut sorted = true;
    let mut waves = 0;
    for (n, node) in entries.iter().enumerate() {
        let before = nodes
            .preds(NodeId(n))
            .iter()
            .map(|p| level[p.0])
            .max()
            .unwrap_or(0);
        if node.kind.is_trivial() {
            level.push(before);
            continue;
        }
        let own = before + 1;
        level.push(own);
        sorted &= own >= waves;
        waves = waves.max(own);
        order.push(n);
    }
    let mut planner = WavePlanner {
        // Tiny kernels usually make one inline group; its list then grows once.
        inline: Vec::with_capacity(order.len()),
        ..WavePlanner::default()
    };
    if sorted {
        for wave in order.chunk_by(|&a, &b| level[a] == level[b]) {
            planner.wave(wave, entries);
        }
    } else {
        // The nodes of `order` wave by wave, in id order within a wave (a counting sort: no
        // list per wave). Waves are 1..=waves; wave w is
        // `by_wave[wave_starts[w]..wave_starts[w + 1]]`.
        let mut wave_starts = vec![0usize; waves + 2];
        for &n in &order {
            wave_starts[level[n] + 1] += 1;
        }
        for w in 1..wave_starts.len() {
            wave_starts[w] += wave_starts[w - 1];
        }
        let mut by_wave = vec![0usize; order.len()];
        // `next[w]`: where wave w's next node goes.
        let mut next = wave_starts.clone();
        for &n in &order {
            let slot = &mut next[level[n]];
            by_wave[*slot] = n;
            *slot += 1;
        }
        for w in 1..=waves {
            planner.wave(&by_wave[wave_starts[w]..wave_starts[w + 1]], entries);
        }
    }
    flush(&mut planner.steps, &mut planner.inline);
    Schedule {
        steps: planner.steps,
        waves,
    }
}

/// Turns waves into steps, one wave at a time.
#[derive(Default)]
struct WavePlanner {
    steps: Vec<Step>,
    /// The current inline group (it may span waves).
    inline: Vec<usize>,
    /// Scratch lists of the wave being planned.
    shared: Vec<usize>,
    rest: Vec<usize>,
}

impl WavePlanner {
    /// Plans `wave` (node ids, in id order).
    #[inline(always)]
    fn wave<S: ExecutionSpace>(&mut self, wave: &[usize], entries: &[NodeEntry<S>]) {
        // A wave of one node (every wave of a chain) never runs nodes together.
        if let [n] = *wave {
            // A node on an instance of its own runs there, not nested in a launch here.
            if !entries[n].own && entries[n].work.is_some_and(|k| k < INLINE_MAX_WORK) {
                self.inline.push(n);
            } else {
                flush(&mut self.steps, &mut self.inline);
                self.steps.push(Step::Alone(n));
            }
            return;
        }
        self.wide_wave(wave, entries);
    }

    /// Plans a wave of several nodes.
    fn wide_wave<S: ExecutionSpace>(&mut self, wave: &[usize], entries: &[NodeEntry<S>]) {
        let work = |n: usize| entries[n].work;
        self.shared.clear();
        self.rest.clear();
        self.shared.reserve(wave.len());
        let mut shared_work = 0usize;
        for &n in wave {
            match work(n) {
                Some(k) if k < SHARE_MAX_WORK && !entries[n].own => {
                    self.shared.push(n);
                    shared_work += k;
                }
                _ => self.rest.push(n),
            }
        }
        if self.shared.len() >= 2 && shared_work >= WAVE_MIN_WORK {
            flush(&mut self.steps, &mut self.inline);
            self.steps.push(Step::Together(self.shared.clone()));
        } else {
            for &n in &self.shared {
                if work(n).is_some_and(|k| k < INLINE_MAX_WORK) {
                    self.inline.push(n);
                } else {
                    self.rest.push(n);
                }
            }
        }
        if !self.rest.is_empty() {
            flush(&mut self.steps, &mut self.inline);
            if self.rest.len() > 1 && self.rest.iter().any(|&n| entries[n].own) {
                self.steps.push(Step::Apart(self.rest.clone()));
            } else {
                self.steps.extend(self.rest.iter().copied().map(Step::Alone));
            }
        }
    }
}

/// Ends the current inline group, if any.
fn flush(steps: &mut Vec<Step>, inline: &mut Vec<usize>) {
    if !inline.is_empty() {
        steps.push(Step::Inline(std::mem::take(inline)));
    }
}
