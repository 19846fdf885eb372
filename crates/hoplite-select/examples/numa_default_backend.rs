//! The seed's first NUMA example in Rust: a new resource type used with the **default backend
//! — zero lines of backend code**.
//!
//! In the seed a resource is a pair of a TBB arena (a pool pinned to a NUMA node) and a task
//! group. Here it is a pair of a rayon pool instance (one per node, from `partition_space`;
//! the NUMA backend, `hoplite-numa`, pins such pools to the nodes' cores) and a task group of our own. The
//! default backend cannot wait on this pair, so, as in the seed, the submitted function returns
//! a `WaitType` and the program collects the submissions and waits on each.
//!
//! Run with `cargo run -p hoplite-select --example numa_default_backend`.
//! The same program on pools pinned to the machine's real NUMA nodes is
//! `backends/numa/examples/numa_default_backend.rs`.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hoplite_core::{ExecutionSpace, RangePolicy, Sum, parallel_reduce};
use hoplite_rayon::RayonSpace;
use hoplite_select::{DefaultBackend, RoundRobin, SelectError, Wait, submit, wait};

/// A group of tasks that can be waited on as a whole (TBB's `task_group`).
#[derive(Clone, Default)]
struct TaskGroup(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl TaskGroup {
    /// Runs `f` asynchronously inside `pool` (the seed's `arena.enqueue(group.defer(f))`).
    fn run(&self, pool: &RayonSpace, f: impl FnOnce() + Send + 'static) {
        let pool = pool.clone();
        let task = std::thread::spawn(move || pool.install(f));
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(task);
    }
}

/// One NUMA node: its pool and its task group.
type Pair = (RayonSpace, TaskGroup);

/// The helper of the seed for waiting on the work in a pair.
struct WaitType(Pair);

impl Wait for WaitType {
    fn wait(&self) -> Result<(), SelectError> {
        let tasks: Vec<_> = self
            .0
            .1
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for task in tasks {
            task.join()
                .map_err(|_| SelectError::Wait("a task panicked".into()))?;
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Create one pool and task group per NUMA node (two synthetic nodes here).
    let nodes = RayonSpace::default().partition_space(2)?;
    let pairs: Vec<Pair> = nodes
        .into_iter()
        .map(|pool| (pool, TaskGroup::default()))
        .collect();

    let rr: RoundRobin<Pair, DefaultBackend<Pair>> = RoundRobin::with_resources(pairs.clone());

    let mut submissions = Vec::new();
    for _ in 0..pairs.len() {
        let w = submit(
            &rr,
            |(pool, group), ()| {
                let space = pool.clone();
                group.run(pool, move || {
                    let n = 1000;
                    let sum: usize = parallel_reduce(
                        "o",
                        RangePolicy::new(space.clone(), 0..n),
                        |i, a| *a += *i,
                        Sum::new(),
                    )
                    .unwrap_or(0);
                    println!("o (sum {sum} on a pool of {} threads)", space.concurrency());
                });
                WaitType((pool.clone(), group.clone()))
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
