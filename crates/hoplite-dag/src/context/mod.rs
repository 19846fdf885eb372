//! Layer 3: the context — launches become vertices, vertices go to streams, the host waits
//! only for what it touches.
//!
//! [`Context`] is defined here with its construction; its other methods live by concern:
//! `launch` (the launch and task entry points), `submit` (turning one launch into a vertex),
//! `host` (retiring finished vertices, host access) and `export` (history queries, DOT,
//! timings, Chrome trace). The pieces they share: `options`, `vertex` (what the caller holds
//! of a vertex), `job` (what its stream runs), `held` (the borrows held for handles),
//! `history`, and `state` (everything behind the context's lock).

mod export;
mod held;
mod history;
mod host;
mod inspect;
mod job;
mod launch;
#[cfg(all(test, loom))]
mod loom_models;
mod options;
mod state;
mod submit;
mod vertex;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use hoplite_core::ParallelFor;
use hoplite_core::held::BorrowGroup;
use rustc_hash::FxHashMap as HashMap;

pub use export::VertexTiming;
pub use history::HISTORY_LIMIT;
pub use inspect::{DagSnapshot, Progress, StreamInfo, VertexInfo};
pub use options::{ContextOptions, Execution};
pub use vertex::{Pending, Vertex, VertexState};

use self::held::HeldSlots;
use self::history::History;
use self::state::{LOCATIONS_LIMIT, State};
use crate::Result;
use crate::device::{Device, Stream};
use crate::model::{DependencyModel, DependencyPolicy};
use crate::selection::DeviceSelector;
use crate::streams::StreamAssigner;
use crate::sync_prims::Mutex;
use crate::vertex_table::VertexTable;

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
    /// Lock order: `state`, then `held`. A std `Arc` under loom too: vertices hold it weakly.
    held: Arc<Mutex<HeldSlots>>,
}

impl<D: Device> Context<D> {
    /// A context over `devices` with `options`.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Sum, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
    /// let (x, y) = (View::<i64, 1>::new("x", [100])?, View::<i64, 1>::new("y", [100])?);
    /// let range = RangePolicy::new(Serial::default(), 0..100);
    /// ctx.launch("iota", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, *i as i64))?;
    /// // Reads `x`: runs after `iota`, inferred from the handles.
    /// ctx.launch("double", (range, (y.write(), x.read())), |(i, (y, x))| y.set(i, 2 * x.get(i)))?;
    /// assert_eq!(ctx.read(&y)?.get([99]), 198); // waits for `double` only
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`](crate::DagError::InvalidOptions) for no device, a threshold
    /// outside `0..=1`, or a transfer-time policy without a bandwidth matrix for this many devices.
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
                spent_statuses: VecDeque::new(),
                spent_jobs: VecDeque::new(),
            }),
            held: Arc::default(),
        })
    }

    /// The devices.
    pub fn devices(&self) -> &[D] {
        &self.devices
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

    /// How many launches queued behind a busy stream, though the stream policy asked for a
    /// free or new one, because their device already had as many streams as it runs at once
    /// ([`Device::max_streams`](crate::device::Device::max_streams); a
    /// [`HostDevice`](crate::device::HostDevice) runs one per instance unless told
    /// otherwise, see [`HostDevice::streams_per_instance`](crate::device::HostDevice::streams_per_instance)).
    ///
    /// ```
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions, NewStreamPolicy};
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let one = HostDevice::new("cpu", vec![Serial::default()])?;
    /// let ctx = Context::new(vec![one], ContextOptions::default().new_stream(NewStreamPolicy::AlwaysNew))?;
    /// let (a, b): (View<f64, 1>, View<f64, 1>) = (View::new("a", [4])?, View::new("b", [4])?);
    /// ctx.launch("a", (RangePolicy::new(Serial::default(), 0..4), (a.write(),)), |(i, (a,))| a.set(i, 1.0))?;
    /// ctx.launch("b", (RangePolicy::new(Serial::default(), 0..4), (b.write(),)), |(i, (b,))| b.set(i, 2.0))?;
    /// ctx.synchronize()?;
    /// // One instance, one stream: the second launch asked for a new stream and queued instead.
    /// assert_eq!((ctx.stream_count(), ctx.capped_launches()), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capped_launches(&self) -> usize {
        self.state.lock().assigner.capped()
    }
}
