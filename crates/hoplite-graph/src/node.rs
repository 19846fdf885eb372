//! The type-erased work of one node, as backends receive it, and the concrete nodes the front
//! end makes for each pattern.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use hoplite_core::IndexBounds;
use hoplite_core::device_kernel::{DeviceLaunch, DynReducer, device_launch_of};
use hoplite_core::held::BorrowGroup;
use hoplite_core::{
    ExecutionPolicy, ExecutionSpace, HostAccessibleSpace, LaunchSpec, ParallelFor, ParallelReduce,
    ParallelScan, Reducer, ScanValue, ValidatedPolicy, View, ViewValue, parallel_for_validated,
    parallel_reduce_validated, parallel_scan_validated,
};
use parking_lot::Mutex;

use crate::args::{DevicePolicy, GraphPolicy, HostArgs};
use crate::backend::{ArenaSlice, ArenaStr, NodeEntry};
use hoplite_core::held::{Access, RecordedArgs};

/// What a node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum NodeKind {
    /// The root every graph starts from (no work).
    Root,
    /// A join of several nodes (`when_all`; no work).
    Aggregate,
    /// A `parallel_for` launch.
    For,
    /// A `parallel_reduce` launch.
    Reduce,
    /// A `parallel_scan` launch.
    Scan,
    /// A function run on the host thread that submits.
    Host,
}

impl NodeKind {
    /// The name used in DOT exports and messages.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Root => "root",
            NodeKind::Aggregate => "when_all",
            NodeKind::For => "parallel_for",
            NodeKind::Reduce => "parallel_reduce",
            NodeKind::Scan => "parallel_scan",
            NodeKind::Host => "host",
        }
    }

    /// Whether the node has no work (root and aggregates).
    pub fn is_trivial(self) -> bool {
        matches!(self, NodeKind::Root | NodeKind::Aggregate)
    }
}

/// The work of one node, type-erased: what a [`GraphBackend`](crate::GraphBackend) stores and
/// runs (the seed's `GraphNodeImpl` with its kernel).
pub trait NodeKernel<S: ExecutionSpace>: Send + Sync {
    /// The node's label.
    fn label(&self) -> &str;
    /// What the node does.
    fn kind(&self) -> NodeKind;
    /// The accesses its handles make.
    fn accesses(&self) -> &[Access];
    /// How many iterations one run takes (`None` for host functions, teams and trivial nodes),
    /// for a backend deciding whether a kernel is small enough to share a thread with others.
    fn work(&self) -> Option<usize>;
    /// Runs the node once on the graph's instance. The node's policy was validated when the
    /// node was made, so a run only borrows the node's handles for the duration of the kernel
    /// (they are released also when the kernel panics) and dispatches it.
    ///
    /// A panic in the kernel unwinds out of `run`: a backend catches it and reports
    /// [`hoplite_core::Error::KernelPanicked`] with the node's label (as
    /// [`run_sequence`](Self::run_sequence) does).
    ///
    /// # Errors
    ///
    /// A borrow conflict with a handle held elsewhere, or a backend failure.
    fn run(&self) -> hoplite_core::Result<()>;
    /// As [`run`](Self::run) on `space`, another instance of the graph's space: the policy
    /// moves there and is validated there (on every call, as the instance may differ from one
    /// call to the next).
    ///
    /// # Errors
    ///
    /// As for [`run`](Self::run), plus a policy that is invalid on `space`.
    fn run_on(&self, space: &S) -> hoplite_core::Result<()>;
    /// The instance the node's policy names, when it names its own (another instance of the
    /// graph's space than the graph's, as Kokkos allows): the node runs there, whatever
    /// instance the graph is submitted on. `None` for a node that runs on the graph's
    /// instance.
    fn own_instance(&self) -> Option<&S> {
        None
    }
    /// For a device backend that builds its own launches from the nodes (a CUDA Graph): calls
    /// `f` with the node's launch as the device runs it and the node's policy, if the node's
    /// kernel is a `#[kernel]`'s `with` (see [`hoplite_core::device_kernel`]); returns whether
    /// it did. Closures, host functions and trivial nodes describe nothing.
    fn describe_device_launch(&self, f: &mut dyn FnMut(DeviceLaunch<'_>, DevicePolicy<'_, S>)) -> bool {
        let _ = f;
        false
    }
    /// For a device backend that runs a reduce or scan node's launch itself (a CUDA Graph):
    /// the node's reducer and where it stores its value, so the backend joins the partials as
    /// an eager launch does and the node keeps its result. `None` for other nodes.
    fn device_result(&self) -> Option<&dyn NodeResult> {
        None
    }
    /// The node's handles, borrowed in `group` until the returned value drops: what a
    /// backend that runs the node's launch itself (a device graph) holds while the launch may
    /// run. The handles of all of a graph's nodes are held at once, for the whole submit, so
    /// they go into one group: a node that writes a view and a later node that reads it do
    /// not refuse each other, while the host and other launches are kept out. `None` for a
    /// node without handles.
    ///
    /// # Errors
    ///
    /// A borrow conflict with a handle held outside `group`.
    ///
    /// # Safety
    ///
    /// As for [`RecordedArgs::attach_in`]: the caller never lets two conflicting handles of
    /// `group` be used at the same time. A backend that runs each node after its
    /// predecessors meets it for one submit's nodes, since the front end refused every pair of
    /// conflicting nodes without a path between them before instantiation.
    unsafe fn hold_handles_in(
        &self,
        group: &BorrowGroup,
    ) -> hoplite_core::Result<Option<Box<dyn std::any::Any>>> {
        let _ = group;
        Ok(None)
    }
    /// Runs this node and then each node of `rest`, in order, on the graph's instance,
    /// stopping at the first error; a panic in a node is caught and returned as
    /// [`hoplite_core::Error::KernelPanicked`] with that node's label. The error is boxed so
    /// that the result fits in a register.
    ///
    /// This is the serial pass of a submit. The provided implementation runs this node, then
    /// hands the rest to the next node's `run_sequence` as its last action, which optimized
    /// builds turn into a jump (a sibling call; not guaranteed, but what rustc does for a node
    /// without handles): the pass then costs such a node its kernel and one indirect jump, with
    /// no call frame and nothing stored. Otherwise each node nests one call, so a backend
    /// passes sequences of a bounded length, such as [`SEQUENCE_MAX`](crate::SEQUENCE_MAX).
    ///
    /// # Errors
    ///
    /// The first error of a node, as for [`run`](Self::run), or `KernelPanicked`.
    fn run_sequence(&self, rest: &[NodeEntry<S>]) -> Result<(), Box<hoplite_core::Error>> {
        // A panic guard per node costs nothing until a node panics, and it knows the label.
        match catch_unwind(AssertUnwindSafe(|| self.run())) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Box::new(e)),
            Err(payload) => return Err(Box::new(hoplite_core::Error::from_panic(self.label(), payload))),
        }
        match rest.split_first() {
            Some((next, rest)) => next.run_sequence(rest),
            None => Ok(()),
        }
    }
}

/// A node without work: the root, or a `when_all` join.
pub(crate) struct EmptyNode {
    pub(crate) label: Arc<str>,
    pub(crate) kind: NodeKind,
}

impl<S: ExecutionSpace> NodeKernel<S> for EmptyNode {
    fn label(&self) -> &str {
        &self.label
    }
    fn kind(&self) -> NodeKind {
        self.kind
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
    fn run_on(&self, _space: &S) -> hoplite_core::Result<()> {
        Ok(())
    }
}

/// A host function node: the views and intents of its handles, and the function that gets
/// their guards.
pub(crate) struct HostNode<A: HostArgs, F> {
    /// In the node list's arena (see `GraphNodes::push_labelled`).
    pub(crate) label: ArenaStr,
    pub(crate) views: A::Views,
    /// In the node list's arena (see `GraphNodes::push_recorded`).
    pub(crate) accesses: ArenaSlice<Access>,
    pub(crate) f: F,
}

impl<A: HostArgs, F> HostNode<A, F> {
    fn call(&self) -> hoplite_core::Result<()>
    where
        F: for<'h> Fn(A::Guards<'h>),
    {
        // The guards borrow the views for this call only: the host can use them between runs.
        (self.f)(A::guards(&self.views)?);
        Ok(())
    }
}

impl<S: ExecutionSpace, A: HostArgs, F> NodeKernel<S> for HostNode<A, F>
where
    F: for<'h> Fn(A::Guards<'h>) + Send + Sync,
{
    fn label(&self) -> &str {
        self.label.as_str()
    }
    fn kind(&self) -> NodeKind {
        NodeKind::Host
    }
    fn accesses(&self) -> &[Access] {
        self.accesses.as_slice()
    }
    fn work(&self) -> Option<usize> {
        None
    }
    fn run(&self) -> hoplite_core::Result<()> {
        self.call()
    }
    fn run_on(&self, _space: &S) -> hoplite_core::Result<()> {
        self.call()
    }
}

/// Number of iterations (or teams) of an index space.
fn bounds_len(bounds: &IndexBounds) -> usize {
    match *bounds {
        IndexBounds::Range { begin, end } => end.saturating_sub(begin),
        IndexBounds::Box { rank, lo, hi } => (0..rank).map(|d| hi[d].saturating_sub(lo[d])).product(),
        IndexBounds::League { size } => size,
    }
}

/// What every launch node is made of, whatever its pattern: the label and accesses in the node
/// list's arena, the validated policy and the views of the handles.
pub(crate) struct NodeParts<L: LaunchSpec<Args: RecordedArgs>> {
    pub(crate) label: ArenaStr,
    pub(crate) policy: ValidatedPolicy<L::Policy>,
    /// Whether the policy names an instance of its own (see `NodeKernel::own_instance`).
    pub(crate) own_instance: bool,
    pub(crate) views: <L::Args as RecordedArgs>::Views,
    pub(crate) accesses: ArenaSlice<Access>,
}

/// A kernel launch recorded in a graph: validated policy, views of the handles, kernel,
/// pattern.
pub(crate) struct LaunchNode<L: LaunchSpec<Args: RecordedArgs>, F, P> {
    /// In the node list's arena (see `GraphNodes::push_labelled`).
    pub(crate) label: ArenaStr,
    pub(crate) policy: ValidatedPolicy<L::Policy>,
    /// Whether the policy names an instance of its own (see `NodeKernel::own_instance`).
    pub(crate) own_instance: bool,
    pub(crate) views: <L::Args as RecordedArgs>::Views,
    /// In the node list's arena (see `GraphNodes::push_recorded`).
    pub(crate) accesses: ArenaSlice<Access>,
    pub(crate) kernel: F,
    pub(crate) pattern: P,
}

impl<L: LaunchSpec<Args: RecordedArgs>, F, P> LaunchNode<L, F, P> {
    // Inlined into the arena's `alloc_with`, so the node is written in place rather than
    // built on the stack and copied.
    #[inline(always)]
    pub(crate) fn new(parts: NodeParts<L>, kernel: F, pattern: P) -> Self {
        LaunchNode {
            label: parts.label,
            policy: parts.policy,
            own_instance: parts.own_instance,
            views: parts.views,
            accesses: parts.accesses,
            kernel,
            pattern,
        }
    }

    /// Makes fresh handles, runs `dispatch` with them, and releases them only once the
    /// dispatch has returned (or unwound).
    #[inline(always)]
    fn with_args<T>(
        &self,
        dispatch: impl FnOnce(&L::Args) -> hoplite_core::Result<T>,
    ) -> hoplite_core::Result<T> {
        let args = <L::Args as RecordedArgs>::attach(&self.views);
        dispatch(&args)
    }

    /// The policy moved to `space` and validated there.
    #[cold]
    fn policy_on<S>(&self, space: &S) -> hoplite_core::Result<ValidatedPolicy<L::Policy>>
    where
        S: ExecutionSpace,
        L::Policy: GraphPolicy<S>,
    {
        ValidatedPolicy::new(
            self.label.as_str(),
            self.policy.policy().clone().with_space(space.clone()),
        )
    }

    fn work(&self) -> Option<usize> {
        work_of(&self.policy.policy().index_bounds())
    }
}

/// What sets one launch node apart from another: its pattern's kind and how the pattern
/// dispatches the kernel (and stores a result). Everything else a [`NodeKernel`] does is the
/// same for every pattern, in the one impl for [`LaunchNode`].
pub(crate) trait LaunchPattern<L: LaunchSpec<Args: RecordedArgs>, F>: Sized + Send + Sync {
    /// The kind of the nodes of this pattern.
    const KIND: NodeKind;

    /// Runs `node`'s kernel once under `policy` (the node's own, or one moved to another
    /// instance).
    fn run_with(
        node: &LaunchNode<L, F, Self>,
        policy: &ValidatedPolicy<L::Policy>,
    ) -> hoplite_core::Result<()>;

    /// The pattern's result step, for [`NodeKernel::device_result`].
    fn device_result(&self) -> Option<&dyn NodeResult> {
        None
    }
}

impl<S, L, F, P> NodeKernel<S> for LaunchNode<L, F, P>
where
    S: ExecutionSpace,
    L: LaunchSpec<Policy: GraphPolicy<S>, Args: RecordedArgs> + 'static,
    F: Send + Sync,
    P: LaunchPattern<L, F>,
{
    fn label(&self) -> &str {
        self.label.as_str()
    }
    fn kind(&self) -> NodeKind {
        P::KIND
    }
    fn accesses(&self) -> &[Access] {
        self.accesses.as_slice()
    }
    fn work(&self) -> Option<usize> {
        LaunchNode::work(self)
    }
    fn run(&self) -> hoplite_core::Result<()> {
        P::run_with(self, &self.policy)
    }
    fn run_on(&self, space: &S) -> hoplite_core::Result<()> {
        if self.own_instance {
            // A node on an instance of its own stays there.
            return P::run_with(self, &self.policy);
        }
        P::run_with(self, &self.policy_on(space)?)
    }
    fn own_instance(&self) -> Option<&S> {
        self.own_instance.then(|| self.policy.policy().space())
    }
    fn describe_device_launch(&self, f: &mut dyn FnMut(DeviceLaunch<'_>, DevicePolicy<'_, S>)) -> bool {
        // Fresh handles, only to describe their views; they are released on return.
        let args = <L::Args as RecordedArgs>::attach(&self.views);
        let mut handles = Vec::new();
        hoplite_core::LaunchArgs::device_handles(&args, &mut handles);
        let Some(launch) = device_launch_of(&self.kernel, handles) else {
            return false;
        };
        f(launch, self.policy.policy().device_policy());
        true
    }
    fn device_result(&self) -> Option<&dyn NodeResult> {
        self.pattern.device_result()
    }
    unsafe fn hold_handles_in(
        &self,
        group: &BorrowGroup,
    ) -> hoplite_core::Result<Option<Box<dyn std::any::Any>>> {
        // SAFETY: the caller's contract is `attach_in`'s.
        let args = unsafe { <L::Args as RecordedArgs>::attach_in(&self.views, group) };
        match args.conflict() {
            Some(e) => Err(e.clone()),
            None => Ok(Some(Box::new(args))),
        }
    }
}

/// The `parallel_for` pattern.
pub(crate) struct ForPattern;

impl<L, F> LaunchPattern<L, F> for ForPattern
where
    L: LaunchSpec<Args: RecordedArgs>,
    <L::Policy as ExecutionPolicy>::Space: ParallelFor<L::Policy>,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    const KIND: NodeKind = NodeKind::For;

    #[inline(always)]
    fn run_with(
        node: &LaunchNode<L, F, Self>,
        policy: &ValidatedPolicy<L::Policy>,
    ) -> hoplite_core::Result<()> {
        node.with_args(|args| parallel_for_validated::<L, _>(node.label.as_str(), policy, args, &node.kernel))
    }
}

fn work_of(bounds: &IndexBounds) -> Option<usize> {
    match bounds {
        IndexBounds::League { .. } => None,
        b => Some(bounds_len(b)),
    }
}

/// Where a reduce node puts its result after each run.
pub trait ReduceTarget<V>: Send + Sync + 'static {
    /// Stores the result of one run.
    ///
    /// A backend may call it on a thread of its own while the submitting thread waits for the
    /// submit: a CUDA graph calls it from the driver's host-function thread, inside the
    /// graph's run. So a store must not wait for the submitting thread (a lock it holds) nor
    /// call the CUDA API (CUDA forbids that in a host function); storing into host memory,
    /// as the built-in targets do, is what it is for.
    ///
    /// # Errors
    ///
    /// A borrow conflict on a target view.
    fn store(&self, label: &str, value: V) -> hoplite_core::Result<()>;
    /// The access the store makes, if it writes a view (for race detection).
    fn access(&self) -> Option<Access>;
}

impl<T: ViewValue, L: hoplite_core::ArrayLayout, S: HostAccessibleSpace> ReduceTarget<T>
    for View<T, 0, L, S>
{
    fn store(&self, _label: &str, value: T) -> hoplite_core::Result<()> {
        self.host_write()?.set([], value);
        Ok(())
    }
    fn access(&self) -> Option<Access> {
        Some(Access {
            allocation: self.allocation_key(),
            footprint: self.footprint(),
            kind: hoplite_core::AccessKind::Write,
            view: Arc::from(self.label()),
            bytes: std::mem::size_of::<T>(),
            location: None,
        })
    }
}

/// A host-side cell a reduce node stores its result in; read it after the submit (Kokkos'
/// reduction into a host scalar, made asynchronous-safe). Clones share the cell.
///
/// ```
/// use hoplite_core::{RangePolicy, Sum};
/// use hoplite_graph::{ReduceResult, create_graph};
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// let total = ReduceResult::<u64>::new();
/// let t = total.clone();
/// let mut graph = create_graph(&space, |g| {
///     g.parallel_reduce("sum", RangePolicy::new(Serial::default(), 0..10), |i, acc: &mut u64| *acc += *i as u64, Sum::new(), t);
/// })?;
/// assert_eq!(total.get(), None);
/// graph.submit()?;
/// assert_eq!(total.get(), Some(45));
/// # Ok::<(), hoplite_graph::GraphError>(())
/// ```
pub struct ReduceResult<V> {
    cell: Arc<Mutex<Option<V>>>,
}

impl<V> ReduceResult<V> {
    /// An empty cell.
    pub fn new() -> Self {
        ReduceResult {
            cell: Arc::new(Mutex::new(None)),
        }
    }
}

impl<V: Clone> ReduceResult<V> {
    /// The result of the last completed run, if any.
    pub fn get(&self) -> Option<V> {
        self.cell.lock().clone()
    }
}

impl<V> Default for ReduceResult<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> Clone for ReduceResult<V> {
    fn clone(&self) -> Self {
        ReduceResult {
            cell: self.cell.clone(),
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for ReduceResult<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ReduceResult").field(&*self.cell.lock()).finish()
    }
}

impl<V: Send + 'static> ReduceTarget<V> for ReduceResult<V> {
    fn store(&self, _label: &str, value: V) -> hoplite_core::Result<()> {
        *self.cell.lock() = Some(value);
        Ok(())
    }
    fn access(&self) -> Option<Access> {
        None
    }
}

/// The `parallel_reduce` pattern: reducer and target.
pub(crate) struct ReducePattern<R, Tg> {
    pub(crate) reducer: R,
    pub(crate) target: Tg,
}

impl<L, F, R, Tg> LaunchPattern<L, F> for ReducePattern<R, Tg>
where
    L: LaunchSpec<Args: RecordedArgs>,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    R: Reducer<Value: 'static> + Send + Sync,
    Tg: ReduceTarget<R::Value>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
{
    const KIND: NodeKind = NodeKind::Reduce;

    fn device_result(&self) -> Option<&dyn NodeResult> {
        Some(self)
    }

    #[inline(always)]
    fn run_with(
        node: &LaunchNode<L, F, Self>,
        policy: &ValidatedPolicy<L::Policy>,
    ) -> hoplite_core::Result<()> {
        let value = node.with_args(|args| {
            parallel_reduce_validated::<L, _, _>(
                node.label.as_str(),
                policy,
                args,
                &node.kernel,
                &node.pattern.reducer,
            )
        })?;
        node.pattern.target.store(node.label.as_str(), value)
    }
}

/// The `parallel_scan` pattern over values `T`, with an optional target for the total.
pub(crate) struct ScanPattern<T, Tg> {
    pub(crate) target: Option<Tg>,
    pub(crate) _value: PhantomData<fn() -> T>,
}

impl<L, F, T, Tg> LaunchPattern<L, F> for ScanPattern<T, Tg>
where
    L: LaunchSpec<Args: RecordedArgs>,
    <L::Policy as ExecutionPolicy>::Space: ParallelScan<L::Policy>,
    T: ScanValue,
    Tg: ReduceTarget<T>,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    const KIND: NodeKind = NodeKind::Scan;

    fn device_result(&self) -> Option<&dyn NodeResult> {
        Some(self)
    }

    #[inline(always)]
    fn run_with(
        node: &LaunchNode<L, F, Self>,
        policy: &ValidatedPolicy<L::Policy>,
    ) -> hoplite_core::Result<()> {
        let total: T = node.with_args(|args| {
            parallel_scan_validated::<L, _, _>(node.label.as_str(), policy, args, &node.kernel)
        })?;
        match &node.pattern.target {
            Some(t) => t.store(node.label.as_str(), total),
            None => Ok(()),
        }
    }
}

/// The result step of a reduce or scan node, type-erased ([`NodeKernel::device_result`]): for a
/// device backend that computes the node's partials itself (a CUDA Graph), joins them with the
/// node's [`reducer`](Self::reducer) in its own fixed order, as its eager launch does, and
/// hands the value back to [`store`](Self::store), which puts it where the node puts it.
///
/// ```
/// use std::any::TypeId;
/// use hoplite_core::{RangePolicy, Sum};
/// use hoplite_graph::{NodeKind, ReduceResult, create_graph};
/// use hoplite_serial::Serial;
///
/// let total = ReduceResult::<u64>::new();
/// let t = total.clone();
/// let graph = create_graph(&Serial::default(), |g| {
///     g.parallel_reduce("sum", 10, |i, acc: &mut u64| *acc += *i as u64, Sum::new(), t);
/// })?;
/// let node = &graph.nodes().as_slice()[1];
/// assert_eq!(node.kind(), NodeKind::Reduce);
/// let result = node.device_result().expect("a reduce node has a result step");
/// assert_eq!(result.value_type(), TypeId::of::<u64>());
/// assert!(result.reducer().is_some_and(|r| r.commutative()));
/// result.store("sum", &mut Some(45u64))?;
/// assert_eq!(total.get(), Some(45));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait NodeResult: Send + Sync {
    /// The type id of the value the node computes.
    fn value_type(&self) -> TypeId;
    /// The name of that type, for messages.
    fn value_name(&self) -> &'static str;
    /// A reduce node's reducer; `None` for a scan, whose values are summed.
    fn reducer(&self) -> Option<&dyn DynReducer>;
    /// Stores one run's value (a reduction's finalized total, a scan's total), taken from
    /// `value`, an `Option` of the value type, where the node stores it.
    ///
    /// # Errors
    ///
    /// [`hoplite_core::Error::Device`] for a value of another type (or none); the
    /// target's error (a borrow conflict on a target view).
    fn store(&self, label: &str, value: &mut dyn Any) -> hoplite_core::Result<()>;
}

/// Takes the value of type `V` out of `value` (an `Option<V>`) for a node's store.
fn stored_value<V: 'static>(label: &str, value: &mut dyn Any) -> hoplite_core::Result<V> {
    value
        .downcast_mut::<Option<V>>()
        .and_then(Option::take)
        .ok_or_else(|| hoplite_core::Error::Device {
            space: "graph backend",
            reason: format!(
                "node `{label}` stores a value of type `{}`; the backend handed it another type, or none",
                std::any::type_name::<V>()
            ),
        })
}

impl<R, Tg> NodeResult for ReducePattern<R, Tg>
where
    R: Reducer<Value: 'static> + Send + Sync,
    Tg: ReduceTarget<R::Value>,
{
    fn value_type(&self) -> TypeId {
        TypeId::of::<R::Value>()
    }
    fn value_name(&self) -> &'static str {
        std::any::type_name::<R::Value>()
    }
    fn reducer(&self) -> Option<&dyn DynReducer> {
        Some(&self.reducer)
    }
    fn store(&self, label: &str, value: &mut dyn Any) -> hoplite_core::Result<()> {
        self.target.store(label, stored_value::<R::Value>(label, value)?)
    }
}

impl<T: ScanValue, Tg: ReduceTarget<T>> NodeResult for ScanPattern<T, Tg> {
    fn value_type(&self) -> TypeId {
        TypeId::of::<T>()
    }
    fn value_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn reducer(&self) -> Option<&dyn DynReducer> {
        None
    }
    fn store(&self, label: &str, value: &mut dyn Any) -> hoplite_core::Result<()> {
        let total = stored_value::<T>(label, value)?;
        match &self.target {
            Some(t) => t.store(label, total),
            None => Ok(()),
        }
    }
}
