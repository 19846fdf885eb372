//! The context's mutable state, behind its lock: the dependency model, streams, unfinished
//! vertices, history, data locations, and the statuses and jobs kept for reuse.

use std::collections::VecDeque;
use std::sync::Arc;

use hoplite_core::held::Access;
use hoplite_core::held::AllocationKey;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use super::SpaceOf;
use super::history::History;
use super::vertex::VertexStatus;
use crate::DagError;
use crate::device::{Device, Job, Stream};
use crate::model::{DependencyModel, VertexId};
use crate::selection::{DeviceSelector, LocationSet};
use crate::streams::StreamAssigner;
use crate::sync_prims;
use crate::vertex_table::VertexTable;

/// How many allocations' locations the context tracks before it forgets those no unfinished
/// vertex uses.
pub(super) const LOCATIONS_LIMIT: usize = 1 << 14;

/// A vertex that has not been retired yet: what host access and later launches need to wait
/// for it (its accesses are the model's).
pub(super) struct UnfinishedVertex<T: Stream> {
    /// An event right after the vertex in its stream, for launches on other streams to wait
    /// for. (Recording it only when a first such launch comes would save a queue item per
    /// vertex, but the event then also covers whatever the stream took on since, and
    /// independent branches end up waiting for each other: 2x slower in the branch benchmark.)
    pub(super) event: T::Event,
    pub(super) stream: usize,
    pub(super) status: sync_prims::Arc<VertexStatus>,
    /// The vertex's work, also held by its stream until it has run (see `State::spent_jobs`).
    pub(super) job: Arc<dyn Job<T::Space>>,
    /// The held borrows its handles rely on (`HeldSlots` indices).
    pub(super) slots: SmallVec<[u32; 4]>,
}

pub(super) struct State<D: Device> {
    pub(super) model: DependencyModel,
    pub(super) assigner: StreamAssigner,
    pub(super) selector: DeviceSelector,
    pub(super) streams: Vec<D::Stream>,
    pub(super) live: VertexTable<UnfinishedVertex<D::Stream>>,
    pub(super) history: History,
    /// Where each allocation the context has seen is up to date (absent: only on the CPU).
    /// Bounded by `LOCATIONS_LIMIT`: past it, allocations no unfinished vertex uses are
    /// forgotten (they count as up to date on the CPU again, which only steers selection).
    pub(super) locations: HashMap<AllocationKey, LocationSet>,
    pub(super) prune_locations_at: usize,
    /// The unretired vertices of each stream, in stream order: `retire` takes them from the
    /// front while their work has ended. A stream runs its work in order, so looking at the
    /// front of each stream finds every vertex that ended, reading only statuses the retiring
    /// reads anyway (and the first unfinished one's) — where a list of finished vertices cost
    /// the stream's thread a lock and a push per vertex, and the launching thread a lock per
    /// launch on a line the other thread wrote last.
    pub(super) in_stream_order: Vec<VecDeque<VertexId>>,
    /// The accesses of failed vertices (skipped ones included): a later launch that conflicts
    /// with one would have been their descendant, so it fails with the same cause.
    pub(super) poisoned: Vec<(Access, DagError)>,
    /// Failures not yet returned by `synchronize`.
    pub(super) unreported: Vec<DagError>,
    /// The label of the last launch, shared with the next one if it has the same.
    pub(super) last_label: Option<Arc<str>>,
    /// Cells of retired vertices, oldest first, to be reused once nobody else holds them.
    /// A vertex's status is released last by whichever of the context, its stream's closure
    /// and the user's `Vertex` drops it last; freed on the stream's thread, memory the
    /// launching thread allocated goes back through the allocator's shared arena, under its
    /// lock, on every launch. Reusing statuses keeps them on the launching thread.
    pub(super) spent_statuses: VecDeque<sync_prims::Arc<VertexStatus>>,
    /// Work of retired vertices, oldest first, dropped once its stream has let it go: a
    /// vertex's work is allocated here and, dropped last by the stream's thread, would be freed
    /// there, into this thread's allocator arena under its lock (where the two threads then
    /// meet: one run in three of the per-vertex benchmark took twice as long, its stream's
    /// thread asleep on that lock).
    pub(super) spent_jobs: VecDeque<Arc<dyn Job<SpaceOf<D>>>>,
}

/// How many retired statuses `State::spent_statuses` keeps; past it, statuses that are still
/// held elsewhere (a `Vertex` the user keeps) are let go.
const SPENT_STATUSES_LIMIT: usize = 64;

/// How many retired jobs `State::spent_jobs` keeps waiting for their stream to let them go.
const SPENT_JOBS_LIMIT: usize = 64;

impl<D: Device> State<D> {
    /// Drops the retired jobs their streams have let go, oldest first, here (see
    /// `spent_jobs`); past the limit, the oldest goes whoever holds it.
    pub(super) fn sweep_jobs(&mut self) {
        while let Some(job) = self.spent_jobs.front() {
            if Arc::strong_count(job) > 1 && self.spent_jobs.len() <= SPENT_JOBS_LIMIT {
                break;
            }
            self.spent_jobs.pop_front();
        }
    }

    /// A status for a new vertex: a retired one nobody holds any more, or a new one.
    pub(super) fn fresh_status(&mut self) -> sync_prims::Arc<VertexStatus> {
        while let Some(mut status) = self.spent_statuses.pop_front() {
            if let Some(unique) = sync_prims::Arc::get_mut(&mut status) {
                unique.reset();
                return status;
            }
            if self.spent_statuses.len() < SPENT_STATUSES_LIMIT {
                // Its stream's closure has not let it go yet: look again next time.
                self.spent_statuses.push_front(status);
                break;
            }
            // Held past many launches: by the user, who frees it.
        }
        VertexStatus::new()
    }
}
