//! The second NUMA example of oneDPL's dynamic-selection proposal, on pinned pools: the
//! resource [`NodeTasks`] (the proposal's `ArenaAndGroup`) has a backend of its own,
//! [`hoplite_numa::NumaBackend`], which makes one resource per NUMA node by default and
//! waits for all of them as the submission group. The program neither builds resources nor
//! collects submissions.
//!
//! Run with `cargo run -p hoplite-numa --example numa_custom_backend`; prefix
//! `HOPLITE_NUMA_TOPOLOGY="pack:2 numa:1 core:2 pu:1"` to run as if on two nodes.

use hoplite_core::ExecutionSpace;
use hoplite_numa::NodeTasks;
use hoplite_select::{RoundRobin, submit, wait};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rr = RoundRobin::<NodeTasks>::default();
    for _ in 0..rr.resources()?.len() {
        let _ = submit(
            &rr,
            |tasks, ()| {
                let (nodes, threads) = (tasks.space().nodes(), tasks.space().concurrency());
                tasks.run(move || println!("o (on node {nodes:?}, a pool of {threads} threads)"));
            },
            (),
        )?;
    }
    wait(&rr.get_submission_group()?)?;
    Ok(())
}
