//! Asynchronous submission: one in-order queue per resource, each served by a thread of its
//! own, as a CPU queue (oneDPL's `sycl::queue` on a host device) runs what is submitted to it
//! while the submitting thread goes on.
//!
//! [`Policy::submit_async`](crate::Policy::submit_async) selects a resource as
//! [`submit`](crate::submit) does, then hands the function to the resource's queue and returns
//! an [`AsyncSubmission`] at once; the queue's thread calls the function with (a clone of) the
//! resource. Two submissions to one resource run one after the other, in submission order;
//! submissions to different resources run at the same time. A queue's thread starts at the
//! first asynchronous submission to its resource and ends when the policy drops (after the
//! functions queued before have run).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::backend::{Backend, Wait};
use crate::error::SelectError;
use crate::generic_policy::Logic;
use crate::info::Report;
use crate::selection::Selection;

/// A function queued on a resource's thread.
type Job = Box<dyn FnOnce() + Send>;

/// One resource's queue: the sending end of its thread's job channel, and the thread.
struct Worker {
    jobs: Sender<Job>,
    thread: Option<JoinHandle<()>>,
}

/// The queues of a policy's resources, each started at its first use.
pub(crate) struct ResourceQueues {
    workers: Vec<OnceLock<Worker>>,
}

impl ResourceQueues {
    /// Queues for `resources` resources, none started.
    pub(crate) fn new(resources: usize) -> Self {
        ResourceQueues {
            workers: (0..resources).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Queues `job` on resource `index`'s thread, starting the thread if this is its first
    /// job.
    fn push(&self, index: usize, job: Job) -> Result<(), SelectError> {
        let slot = self
            .workers
            .get(index)
            .ok_or_else(|| SelectError::QueueUnavailable {
                index,
                reason: format!("the policy has {} resources", self.workers.len()),
            })?;
        let worker = match slot.get() {
            Some(worker) => worker,
            None => {
                let started = start_worker(index)?;
                // Another thread may have started one meanwhile: then its worker is used and
                // this one, which has no job yet, ends as its channel drops.
                slot.get_or_init(|| started)
            }
        };
        worker.jobs.send(job).map_err(|_| SelectError::QueueUnavailable {
            index,
            reason: "its thread has ended".into(),
        })
    }

    /// Blocks until every job queued so far has run: each started queue runs a marker after
    /// them.
    pub(crate) fn drain(&self) -> Result<(), SelectError> {
        let mut markers = Vec::new();
        for (index, slot) in self.workers.iter().enumerate() {
            if slot.get().is_none() {
                continue;
            }
            let marker = Arc::new(Completion::<()>::new());
            let done = marker.clone();
            self.push(index, Box::new(move || done.set(Ok(()), Duration::ZERO)))?;
            markers.push(marker);
        }
        for marker in markers {
            drop(marker.wait());
        }
        Ok(())
    }
}

impl Drop for ResourceQueues {
    /// Closes every queue and waits for its thread, which runs what was queued first.
    fn drop(&mut self) {
        for slot in &mut self.workers {
            if let Some(mut worker) = slot.take() {
                let thread = worker.thread.take();
                drop(worker);
                if let Some(thread) = thread {
                    // The jobs catch their functions' panics; an error here would mean the
                    // thread died outside them, and nothing is left to clean up then.
                    let _ = thread.join();
                }
            }
        }
    }
}

/// Starts resource `index`'s thread.
fn start_worker(index: usize) -> Result<Worker, SelectError> {
    let (jobs, queued) = channel::<Job>();
    let thread = std::thread::Builder::new()
        .name(format!("hoplite-select-{index}"))
        .spawn(move || {
            // Runs until every sender is gone: the policy dropped its queues.
            for job in queued {
                job();
            }
        })
        .map_err(|e| SelectError::QueueUnavailable {
            index,
            reason: format!("no thread: {e}"),
        })?;
    Ok(Worker {
        jobs,
        thread: Some(thread),
    })
}

/// What a queued function left: its value or its panic (as the core's `KernelPanicked`), and
/// how long it ran.
struct Completion<W> {
    outcome: Mutex<Option<(Result<W, hoplite_core::Error>, Duration)>>,
    done: Condvar,
}

impl<W> Completion<W> {
    fn new() -> Self {
        Completion {
            outcome: Mutex::new(None),
            done: Condvar::new(),
        }
    }

    fn set(&self, outcome: Result<W, hoplite_core::Error>, ran: Duration) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some((outcome, ran));
        self.done.notify_all();
    }

    /// Blocks until the function has run; returns the lock on what it left.
    fn wait(&self) -> std::sync::MutexGuard<'_, Option<(Result<W, hoplite_core::Error>, Duration)>> {
        let guard = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        self.done
            .wait_while(guard, |outcome| outcome.is_none())
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn is_set(&self) -> bool {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// What [`Policy::submit_async`](crate::Policy::submit_async) returns: a function queued on
/// the selected resource, running or done. [`wait`](Self::wait) blocks until it has run
/// (and fences the resource, for work it launched asynchronously), [`unwrap`](Self::unwrap)
/// gives its value.
///
/// Like a [`Submission`](crate::Submission), it reports its completion to the policy exactly
/// once: when it is waited on, unwrapped or dropped. Dropping it does not wait: the function
/// still runs, but a load-counting policy then counts it as done.
#[must_use = "an asynchronous submission is waited on to get its value"]
pub struct AsyncSubmission<'p, L: Logic, B: Backend, W> {
    selection: Selection<'p, L, B>,
    completion: Arc<Completion<W>>,
    /// Whether the time the function ran was reported (once, at the first wait).
    timed: AtomicBool,
}

impl<'p, L: Logic, B: Backend, W: Send + 'static> AsyncSubmission<'p, L, B, W> {
    /// Queues `f(resource, args)` on `queues`' queue of the selected resource.
    pub(crate) fn queue<A, F>(
        mut selection: Selection<'p, L, B>,
        queues: &ResourceQueues,
        f: F,
        args: A,
    ) -> Result<Self, SelectError>
    where
        B::Resource: Clone + Send + 'static,
        F: FnOnce(&B::Resource, A) -> W + Send + 'static,
        A: Send + 'static,
    {
        let backend = selection.backend();
        backend.instrument_before(&mut selection);
        let completion = Arc::new(Completion::new());
        let done = completion.clone();
        let resource = selection.resource().clone();
        queues.push(
            selection.index(),
            Box::new(move || {
                let start = Instant::now();
                let outcome = catch_unwind(AssertUnwindSafe(|| f(&resource, args)))
                    .map_err(|payload| hoplite_core::Error::from_panic("submitted function", payload));
                done.set(outcome, start.elapsed());
            }),
        )?;
        Ok(AsyncSubmission {
            selection,
            completion,
            timed: AtomicBool::new(false),
        })
    }

    /// Whether the function has run (without blocking).
    pub fn is_done(&self) -> bool {
        self.completion.is_set()
    }

    /// Blocks until the function has run, then waits through the backend for what it
    /// launched ([`Backend::wait_submission`]: a fence of the resource's space) and reports
    /// the completion, and the time the function ran, to the policy.
    ///
    /// # Errors
    ///
    /// [`SelectError::Resource`] with [`hoplite_core::Error::KernelPanicked`] if the function
    /// panicked; what the backend's wait reports.
    pub fn wait(&self) -> Result<(), SelectError> {
        let outcome = self.completion.wait();
        let result = match &*outcome {
            Some((Ok(value), ran)) => {
                let waited = self
                    .selection
                    .backend()
                    .wait_submission(self.selection.resource(), value);
                if !self.timed.swap(true, Ordering::AcqRel) {
                    self.selection.report(Report::TaskTime(*ran));
                }
                waited
            }
            Some((Err(panic), _)) => Err(SelectError::Resource(panic.clone())),
            None => Ok(()),
        };
        drop(outcome);
        self.selection.report(Report::TaskCompletion);
        result
    }

    /// Waits ([`wait`](Self::wait)) and gives the function's value.
    ///
    /// # Errors
    ///
    /// As [`wait`](Self::wait).
    pub fn unwrap(self) -> Result<W, SelectError> {
        self.wait()?;
        let taken = self
            .completion
            .outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match taken {
            Some((Ok(value), _)) => Ok(value),
            Some((Err(panic), _)) => Err(SelectError::Resource(panic)),
            None => Err(SelectError::Wait(
                "the submission's value was already taken".into(),
            )),
        }
    }

    /// Index of the resource the function was queued on.
    pub fn index(&self) -> usize {
        self.selection.index()
    }

    /// The resource the function was queued on.
    pub fn resource(&self) -> &'p B::Resource {
        self.selection.resource()
    }
}

impl<L: Logic, B: Backend, W: Send + 'static> Wait for AsyncSubmission<'_, L, B, W> {
    fn wait(&self) -> Result<(), SelectError> {
        AsyncSubmission::wait(self)
    }
}

impl<L: Logic, B: Backend, W> std::fmt::Debug for AsyncSubmission<'_, L, B, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncSubmission")
            .field("index", &self.selection.index())
            .field("done", &self.completion.is_set())
            .finish()
    }
}
