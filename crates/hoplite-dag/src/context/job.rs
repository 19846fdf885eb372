//! A vertex's work as its stream runs it: the kernel launch, its policy and handles, and the
//! failure check against its parents.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use hoplite_core::ValidatedPolicy;
use smallvec::SmallVec;

use super::vertex::{VertexState, VertexStatus};
use crate::DagError;
use crate::device::Job;
use crate::sync_prims::{self, Mutex, const_thread_local};

/// A vertex's work. The stream's thread takes and consumes only `run` (the kernel launch);
/// the rest it uses in place and leaves to the launching thread, which drops the job (see
/// `State::spent_jobs`): the label's count, the statuses', and the views' of handles that hold
/// no borrow then change on one thread only, where dropping them on the stream's thread
/// moved their cache lines there and back at every vertex.
pub(super) struct VertexJob<P, A, K> {
    /// One lock for all the stream's thread changes, so that it writes one line of the job.
    pub(super) work: Mutex<VertexWork<P, A, K>>,
    /// Whether the handles hold borrows of their own, which end before the vertex does: they
    /// are then dropped on the stream's thread, right after the work.
    pub(super) release_handles: bool,
    pub(super) label: Arc<str>,
    pub(super) status: sync_prims::Arc<VertexStatus>,
    /// The statuses of its parents (a failed one fails it), the first by stream order.
    pub(super) parent_statuses: SmallVec<[sync_prims::Arc<VertexStatus>; 4]>,
    /// The failure it inherits at launch (see `plan_dependencies`).
    pub(super) poisoned: Option<Box<DagError>>,
    /// The context it belongs to ([`context_key`]), recorded on the running thread so that a
    /// wait on that context from inside the work is refused instead of waiting for itself.
    pub(super) context: usize,
}

const_thread_local! {
    /// The vertices this thread is running, innermost last: their context's key and label.
    static RUNNING: std::cell::RefCell<Vec<(usize, Arc<str>)>> = std::cell::RefCell::new(Vec::new());
}

/// The key of the context whose borrow slots are `held`: the slots' address, which lives as
/// long as the context and its vertices' handles.
pub(super) fn context_key<T>(held: *const T) -> usize {
    held as usize
}

/// Refuses `wait` when this thread is running a vertex of context `key` (see
/// [`DagError::WaitInsideVertex`]): the wait would wait for that vertex or one behind it.
pub(super) fn refuse_wait_in_vertex(key: usize, wait: &'static str) -> Result<(), DagError> {
    RUNNING.with(
        |running| match running.borrow().iter().rev().find(|(k, _)| *k == key) {
            Some((_, label)) => Err(DagError::WaitInsideVertex {
                wait,
                inside: format!("its vertex `{label}`"),
            }),
            None => Ok(()),
        },
    )
}

/// Marks this thread as running a vertex until dropped (also when the work panics).
struct Running;

impl Running {
    fn enter(context: usize, label: &Arc<str>) -> Running {
        RUNNING.with(|running| running.borrow_mut().push((context, label.clone())));
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|running| running.borrow_mut().pop());
    }
}

/// What the stream's thread takes or uses of a vertex's job, under one lock.
pub(super) struct VertexWork<P, A, K> {
    /// The kernel launch, taken once.
    pub(super) run: Option<K>,
    pub(super) policy: ValidatedPolicy<P>,
    /// The handles, which the work gets by reference; `None` once dropped on the stream's
    /// thread (see `release_handles`).
    pub(super) handles: Option<A>,
}

impl<S, P, A, K> Job<S> for VertexJob<P, A, K>
where
    P: Send + 'static,
    A: Send + 'static,
    K: FnOnce(&str, &ValidatedPolicy<P>, &A) -> hoplite_core::Result<()> + Send + 'static,
{
    fn run(&self, _space: &S) {
        let mut work = self.work.lock();
        let Some(run) = work.run.take() else {
            // Ran already: a stream runs each item once.
            return;
        };
        let label = &self.label;
        let failure = self.poisoned.as_deref().cloned().or_else(|| {
            self.parent_statuses.iter().find_map(|c| match c.state() {
                VertexState::Failed(e) => Some(e),
                _ => None,
            })
        });
        let outcome = match failure {
            Some(cause) => VertexState::Failed(cause.inherited_by(label)),
            None => {
                self.status.start();
                let VertexWork { policy, handles, .. } = &*work;
                let result = match handles {
                    Some(handles) => {
                        let _running = Running::enter(self.context, label);
                        catch_unwind(AssertUnwindSafe(|| run(label, policy, handles)))
                    }
                    None => Ok(Ok(())),
                };
                match result {
                    Ok(Ok(())) => VertexState::Done,
                    Ok(Err(e)) => VertexState::Failed(DagError::VertexFailed {
                        vertex: label.to_string(),
                        cause: Box::new(e),
                    }),
                    Err(payload) => VertexState::Failed(DagError::VertexFailed {
                        vertex: label.to_string(),
                        cause: Box::new(hoplite_core::Error::from_panic(label, payload)),
                    }),
                }
            }
        };
        // The views are released and the outcome is final before the vertex's event
        // completes (the stream completes it after the work), so whoever retires it sees its
        // failure.
        if self.release_handles {
            work.handles = None;
        }
        drop(work);
        self.status.finish(outcome);
    }
}
