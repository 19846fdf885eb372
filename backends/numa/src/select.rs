//! NUMA node pools as resources of dynamic selection (`hoplite-select`): the seed's
//! `ArenaAndGroup` — a pool pinned to one node and a group of tasks on it that can be waited
//! for — and its backend.
//!
//! Every [`NumaSpace`] is already a resource of `hoplite-select` with its reporting
//! `SpaceBackend` (`RoundRobin::new(space.partition_by_node()?)`), for synchronous launches.
//! [`NodeTasks`] adds asynchronous tasks: [`NodeTasks::run`] queues a closure on the node's
//! work-stealing threads (bound to the node like its workers) and returns at once;
//! [`wait`](hoplite_select::Wait::wait) blocks until every task queued so far has finished.
//!
//! The task group's protocol:
//!
//! 1. `run` counts the task as pending before it queues it;
//! 2. the task runs under `catch_unwind`, then, under the group's lock, records its panic
//!    message (the first one is kept), uncounts itself and wakes the waiters;
//! 3. `wait` sleeps on the lock until no task is pending, then takes the recorded panic, so
//!    one failed task fails exactly one `wait`.

use std::sync::Arc;

use hoplite_core::drop_panic_payload;
use hoplite_select::{Backend, BackendFor, FromResources, InfoSet, SelectError, Wait, WaitAll, wait_each};
use parking_lot::{Condvar, Mutex};

use crate::NumaSpace;

/// A node's pool and a group of tasks on it (the seed's `ArenaAndGroup`, on a pinned pool).
/// Clones share the group.
///
/// ```
/// use hoplite_numa::{NodeTasks, NumaSpace, NumaTopology};
/// use hoplite_select::Wait;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 pu:1")?, 0)?;
/// let tasks = NodeTasks::new(space.node(1)?);
/// let done = Arc::new(AtomicUsize::new(0));
/// for _ in 0..10 {
///     let done = Arc::clone(&done);
///     tasks.run(move || { done.fetch_add(1, Ordering::Relaxed); });
/// }
/// tasks.wait()?;
/// assert_eq!(done.load(Ordering::Relaxed), 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct NodeTasks {
    space: NumaSpace,
    group: Arc<Group>,
}

#[derive(Debug, Default)]
struct Group {
    state: Mutex<GroupState>,
    idle: Condvar,
}

#[derive(Debug, Default)]
struct GroupState {
    pending: usize,
    failure: Option<String>,
}

impl NodeTasks {
    /// An empty task group on `space` (a node pool, or any NUMA instance).
    pub fn new(space: NumaSpace) -> Self {
        NodeTasks {
            space,
            group: Arc::default(),
        }
    }

    /// The pool the tasks run on.
    pub fn space(&self) -> &NumaSpace {
        &self.space
    }

    /// Queues `f` on the pool's work-stealing threads and returns at once. Launches inside
    /// `f` on the same pool run there too.
    pub fn run(&self, f: impl FnOnce() + Send + 'static) -> &Self {
        self.group.state.lock().pending += 1;
        let group = Arc::clone(&self.group);
        let task = move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let message = outcome.err().map(|payload| {
                let message = panic_message(&*payload);
                drop_panic_payload(payload);
                message
            });
            group.finish(message);
        };
        if let Err(e) = self.space.pool().spawn(task) {
            // The task was dropped unrun: uncount it, and let `wait` report why.
            self.group.finish(Some(format!("the task could not start: {e}")));
        }
        self
    }

    /// Tasks queued and not finished yet.
    pub fn pending(&self) -> usize {
        self.group.state.lock().pending
    }
}

impl Group {
    fn finish(&self, failure: Option<String>) {
        let mut state = self.state.lock();
        state.pending -= 1;
        if state.failure.is_none() {
            state.failure = failure;
        }
        self.idle.notify_all();
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a task panicked".to_owned())
}

impl Wait for NodeTasks {
    /// Waits until every task queued so far has finished. Do not call it from a task of the
    /// same group (it would wait for itself).
    ///
    /// # Errors
    ///
    /// [`SelectError::Wait`] with the message of the first task that panicked since the last
    /// `wait` (the group stays usable).
    fn wait(&self) -> Result<(), SelectError> {
        let mut state = self.group.state.lock();
        while state.pending > 0 {
            self.group.idle.wait(&mut state);
        }
        match state.failure.take() {
            Some(message) => Err(SelectError::Wait(format!(
                "a task on NUMA nodes {:?} failed: {message}",
                self.space.nodes()
            ))),
            None => Ok(()),
        }
    }
}

/// The backend of [`NodeTasks`]: by default one resource per NUMA node of
/// [`NumaSpace::default`], and a submission group that waits for every node's tasks (the
/// seed's `numa_backend`).
///
/// ```
/// use hoplite_numa::NodeTasks;
/// use hoplite_select::{RoundRobin, submit, wait};
/// let rr = RoundRobin::<NodeTasks>::default();
/// let nodes = rr.resources()?.len();
/// for _ in 0..nodes {
///     let _ = submit(&rr, |tasks, ()| { tasks.run(|| ()); }, ())?;
/// }
/// wait(&rr.get_submission_group()?)?;
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[derive(Debug)]
pub struct NumaBackend(Vec<NodeTasks>);

impl Backend for NumaBackend {
    type Resource = NodeTasks;
    type Scratch<I: InfoSet> = ();

    fn resources(&self) -> &[NodeTasks] {
        &self.0
    }
}

impl FromResources for NumaBackend {
    fn from_resources(resources: Vec<NodeTasks>) -> Self {
        NumaBackend(resources)
    }

    /// One task group per node pool of the default NUMA space (none if the pools cannot be
    /// made, which the policy reports as having no resources).
    fn by_default() -> Self {
        let nodes = NumaSpace::default().partition_by_node().unwrap_or_default();
        NumaBackend(nodes.into_iter().map(NodeTasks::new).collect())
    }
}

impl WaitAll for NumaBackend {
    fn wait_all(&self) -> Result<(), SelectError> {
        wait_each(&self.0)
    }
}

impl BackendFor for NodeTasks {
    type Backend = NumaBackend;
}
