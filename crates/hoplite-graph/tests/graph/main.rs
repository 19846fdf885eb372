//! Explicit graphs on the serial and rayon backends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hoplite_core::held::Access;
use hoplite_core::{
    Error, ExecutionSpace, ParallelFor, ParallelReduce, ParallelScan, Prod, RangePolicy, Slice, Sum,
    TeamPolicy, View,
};
use hoplite_graph::{
    GraphError, GraphNodes, GraphSpace, NodeId, NodeKernel, NodeKind, NodeRef, ReduceResult, SEQUENCE_MAX,
    WAVE_MIN_WORK, create_graph,
};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

mod asynchronous;
mod errors;
mod host_nodes;
mod nodes;
mod order;

use errors::*;
use host_nodes::*;
use order::*;

/// What the tests need of a space.
trait Space:
    GraphSpace
    + ParallelFor<RangePolicy<Self>>
    + ParallelReduce<RangePolicy<Self>>
    + ParallelScan<RangePolicy<Self>>
{
}

impl<S> Space for S where
    S: GraphSpace
        + ParallelFor<RangePolicy<S>>
        + ParallelReduce<RangePolicy<S>>
        + ParallelScan<RangePolicy<S>>
{
}

fn rayon() -> RayonSpace {
    RayonSpace::with_threads(2).expect("a rayon instance")
}

/// Runs a generic test on serial and on a two-thread rayon instance.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod serial {
            $(
                #[test]
                fn $name() {
                    super::$name(hoplite_serial::Serial::default());
                }
            )*
        }
        mod rayon {
            $(
                #[test]
                fn $name() {
                    super::$name(super::rayon());
                }
            )*
        }
    };
}

on_both!(
    dependency_order_chain,
    fan_out_after_when_all,
    when_all_with_redundant_edges,
    diamond,
    several_sinks,
    repeated_submits_give_the_same_result,
    empty_graph,
    empty_reduce_writes_identity,
    unordered_race_is_an_error,
    panicking_node_then_resubmit,
    instantiate_twice_is_an_error,
    conflict_at_submit_then_host_reads,
    scan_node,
    concurrent_wave,
    panic_deep_in_a_long_chain_names_its_node,
    conflict_in_the_middle_of_a_chain,
    long_chain_runs_every_node_in_order,
    host_nodes_with_views_run_in_order,
    host_node_races_are_found_at_instantiation,
    host_node_borrow_refused_at_submit,
    host_node_panic_releases_its_guards,
    lookup_table_between_submits,
);

fn cells() -> (View<usize, 1>, View<usize, 1>) {
    let count = View::new("count", [1]).expect("count");
    let bugs = View::new("bugs", [1]).expect("bugs");
    (count, bugs)
}

fn get(v: &View<usize, 1>) -> usize {
    v.host_read().expect("no conflict").get(0)
}
