//! # hoplite-dag
//!
//! The implicit DAG runtime (GrCUDA): launch kernels one after another as if eagerly; the
//! runtime infers each launch's dependencies from the view handles it takes, runs independent
//! launches at the same time on different streams (and devices), and makes the host wait only
//! where it touches data that is still being computed.
//!
//! ```
//! use hoplite_core::{RangePolicy, View};
//! use hoplite_dag::{Context, ContextOptions};
//! use hoplite_dag::device::HostDevice;
//! use hoplite_serial::Serial;
//!
//! let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
//! let range = RangePolicy::new(Serial::default(), 0..100);
//! let (a, b, c) = (View::<f64, 1>::new("a", [100])?, View::<f64, 1>::new("b", [100])?, View::<f64, 1>::new("c", [100])?);
//! ctx.launch("A", (range.clone(), (a.write(),)), |(i, (a,))| a.set(i, 1.0))?;
//! ctx.launch("B", (range.clone(), (b.write(),)), |(i, (b,))| b.set(i, 2.0))?; // independent of A
//! ctx.launch("C", (range, (c.write(), a.read(), b.read())), |(i, (c, a, b))| c.set(i, a.get(i) + b.get(i)))?;
//! // C's parents are A and B, unless they had already finished when C was launched.
//! assert!(ctx.parents()[2].iter().all(|p| [0, 1].contains(p)));
//! assert_eq!(ctx.read(&c)?.get([7]), 3.0);
//! # Ok::<(), hoplite_dag::DagError>(())
//! ```
//!
//! # Layers
//!
//! 1. The model ([`DependencyModel`], [`DeviceSelector`], [`StreamAssigner`]): the dependency
//!    computation, the five device selection policies and the stream policies as pure code
//!    over descriptions (exact tests, no threads).
//! 2. [`device`]: the [`Stream`](device::Stream) and [`Device`](device::Device) traits
//!    (enqueue, record an event, wait for an event in the stream, synchronize, is idle) and
//!    the host implementation, whose streams are in-order queues served by threads of their
//!    own. A device backend implements the same traits (CUDA streams and events, NUMA node
//!    pools); [`conformance`] checks any implementation against the traits' axioms.
//! 3. [`Context`]: launches become vertices, vertices go to streams, host access waits for
//!    what it touches, failures reach exactly the descendants of the failed vertex.
//!
//! # Failures
//!
//! A kernel that panics (or returns an error) marks its vertex failed. Its descendants do not
//! run: they fail with [`DagError::AncestorFailed`], naming the failed vertex. So does every
//! later launch that would have been a descendant had it come before the failed vertex
//! finished (one that conflicts with an access of a failed or skipped vertex), so the outcome
//! does not depend on timing. Host reads of what they touched return the failure; a host write
//! through [`Context::write`] takes the elements back and clears it. Unrelated vertices keep
//! running and the context stays usable. Every
//! wait has a path to completion: streams run every queued item, skipped or not, a stream
//! waits only for events of earlier vertices, and a wait on the context from inside one of its
//! own vertices (a task or kernel that captured the context) is refused with
//! [`DagError::WaitInsideVertex`] instead of waiting for itself.

pub mod conformance;
mod context;
pub mod device;
mod model;
mod record;
mod selection;
mod streams;
mod sync_prims;
mod vertex_table;

pub use context::{
    Context, ContextOptions, DagSnapshot, Execution, HISTORY_LIMIT, Pending, Progress, StreamInfo, Vertex,
    VertexInfo, VertexState, VertexTiming,
};
pub use hoplite_core::AccessKind;
pub use hoplite_core::IoError;
pub use hoplite_core::held::Access;
// GrCUDA's scheduling model, usable on its own (as the context uses it): the dependency
// model, device selection and stream assignment.
pub use model::{DependencyModel, DependencyPolicy, Edge, Edges, Plan, VertexId};
pub use record::{Recorder, record, record_with};
pub use selection::{
    ArgumentData, BandwidthMatrix, DeviceSelectionPolicy, DeviceSelector, Location, LocationSet, MAX_DEVICES,
};
pub use streams::{Assignment, NewStreamPolicy, ParentStreamPolicy, StreamAssigner, StreamState};

/// Errors of the implicit DAG runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    /// An error of the core when a launch is made or the host accesses a view: an invalid
    /// policy, a borrow conflict with a handle held outside the context.
    #[error(transparent)]
    Core(#[from] hoplite_core::Error),
    /// A wait on a context (`synchronize`, a host read or write, a vertex's `wait`, a
    /// `Pending::get`) from inside one of its own vertices, or a kernel running on its
    /// spaces while a vertex runs: the wait would wait for the vertex it runs in, or for one
    /// queued behind it, and never return.
    #[error(
        "`{wait}` on a DAG context from inside {inside}, which that wait would wait for: a vertex cannot wait for its own context; return the data from the vertex (a reduction's `Pending`, a view a later vertex or the host reads) and wait outside it"
    )]
    WaitInsideVertex {
        /// The wait that was refused.
        wait: &'static str,
        /// Where it was called: the vertex, or a kernel on the context's spaces.
        inside: String,
    },
    /// A vertex's kernel failed (panicked, or its launch returned an error).
    #[error("vertex `{vertex}` failed: {cause}")]
    VertexFailed {
        /// The vertex's label.
        vertex: String,
        /// What its launch reported.
        cause: Box<hoplite_core::Error>,
    },
    /// A vertex did not run because an ancestor failed.
    #[error("vertex `{vertex}` did not run: its ancestor `{failed}` failed: {cause}")]
    AncestorFailed {
        /// The vertex that did not run.
        vertex: String,
        /// The vertex whose failure it inherits.
        failed: String,
        /// What that vertex's launch reported.
        cause: Box<hoplite_core::Error>,
    },
    /// A reduction's vertex finished without storing its result (a runtime bug).
    #[error("vertex {vertex} finished without its result")]
    MissingResult {
        /// The vertex.
        vertex: VertexId,
    },
    /// Context options that cannot work.
    #[error("invalid context options: {0}")]
    InvalidOptions(String),
    /// A bandwidth matrix or file that cannot be used.
    #[error("invalid bandwidth matrix: {0}")]
    InvalidBandwidth(String),
    /// A launch pinned to a device the context does not have.
    #[error("device {device} is not one of the context's {devices} devices")]
    NoSuchDevice {
        /// The device asked for.
        device: usize,
        /// How many devices the context has.
        devices: usize,
    },
    /// A device could not make a stream.
    #[error("no stream available: {0}")]
    StreamUnavailable(String),
    /// An error of a recorded graph (see [`record`]).
    #[error(transparent)]
    Graph(#[from] hoplite_graph::GraphError),
    /// A file could not be written: which, and the I/O error (its source).
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        #[source]
        source: IoError,
    },
}

/// A DAG error as the core's [`hoplite_core::Error`], so that `?` takes it into a
/// `hoplite::Result`: a core error as itself, a graph error as the graph's conversion gives
/// it, any other as [`Error::Runtime`] (`runtime: "DAG"`) with the DAG error as its source.
///
/// [`Error::Runtime`]: hoplite_core::Error::Runtime
///
/// ```
/// use hoplite_core::Error;
/// use hoplite_dag::DagError;
/// let e: Error = DagError::InvalidOptions("no device".into()).into();
/// assert_eq!(e.to_string(), "DAG: invalid context options: no device");
/// ```
impl From<DagError> for hoplite_core::Error {
    fn from(e: DagError) -> Self {
        match e {
            DagError::Core(core) => core,
            DagError::Graph(graph) => graph.into(),
            other => hoplite_core::Error::Runtime {
                runtime: "DAG",
                source: hoplite_core::RuntimeError::new(other),
            },
        }
    }
}

impl DagError {
    /// The vertex whose failure this is (the failed ancestor for a skipped vertex).
    pub fn failed_vertex(&self) -> Option<&str> {
        match self {
            DagError::VertexFailed { vertex, .. } => Some(vertex),
            DagError::AncestorFailed { failed, .. } => Some(failed),
            _ => None,
        }
    }

    /// The core error at the root of a failure, if there is one.
    pub fn root_cause(&self) -> Option<&hoplite_core::Error> {
        match self {
            DagError::VertexFailed { cause, .. } | DagError::AncestorFailed { cause, .. } => Some(cause),
            DagError::Core(e) => Some(e),
            _ => None,
        }
    }

    /// The failure `vertex` inherits from this one (an ancestor's failure).
    pub(crate) fn inherited_by(&self, vertex: &str) -> DagError {
        match self {
            DagError::VertexFailed {
                vertex: failed,
                cause,
            }
            | DagError::AncestorFailed { failed, cause, .. } => DagError::AncestorFailed {
                vertex: vertex.to_owned(),
                failed: failed.clone(),
                cause: cause.clone(),
            },
            other => other.clone(),
        }
    }
}

/// `Result` with [`DagError`].
pub type Result<T, E = DagError> = std::result::Result<T, E>;
