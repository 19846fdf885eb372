//! Explicit graphs on the space, through `hoplite_graph::create_graph` (the generic host
//! implementation, `HostGraph`): every node runs exactly once per submit and after all its
//! predecessors, on random DAGs with kernels of every size class and host nodes; reduce and
//! scan nodes give what eager launches give; a panicking node fails its submit and the graph
//! runs again; unordered conflicting nodes are refused at instantiation; a borrow held by the
//! host fails the submit without harm.
//!
//! Every check runs on every launch space, a GPU's included: the nodes launch `#[kernel]`s on
//! data in the space's own memory. On `Cuda`, `create_graph` runs the nodes one by one, each
//! through the space's launch (`docs/graphs.md`); the CUDA Graph backend
//! (`create_graph_with(&cuda, CudaGraph::new(&cuda), ..)`, which takes the same for, reduce and
//! scan nodes) is not reached from code generic over the space. The panicking
//! node is a host node: a kernel that panics is a host feature (a device kernel traps).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, Error, Idx, RangePolicy, Sum, View, parallel_for, parallel_reduce,
    parallel_scan,
};
use hoplite_graph::{GraphError, GraphSpace, NodeRef, ReduceResult, create_graph};
use hoplite_macros::kernel;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::properties::{launch_failed, property};
use crate::{Failure, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<stamp_ticks>,
    DeviceKernelInfo::of::<reset_stamps>,
    DeviceKernelInfo::of::<sum_entries>,
    DeviceKernelInfo::of::<count_iterations>,
    DeviceKernelInfo::of::<store_exclusive_prefix>,
    DeviceKernelInfo::of::<set_all_f64>,
    DeviceKernelInfo::of::<add_to_all_f64>,
    DeviceKernelInfo::of::<copy_f64>,
    DeviceKernelInfo::of::<set_all_u64>,
];

/// One iteration of DAG node `node`: takes a tick of `clock` (the value before its increment),
/// keeps the node's first and last tick, and counts the iteration.
#[kernel(crate = hoplite_core)]
pub fn stamp_ticks(
    _i: Idx<'_>,
    clock: BoundAtomic<'_, u64, 1>,
    first: BoundAtomic<'_, u64, 1>,
    last: BoundAtomic<'_, u64, 1>,
    counts: BoundAtomic<'_, u64, 1>,
    node: usize,
) {
    let tick = clock.fetch_add(0, 1);
    first.fetch_min(node, tick);
    last.fetch_max(node, tick);
    counts.fetch_add(node, 1);
}

/// Clears node `i`'s stamps before a submit: no first tick yet (`u64::MAX`), no last, no
/// iteration.
#[kernel(crate = hoplite_core)]
pub fn reset_stamps(
    i: Idx<'_>,
    first: BoundWriter<'_, u64, 1>,
    last: BoundWriter<'_, u64, 1>,
    counts: BoundWriter<'_, u64, 1>,
) {
    first.set(i, u64::MAX);
    last.set(i, 0);
    counts.set(i, 0);
}

/// The sum of `x`.
#[kernel(crate = hoplite_core)]
pub fn sum_entries(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc += x.get(i);
}

/// The number of iterations.
#[kernel(crate = hoplite_core)]
pub fn count_iterations(_i: Idx<'_>, acc: &mut i64) {
    *acc += 1;
}

/// Stores the exclusive prefix sums of `x` in `prefix`.
#[kernel(crate = hoplite_core)]
pub fn store_exclusive_prefix(
    i: Idx<'_>,
    prefix: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    partial: &mut i64,
    is_final: bool,
) {
    if is_final {
        prefix.set(i, *partial);
    }
    *partial += x.get(i);
}

/// `y[i] = value`.
#[kernel(crate = hoplite_core)]
pub fn set_all_f64(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, value: f64) {
    y.set(i, value);
}

/// `y[i] += value`.
#[kernel(crate = hoplite_core)]
pub fn add_to_all_f64(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, value: f64) {
    y.set(i, y.get(i) + value);
}

/// `out[i] = x[i]`.
#[kernel(crate = hoplite_core)]
pub fn copy_f64(i: Idx<'_>, out: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>) {
    out.set(i, x.get(i));
}

/// `y[i] = value`.
#[kernel(crate = hoplite_core)]
pub fn set_all_u64(i: Idx<'_>, y: BoundWriter<'_, u64, 1>, value: u64) {
    y.set(i, value);
}

/// Inside a check, `?` turns a graph error into a failure of the check.
impl From<GraphError> for Failure {
    fn from(e: GraphError) -> Self {
        Failure::msg(format!("unexpected graph error: {e}"))
    }
}

/// One node of a random DAG: a kernel of `len` iterations (or a host function), after the
/// nodes `preds` (all smaller).
#[derive(Clone, Debug)]
struct DagNode {
    len: usize,
    host: bool,
    preds: Vec<usize>,
}

/// Lengths around the host graph's size classes: tiny kernels run inline, small ones may share
/// a fork with the rest of their wave, larger ones run alone.
fn node_len() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..40, 1500usize..2500, 4000usize..4200]
}

fn dag() -> impl Strategy<Value = Vec<DagNode>> {
    (1usize..14).prop_flat_map(|n| {
        prop::collection::vec((node_len(), prop::bool::weighted(0.15), any::<u32>()), n).prop_map(|raw| {
            raw.into_iter()
                .enumerate()
                .map(|(i, (len, host, mask))| DagNode {
                    len: if host { 1 } else { len },
                    host,
                    preds: (0..i).filter(|&p| mask >> (p % 32) & 1 == 1).collect(),
                })
                .collect()
        })
    })
}

/// A moment of a submit, on one scale for kernel and host nodes: `(2 t, 0)` for a kernel
/// iteration that took tick `t` of the clock; `(2 c - 1, s)` for a host function that read
/// `c` from the clock (the next tick to be taken) and was the `s`-th host function of the
/// submit. So a kernel iteration that took its tick before a host function read the clock is
/// earlier than it, one that took it after is later, and host functions between the same two
/// ticks are ordered as they ran.
type Moment = (u64, u64);

/// What the host functions of a random DAG record (they run on the host and cannot update the
/// clock's view in the space's memory, only read it).
#[derive(Debug)]
struct HostRuns {
    /// Host functions run so far in this submit.
    seq: u64,
    /// Per node: how often it ran, and when it last did.
    runs: Vec<u64>,
    at: Vec<Moment>,
}

impl HostRuns {
    fn new(n: usize) -> Self {
        HostRuns {
            seq: 0,
            runs: vec![0; n],
            at: vec![(0, 0); n],
        }
    }
}

/// Runs the random DAG `nodes` three times; after each submit, every node ran `len`
/// iterations, and every iteration of a predecessor took its tick before any iteration of
/// the node.
///
/// The clock is an atomic counter in the space's memory: a kernel iteration takes a tick with
/// `fetch_add` and keeps the node's first and last tick with `fetch_min` and `fetch_max`. A
/// host function reads the clock (`to_vec`) and records its [`Moment`] on the host.
fn run_dag<S: LaunchSpace + GraphSpace>(space: &S, nodes: &[DagNode]) -> Result<(), TestCaseError> {
    let n = nodes.len();
    let clock = SpaceView::<S, u64, 1>::from_slice("dag clock", [1], &[1]).map_err(launch_failed)?;
    let first = SpaceView::<S, u64, 1>::new("dag first ticks", [n]).map_err(launch_failed)?;
    let last = SpaceView::<S, u64, 1>::new("dag last ticks", [n]).map_err(launch_failed)?;
    let counts = SpaceView::<S, u64, 1>::new("dag counts", [n]).map_err(launch_failed)?;
    let host = Arc::new(Mutex::new(HostRuns::new(n)));
    let mut graph = create_graph(space, |g| {
        let mut made: Vec<NodeRef<'_, S>> = Vec::with_capacity(n);
        for (i, node) in nodes.iter().enumerate() {
            let after: NodeRef<'_, S> = match node.preds.as_slice() {
                [] => g.root(),
                [p] => made[*p],
                many => g.when_all(many.iter().map(|&p| made[p])).erase(),
            };
            let made_node = if node.host {
                let (clock, host) = (clock.clone(), host.clone());
                after
                    .then_host("host node", move || {
                        // A failed read panics, which fails the submit naming this node.
                        let next = clock.to_vec().expect("a host node reads the clock")[0];
                        let mut host = host.lock().unwrap_or_else(PoisonError::into_inner);
                        host.seq += 1;
                        host.runs[i] += 1;
                        host.at[i] = (2 * next - 1, host.seq);
                    })
                    .erase()
            } else {
                let policy = RangePolicy::new(space.clone(), 0..node.len);
                let handles = (clock.atomic(), first.atomic(), last.atomic(), counts.atomic());
                after
                    .then_parallel_for("kernel node", (policy, handles), stamp_ticks::with(i))
                    .erase()
            };
            made.push(made_node);
        }
    })
    .map_err(launch_failed)?;
    let every_node = RangePolicy::new(space.clone(), 0..n);
    for submit in 0..3 {
        parallel_for(
            "dag reset",
            (every_node.clone(), (first.write(), last.write(), counts.write())),
            reset_stamps::with(),
        )
        .map_err(launch_failed)?;
        *host.lock().unwrap_or_else(PoisonError::into_inner) = HostRuns::new(n);
        graph
            .submit()
            .map_err(|e| launch_failed(format!("submit {submit}: {e}")))?;
        space.fence().map_err(launch_failed)?;
        let first = first.to_vec().map_err(launch_failed)?;
        let last = last.to_vec().map_err(launch_failed)?;
        let counts = counts.to_vec().map_err(launch_failed)?;
        let host = host.lock().unwrap_or_else(PoisonError::into_inner);
        // When node `i` started and ended.
        let span = |i: usize| -> (Moment, Moment) {
            if nodes[i].host {
                (host.at[i], host.at[i])
            } else {
                ((first[i].saturating_mul(2), 0), (last[i].saturating_mul(2), 0))
            }
        };
        for (i, node) in nodes.iter().enumerate() {
            let ran = if node.host { host.runs[i] } else { counts[i] };
            prop_assert_eq!(
                ran,
                node.len as u64,
                "submit {}: iterations of node {}",
                submit,
                i
            );
            for &p in &node.preds {
                prop_assert!(
                    span(p).1 < span(i).0,
                    "submit {}: node {} started (at {:?}) before its predecessor {} ended (at {:?})",
                    submit,
                    i,
                    span(i).0,
                    p,
                    span(p).1
                );
            }
        }
    }
    Ok(())
}

/// On random DAGs (kernels of every size class, host nodes, joins of any width), each submit
/// runs every node exactly once and every node after all its predecessors, three submits in a
/// row.
pub fn random_dags_run_every_node_once_after_its_predecessors<S: LaunchSpace + GraphSpace>(
    space: &S,
) -> Outcome {
    check(axiom!(), || property(dag(), |nodes| run_dag(space, &nodes)))
}

/// Reduce and scan nodes give what eager launches give, on every submit; a reduce node over an
/// empty range writes the identity into its rank-0 view.
///
/// The rank-0 view is a host view on every space: a reduce node stores its result from the
/// host, after the reduction, as a `ReduceResult` does.
pub fn reduce_and_scan_nodes_match_eager_launches<S: LaunchSpace + GraphSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 5000;
        let data: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 101 - 50).collect();
        let x = SpaceView::<S, i64, 1>::from_slice("graph x", [n], &data)?;
        let prefix = SpaceView::<S, i64, 1>::new("graph prefix", [n])?;
        let nothing: View<i64, 0> = View::from_slice("graph empty sum", [], &[7])?;
        let total = ReduceResult::<i64>::new();
        let range = RangePolicy::new(space.clone(), 0..n);
        let mut graph = create_graph(space, |g| {
            g.parallel_reduce(
                "sum",
                (range.clone(), (x.read(),)),
                sum_entries::with(),
                Sum::<i64>::new(),
                total.clone(),
            );
            g.parallel_reduce(
                "empty sum",
                RangePolicy::new(space.clone(), 3..3),
                count_iterations::with(),
                Sum::<i64>::new(),
                nothing.clone(),
            );
            g.parallel_scan(
                "prefix",
                (range.clone(), (prefix.write(), x.read())),
                store_exclusive_prefix::with(),
            );
        })?;
        let want_total = parallel_reduce(
            "eager sum",
            (range.clone(), (x.read(),)),
            sum_entries::with(),
            Sum::<i64>::new(),
        )?;
        let eager_prefix = SpaceView::<S, i64, 1>::new("eager prefix", [n])?;
        parallel_scan(
            "eager prefix",
            (range.clone(), (eager_prefix.write(), x.read())),
            store_exclusive_prefix::with(),
        )?;
        let want_prefix = eager_prefix.to_vec()?;
        for submit in 0..3 {
            graph.submit()?;
            space.fence()?;
            ensure_eq!(
                total.get(),
                Some(want_total),
                "submit {submit}: the reduce node's result"
            );
            ensure_eq!(
                nothing.to_vec()?,
                vec![0],
                "submit {submit}: an empty reduce node's view"
            );
            ensure!(
                prefix.to_vec()? == want_prefix,
                "submit {submit}: the scan node's prefix differs from the eager scan's"
            );
        }
        Ok(())
    })
}

/// A node that panics makes its submit return `KernelPanicked` with the node's label; the
/// graph, its views and the space stay usable, and the next submit runs every node. The node
/// that panics is a host node, the one kind of node that can panic on every space (a device
/// kernel cannot); kernel nodes that panic on host spaces are the graph crate's own tests.
pub fn a_panicking_node_fails_its_submit_and_the_graph_runs_again<S: LaunchSpace + GraphSpace>(
    space: &S,
) -> Outcome {
    check(axiom!(), || {
        let y = SpaceView::<S, f64, 1>::new("graph y", [64])?;
        let boom = Arc::new(AtomicBool::new(true));
        let range = RangePolicy::new(space.clone(), 0..64);
        let b = boom.clone();
        let mut graph = create_graph(space, |g| {
            g.parallel_for("count", (range.clone(), (y.write(),)), add_to_all_f64::with(1.0))
                .then_host("maybe panic", move || {
                    if b.load(Ordering::SeqCst) {
                        panic!("graph boom");
                    }
                })
                .then_parallel_for(
                    "count again",
                    (range.clone(), (y.write(),)),
                    add_to_all_f64::with(1.0),
                );
        })?;
        match graph.submit() {
            Err(GraphError::Core(Error::KernelPanicked { label, message })) => {
                ensure_eq!(label.as_str(), "maybe panic", "the label of the panicking node");
                ensure!(message.contains("graph boom"), "the panic message: {message}");
            }
            other => return Err(Failure::msg(format!("a panicking node gave {other:?}"))),
        }
        space.fence()?;
        ensure_eq!(
            y.to_vec()?,
            vec![1.0; 64],
            "the nodes before the panic ran, those after did not"
        );
        boom.store(false, Ordering::SeqCst);
        graph.submit()?;
        space.fence()?;
        ensure_eq!(y.to_vec()?, vec![3.0; 64], "after the next submit");
        Ok(())
    })
}

/// Two nodes without a path between them that write one view, or where one writes what the
/// other reads (kernel or host node), are refused at instantiation naming both; ordering
/// them, or giving them disjoint subviews, is fine.
///
/// The kernel and host node that race share a host view: a host node reaches only memory the
/// host does (its guards are host reads and writes), and a refused graph never launches, so
/// that view never reaches the space. The other views are in the space's memory.
pub fn unordered_conflicting_nodes_are_refused_at_instantiation<S: LaunchSpace + GraphSpace>(
    space: &S,
) -> Outcome {
    check(axiom!(), || {
        let range = RangePolicy::new(space.clone(), 0..8);
        let shared: View<f64, 1> = View::new("graph race shared", [8])?;
        let mut racy = create_graph(space, |g| {
            g.parallel_for(
                "writer a",
                (range.clone(), (shared.write(),)),
                set_all_f64::with(1.0),
            );
            g.host_with("host reader b", (shared.read(),), |(y,)| {
                let _ = y.get(0);
            });
        })?;
        refused_naming(
            &mut racy,
            ["host reader b", "writer a"],
            "a kernel writer and a host reader",
        )?;
        ensure_eq!(
            shared.to_vec()?,
            vec![0.0; 8],
            "the view of a graph refused at instantiation"
        );

        let y = SpaceView::<S, f64, 1>::new("graph race y", [8])?;
        let z = SpaceView::<S, f64, 1>::new("graph race z", [8])?;
        let mut racy = create_graph(space, |g| {
            g.parallel_for("writer a", (range.clone(), (y.write(),)), set_all_f64::with(1.0));
            g.parallel_for(
                "reader b",
                (range.clone(), (z.write(), y.read())),
                copy_f64::with(),
            );
        })?;
        refused_naming(
            &mut racy,
            ["reader b", "writer a"],
            "a kernel writer and a kernel reader",
        )?;
        ensure_eq!(
            (y.to_vec()?, z.to_vec()?),
            (vec![0.0; 8], vec![0.0; 8]),
            "the views of a graph refused at instantiation"
        );

        let left = y.subview([hoplite_core::Slice::Range(0..4)])?;
        let right = y.subview([hoplite_core::Slice::Range(4..8)])?;
        let four = RangePolicy::new(space.clone(), 0..4);
        let mut fine = create_graph(space, |g| {
            let a = g.parallel_for("left", (four.clone(), (left.write(),)), set_all_f64::with(1.0));
            g.parallel_for("right", (four.clone(), (right.write(),)), set_all_f64::with(2.0));
            a.then_parallel_for(
                "left again",
                (four.clone(), (left.write(),)),
                add_to_all_f64::with(1.0),
            );
        })?;
        fine.instantiate()?;
        fine.submit()?;
        space.fence()?;
        ensure_eq!(
            y.to_vec()?,
            vec![2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
            "disjoint and ordered writers"
        );
        Ok(())
    })
}

/// Checks that `graph` is refused at instantiation as an unordered race between the nodes
/// `pair` (in either order), and that it does not run.
fn refused_naming<S: LaunchSpace + GraphSpace>(
    graph: &mut hoplite_graph::Graph<S>,
    pair: [&str; 2],
    what: &str,
) -> Outcome {
    match graph.instantiate() {
        Err(GraphError::UnorderedRace(race)) => {
            let mut named = [race.first.as_str(), race.second.as_str()];
            named.sort_unstable();
            ensure_eq!(named, pair, "the nodes the race of {what} names");
        }
        other => {
            return Err(Failure::msg(format!(
                "{what} without a path between them gave {other:?}"
            )));
        }
    }
    ensure!(graph.submit().is_err(), "a racy graph must not run ({what})");
    Ok(())
}

/// A view the host holds a handle to makes the submit fail with `BorrowConflict`, without
/// touching the view; once the host lets go, the same graph runs.
pub fn a_borrow_held_by_the_host_fails_the_submit_then_it_runs<S: LaunchSpace + GraphSpace>(
    space: &S,
) -> Outcome {
    check(axiom!(), || {
        let y = SpaceView::<S, u64, 1>::new("graph held y", [16])?;
        let range = RangePolicy::new(space.clone(), 0..16);
        let mut graph = create_graph(space, |g| {
            g.parallel_for("set", (range.clone(), (y.write(),)), set_all_u64::with(5));
        })?;
        {
            // A reader handle: the host's shared borrow of the view, in any memory space.
            let held = y.read();
            match graph.submit() {
                Err(GraphError::Core(Error::BorrowConflict { .. })) => {}
                other => {
                    return Err(Failure::msg(format!(
                        "a submit beside a host reader gave {other:?}"
                    )));
                }
            }
            space.fence()?;
            ensure_eq!(y.to_vec()?, vec![0u64; 16], "the view while the host held it");
            drop(held);
        }
        graph.submit()?;
        space.fence()?;
        ensure_eq!(y.to_vec()?, vec![5u64; 16], "after the host let go");
        Ok(())
    })
}
