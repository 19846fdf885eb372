//! What a context shows of its state now, as GrCUDA users inspect its `ExecutionDAG` when they
//! debug: the frontier, each vertex's parents and children, each stream's unfinished vertices,
//! and where each view is up to date.

use hoplite_core::{ArrayLayout, MemorySpace, View, ViewValue};

use super::Context;
use crate::device::Device;
use crate::model::VertexId;
use crate::selection::{Location, LocationSet};

/// How far a vertex has come, as the context last saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Progress {
    /// Waiting in its stream.
    Queued,
    /// Its kernel is running.
    Running,
    /// Its kernel ran to completion.
    Done,
    /// Its kernel failed, or it did not run because an ancestor failed.
    Failed,
}

impl Progress {
    fn of(name: &str) -> Progress {
        match name {
            "queued" => Progress::Queued,
            "running" => Progress::Running,
            "failed" => Progress::Failed,
            _ => Progress::Done,
        }
    }
}

/// One vertex of a [`DagSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VertexInfo {
    /// Its id (launch order).
    pub id: VertexId,
    /// The launch's label.
    pub label: String,
    /// The device it runs on (index into [`Context::devices`]).
    pub device: usize,
    /// The stream it runs on (index into [`DagSnapshot::streams`]).
    pub stream: usize,
    /// How far it has come.
    pub progress: Progress,
    /// The vertices it waits for, with the label of the view each dependency is on.
    pub parents: Vec<(VertexId, String)>,
    /// The vertices that wait for it (among those the snapshot holds).
    pub children: Vec<VertexId>,
}

/// One stream of a [`DagSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StreamInfo {
    /// The device it belongs to.
    pub device: usize,
    /// Its vertices whose work has not ended, in stream order: empty for a free stream.
    pub active: Vec<VertexId>,
}

impl StreamInfo {
    /// Whether no vertex is queued or running on it (GrCUDA's free stream).
    pub fn is_free(&self) -> bool {
        self.active.is_empty()
    }
}

/// A context's state at one moment ([`Context::snapshot`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DagSnapshot {
    /// The vertices the context remembers (the last [`HISTORY_LIMIT`](crate::HISTORY_LIMIT)),
    /// in launch order.
    pub vertices: Vec<VertexInfo>,
    /// The frontier: unfinished vertices that a new launch may still depend on, in order.
    pub frontier: Vec<VertexId>,
    /// Every stream the context has made, in the order it made them.
    pub streams: Vec<StreamInfo>,
}

impl DagSnapshot {
    /// The vertex `id`, if the snapshot holds it.
    pub fn vertex(&self, id: VertexId) -> Option<&VertexInfo> {
        let first = self.vertices.first()?.id;
        self.vertices.get(id.checked_sub(first)?)
    }

    /// The streams with no unfinished vertex.
    pub fn free_streams(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&s| self.streams[s].is_free())
            .collect()
    }

    /// The streams with an unfinished vertex.
    pub fn busy_streams(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&s| !self.streams[s].is_free())
            .collect()
    }
}

impl<D: Device> Context<D> {
    /// The context's state now: every remembered vertex with its placement, progress, parents
    /// and children; the frontier; every stream with its unfinished vertices. Vertices whose
    /// work has ended are retired first, so the frontier and the streams are current.
    ///
    /// ```
    /// use hoplite_dag::{Context, ContextOptions, Progress};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
    /// let (x, y): (View<f64, 1>, View<f64, 1>) = (View::new("x", [8])?, View::new("y", [8])?);
    /// let range = || RangePolicy::new(Serial::default(), 0..8);
    /// // "fill" waits until "copy" is launched: an edge is only inferred to an unfinished vertex.
    /// let copy_launched = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    /// let launched = copy_launched.clone();
    /// ctx.launch("fill", (range(), (x.write(),)), move |(i, (x,))| {
    ///     while !launched.load(std::sync::atomic::Ordering::Acquire) {
    ///         std::thread::yield_now();
    ///     }
    ///     x.set(i, 1.0)
    /// })?;
    /// let copy = ctx.launch("copy", (range(), (y.write(), x.read())), |(i, (y, x))| y.set(i, x.get(i)));
    /// copy_launched.store(true, std::sync::atomic::Ordering::Release);
    /// copy?;
    /// ctx.synchronize()?;
    /// let snapshot = ctx.snapshot();
    /// assert_eq!(snapshot.vertices[1].parents, [(0, "x".to_string())]);
    /// assert_eq!(snapshot.vertices[0].children, [1]);
    /// assert!(snapshot.vertices.iter().all(|v| v.progress == Progress::Done));
    /// assert!(snapshot.frontier.is_empty() && snapshot.busy_streams().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> DagSnapshot {
        let mut state = self.state.lock();
        Self::retire(&mut state, &mut self.held.lock());
        let mut vertices: Vec<VertexInfo> = state
            .history
            .iter()
            .map(|r| VertexInfo {
                id: r.id,
                label: r.label.to_string(),
                device: r.device,
                stream: r.stream,
                progress: Progress::of(r.progress(&state.live).0),
                parents: r.edges.iter().map(|e| (e.parent, e.view.to_string())).collect(),
                children: Vec::new(),
            })
            .collect();
        if let Some(first) = vertices.first().map(|v| v.id) {
            for child in 0..vertices.len() {
                let id = vertices[child].id;
                let parents: Vec<VertexId> = vertices[child].parents.iter().map(|p| p.0).collect();
                for parent in parents {
                    if let Some(k) = parent.checked_sub(first).filter(|&k| k < vertices.len())
                        && !vertices[k].children.contains(&id)
                    {
                        vertices[k].children.push(id);
                    }
                }
            }
        }
        let streams = state
            .assigner
            .streams()
            .iter()
            .enumerate()
            .map(|(s, info)| StreamInfo {
                device: info.device,
                active: state
                    .in_stream_order
                    .get(s)
                    .map(|order| {
                        order
                            .iter()
                            .copied()
                            .filter(|&id| state.live.get(id).is_some_and(|l| !l.status.has_ended()))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        DagSnapshot {
            vertices,
            frontier: state.model.frontier(),
            streams,
        }
    }

    /// The frontier now: unfinished vertices that a new launch may still depend on, in order
    /// (see [`snapshot`](Self::snapshot)).
    pub fn frontier(&self) -> Vec<VertexId> {
        let mut state = self.state.lock();
        Self::retire(&mut state, &mut self.held.lock());
        state.model.frontier()
    }

    /// Where the context holds `view`'s data up to date, as GrCUDA tracks each array: a
    /// kernel that writes it leaves it on its device alone, a kernel that reads it adds its
    /// device, a host access through the context ([`read`](Self::read),
    /// [`write`](Self::write)) adds the CPU (a host write leaves it there alone). A view the
    /// context has not seen (or has forgotten) is on the CPU.
    ///
    /// ```
    /// use hoplite_dag::{Context, ContextOptions, Location};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let devices = vec![HostDevice::new("a", vec![Serial::default()])?, HostDevice::new("b", vec![Serial::default()])?];
    /// let ctx = Context::new(devices, ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// assert_eq!(ctx.locations(&x).iter().collect::<Vec<_>>(), [Location::Cpu]);
    /// ctx.launch("fill", (RangePolicy::new(Serial::default(), 0..8), (x.write(),)), |(i, (x,))| x.set(i, 1.0))?;
    /// assert_eq!(ctx.locations(&x).iter().collect::<Vec<_>>(), [Location::Device(0)]);
    /// assert_eq!(ctx.read(&x)?.get([3]), 1.0);
    /// assert_eq!(ctx.locations(&x).iter().collect::<Vec<_>>(), [Location::Cpu, Location::Device(0)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn locations<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
        &self,
        view: &View<T, R, L, S>,
    ) -> LocationSet {
        self.state
            .lock()
            .locations
            .get(&view.allocation_key())
            .copied()
            .unwrap_or(LocationSet::only(Location::Cpu))
    }
}
