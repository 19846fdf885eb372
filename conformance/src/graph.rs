//! Explicit graphs on the space, through `hoplite_graph::create_graph` (the generic host
//! implementation, `HostGraph`): every node runs exactly once per submit and after all its
//! predecessors, on random DAGs with kernels of every size class and host nodes; reduce and
//! scan nodes give what eager launches give; a panicking node fails its submit and the graph
//! runs again; unordered conflicting nodes are refused at instantiation; a borrow held by the
//! host fails the submit without harm.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hoplite_core::{Error, Idx, RangePolicy, Sum, View, parallel_reduce, parallel_scan};
use hoplite_graph::{GraphError, NodeRef, ReduceResult, create_graph};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::properties::{launch_failed, property};
use crate::{Failure, FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

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

/// Runs the random DAG `nodes` three times; after each submit, every node ran `len`
/// iterations, and every iteration of a predecessor took its tick before any iteration of
/// the node.
fn run_dag<S: FullSpace>(space: &S, nodes: &[DagNode]) -> Result<(), TestCaseError> {
    let n = nodes.len();
    let stamps: View<u64, 2> = View::new("dag stamps", [n, 2]).map_err(launch_failed)?;
    let counts: View<u64, 1> = View::new("dag counts", [n]).map_err(launch_failed)?;
    let clock = Arc::new(AtomicU64::new(1));
    let mut graph = create_graph(space, |g| {
        let mut made: Vec<NodeRef<'_, S>> = Vec::with_capacity(n);
        for (i, node) in nodes.iter().enumerate() {
            let after: NodeRef<'_, S> = match node.preds.as_slice() {
                [] => g.root(),
                [p] => made[*p],
                many => g.when_all(many.iter().map(|&p| made[p])).erase(),
            };
            let clock = clock.clone();
            // Per node: its first and last tick, and its iteration count (through the host
            // node's atomic handles or the kernel node's bound ones, which have the same
            // operations).
            macro_rules! stamp {
                ($st:expr, $ct:expr) => {{
                    let tick = clock.fetch_add(1, Ordering::SeqCst);
                    $st.fetch_min([i, 0], tick);
                    $st.fetch_max([i, 1], tick);
                    $ct.fetch_add(i, 1);
                }};
            }
            let handles = || (stamps.atomic(), counts.atomic());
            let made_node = if node.host {
                after
                    .then_host_with("host node", handles(), move |(st, ct)| stamp!(st, ct))
                    .erase()
            } else {
                let policy = RangePolicy::new(space.clone(), 0..node.len);
                after
                    .then_parallel_for("kernel node", (policy, handles()), move |(_j, (st, ct))| {
                        stamp!(st, ct)
                    })
                    .erase()
            };
            made.push(made_node);
        }
    })
    .map_err(launch_failed)?;
    for submit in 0..3 {
        {
            let mut st = stamps.host_write().map_err(launch_failed)?;
            for i in 0..n {
                st.set([i, 0], u64::MAX);
                st.set([i, 1], 0);
            }
            counts.host_write().map_err(launch_failed)?.fill(0);
        }
        graph
            .submit()
            .map_err(|e| launch_failed(format!("submit {submit}: {e}")))?;
        space.fence().map_err(launch_failed)?;
        let st = stamps.host_read().map_err(launch_failed)?;
        let ct = counts.host_read().map_err(launch_failed)?;
        for (i, node) in nodes.iter().enumerate() {
            prop_assert_eq!(
                ct.get(i),
                node.len as u64,
                "submit {}: iterations of node {}",
                submit,
                i
            );
            for &p in &node.preds {
                prop_assert!(
                    st.get([p, 1]) < st.get([i, 0]),
                    "submit {}: node {} started (tick {}) before its predecessor {} ended (tick {})",
                    submit,
                    i,
                    st.get([i, 0]),
                    p,
                    st.get([p, 1])
                );
            }
        }
    }
    Ok(())
}

/// On random DAGs (kernels of every size class, host nodes, joins of any width), each submit
/// runs every node exactly once and every node after all its predecessors, three submits in a
/// row.
pub fn random_dags_run_every_node_once_after_its_predecessors<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || property(dag(), |nodes| run_dag(space, &nodes)))
}

/// Reduce and scan nodes give what eager launches give, on every submit; a reduce node over an
/// empty range writes the identity into its rank-0 view.
pub fn reduce_and_scan_nodes_match_eager_launches<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 5000;
        let data: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 101 - 50).collect();
        let x: View<i64, 1> = View::from_slice("graph x", [n], &data)?;
        let prefix: View<i64, 1> = View::new("graph prefix", [n])?;
        let nothing: View<i64, 0> = View::from_slice("graph empty sum", [], &[7])?;
        let total = ReduceResult::<i64>::new();
        let range = RangePolicy::new(space.clone(), 0..n);
        let mut graph = create_graph(space, |g| {
            g.parallel_reduce(
                "sum",
                (range.clone(), (x.read(),)),
                |(i, (x,)), acc: &mut i64| *acc += x.get(i),
                Sum::<i64>::new(),
                total.clone(),
            );
            g.parallel_reduce(
                "empty sum",
                RangePolicy::new(space.clone(), 3..3),
                |_i, acc: &mut i64| *acc += 1,
                Sum::<i64>::new(),
                nothing.clone(),
            );
            g.parallel_scan(
                "prefix",
                (range.clone(), (prefix.write(), x.read())),
                |(i, (p, x)), partial: &mut i64, is_final| {
                    if is_final {
                        p.set(i, *partial);
                    }
                    *partial += x.get(i);
                },
            );
        })?;
        let want_total = parallel_reduce(
            "eager sum",
            (range.clone(), (x.read(),)),
            |(i, (x,)), acc: &mut i64| *acc += x.get(i),
            Sum::<i64>::new(),
        )?;
        let eager_prefix: View<i64, 1> = View::new("eager prefix", [n])?;
        parallel_scan(
            "eager prefix",
            (range.clone(), (eager_prefix.write(), x.read())),
            |(i, (p, x)), partial: &mut i64, is_final| {
                if is_final {
                    p.set(i, *partial);
                }
                *partial += x.get(i);
            },
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
/// graph, its views and the space stay usable, and the next submit runs every node.
pub fn a_panicking_node_fails_its_submit_and_the_graph_runs_again<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let y: View<u32, 1> = View::new("graph y", [64])?;
        let boom = Arc::new(AtomicBool::new(true));
        let range = RangePolicy::new(space.clone(), 0..64);
        let b = boom.clone();
        let mut graph = create_graph(space, |g| {
            g.parallel_for("count", (range.clone(), (y.write(),)), |(i, (y,))| {
                y.set(i, y.get(i) + 1)
            })
            .then_parallel_for("maybe panic", range.clone(), move |i: Idx<'_>| {
                if *i == 33 && b.load(Ordering::SeqCst) {
                    panic!("graph boom");
                }
            })
            .then_parallel_for("count again", (range.clone(), (y.write(),)), |(i, (y,))| {
                y.set(i, y.get(i) + 1)
            });
        })?;
        match graph.submit() {
            Err(GraphError::Core(Error::KernelPanicked { label, message })) => {
                ensure_eq!(label.as_str(), "maybe panic", "the label of the panicking node");
                ensure!(message.contains("graph boom"), "the panic message: {message}");
            }
            other => return Err(Failure::msg(format!("a panicking node gave {other:?}"))),
        }
        ensure_eq!(
            y.to_vec()?,
            vec![1u32; 64],
            "the nodes before the panic ran, those after did not"
        );
        boom.store(false, Ordering::SeqCst);
        graph.submit()?;
        space.fence()?;
        ensure_eq!(y.to_vec()?, vec![3u32; 64], "after the next submit");
        Ok(())
    })
}

/// Two nodes without a path between them that write one view, or where one writes what the
/// other reads (kernel or host node), are refused at instantiation naming both; ordering
/// them, or giving them disjoint subviews, is fine.
pub fn unordered_conflicting_nodes_are_refused_at_instantiation<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let y: View<f64, 1> = View::new("graph race y", [8])?;
        let range = RangePolicy::new(space.clone(), 0..8);
        let mut racy = create_graph(space, |g| {
            g.parallel_for("writer a", (range.clone(), (y.write(),)), |(i, (y,))| {
                y.set(i, 1.0)
            });
            g.host_with("host reader b", (y.read(),), |(y,)| {
                let _ = y.get(0);
            });
        })?;
        match racy.instantiate() {
            Err(GraphError::UnorderedRace(race)) => {
                let mut pair = [race.first.as_str(), race.second.as_str()];
                pair.sort_unstable();
                ensure_eq!(pair, ["host reader b", "writer a"], "the nodes the race names");
            }
            other => {
                return Err(Failure::msg(format!(
                    "an unordered writer and reader gave {other:?}"
                )));
            }
        }
        ensure!(racy.submit().is_err(), "a racy graph must not run");

        let left: View<f64, 1> = y.subview([hoplite_core::Slice::Range(0..4)])?;
        let right: View<f64, 1> = y.subview([hoplite_core::Slice::Range(4..8)])?;
        let four = RangePolicy::new(space.clone(), 0..4);
        let mut fine = create_graph(space, |g| {
            let a = g.parallel_for("left", (four.clone(), (left.write(),)), |(i, (l,))| l.set(i, 1.0));
            g.parallel_for("right", (four.clone(), (right.write(),)), |(i, (r,))| {
                r.set(i, 2.0)
            });
            a.then_parallel_for("left again", (four.clone(), (left.write(),)), |(i, (l,))| {
                l.set(i, l.get(i) + 1.0)
            });
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

/// A view the host holds a handle to makes the submit fail with `BorrowConflict`, without
/// touching the view; once the host lets go, the same graph runs.
pub fn a_borrow_held_by_the_host_fails_the_submit_then_it_runs<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let y: View<u64, 1> = View::new("graph held y", [16])?;
        let range = RangePolicy::new(space.clone(), 0..16);
        let mut graph = create_graph(space, |g| {
            g.parallel_for("set", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 5));
        })?;
        {
            let held = y.host_read()?;
            match graph.submit() {
                Err(GraphError::Core(Error::BorrowConflict { .. })) => {}
                other => {
                    return Err(Failure::msg(format!(
                        "a submit beside a host reader gave {other:?}"
                    )));
                }
            }
            ensure_eq!(held.get(3), 0, "the view while the host held it");
        }
        graph.submit()?;
        space.fence()?;
        ensure_eq!(y.to_vec()?, vec![5u64; 16], "after the host let go");
        Ok(())
    })
}
