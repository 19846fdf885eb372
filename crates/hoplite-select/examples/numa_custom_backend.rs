//! The seed's second NUMA example in Rust: a custom resource `ArenaAndGroup` with its own
//! backend, **24 lines of backend code** (the block between the `backend code` markers: the
//! backend struct, its `Backend`, `FromResources` and `WaitAll` impls, and the `BackendFor`
//! impl that makes it the backend of `ArenaAndGroup`; the seed's C++ needs "less than 25").
//!
//! With it, a policy is built by default — one resource per NUMA node — and the submission
//! group waits for everything, so the program neither builds resources nor collects
//! submissions.
//!
//! Run with `cargo run -p hoplite-select --example numa_custom_backend`.
//! The same program on pools pinned to the machine's real NUMA nodes, with the backend in the
//! NUMA crate (`hoplite_numa::NumaBackend`), is `backends/numa/examples/numa_custom_backend.rs`.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hoplite_core::ExecutionSpace;
use hoplite_rayon::RayonSpace;
use hoplite_select::{
    Backend, BackendFor, FromResources, InfoSet, RoundRobin, SelectError, Wait, WaitAll, submit, wait,
    wait_each,
};

mod numa {
    use super::*;

    /// A pool pinned to one NUMA node and a task group (the seed's TBB arena and group).
    #[derive(Clone)]
    pub struct ArenaAndGroup {
        pool: RayonSpace,
        tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    }

    impl ArenaAndGroup {
        pub fn new(pool: RayonSpace) -> Self {
            ArenaAndGroup {
                pool,
                tasks: Arc::default(),
            }
        }

        pub fn pool(&self) -> &RayonSpace {
            &self.pool
        }

        /// Runs `f` asynchronously in the pool.
        pub fn run(&self, f: impl FnOnce() + Send + 'static) -> &Self {
            let pool = self.pool.clone();
            let task = std::thread::spawn(move || pool.install(f));
            self.tasks.lock().unwrap_or_else(|e| e.into_inner()).push(task);
            self
        }
    }

    impl Wait for ArenaAndGroup {
        fn wait(&self) -> Result<(), SelectError> {
            let tasks: Vec<_> = self
                .tasks
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

    /// The NUMA nodes (two partitions of one pool here; `hoplite-numa` reads the topology).
    fn numa_nodes() -> Vec<RayonSpace> {
        RayonSpace::default().partition_space(2).unwrap_or_default()
    }

    // --- backend code: 24 lines ---
    pub struct NumaBackend(Vec<ArenaAndGroup>);
    impl Backend for NumaBackend {
        type Resource = ArenaAndGroup;
        type Scratch<I: InfoSet> = ();
        fn resources(&self) -> &[ArenaAndGroup] {
            &self.0
        }
    }
    impl FromResources for NumaBackend {
        fn from_resources(nodes: Vec<ArenaAndGroup>) -> Self {
            NumaBackend(nodes)
        }
        fn by_default() -> Self {
            Self::from_resources(numa_nodes().into_iter().map(ArenaAndGroup::new).collect())
        }
    }
    impl WaitAll for NumaBackend {
        fn wait_all(&self) -> Result<(), SelectError> {
            wait_each(&self.0)
        }
    }
    impl BackendFor for ArenaAndGroup {
        type Backend = NumaBackend;
    }
    // --- end of backend code ---
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rr = RoundRobin::<numa::ArenaAndGroup>::default();
    for _ in 0..rr.resources()?.len() {
        let _ = submit(
            &rr,
            |ag, ()| {
                let threads = ag.pool().concurrency();
                ag.run(move || println!("o (on a pool of {threads} threads)"));
            },
            (),
        )?;
    }
    wait(&rr.get_submission_group()?)?;
    Ok(())
}
