//! The first NUMA example of oneDPL's dynamic-selection proposal, on pinned pools: a new
//! resource type used with the **default backend**, zero lines of backend code.
//!
//! A resource is a pair of a node's pool (its workers bound to the node's cores) and a task
//! group on it. The default backend cannot wait on a pair, so, as in the proposal, the
//! submitted function returns a value that can be waited on (the group), and the program
//! collects the submissions and waits on each.
//!
//! Run with `cargo run -p hoplite-numa --example numa_default_backend`; prefix
//! `HOPLITE_NUMA_TOPOLOGY="pack:2 numa:1 core:2 pu:1"` to run as if on two nodes.

use hoplite_core::{ExecutionSpace, RangePolicy, Sum, parallel_reduce};
use hoplite_numa::{NodeTasks, NumaSpace};
use hoplite_select::{DefaultBackend, RoundRobin, submit, wait};

/// One NUMA node: its pool and a task group on it.
type Pair = (NumaSpace, NodeTasks);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One pool and task group per NUMA node.
    let pairs: Vec<Pair> = NumaSpace::new()?
        .partition_by_node()?
        .into_iter()
        .map(|pool| (pool.clone(), NodeTasks::new(pool)))
        .collect();
    let rr: RoundRobin<Pair, DefaultBackend<Pair>> = RoundRobin::with_resources(pairs.clone());

    let mut submissions = Vec::new();
    for _ in 0..pairs.len() {
        let w = submit(
            &rr,
            |(pool, group), ()| {
                let space = pool.clone();
                group.run(move || {
                    let sum = parallel_reduce(
                        "o",
                        RangePolicy::new(space.clone(), 0..1000),
                        |i, a| *a += *i,
                        Sum::<usize>::new(),
                    );
                    println!(
                        "o (sum {sum:?} on node {:?}, {} threads)",
                        space.nodes(),
                        space.concurrency()
                    );
                });
                group.clone()
            },
            (),
        )?;
        submissions.push(w.unwrap());
    }
    for s in &submissions {
        wait(s)?;
    }
    Ok(())
}
