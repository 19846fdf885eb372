//! Vertices as the caller sees them ([`Vertex`], [`Pending`], [`VertexState`]) and the shared
//! status through which a vertex's stream reports its progress.

use std::sync::Weak;
use std::time::Instant;

use super::held::HeldSlots;
use crate::model::VertexId;
use crate::sync_prims::{Arc, AtomicU8, Condvar, Mutex, Ordering};
use crate::{DagError, Result};

/// What became of a vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VertexState {
    /// Waiting in its stream.
    Queued,
    /// Its kernel is running.
    Running,
    /// Its kernel ran to completion.
    Done,
    /// Its kernel failed, or it did not run because an ancestor failed.
    Failed(DagError),
}

impl VertexState {
    pub(super) fn name(&self) -> &'static str {
        match self {
            VertexState::Queued => "queued",
            VertexState::Running => "running",
            VertexState::Done => "done",
            VertexState::Failed(_) => "failed",
        }
    }
}

#[derive(Debug)]
pub(super) struct Progress {
    pub(super) state: VertexState,
    pub(super) start: Option<Instant>,
    pub(super) end: Option<Instant>,
}

/// Where one vertex stands (queued, running, done or failed, with its times), shared by the
/// context, the vertex's stream (which updates it) and the jobs of its children (which
/// wait for it). Recycled for later vertices once nobody else holds it
/// (`State::fresh_status`).
#[derive(Debug)]
pub(super) struct VertexStatus {
    pub(super) progress: Mutex<Progress>,
    changed: Condvar,
    /// `ENDED` or `FAILED` once the outcome is final (set under the lock, after the state):
    /// retiring looks at every pending vertex's status at each launch, and reads this word
    /// instead of taking the lock the stream's thread writes under.
    ended: AtomicU8,
}

/// `VertexStatus::ended`: the work has not ended.
const RUNNING: u8 = 0;
/// `VertexStatus::ended`: the vertex is done.
const ENDED: u8 = 1;
/// `VertexStatus::ended`: the vertex failed.
const FAILED: u8 = 2;

impl VertexStatus {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(VertexStatus {
            progress: Mutex::new(Progress {
                state: VertexState::Queued,
                start: None,
                end: None,
            }),
            changed: Condvar::new(),
            ended: AtomicU8::new(RUNNING),
        })
    }

    pub(super) fn state(&self) -> VertexState {
        self.progress.lock().state.clone()
    }

    /// Whether the vertex is done or failed. Acquire: what the stream did before it ended the
    /// vertex (dropping its handles) happens before what the caller does next.
    pub(super) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire) != RUNNING
    }

    /// Whether the vertex failed (after `has_ended`).
    pub(super) fn has_failed(&self) -> bool {
        self.ended.load(Ordering::Acquire) == FAILED
    }

    /// Makes a status nobody else holds new again, for the next vertex.
    pub(super) fn reset(&mut self) {
        let p = self.progress.get_mut();
        p.state = VertexState::Queued;
        p.start = None;
        p.end = None;
        // A store rather than `get_mut`, which loom's atomics lack; nobody else holds the
        // status, and on x86 a relaxed store is the plain store `get_mut` would make.
        self.ended.store(RUNNING, Ordering::Relaxed);
    }

    pub(super) fn start(&self) {
        let mut p = self.progress.lock();
        p.start = Some(Instant::now());
        p.state = VertexState::Running;
    }

    /// The vertex's end: its outcome.
    pub(super) fn finish(&self, outcome: VertexState) {
        let mut p = self.progress.lock();
        let now = Instant::now();
        p.start.get_or_insert(now);
        p.end = Some(now);
        let ended = if matches!(outcome, VertexState::Failed(_)) {
            FAILED
        } else {
            ENDED
        };
        p.state = outcome;
        self.ended.store(ended, Ordering::Release);
        self.changed.notify_all();
    }

    /// Blocks until the vertex is done or failed.
    pub(super) fn wait(&self) -> VertexState {
        let mut p = self.progress.lock();
        while matches!(p.state, VertexState::Queued | VertexState::Running) {
            self.changed.wait(&mut p);
        }
        p.state.clone()
    }
}

/// A launched vertex: its id, and a way to follow it.
#[derive(Clone, Debug)]
pub struct Vertex {
    pub(super) id: VertexId,
    pub(super) status: Arc<VertexStatus>,
    /// The context's held borrows, to end those of finished vertices once the host sees one.
    pub(super) held: Weak<Mutex<HeldSlots>>,
}

impl Vertex {
    /// Its id (launch order from 0).
    pub fn id(&self) -> VertexId {
        self.id
    }
    /// What became of it so far. Once it is done or failed, its views are no longer borrowed
    /// for it.
    pub fn state(&self) -> VertexState {
        let state = self.status.state();
        if !matches!(state, VertexState::Queued | VertexState::Running) {
            self.end_borrows();
        }
        state
    }
    /// Blocks until it is done or failed; its views are then no longer borrowed for it.
    ///
    /// # Errors
    ///
    /// The vertex's failure.
    pub fn wait(&self) -> Result<()> {
        self.refuse_wait_inside("Vertex::wait")?;
        let state = self.status.wait();
        self.end_borrows();
        match state {
            VertexState::Failed(e) => Err(e),
            _ => Ok(()),
        }
    }

    /// Refuses a wait from inside a vertex of this vertex's context (see
    /// [`DagError::WaitInsideVertex`]).
    fn refuse_wait_inside(&self, wait: &'static str) -> Result<()> {
        super::job::refuse_wait_in_vertex(super::job::context_key(self.held.as_ptr()), wait)
    }

    /// Ends the context's borrows that only finished vertices used, this one among them.
    fn end_borrows(&self) {
        end_finished_borrows(&self.held);
    }
}

/// Ends the borrows of a context's `held` that only finished vertices used (nothing once the
/// context is gone: it ended them).
pub(super) fn end_finished_borrows(held: &Weak<Mutex<HeldSlots>>) {
    if let Some(held) = held.upgrade() {
        held.lock().sweep();
    }
}

/// The result of a reduction or scan launched in a context: `get` waits for that vertex only.
#[derive(Debug)]
pub struct Pending<V> {
    pub(super) vertex: Vertex,
    pub(super) value: Arc<Mutex<Option<V>>>,
}

impl<V> Pending<V> {
    /// The vertex that computes it.
    pub fn vertex(&self) -> &Vertex {
        &self.vertex
    }
    /// Waits for the vertex and returns its result.
    ///
    /// # Errors
    ///
    /// The vertex's failure (its kernel panicked, or an ancestor failed).
    pub fn get(self) -> Result<V> {
        self.vertex.wait()?;
        self.value.lock().take().ok_or(DagError::MissingResult {
            vertex: self.vertex.id,
        })
    }
}
