//! The backend customization points (the seed's `GraphImpl`) and [`HostGraph`], the generic
//! host implementation that serial, rayon and any other host space use.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{ExecutionSpace, Idx, ParallelFor, RangePolicy};
use parking_lot::Mutex;

use crate::builder::empty_node;
use crate::node::{NodeKernel, NodeKind};

/// The position of a node in its graph; the root is `NodeId(0)` and a node's predecessors
/// always have smaller ids (a topological order by construction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// What a backend implements to run explicit graphs: the customization points of the Kokkos
/// Graphs design (`GraphImpl`). The front end calls them in this order:
///
/// 1. [`create_root_node`](Self::create_root_node) once, then `add_node` with its result;
/// 2. per node, [`add_node`](Self::add_node) then [`add_predecessor`](Self::add_predecessor)
///    for each predecessor (a `when_all` first asks [`create_aggregate`](Self::create_aggregate)
///    for its trivial node);
/// 3. [`instantiate`](Self::instantiate) once (explicitly or at the first submit), after the
///    front end has checked the graph for unordered data races;
/// 4. [`submit`](Self::submit) any number of times.
///
/// Axioms: a submit runs every added node exactly once, each after all its predecessors have
/// completed; it returns an error (and may skip nodes that had not started) if a node fails; the
/// backend stays usable after an error.
pub trait GraphBackend<S: ExecutionSpace>: Send + Sync {
    /// The node every other node descends from (no work).
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<S>>;
    /// Adds `node` under `id` to what each submit runs.
    fn add_node(&mut self, id: NodeId, node: Arc<dyn NodeKernel<S>>);
    /// `predecessor` must complete before `node` starts; both were added already.
    fn add_predecessor(&mut self, node: NodeId, predecessor: NodeId);
    /// A node with no work for joining `predecessors` (`when_all`).
    fn create_aggregate(&mut self, predecessors: &[NodeId]) -> Arc<dyn NodeKernel<S>>;
    /// Ends the construction phase: compute whatever each submit needs.
    ///
    /// # Errors
    ///
    /// Backend-specific (a device graph that fails to instantiate).
    fn instantiate(&mut self) -> hoplite_core::Result<()>;
    /// Runs the graph once, on the graph's instance (`on == None`: each node's
    /// [`run`](NodeKernel::run)) or on another instance of the same space (each node's
    /// [`run_on`](NodeKernel::run_on)).
    ///
    /// # Errors
    ///
    /// The first error of a node (borrow conflicts, panics as `KernelPanicked`, ...).
    fn submit(&self, on: Option<&S>) -> hoplite_core::Result<()>;
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
}

/// How a submit runs one node: [`NodeKernel::run`] or [`NodeKernel::run_on`].
trait RunNode<S: ExecutionSpace>: Fn(&dyn NodeKernel<S>) -> hoplite_core::Result<()> + Sync {}

impl<S: ExecutionSpace, R: Fn(&dyn NodeKernel<S>) -> hoplite_core::Result<()> + Sync> RunNode<S> for R {}

/// What `instantiate` computes once.
struct Plan<S: ExecutionSpace> {
    /// Every node with work, in a topological order (the serial pass).
    order: Vec<usize>,
    /// The kernels of `order`, for [`NodeKernel::run_sequence`].
    sequence: Vec<Arc<dyn NodeKernel<S>>>,
    /// The concurrent schedule: the same nodes, wave by wave.
    steps: Vec<Step>,
    /// Number of waves.
    waves: usize,
}

/// The generic host implementation of [`GraphBackend`], for any space that can run a
/// `parallel_for` over a [`RangePolicy`].
///
/// `instantiate` computes, once, a topological order of the nodes with work (the root and
/// `when_all` joins disappear) and a schedule by waves (a node's wave is one past the last wave
/// of its predecessors). A submit then
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
///   launch, a host function — runs alone.
///
/// Each node borrows its handles for its own run only, so nodes that read the same view can
/// share it, and the host may use the views between submits.
pub struct HostGraph<S: ExecutionSpace> {
    space: S,
    nodes: Vec<Arc<dyn NodeKernel<S>>>,
    /// Where each node's predecessors start in `pred_list` (they end where the next node's
    /// start): one list for the whole graph, no allocation per node.
    pred_starts: Vec<usize>,
    pred_list: Vec<usize>,
    plan: Plan<S>,
}

impl<S: ExecutionSpace> HostGraph<S> {
    /// An empty graph on `space`.
    pub fn new(space: S) -> Self {
        HostGraph {
            space,
            nodes: Vec::new(),
            pred_starts: Vec::new(),
            pred_list: Vec::new(),
            plan: Plan {
                order: Vec::new(),
                sequence: Vec::new(),
                steps: Vec::new(),
                waves: 0,
            },
        }
    }

    /// The predecessors of node `n`.
    fn preds_of(&self, n: usize) -> &[usize] {
        let end = self
            .pred_starts
            .get(n + 1)
            .copied()
            .unwrap_or(self.pred_list.len());
        &self.pred_list[self.pred_starts[n]..end]
    }

    /// Runs `f`, turning a panic into `KernelPanicked` labelled with the node `current` names.
    fn guarded(
        &self,
        current: &AtomicUsize,
        f: impl FnOnce() -> hoplite_core::Result<()>,
    ) -> hoplite_core::Result<()> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            let label = self.nodes[current.load(Ordering::Relaxed)].label();
            Err(hoplite_core::Error::from_panic(label, payload))
        })
    }

    /// Runs `ids` one after another on this thread.
    fn run_sequential<R: RunNode<S>>(
        &self,
        ids: &[usize],
        run: &R,
        current: &AtomicUsize,
    ) -> hoplite_core::Result<()> {
        for &n in ids {
            current.store(n, Ordering::Relaxed);
            run(&*self.nodes[n])?;
        }
        Ok(())
    }
}

impl<S: ExecutionSpace + ParallelFor<RangePolicy<S>>> HostGraph<S> {
    /// One submit on `space`, each node run by `run` (monomorphized separately for the
    /// graph's own instance, so that its hot loop has no per-node check of where it runs).
    fn submit_with<R: RunNode<S>>(&self, space: &S, run: &R) -> hoplite_core::Result<()> {
        let current = AtomicUsize::new(0);
        if space.concurrency() <= 1 {
            return self.guarded(&current, || self.run_sequential(&self.plan.order, run, &current));
        }
        self.guarded(&current, || {
            for step in &self.plan.steps {
                match step {
                    Step::Together(ids) => self.run_together(space, ids, run)?,
                    Step::Inline(ids) if ids.len() > 1 => self.run_inline(space, ids, run, &current)?,
                    Step::Inline(ids) => self.run_sequential(ids, run, &current)?,
                    Step::Alone(n) => self.run_sequential(&[*n], run, &current)?,
                }
            }
            Ok(())
        })
    }

    /// Runs `ids` at the same time: one launch on `space`, one node per iteration. Every node
    /// runs even if another fails; the error of the lowest node id is returned.
    fn run_together<R: RunNode<S>>(&self, space: &S, ids: &[usize], run: &R) -> hoplite_core::Result<()> {
        let first_error: Mutex<Option<(usize, hoplite_core::Error)>> = Mutex::new(None);
        let policy = RangePolicy::new(space.clone(), 0..ids.len());
        let kernel = |i: Idx<'_>| {
            let n = ids[*i];
            let node = &self.nodes[n];
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
        &self,
        space: &S,
        ids: &[usize],
        run: &R,
        current: &AtomicUsize,
    ) -> hoplite_core::Result<()> {
        let error: Mutex<Option<hoplite_core::Error>> = Mutex::new(None);
        let policy = RangePolicy::new(space.clone(), 0..1);
        space.parallel_for("hoplite-graph inline", &policy, |_i: Idx<'_>| {
            if let Err(e) = self.run_sequential(ids, run, current) {
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
            .field("nodes", &self.nodes.len())
            .field("waves", &self.plan.waves)
            .finish()
    }
}

impl<S: ExecutionSpace + ParallelFor<RangePolicy<S>>> GraphBackend<S> for HostGraph<S> {
    fn create_root_node(&mut self) -> Arc<dyn NodeKernel<S>> {
        Arc::new(empty_node("root", NodeKind::Root))
    }

    fn add_node(&mut self, id: NodeId, node: Arc<dyn NodeKernel<S>>) {
        debug_assert_eq!(id.0, self.nodes.len(), "nodes are added in id order");
        self.nodes.push(node);
        self.pred_starts.push(self.pred_list.len());
    }

    fn add_predecessor(&mut self, node: NodeId, predecessor: NodeId) {
        // The front end adds a node's predecessors right after the node.
        debug_assert_eq!(
            node.0 + 1,
            self.nodes.len(),
            "predecessors of the last node added"
        );
        self.pred_list.push(predecessor.0);
    }

    fn create_aggregate(&mut self, _predecessors: &[NodeId]) -> Arc<dyn NodeKernel<S>> {
        Arc::new(empty_node("when_all", NodeKind::Aggregate))
    }

    fn instantiate(&mut self) -> hoplite_core::Result<()> {
        // Ids are a topological order: a node is added after its predecessors. A trivial
        // node takes its predecessors' wave, so joins add no wave.
        let mut level = vec![0usize; self.nodes.len()];
        let mut order = Vec::new();
        let mut waves = 0;
        for (n, node) in self.nodes.iter().enumerate() {
            let before = self.preds_of(n).iter().map(|&p| level[p]).max().unwrap_or(0);
            if node.kind().is_trivial() {
                level[n] = before;
                continue;
            }
            level[n] = before + 1;
            waves = waves.max(level[n]);
            order.push(n);
        }
        // The nodes of `order` wave by wave, in id order within a wave (a counting sort: no
        // list per wave). Waves are 1..=waves; wave w ends where wave w + 1 starts.
        let mut wave_starts = vec![0usize; waves + 1];
        for &n in &order {
            wave_starts[level[n]] += 1;
        }
        for w in 1..=waves {
            wave_starts[w] += wave_starts[w - 1];
        }
        let mut by_wave = vec![0usize; order.len()];
        for &n in order.iter().rev() {
            wave_starts[level[n]] -= 1;
            by_wave[wave_starts[level[n]]] = n;
        }
        let work = |n: usize| self.nodes[n].work();
        let mut steps = Vec::new();
        let mut inline = Vec::new();
        let mut shared = Vec::new();
        let mut rest = Vec::new();
        for w in 1..=waves {
            let end = wave_starts.get(w + 1).copied().unwrap_or(by_wave.len());
            let wave = &by_wave[wave_starts[w]..end];
            shared.clear();
            rest.clear();
            for &n in wave {
                if work(n).is_some_and(|k| k < SHARE_MAX_WORK) {
                    shared.push(n);
                } else {
                    rest.push(n);
                }
            }
            let shared_work: usize = shared.iter().filter_map(|&n| work(n)).sum();
            if shared.len() >= 2 && shared_work >= WAVE_MIN_WORK {
                flush(&mut steps, &mut inline);
                steps.push(Step::Together(shared.clone()));
            } else {
                for &n in &shared {
                    if work(n).is_some_and(|k| k < INLINE_MAX_WORK) {
                        inline.push(n);
                    } else {
                        rest.push(n);
                    }
                }
            }
            if !rest.is_empty() {
                flush(&mut steps, &mut inline);
                steps.extend(rest.iter().copied().map(Step::Alone));
            }
        }
        flush(&mut steps, &mut inline);
        let sequence = order.iter().map(|&n| self.nodes[n].clone()).collect();
        self.plan = Plan {
            order,
            sequence,
            steps,
            waves,
        };
        Ok(())
    }

    fn submit(&self, on: Option<&S>) -> hoplite_core::Result<()> {
        match on {
            None if self.space.concurrency() <= 1 => self.run_pass(),
            None => self.submit_with(&self.space, &|node: &dyn NodeKernel<S>| node.run()),
            Some(space) => self.submit_with(space, &|node: &dyn NodeKernel<S>| node.run_on(space)),
        }
    }

    fn execution_space(&self) -> &S {
        &self.space
    }
}

impl<S: ExecutionSpace> HostGraph<S> {
    /// The serial pass on the graph's own instance: the nodes' [`run_sequence`]
    /// (NodeKernel::run_sequence), [`SEQUENCE_MAX`] nodes at a time.
    fn run_pass(&self) -> hoplite_core::Result<()> {
        for chunk in self.plan.sequence.chunks(SEQUENCE_MAX) {
            if let Some((first, rest)) = chunk.split_first() {
                first.run_sequence(rest).map_err(|e| *e)?;
            }
        }
        Ok(())
    }
}

/// Ends the current inline group, if any.
fn flush(steps: &mut Vec<Step>, inline: &mut Vec<usize>) {
    if !inline.is_empty() {
        steps.push(Step::Inline(std::mem::take(inline)));
    }
}
