//! Layer 3: the context — launches become vertices, vertices go to streams, the host waits
//! only for what it touches.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hoplite_core::view::graph_support::{AllocationKey, BorrowGroup, HeldBorrow};
use hoplite_core::view::{AccessKind, Footprint};
use hoplite_core::{
    ArrayLayout, ExecutionPolicy, HostAccessibleSpace, HostRead, HostWrite, IntoLaunch, LaunchSpec,
    ParallelFor, ParallelReduce, ParallelScan, RangePolicy, Reducer, ScanValue, ValidatedPolicy, View,
    ViewValue, parallel_for_validated, parallel_reduce_validated, parallel_scan_validated,
};
use hoplite_graph::{Access, GraphArgs, GraphLaunch, GraphPolicy, HeldBorrows};
use parking_lot::{Condvar, Mutex};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use crate::device::{Device, Job, Stream};
use crate::model::{DependencyModel, DependencyPolicy, Edges, VertexId};
use crate::selection::{
    ArgumentData, BandwidthMatrix, DeviceSelectionPolicy, DeviceSelector, Location, LocationSet,
};
use crate::streams::{Assignment, NewStreamPolicy, ParentStreamPolicy, StreamAssigner};
use crate::vertex_table::VertexTable;
use crate::{DagError, Result};

/// Whether launches return at once or wait for their kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Execution {
    /// Launches return at once; the host waits only where it touches data.
    #[default]
    Async,
    /// Every launch waits for its kernel (for debugging, and as a baseline).
    Sync,
}

/// The options of a [`Context`] (GrCUDA's context startup options).
///
/// ```
/// use hoplite_dag::{ContextOptions, DependencyPolicy, DeviceSelectionPolicy, Execution};
/// let options = ContextOptions::default()
///     .execution(Execution::Sync)
///     .dependency(DependencyPolicy::NoConst)
///     .device_selection(DeviceSelectionPolicy::StreamAware);
/// assert_eq!(options.execution_mode(), Execution::Sync);
/// ```
#[derive(Clone, Debug)]
pub struct ContextOptions {
    execution: Execution,
    dependency: DependencyPolicy,
    new_stream: NewStreamPolicy,
    parent_stream: ParentStreamPolicy,
    device_selection: DeviceSelectionPolicy,
    data_threshold: f64,
    bandwidth: Option<BandwidthMatrix>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            execution: Execution::Async,
            dependency: DependencyPolicy::WithConst,
            new_stream: NewStreamPolicy::Reuse,
            parent_stream: ParentStreamPolicy::Disjoint,
            device_selection: DeviceSelectionPolicy::RoundRobin,
            data_threshold: 0.1,
            bandwidth: None,
        }
    }
}

impl ContextOptions {
    /// Async (default) or sync execution.
    pub fn execution(mut self, execution: Execution) -> Self {
        self.execution = execution;
        self
    }
    /// The execution mode.
    pub fn execution_mode(&self) -> Execution {
        self.execution
    }
    /// The dependency policy (default with-const).
    pub fn dependency(mut self, policy: DependencyPolicy) -> Self {
        self.dependency = policy;
        self
    }
    /// The new-stream policy (default reuse).
    pub fn new_stream(mut self, policy: NewStreamPolicy) -> Self {
        self.new_stream = policy;
        self
    }
    /// The parent-stream policy (default disjoint).
    pub fn parent_stream(mut self, policy: ParentStreamPolicy) -> Self {
        self.parent_stream = policy;
        self
    }
    /// The device-selection policy (default round robin).
    pub fn device_selection(mut self, policy: DeviceSelectionPolicy) -> Self {
        self.device_selection = policy;
        self
    }
    /// The share of a launch's bytes a device must hold for the data-aware policies to
    /// prefer it (default 0.1).
    pub fn data_threshold(mut self, threshold: f64) -> Self {
        self.data_threshold = threshold;
        self
    }
    /// The link bandwidths the transfer-time policies use.
    pub fn bandwidth(mut self, matrix: BandwidthMatrix) -> Self {
        self.bandwidth = Some(matrix);
        self
    }
}

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
    fn name(&self) -> &'static str {
        match self {
            VertexState::Queued => "queued",
            VertexState::Running => "running",
            VertexState::Done => "done",
            VertexState::Failed(_) => "failed",
        }
    }
}

#[derive(Debug)]
struct Progress {
    state: VertexState,
    start: Option<Instant>,
    end: Option<Instant>,
}

/// The shared record of one vertex: its progress, which the stream updates.
#[derive(Debug)]
struct Cell {
    progress: Mutex<Progress>,
    changed: Condvar,
    /// `ENDED` or `FAILED` once the outcome is final (set under the lock, after the state):
    /// retiring looks at every pending vertex's cell at each launch, and reads this word
    /// instead of taking the lock the stream's thread writes under.
    ended: AtomicU8,
}

/// `Cell::ended`: the work has not ended.
const RUNNING: u8 = 0;
/// `Cell::ended`: the vertex is done.
const ENDED: u8 = 1;
/// `Cell::ended`: the vertex failed.
const FAILED: u8 = 2;

impl Cell {
    fn new() -> Arc<Self> {
        Arc::new(Cell {
            progress: Mutex::new(Progress {
                state: VertexState::Queued,
                start: None,
                end: None,
            }),
            changed: Condvar::new(),
            ended: AtomicU8::new(RUNNING),
        })
    }

    fn state(&self) -> VertexState {
        self.progress.lock().state.clone()
    }

    /// Whether the vertex is done or failed. Acquire: what the stream did before it ended the
    /// vertex (dropping its handles) happens before what the caller does next.
    fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire) != RUNNING
    }

    /// Whether the vertex failed (after `has_ended`).
    fn has_failed(&self) -> bool {
        self.ended.load(Ordering::Acquire) == FAILED
    }

    /// Makes a cell nobody else holds new again, for the next vertex.
    fn reset(&mut self) {
        let p = self.progress.get_mut();
        p.state = VertexState::Queued;
        p.start = None;
        p.end = None;
        *self.ended.get_mut() = RUNNING;
    }

    fn start(&self) {
        let mut p = self.progress.lock();
        p.start = Some(Instant::now());
        p.state = VertexState::Running;
    }

    /// The vertex's end: its outcome.
    fn finish(&self, outcome: VertexState) {
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
    /// Blocks until the vertex is done or failed.
    fn wait(&self) -> VertexState {
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
    id: VertexId,
    cell: Arc<Cell>,
    /// The context's held borrows, to end those of finished vertices once the host sees one.
    held: Weak<Mutex<HeldSlots>>,
}

impl Vertex {
    /// Its id (launch order from 0).
    pub fn id(&self) -> VertexId {
        self.id
    }
    /// What became of it so far. Once it is done or failed, its views are no longer borrowed
    /// for it.
    pub fn state(&self) -> VertexState {
        let state = self.cell.state();
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
        let state = self.cell.wait();
        self.end_borrows();
        match state {
            VertexState::Failed(e) => Err(e),
            _ => Ok(()),
        }
    }

    /// Ends the context's borrows that only finished vertices used, this one among them.
    fn end_borrows(&self) {
        end_finished_borrows(&self.held);
    }
}

/// Ends the borrows of a context's `held` that only finished vertices used (nothing once the
/// context is gone: it ended them).
fn end_finished_borrows(held: &Weak<Mutex<HeldSlots>>) {
    if let Some(held) = held.upgrade() {
        held.lock().sweep();
    }
}

/// The result of a reduction or scan launched in a context: `get` waits for that vertex only.
#[derive(Debug)]
pub struct Pending<V> {
    vertex: Vertex,
    value: Arc<Mutex<Option<V>>>,
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

/// A vertex's work. The stream's thread takes and consumes only `run` (the kernel launch);
/// the rest it uses in place and leaves to the launching thread, which drops the job (see
/// `State::spent_jobs`): the label's count, the cells', and the views' of handles that hold
/// no borrow then change on one thread only, where dropping them on the stream's thread
/// moved their cache lines there and back at every vertex.
struct VertexJob<P, A, K> {
    /// One lock for all the stream's thread changes, so that it writes one line of the job.
    work: Mutex<VertexWork<P, A, K>>,
    /// Whether the handles hold borrows of their own, which end before the vertex does: they
    /// are then dropped on the stream's thread, right after the work.
    release_handles: bool,
    label: Arc<str>,
    cell: Arc<Cell>,
    /// The cells of its parents (a failed one fails it), the first by stream order.
    parent_cells: SmallVec<[Arc<Cell>; 4]>,
    /// The failure it inherits at launch (see `submit_on`).
    poisoned: Option<Box<DagError>>,
}

/// What the stream's thread takes or uses of a vertex's job, under one lock.
struct VertexWork<P, A, K> {
    /// The kernel launch, taken once.
    run: Option<K>,
    policy: ValidatedPolicy<P>,
    /// The handles, which the work gets by reference; `None` once dropped on the stream's
    /// thread (see `release_handles`).
    handles: Option<A>,
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
            self.parent_cells.iter().find_map(|c| match c.state() {
                VertexState::Failed(e) => Some(e),
                _ => None,
            })
        });
        let outcome = match failure {
            Some(cause) => VertexState::Failed(cause.inherited_by(label)),
            None => {
                self.cell.start();
                let VertexWork { policy, handles, .. } = &*work;
                let result = match handles {
                    Some(handles) => catch_unwind(AssertUnwindSafe(|| run(label, policy, handles))),
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
        self.cell.finish(outcome);
    }
}

/// How many allocations' locations the context tracks before it forgets those no unfinished
/// vertex uses.
const LOCATIONS_LIMIT: usize = 1 << 14;

/// How many vertices the context remembers for DOT, traces and [`Context::parents`]: the
/// most recent ones, so that a long-running context keeps bounded memory.
pub const HISTORY_LIMIT: usize = 1 << 16;

/// What the context remembers of a vertex for DOT and traces.
struct Record {
    id: VertexId,
    label: Arc<str>,
    device: usize,
    stream: usize,
    edges: Edges,
    /// How it ended, copied from its cell when it retires; `None` while it is live (its cell
    /// is then in `State::live`). The history keeps no cell: dropping the oldest record at
    /// each launch would otherwise free a cell made `HISTORY_LIMIT` launches ago, a cache miss
    /// or two on every launch.
    ended: Option<Ended>,
}

/// The last [`HISTORY_LIMIT`] records, in a ring that, once full, overwrites its oldest record
/// where it is: a launch neither copies a record out of a queue's front nor shifts one in.
#[derive(Default)]
struct History {
    records: Vec<Record>,
    /// Where the oldest record is (0 until the ring is full).
    head: usize,
}

impl History {
    fn push(&mut self, record: Record) {
        if self.records.len() < HISTORY_LIMIT {
            self.records.push(record);
        } else {
            self.records[self.head] = record;
            self.head = (self.head + 1) % HISTORY_LIMIT;
        }
    }

    /// Oldest first.
    fn iter(&self) -> impl Iterator<Item = &Record> {
        let (newer, older) = self.records.split_at(self.head);
        older.iter().chain(newer)
    }

    /// The record of vertex `id`, if it is still kept (records have consecutive ids).
    fn get_mut(&mut self, id: VertexId) -> Option<&mut Record> {
        let oldest = self.records.get(self.head)?.id;
        let k = id.checked_sub(oldest).filter(|&k| k < self.records.len())?;
        let at = (self.head + k) % self.records.len();
        self.records.get_mut(at)
    }
}

/// The end of a retired vertex, for DOT and traces.
struct Ended {
    state: &'static str,
    start: Option<Instant>,
    end: Option<Instant>,
}

impl Record {
    /// Its state's name and its start and end, from the copy or from the live cell.
    fn progress<T: Stream>(
        &self,
        live: &VertexTable<Live<T>>,
    ) -> (&'static str, Option<Instant>, Option<Instant>) {
        match (&self.ended, live.get(self.id)) {
            (Some(e), _) => (e.state, e.start, e.end),
            (None, Some(l)) => {
                let p = l.cell.progress.lock();
                (p.state.name(), p.start, p.end)
            }
            // Retired before its record was made: cannot happen (a vertex's record is made in
            // the launch that makes it); show it as done rather than fail.
            (None, None) => ("done", None, None),
        }
    }
}

/// An unfinished vertex: what host access and later launches need to wait for it (its
/// accesses are the model's).
struct Live<T: Stream> {
    /// An event right after the vertex in its stream, for launches on other streams to wait
    /// for. (Recording it only when a first such launch comes would save a queue item per
    /// vertex, but the event then also covers whatever the stream took on since, and
    /// independent branches end up waiting for each other: 2x slower in the branch benchmark.)
    event: T::Event,
    stream: usize,
    cell: Arc<Cell>,
    /// The vertex's work, also held by its stream until it has run (see `State::spent_jobs`).
    job: Arc<dyn Job<T::Space>>,
    /// The held borrows its handles rely on (`HeldSlots` indices).
    slots: SmallVec<[u32; 4]>,
}

/// How many held borrows the context keeps before it ends those whose vertices have all
/// ended at a launch.
const HELD_LIMIT: usize = 64;

/// The borrows the context holds for the handles of its vertices: one per allocation,
/// elements and access kind, whatever the number of vertices that use it. A launch's handles
/// rely on them (`GraphArgs::into_held`) instead of borrowing their views for the vertex, so a
/// view many pending launches use is borrowed once, and a vertex's end, on its stream's
/// thread, touches no borrow table (where the launching thread's next borrow of the same view
/// met it on the table's lock, one lock per handle per vertex on each side).
///
/// A borrow ends once every vertex that used it has ended, when the host sees one finished
/// (`Vertex::wait`, `Vertex::state`, `Pending::get`, `read`, `write`, `synchronize`), when
/// its views are all gone, or past `HELD_LIMIT` borrows; not at every vertex's end, which
/// would end and take again the borrows of a chain of launches whose stream keeps up with
/// them.
struct HeldSlots {
    index: HashMap<(AllocationKey, AccessKind, Footprint), u32>,
    /// The slots in use of each allocation: a second one moves the others into the group.
    by_allocation: HashMap<AllocationKey, SmallVec<[u32; 2]>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Past how many slots in use a launch ends the borrows no unfinished vertex uses.
    sweep_at: usize,
    /// The slot each handle of the last launch took, by position: launches in a loop take
    /// the same ones, found by comparing one key instead of hashing it.
    hints: Vec<u32>,
}

/// One held borrow and the vertices that rely on it.
struct Slot {
    /// The borrow's allocation, kind and elements; `None` while the slot is free.
    key: Option<(AllocationKey, AccessKind, Footprint)>,
    held: Option<HeldBorrow>,
    /// The latest vertex to use it on each stream: a stream ends its vertices in order, so
    /// once these have ended every user has.
    users: SmallVec<[(usize, Arc<Cell>); 1]>,
}

impl Default for HeldSlots {
    fn default() -> Self {
        HeldSlots {
            index: HashMap::default(),
            by_allocation: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            sweep_at: HELD_LIMIT,
            hints: Vec::new(),
        }
    }
}

impl HeldSlots {
    /// Whether every vertex that used slot `k` has ended: their handles are gone (a vertex's
    /// work drops them before it ends, and `has_ended` acquires what the work did).
    fn unused(&self, k: u32) -> bool {
        let slot = &self.slots[k as usize];
        slot.key.is_some() && slot.users.iter().all(|(_, cell)| cell.has_ended())
    }

    /// Ends slot `k`'s borrow and frees the slot, if no unfinished vertex uses it.
    fn release_if_unused(&mut self, k: u32) {
        if !self.unused(k) {
            return;
        }
        let slot = &mut self.slots[k as usize];
        if let Some(key) = slot.key.take() {
            self.index.remove(&key);
            if let Some(others) = self.by_allocation.get_mut(&key.0) {
                others.retain(|o| *o != k);
                if others.is_empty() {
                    self.by_allocation.remove(&key.0);
                }
            }
        }
        slot.users.clear();
        // Ends the borrow.
        slot.held = None;
        self.free.push(k);
    }

    /// At a vertex's retirement: ends slot `k`'s borrow if no unfinished vertex uses it and
    /// nobody can ask for the view again (see `HeldBorrow::has_views`), so that dropping a
    /// view frees its memory once its vertices ran.
    fn release_if_orphaned(&mut self, k: u32) {
        let orphaned = self.slots[k as usize]
            .held
            .as_ref()
            .is_some_and(|h| !h.has_views());
        if orphaned {
            self.release_if_unused(k);
        }
    }

    /// Ends every borrow no unfinished vertex uses.
    fn sweep(&mut self) {
        for k in 0..self.slots.len() {
            self.release_if_unused(k as u32);
        }
    }

    /// At a launch: sweeps once the slots in use pass `sweep_at`, which then becomes twice
    /// what is left (so that many live borrows are not scanned at every launch).
    fn bound(&mut self) {
        if self.slots.len() - self.free.len() > self.sweep_at {
            self.sweep();
            self.sweep_at = HELD_LIMIT.max(2 * (self.slots.len() - self.free.len()));
        }
    }

    /// Records the vertex of `cell`, on `stream`, as a user of slot `k`.
    fn use_slot(&mut self, k: u32, stream: usize, cell: &Arc<Cell>) {
        let users = &mut self.slots[k as usize].users;
        match users.iter_mut().find(|(s, _)| *s == stream) {
            Some(user) => user.1 = cell.clone(),
            None => users.push((stream, cell.clone())),
        }
    }
}

impl Drop for HeldSlots {
    fn drop(&mut self) {
        // The context drops its streams first, which run what they were given. A borrow a
        // vertex that never ran would rely on is left in place: an allocation that stays
        // borrowed is never unsound, a borrow ended under a handle would be.
        self.sweep();
        for slot in &mut self.slots {
            if let Some(held) = slot.held.take() {
                std::mem::forget(held);
            }
        }
    }
}

/// The slots one launch's handles take (`GraphArgs::into_held`), and which.
struct Taking<'a> {
    slots: &'a mut HeldSlots,
    group: &'a BorrowGroup,
    used: SmallVec<[u32; 4]>,
    /// How many handles asked for a slot.
    asked: usize,
}

impl HeldBorrows for Taking<'_> {
    fn slot(
        &mut self,
        allocation: AllocationKey,
        kind: AccessKind,
        footprint: &Footprint,
    ) -> &mut Option<HeldBorrow> {
        let HeldSlots {
            index,
            by_allocation,
            slots,
            free,
            hints,
            ..
        } = &mut *self.slots;
        let position = self.asked;
        self.asked += 1;
        if let Some(&k) = hints.get(position)
            && let Some((a, b, f)) = &slots[k as usize].key
            && (*a, *b) == (allocation, kind)
            && f == footprint
        {
            if !self.used.contains(&k) {
                self.used.push(k);
            }
            return &mut slots[k as usize].held;
        }
        let group = self.group;
        let k = *index
            .entry((allocation, kind, footprint.clone()))
            .or_insert_with(|| {
                // The allocation's other held borrows go into the group, where this one's
                // elements or kind do not conflict with them (the context orders the vertices
                // that use them); outside it, they would refuse it.
                let others = by_allocation.entry(allocation).or_default();
                for &o in others.iter() {
                    if let Some(other) = slots[o as usize].held.as_mut() {
                        // SAFETY: the context orders the handles of its group (see `submit_on`),
                        // those relying on held borrows among them.
                        let moved = unsafe { other.into_group(group) };
                        // The allocation keeps a held borrow until it is dropped, so the move
                        // cannot fail; were it to, the handles relying on the borrow would be
                        // unprotected: stop here rather than go on.
                        moved.expect("a held borrow is known to its allocation");
                    }
                }
                let key = Some((allocation, kind, footprint.clone()));
                let k = match free.pop() {
                    Some(k) => {
                        slots[k as usize].key = key;
                        k
                    }
                    None => {
                        slots.push(Slot {
                            key,
                            held: None,
                            users: SmallVec::new(),
                        });
                        (slots.len() - 1) as u32
                    }
                };
                others.push(k);
                k
            });
        if !self.used.contains(&k) {
            self.used.push(k);
        }
        match hints.get_mut(position) {
            Some(hint) => *hint = k,
            None => hints.push(k),
        }
        &mut slots[k as usize].held
    }
}

struct State<D: Device> {
    model: DependencyModel,
    assigner: StreamAssigner,
    selector: DeviceSelector,
    streams: Vec<D::Stream>,
    live: VertexTable<Live<D::Stream>>,
    history: History,
    /// Where each allocation the context has seen is up to date (absent: only on the CPU).
    /// Bounded by `LOCATIONS_LIMIT`: past it, allocations no unfinished vertex uses are
    /// forgotten (they count as up to date on the CPU again, which only steers selection).
    locations: HashMap<AllocationKey, LocationSet>,
    prune_locations_at: usize,
    /// The unretired vertices of each stream, in stream order: `retire` takes them from the
    /// front while their work has ended. A stream runs its work in order, so looking at the
    /// front of each stream finds every vertex that ended, reading only cells the retiring
    /// reads anyway (and the first unfinished one's) — where a list of finished vertices cost
    /// the stream's thread a lock and a push per vertex, and the launching thread a lock per
    /// launch on a line the other thread wrote last.
    in_stream_order: Vec<VecDeque<VertexId>>,
    /// The accesses of failed vertices (skipped ones included): a later launch that conflicts
    /// with one would have been their descendant, so it fails with the same cause.
    poisoned: Vec<(Access, DagError)>,
    /// Failures not yet returned by `synchronize`.
    unreported: Vec<DagError>,
    /// The label of the last launch, shared with the next one if it has the same.
    last_label: Option<Arc<str>>,
    /// Cells of retired vertices, oldest first, to be reused once nobody else holds them.
    /// A vertex's cell is released last by whichever of the context, its stream's closure
    /// and the user's `Vertex` drops it last; freed on the stream's thread, memory the
    /// launching thread allocated goes back through the allocator's shared arena, under its
    /// lock, on every launch. Reusing cells keeps them on the launching thread.
    spent_cells: VecDeque<Arc<Cell>>,
    /// Work of retired vertices, oldest first, dropped once its stream has let it go: a
    /// vertex's work is allocated here and, dropped last by the stream's thread, would be freed
    /// there, into this thread's allocator arena under its lock (where the two threads then
    /// meet: one run in three of the per-vertex benchmark took twice as long, its stream's
    /// thread asleep on that lock).
    spent_jobs: VecDeque<Arc<dyn Job<SpaceOf<D>>>>,
}

/// How many retired cells `State::spent_cells` keeps; past it, cells that are still held
/// elsewhere (a `Vertex` the user keeps) are let go.
const SPENT_CELLS_LIMIT: usize = 64;

/// How many retired jobs `State::spent_jobs` keeps waiting for their stream to let them go.
const SPENT_JOBS_LIMIT: usize = 64;

impl<D: Device> State<D> {
    /// Drops the retired jobs their streams have let go, oldest first, here (see
    /// `spent_jobs`); past the limit, the oldest goes whoever holds it.
    fn sweep_jobs(&mut self) {
        while let Some(job) = self.spent_jobs.front() {
            if Arc::strong_count(job) > 1 && self.spent_jobs.len() <= SPENT_JOBS_LIMIT {
                break;
            }
            self.spent_jobs.pop_front();
        }
    }

    /// A cell for a new vertex: a retired one nobody holds any more, or a new one.
    fn fresh_cell(&mut self) -> Arc<Cell> {
        while let Some(mut cell) = self.spent_cells.pop_front() {
            if let Some(unique) = Arc::get_mut(&mut cell) {
                unique.reset();
                return cell;
            }
            if self.spent_cells.len() < SPENT_CELLS_LIMIT {
                // Its stream's closure has not let it go yet: look again next time.
                self.spent_cells.push_front(cell);
                break;
            }
            // Held past many launches: by the user, who frees it.
        }
        Cell::new()
    }
}

type SpaceOf<D> = <<D as Device>::Stream as Stream>::Space;

/// The implicit DAG runtime's context (GrCUDA's execution context).
///
/// Launch kernels one after another with [`launch`](Self::launch), [`reduce`](Self::reduce)
/// and [`scan`](Self::scan), in the shapes eager launches take. Each launch becomes a vertex
/// whose parents are inferred from its view handles; it goes to a stream (a parent's, a free
/// one or a new one) on a device chosen by policy, waits there for parents on other streams
/// through events, and the call returns at once. The host waits only in
/// [`read`](Self::read) / [`write`](Self::write) (for the vertices that touch that view),
/// [`Pending::get`], [`Vertex::wait`] and [`synchronize`](Self::synchronize).
///
/// While a vertex is unfinished its views stay borrowed by the context: a plain
/// `x.host_read()` of a view a pending vertex writes is a borrow-conflict error, never a race.
/// The context holds one borrow per view and access kind for all its vertices, and ends it
/// once they have all ended, at the latest when the host sees one finished through the
/// context ([`Vertex::wait`], [`Vertex::state`], [`Pending::get`], [`read`](Self::read),
/// [`write`](Self::write), [`synchronize`](Self::synchronize)) or a task starts.
///
/// Dropping a context waits for every queued vertex to run (or be skipped) first.
///
/// ```
/// use hoplite_core::{RangePolicy, Sum, View};
/// use hoplite_dag::{Context, ContextOptions};
/// use hoplite_dag::device::HostDevice;
/// use hoplite_serial::Serial;
///
/// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
/// let n = 1000;
/// let range = RangePolicy::new(Serial::default(), 0..n);
/// let x: View<f64, 1> = View::new("x", [n])?;
/// let y: View<f64, 1> = View::new("y", [n])?;
/// ctx.launch("fill x", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 1.0))?;
/// ctx.launch("fill y", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 2.0))?;
/// let dot = ctx.reduce("dot", (range, (x.read(), y.read())), |(i, (x, y)), acc| *acc += x.get(i) * y.get(i), Sum::<f64>::new())?;
/// assert_eq!(dot.get()?, 2000.0);
/// assert_eq!(ctx.read(&y)?.get([0]), 2.0);
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
pub struct Context<D: Device> {
    devices: Vec<D>,
    execution: Execution,
    dependency: DependencyPolicy,
    group: BorrowGroup,
    epoch: Instant,
    state: Mutex<State<D>>,
    /// After `state`: dropped once the streams have run their work (see `HeldSlots`' drop).
    /// Lock order: `state`, then `held`.
    held: Arc<Mutex<HeldSlots>>,
}

impl<D: Device> Context<D> {
    /// A context over `devices` with `options`.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] for no device, a threshold outside `0..=1`, or a
    /// transfer-time policy without a bandwidth matrix for this many devices.
    pub fn new(devices: Vec<D>, options: ContextOptions) -> Result<Self> {
        let selector = DeviceSelector::new(
            options.device_selection,
            devices.len(),
            options.data_threshold,
            options.bandwidth.clone(),
        )?;
        Ok(Context {
            devices,
            execution: options.execution,
            dependency: options.dependency,
            group: BorrowGroup::new(),
            epoch: Instant::now(),
            state: Mutex::new(State {
                model: DependencyModel::new(options.dependency),
                assigner: StreamAssigner::new(options.new_stream, options.parent_stream),
                selector,
                streams: Vec::new(),
                live: VertexTable::default(),
                history: History::default(),
                locations: HashMap::default(),
                prune_locations_at: LOCATIONS_LIMIT,
                in_stream_order: Vec::new(),
                poisoned: Vec::new(),
                unreported: Vec::new(),
                last_label: None,
                spent_cells: VecDeque::new(),
                spent_jobs: VecDeque::new(),
            }),
            held: Arc::default(),
        })
    }

    /// The devices.
    pub fn devices(&self) -> &[D] {
        &self.devices
    }

    /// Launches a `parallel_for` as a vertex: `(policy, (y.write(), x.read()))` and the other
    /// shapes of eager launches. Returns at once in async mode.
    ///
    /// # Errors
    ///
    /// An invalid policy, a handle whose view is borrowed outside the context (a host guard,
    /// a handle kept elsewhere), or a stream the device could not make. In sync mode also the
    /// kernel's failure.
    pub fn launch<L, F>(&self, label: &str, launch_spec: L, kernel: F) -> Result<Vertex>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        let (policy, args) = launch_spec.into_launch().into_parts();
        self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            parallel_for_validated::<L::Launch, _>(label, policy, args, &kernel)
        })
    }

    /// Launches a `parallel_reduce` as a vertex; the result's [`Pending::get`] waits for that
    /// vertex only.
    ///
    /// # Errors
    ///
    /// As for [`launch`](Self::launch).
    pub fn reduce<L, F, R>(
        &self,
        label: &str,
        launch_spec: L,
        kernel: F,
        reducer: R,
    ) -> Result<Pending<R::Value>>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        let value = Arc::new(Mutex::new(None));
        let out = value.clone();
        let (policy, args) = launch_spec.into_launch().into_parts();
        let vertex = self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            let v = parallel_reduce_validated::<L::Launch, _, _>(label, policy, args, &kernel, &reducer)?;
            *out.lock() = Some(v);
            Ok(())
        })?;
        Ok(Pending { vertex, value })
    }

    /// Launches a `parallel_scan` as a vertex (Kokkos scan kernel `(i, partial, is_final)`);
    /// the result's [`Pending::get`] gives the total.
    ///
    /// # Errors
    ///
    /// As for [`launch`](Self::launch).
    pub fn scan<L, F, T>(&self, label: &str, launch_spec: L, kernel: F) -> Result<Pending<T>>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue + Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        let value = Arc::new(Mutex::new(None));
        let out = value.clone();
        let (policy, args) = launch_spec.into_launch().into_parts();
        let vertex = self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            let total: T = parallel_scan_validated::<L::Launch, _, _>(label, policy, args, &kernel)?;
            *out.lock() = Some(total);
            Ok(())
        })?;
        Ok(Pending { vertex, value })
    }

    /// Adds a vertex that runs host work instead of a kernel — a message send or receive, a
    /// halo exchange, I/O — ordered by the views of `args` exactly like a launch with the same
    /// handles: it waits for the vertices whose accesses conflict with its own, and later
    /// vertices that touch those views wait for it. `work` runs once, on a stream's worker
    /// thread, with the handles (their borrows held by the context, so that, as for a kernel,
    /// nothing outside the context touches the views meanwhile; the borrows of finished
    /// vertices end before it starts, so it may borrow its parents' views on the host). An
    /// `Err` or a panic fails the vertex and poisons its descendants, as a failed kernel does.
    ///
    /// # Errors
    ///
    /// A handle whose view is borrowed outside the context, or a stream the device could not
    /// make; in sync mode also the work's failure.
    ///
    /// ```
    /// use hoplite_core::View;
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let saved = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    /// let out = saved.clone();
    /// ctx.task("save", (x.read(),), move |(x,)| {
    ///     out.lock().push(x.view().len());
    ///     Ok(())
    /// })?;
    /// ctx.synchronize()?;
    /// assert_eq!(*saved.lock(), vec![4]);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task<A, F>(&self, label: &str, args: A, work: F) -> Result<Vertex>
    where
        A: GraphArgs + hoplite_core::view::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, None, args, move |_, handles| work(handles))
    }

    /// [`task`](Self::task) whose work also gets the execution space instance of the stream
    /// the context picked for it: the way to issue device work (a kernel launch on a CUDA
    /// stream's instance, say) ordered by `args` like any launch. The vertex is finished when
    /// `work` returns, and a later vertex that conflicts with a finished one gets no edge to
    /// it, so work that queues asynchronous device work waits for it (a fence of the
    /// instance) before it returns.
    ///
    /// # Errors
    ///
    /// As for [`task`](Self::task).
    ///
    /// ```
    /// use hoplite_core::{ExecutionSpace, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// ctx.task_on("fence", (x.read(),), |space: &Serial, (x,)| {
    ///     assert_eq!(x.view().len(), 4);
    ///     space.fence()
    /// })?;
    /// ctx.synchronize()?;
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task_on<A, F>(&self, label: &str, args: A, work: F) -> Result<Vertex>
    where
        A: GraphArgs + hoplite_core::view::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, None, args, work)
    }

    /// [`task_on`](Self::task_on) on device `device` of the context (an index into
    /// [`devices`](Self::devices)), whatever the device-selection policy would pick: for work
    /// that must run where its data is, such as a kernel launch on views of one GPU. The
    /// vertex takes a parent's stream if the parent-stream policy picks one on that device,
    /// else a free or new stream of the device.
    ///
    /// # Errors
    ///
    /// [`DagError::NoSuchDevice`] for an index past the devices; otherwise as for
    /// [`task`](Self::task).
    ///
    /// ```
    /// use hoplite_core::{ExecutionSpace, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let devices = vec![HostDevice::new("a", vec![Serial::default()])?, HostDevice::new("b", vec![Serial::default()])?];
    /// let ctx = Context::new(devices, ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// for _ in 0..3 {
    ///     ctx.task_on_device("on b", 1, (x.read(),), |space: &Serial, _| space.fence())?;
    /// }
    /// assert!(ctx.placements().iter().all(|&(device, _)| device == 1));
    /// assert!(ctx.task_on_device("nowhere", 2, (x.read(),), |_: &Serial, _| Ok(())).is_err());
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task_on_device<A, F>(&self, label: &str, device: usize, args: A, work: F) -> Result<Vertex>
    where
        A: GraphArgs + hoplite_core::view::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, Some(device), args, work)
    }

    /// The common path of the tasks: host work on the instance of the stream picked (on
    /// device `pin`, if given).
    fn task_at<A, F>(&self, label: &str, pin: Option<usize>, args: A, work: F) -> Result<Vertex>
    where
        A: GraphArgs + hoplite_core::view::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        // A one-point policy stands in for the kernel's: the work runs once, on the host;
        // `submit_on` moves the policy onto the picked stream's instance.
        let policy = RangePolicy::new(SpaceOf::<D>::default(), 0..1);
        let held = Arc::downgrade(&self.held);
        self.submit_on::<(RangePolicy<SpaceOf<D>>, A), _>(
            label,
            pin,
            policy,
            args,
            move |_, policy, handles| {
                // Host work may borrow its views on the host (`x.view().to_vec()`): the borrows
                // of its finished parents end first, as they would have with their kernels.
                end_finished_borrows(&held);
                work(policy.policy().space(), handles)
            },
        )
    }

    /// The common path of every launch: record the accesses, hand the handles' borrows to the
    /// context (`HeldSlots`), find the parents, pick device and stream, enqueue.
    fn submit<L, K>(&self, label: &str, policy: L::Policy, args: L::Args, run: K) -> Result<Vertex>
    where
        L: GraphLaunch<SpaceOf<D>> + 'static,
        K: FnOnce(&str, &ValidatedPolicy<L::Policy>, &L::Args) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.submit_on::<L, K>(label, None, policy, args, run)
    }

    /// [`submit`](Self::submit) on device `pin` when given (a stream of that device, a
    /// parent's if the stream policy picks one there), else where the policies say.
    fn submit_on<L, K>(
        &self,
        label: &str,
        pin: Option<usize>,
        policy: L::Policy,
        args: L::Args,
        run: K,
    ) -> Result<Vertex>
    where
        L: GraphLaunch<SpaceOf<D>> + 'static,
        K: FnOnce(&str, &ValidatedPolicy<L::Policy>, &L::Args) -> hoplite_core::Result<()> + Send + 'static,
    {
        // The policy is checked now, so that a bad one is this call's error.
        policy.validate(label)?;
        if let Some(device) = pin
            && device >= self.devices.len()
        {
            return Err(DagError::NoSuchDevice {
                device,
                devices: self.devices.len(),
            });
        }
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        held.bound();
        // Recorded into a list a finished vertex left, which the model then keeps.
        let mut accesses = state.model.access_list();
        GraphArgs::record_handles(&args, &mut accesses);
        let handle_count = accesses.len();
        // Handles in the group are not checked against each other: two of this launch that
        // conflict (`(x.write(), x.read())`) are refused here, as an eager launch refuses them.
        if let Some(conflict) = Access::conflict_within(&accesses) {
            return Err(DagError::Core(conflict));
        }
        let (handles, used, asked) = {
            let mut taking = Taking {
                slots: &mut held,
                group: &self.group,
                used: SmallVec::new(),
                asked: 0,
            };
            // SAFETY: handles of the context's group (and those relying on its held borrows)
            // are used only by the kernels of its vertices, and the context orders every two
            // vertices whose accesses conflict (the model gives the later one an edge to the
            // earlier, or the earlier has finished before the later is made): its kernel starts
            // after the earlier kernel has returned, through stream order or an event (each a
            // mutex hand-off). Host access goes through outside borrows, which the group's and
            // the held borrows are checked against. A held borrow stays until every vertex that
            // uses it has ended (`HeldSlots`), and a vertex's work is done with its handles
            // before it ends (`VertexJob::run`: the handles it keeps afterwards end nothing and
            // are never used again); a refused launch drops its handles unused before its slots
            // are released. `held` stays locked until the vertex is a user of its slots, so no
            // host wait ends them in between.
            let handles = unsafe { GraphArgs::into_held(args, &self.group, &mut taking) };
            (handles, taking.used, taking.asked)
        };
        // Every handle relies on a held borrow (or the launch is refused below): none ends a
        // borrow when dropped, so the vertex's job keeps them, to be dropped here.
        let all_held = asked == handle_count;
        // Gives back the slots a refused launch took (those no earlier vertex uses).
        let refuse = |handles: L::Args, held: &mut HeldSlots, e: DagError| {
            drop(handles);
            for &k in &used {
                held.release_if_unused(k);
            }
            Err(e)
        };
        if let Some(conflict) = GraphArgs::conflict(&handles) {
            let e = DagError::Core(conflict.clone());
            return refuse(handles, &mut held, e);
        }
        let cell = state.fresh_cell();
        // Launches in a loop repeat their label: the last one is shared rather than copied.
        let label_owned: Arc<str> = match &state.last_label {
            Some(last) if **last == *label => last.clone(),
            _ => {
                let fresh: Arc<str> = Arc::from(label);
                state.last_label = Some(fresh.clone());
                fresh
            }
        };
        // A launch that conflicts with a failed vertex's access would have been its
        // descendant had it come before the failed vertex finished: it fails the same way,
        // whatever the timing.
        // Boxed: the vertex's work carries it, and an error inline would add 120 bytes to
        // every launch's work for the rare one that inherits a failure.
        let poisoned: Option<Box<DagError>> = state
            .poisoned
            .iter()
            .find(|(p, _)| accesses.iter().any(|a| state.model.conflicts(p, a)))
            .map(|(_, e)| Box::new(e.clone()));
        // Planned, not yet added: nothing below may leave the model changed for a launch
        // that fails (an earlier vertex would lose an active access, and a later launch the
        // edge that orders it).
        let plan = state.model.plan(&accesses);
        let parents: SmallVec<[VertexId; 4]> = plan.edges().iter().map(|e| e.parent).collect();

        // A parent's stream if the policy gives one, else a free or new stream on the device
        // the selection policy picks.
        let assignment = match state.assigner.parent_stream_on(&parents, pin) {
            Some(s) => Assignment::Existing(s),
            None if let Some(device) = pin => state
                .assigner
                .free_or_new(device, self.devices[device].max_streams()),
            None => {
                // Only the data-aware policies look at where the arguments are.
                let data: SmallVec<[ArgumentData; 8]> = if state.selector.needs_data() {
                    accesses
                        .iter()
                        .map(|a| ArgumentData {
                            bytes: a.bytes,
                            up_to_date: state
                                .locations
                                .get(&a.allocation)
                                .copied()
                                .unwrap_or(LocationSet::only(Location::Cpu)),
                        })
                        .collect()
                } else {
                    SmallVec::new()
                };
                let busy = if state.selector.policy() == DeviceSelectionPolicy::StreamAware {
                    state.assigner.busy_streams(self.devices.len())
                } else {
                    Vec::new()
                };
                let device = state.selector.select(&data, &busy);
                state
                    .assigner
                    .free_or_new(device, self.devices[device].max_streams())
            }
        };
        let stream_index = match assignment {
            Assignment::Existing(s) => s,
            Assignment::New { device, .. } => {
                let stream = match self.devices[device].new_stream() {
                    Ok(stream) => stream,
                    Err(e) => return refuse(handles, &mut held, e),
                };
                state.streams.push(stream);
                state.in_stream_order.push(VecDeque::new());
                state.assigner.add_stream(device)
            }
        };
        let device = state.assigner.streams()[stream_index].device;
        let policy =
            match ValidatedPolicy::new(label, policy.on_instance(state.streams[stream_index].space())) {
                Ok(policy) => policy,
                Err(e) => return refuse(handles, &mut held, e.into()),
            };
        // Where the data will be up to date once the vertex ran.
        for a in accesses.iter() {
            let at = Location::Device(device);
            let locations = state
                .locations
                .entry(a.allocation)
                .or_insert(LocationSet::only(Location::Cpu));
            match a.kind {
                AccessKind::Read => locations.insert(at),
                AccessKind::Write | AccessKind::Atomic => *locations = LocationSet::only(at),
            }
        }
        let (id, edges) = state.model.commit(accesses, plan);
        state.assigner.place(id, &parents, stream_index);
        // The vertex uses its slots from now on; `held` is given back before anything below
        // could wait on a stream (whose work may be a task sweeping the slots).
        let mut slots = SmallVec::new();
        for &k in &used {
            if held.slots[k as usize].held.is_some() {
                held.use_slot(k, stream_index, &cell);
                slots.push(k);
            } else {
                // Handles that keep their own borrows (`into_held`'s default) took no slot.
                held.release_if_unused(k);
            }
        }
        drop(held);

        // Parents on other streams are waited for through their events; those on this
        // stream come first by stream order.
        let mut parent_cells: SmallVec<[Arc<Cell>; 4]> = SmallVec::new();
        for p in &parents {
            if let Some(parent) = state.live.get(*p) {
                parent_cells.push(parent.cell.clone());
                if parent.stream != stream_index {
                    state.streams[stream_index].wait_event(&parent.event);
                }
            }
        }
        let label_owned_record = label_owned.clone();
        let job: Arc<dyn Job<SpaceOf<D>>> = Arc::new(VertexJob {
            work: Mutex::new(VertexWork {
                run: Some(run),
                policy,
                handles: Some(handles),
            }),
            release_handles: !all_held,
            label: label_owned,
            cell: cell.clone(),
            parent_cells,
            poisoned,
        });
        let event = state.streams[stream_index].enqueue_recorded_job(job.clone());
        state.live.insert(
            id,
            Live {
                event,
                stream: stream_index,
                cell: cell.clone(),
                job,
                slots,
            },
        );
        state.in_stream_order[stream_index].push_back(id);
        state.history.push(Record {
            id,
            label: label_owned_record,
            device,
            stream: stream_index,
            edges,
            ended: None,
        });
        drop(state);
        let vertex = Vertex {
            id,
            cell,
            held: Arc::downgrade(&self.held),
        };
        if self.execution == Execution::Sync {
            vertex.wait()?;
        }
        Ok(vertex)
    }

    /// Retires the vertices whose kernels ended: they leave the frontier and free their
    /// streams; the accesses of failed ones are remembered (see `State::poisoned`).
    fn retire(state: &mut State<D>, held: &mut HeldSlots) {
        for s in 0..state.in_stream_order.len() {
            while let Some(&id) = state.in_stream_order[s].front() {
                // Retired already (by a host wait), or its work has ended.
                let ended = state.live.get(id).is_none_or(|l| l.cell.has_ended());
                if !ended {
                    break;
                }
                state.in_stream_order[s].pop_front();
                Self::retire_one(state, held, id);
            }
        }
        if state.locations.len() > state.prune_locations_at {
            let State { locations, model, .. } = &mut *state;
            locations.retain(|key, _| model.uses(*key));
            // What unfinished vertices still use stays; scan again only once that has doubled.
            state.prune_locations_at = LOCATIONS_LIMIT.max(2 * state.locations.len());
        }
    }

    /// Retires one finished vertex (its cell holds its final state), unless that happened
    /// already.
    fn retire_one(state: &mut State<D>, held: &mut HeldSlots, id: VertexId) {
        let Some(live) = state.live.remove(id) else {
            return;
        };
        // The history keeps how it ended; the cell goes (see `Record::ended`).
        if let Some(record) = state.history.get_mut(id) {
            let p = live.cell.progress.lock();
            record.ended = Some(Ended {
                state: p.state.name(),
                start: p.start,
                end: p.end,
            });
        }
        if live.cell.has_failed()
            && let VertexState::Failed(e) = live.cell.state()
        {
            for a in state.model.accesses(id).unwrap_or_default() {
                state.poisoned.push((a.clone(), e.clone()));
            }
            state.unreported.push(e);
        }
        state.model.finish(id);
        state.assigner.finish(id);
        state.spent_cells.push_back(live.cell);
        state.spent_jobs.push_back(live.job);
        state.sweep_jobs();
        // After the job, whose handles hold views too, has most likely gone.
        for &k in &live.slots {
            held.release_if_orphaned(k);
        }
    }

    /// Waits for the unfinished vertices whose accesses conflict with `access`. A read then
    /// returns the failure of a failed vertex it conflicts with; a write takes the elements
    /// back for the host, clearing the failures it covers.
    fn wait_for(&self, access: &Access) -> Result<()> {
        let waits: Vec<(VertexId, Arc<Cell>)> = {
            let mut state = self.state.lock();
            Self::retire(&mut state, &mut self.held.lock());
            let ids = state.model.conflicting(access);
            ids.iter()
                .filter_map(|&id| state.live.get(id).map(|l| (id, l.cell.clone())))
                .collect()
        };
        // The latest first: a stream ends its vertices in order, so once the latest of each
        // stream has ended the earlier ones have too, and the host sleeps once per stream
        // instead of once per vertex.
        for (_, cell) in waits.iter().rev() {
            cell.wait();
        }
        // The waited vertices are finished (their cells say so, with their outcome): retire
        // them now, whether or not their streams have reported them yet, so that every
        // failure among them is recorded before the check below.
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        for &(id, _) in &waits {
            Self::retire_one(&mut state, &mut held, id);
        }
        // The host takes the view next: the borrows only finished vertices use end now.
        held.sweep();
        drop(held);
        if access.kind == AccessKind::Write {
            let footprint = &access.footprint;
            state
                .poisoned
                .retain(|(p, _)| !(p.allocation == access.allocation && footprint.covers(&p.footprint)));
        } else if let Some((_, e)) = state
            .poisoned
            .iter()
            .find(|(p, _)| state.model.conflicts(p, access))
        {
            return Err(e.clone());
        }
        let locations = state
            .locations
            .entry(access.allocation)
            .or_insert(LocationSet::only(Location::Cpu));
        match access.kind {
            AccessKind::Read => locations.insert(Location::Cpu),
            _ => *locations = LocationSet::only(Location::Cpu),
        }
        Ok(())
    }

    /// Reads `view` on the host: waits for the vertices that write it (and, through their
    /// streams, their ancestors) — no other — and borrows it.
    ///
    /// # Errors
    ///
    /// The failure of a vertex that writes the view (or of its ancestor), or a borrow
    /// conflict with a handle held outside the context.
    pub fn read<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace>(
        &self,
        view: &'v View<T, R, L, S>,
    ) -> Result<HostRead<'v, T, R, L, S>> {
        self.wait_for(&Access::of_view(view, AccessKind::Read))?;
        Ok(view.host_read()?)
    }

    /// Writes `view` on the host: waits for every vertex that reads or writes it, and borrows
    /// it exclusively. Writing on the host also clears a failed vertex's mark on the view.
    ///
    /// # Errors
    ///
    /// As for [`read`](Self::read).
    pub fn write<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace>(
        &self,
        view: &'v View<T, R, L, S>,
    ) -> Result<HostWrite<'v, T, R, L, S>> {
        self.wait_for(&Access::of_view(view, AccessKind::Write))?;
        Ok(view.host_write()?)
    }

    /// Waits for every vertex; returns the first failure not returned by an earlier call.
    ///
    /// # Errors
    ///
    /// That failure.
    pub fn synchronize(&self) -> Result<()> {
        let cells: Vec<(VertexId, Arc<Cell>)> = {
            let state = self.state.lock();
            let mut cells: Vec<(VertexId, Arc<Cell>)> =
                state.live.iter().map(|(id, l)| (id, l.cell.clone())).collect();
            cells.sort_unstable_by_key(|&(id, _)| id);
            cells
        };
        // The latest first, as in `wait_for`.
        for (_, cell) in cells.iter().rev() {
            cell.wait();
        }
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        for &(id, _) in &cells {
            Self::retire_one(&mut state, &mut held, id);
        }
        held.sweep();
        drop(held);
        let unreported = std::mem::take(&mut state.unreported);
        match unreported.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Records the launches `build` makes into an explicit graph on `space`, with the edges
    /// this context's dependency policy infers ([`record`](crate::record)): implicit
    /// dependencies once, graph launch cost on every replay.
    ///
    /// # Errors
    ///
    /// As for [`record`](crate::record).
    pub fn record<F>(&self, space: &SpaceOf<D>, build: F) -> Result<hoplite_graph::Graph<SpaceOf<D>>>
    where
        SpaceOf<D>: ParallelFor<hoplite_core::RangePolicy<SpaceOf<D>>>,
        F: for<'b, 'g> FnOnce(&mut crate::Recorder<'b, 'g, SpaceOf<D>>),
    {
        crate::record(space, self.dependency, build)
    }

    /// The number of streams made so far.
    pub fn stream_count(&self) -> usize {
        self.state.lock().streams.len()
    }

    /// The device and stream of every vertex so far (the last [`HISTORY_LIMIT`]), in launch
    /// order.
    pub fn placements(&self) -> Vec<(usize, usize)> {
        self.state
            .lock()
            .history
            .iter()
            .map(|r| (r.device, r.stream))
            .collect()
    }

    /// The parents of every vertex so far (the last [`HISTORY_LIMIT`]), in launch order.
    pub fn parents(&self) -> Vec<Vec<VertexId>> {
        self.state
            .lock()
            .history
            .iter()
            .map(|r| r.edges.iter().map(|e| e.parent).collect())
            .collect()
    }

    /// The DAG in Graphviz DOT: vertices with label, device, stream and state; edges labelled
    /// with the view that caused them.
    pub fn to_dot(&self) -> String {
        let state = self.state.lock();
        let mut out = String::from("digraph dag {\n  node [shape=box];\n");
        for r in state.history.iter() {
            let id = r.id;
            let _ = writeln!(
                out,
                "  v{id} [label=\"{}\\n{} stream {} | {}\"];",
                escape(&r.label),
                escape(&self.devices[r.device].name()),
                r.stream,
                r.progress(&state.live).0
            );
            for e in &r.edges {
                let _ = writeln!(out, "  v{} -> v{id} [label=\"{}\"];", e.parent, escape(&e.view));
            }
        }
        out.push_str("}\n");
        out
    }

    /// Start and end of every vertex that ran, since the context was made: `(label, device,
    /// stream, start, end)` in launch order.
    pub fn timings(&self) -> Vec<(String, usize, usize, Duration, Duration)> {
        let state = self.state.lock();
        state
            .history
            .iter()
            .filter_map(|r| {
                let (_, start, end) = r.progress(&state.live);
                let (start, end) = (start?, end?);
                Some((
                    r.label.to_string(),
                    r.device,
                    r.stream,
                    start.saturating_duration_since(self.epoch),
                    end.saturating_duration_since(self.epoch),
                ))
            })
            .collect()
    }

    /// Writes a Chrome trace (`chrome://tracing`, Perfetto) of the vertices that ran: one
    /// process per device, one row per stream.
    ///
    /// # Errors
    ///
    /// [`DagError::Io`] when the file cannot be written.
    pub fn write_trace(&self, path: &Path) -> Result<()> {
        let mut out = String::from("{\"traceEvents\":[\n");
        let timings = self.timings();
        for (k, (label, device, stream, start, end)) in timings.iter().enumerate() {
            let sep = if k + 1 < timings.len() { "," } else { "" };
            let _ = writeln!(
                out,
                "{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{device},\"tid\":{stream},\"ts\":{:.3},\"dur\":{:.3}}}{sep}",
                escape(label),
                start.as_secs_f64() * 1e6,
                end.saturating_sub(*start).as_secs_f64() * 1e6,
            );
        }
        out.push_str("],\"displayTimeUnit\":\"ms\"}\n");
        std::fs::write(path, out).map_err(|e| DagError::Io(format!("cannot write {}: {e}", path.display())))
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: VertexId) -> Record {
        Record {
            id,
            label: Arc::from("v"),
            device: 0,
            stream: id % 3,
            edges: Edges::new(),
            ended: None,
        }
    }

    #[test]
    fn the_history_keeps_the_latest_records_in_order_and_finds_them_by_id() {
        let mut history = History::default();
        assert!(history.get_mut(0).is_none(), "empty");
        for id in 0..10 {
            history.push(record(id));
        }
        assert_eq!(
            history.iter().map(|r| r.id).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert_eq!(history.get_mut(7).map(|r| r.stream), Some(1));
        assert!(history.get_mut(10).is_none());
        // Past the limit the oldest records are overwritten where they are.
        let total = HISTORY_LIMIT + 5;
        for id in 10..total {
            history.push(record(id));
        }
        assert_eq!(history.records.len(), HISTORY_LIMIT);
        let ids: Vec<VertexId> = history.iter().map(|r| r.id).collect();
        assert_eq!(ids.first(), Some(&5), "the five oldest are gone");
        assert_eq!(ids.last(), Some(&(total - 1)));
        assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "in launch order");
        assert!(history.get_mut(4).is_none(), "overwritten");
        for id in [5, 6, HISTORY_LIMIT, total - 1] {
            assert_eq!(history.get_mut(id).map(|r| r.id), Some(id));
        }
        assert!(history.get_mut(total).is_none());
    }
}
