//! Communication as vertices of the implicit DAG runtime.
//!
//! A send is a vertex that reads its view, a receive one that writes it, a halo exchange one
//! vertex per dimension that writes the ghost layers and reads the layers it sends. The
//! runtime orders them with the launches around them by those accesses, as it orders kernels:
//! a kernel that touches none of the views runs on another stream at the same time, one that
//! reads a received view waits for the receive, without the caller ordering anything.
//!
//! The communication runs on a stream's worker thread (hence MPI's thread level `Multiple`).

use std::sync::Arc;

use hoplite_core::LaunchArgs;
use hoplite_core::held::RecordedArgs;
use hoplite_core::{ArrayLayout, HostAccessibleSpace, LayoutStride, RangePolicy, Slice, View, ViewValue};
use hoplite_dag::device::{Device, Stream};
use hoplite_dag::{Context, Vertex, VertexState};
use hoplite_graph::GraphLaunch;
use parking_lot::Mutex;

use crate::comm::Comm;
use crate::datatype::MpiValue;
use crate::error::{Error, Result};
use crate::halo::Halo;
use crate::p2p::check_tag;

/// A communication vertex: [`wait`](Self::wait) returns its typed error.
#[derive(Debug, Clone)]
pub struct CommVertex {
    vertex: Vertex,
    error: Arc<Mutex<Option<Error>>>,
}

impl CommVertex {
    /// The DAG vertex (for its id and state).
    pub fn vertex(&self) -> &Vertex {
        &self.vertex
    }

    /// Whether the communication finished (successfully or not).
    pub fn is_finished(&self) -> bool {
        matches!(self.vertex.state(), VertexState::Done | VertexState::Failed(_))
    }

    /// Waits for the communication (and, through the DAG, for what it depends on).
    ///
    /// # Errors
    ///
    /// The communication's own error ([`Error::SizeMismatch`], [`Error::Mpi`], ...), or
    /// [`Error::Dag`] when an ancestor failed.
    pub fn wait(&self) -> Result<()> {
        let outcome = self.vertex.wait();
        if let Some(e) = self.error.lock().clone() {
            return Err(e);
        }
        outcome.map_err(Error::Dag)
    }
}

/// The outcome of a vertex's communication: a typed error is kept for [`CommVertex::wait`],
/// and the vertex fails (poisoning its descendants) with the error's message.
fn finish(label: &str, slot: &Mutex<Option<Error>>, result: Result<()>) -> hoplite_core::Result<()> {
    result.map_err(|e| {
        let message = format!("communication failed: {e}");
        *slot.lock() = Some(e);
        hoplite_core::Error::from_panic(label, Box::new(message))
    })
}

/// A vertex of `ctx` that runs the transfer `op` on the handles `args` (ordered by them like a
/// launch): a failed transfer fails the vertex, and its MPI error is kept for
/// [`CommVertex::error`].
fn comm_task<Dv, A, F>(ctx: &Context<Dv>, label: &str, args: A, op: F) -> Result<CommVertex>
where
    Dv: Device,
    <Dv::Stream as Stream>::Space: Default,
    A: RecordedArgs + LaunchArgs + 'static,
    (RangePolicy<<Dv::Stream as Stream>::Space>, A): GraphLaunch<
            <Dv::Stream as Stream>::Space,
            Policy = RangePolicy<<Dv::Stream as Stream>::Space>,
            Args = A,
        >,
    F: FnOnce(&A) -> Result<()> + Send + 'static,
{
    let slot = Arc::new(Mutex::new(None));
    let body_slot = slot.clone();
    let owned_label = label.to_owned();
    let vertex = ctx
        .task(label, args, move |handles| {
            finish(&owned_label, &body_slot, op(handles))
        })
        .map_err(Error::Dag)?;
    Ok(CommVertex { vertex, error: slot })
}

/// Communication as DAG vertices: `ctx.send(...)`, `ctx.recv(...)`, `ctx.halo_exchange(...)`.
///
/// ```no_run
/// use hoplite_core::{RangePolicy, View};
/// use hoplite_dag::device::HostDevice;
/// use hoplite_dag::{Context, ContextOptions, Execution};
/// use hoplite_mpi::{CommExt, Mpi};
/// use hoplite_serial::Serial;
///
/// let mpi = Mpi::init()?;
/// let world = mpi.world();
/// let device = HostDevice::partitioned("cpu", &Serial::default(), 2)?;
/// let ctx = Context::new(vec![device], ContextOptions::default().execution(Execution::Async))?;
/// let incoming: View<f64, 1> = View::new("incoming", [1024])?;
/// let other: View<f64, 1> = View::new("other", [1024])?;
/// let recv = ctx.recv("recv", &world, &incoming, 0, 1)?;
/// // Touches another view: runs while the message is in flight.
/// ctx.launch("work", (RangePolicy::new(Serial::default(), 0..1024), (other.write(),)), |(i, (o,))| o.set(i, 1.0))?;
/// recv.wait()?;
/// # Ok::<(), hoplite_mpi::Error>(())
/// ```
pub trait CommExt {
    /// Sends `view` to `dest` as a vertex that reads the view.
    ///
    /// # Errors
    ///
    /// A rank out of range or a bad tag at once; the DAG's errors (a view borrowed outside
    /// the context); the transfer's errors from [`CommVertex::wait`].
    fn send<T, const R: usize, L, S>(
        &self,
        label: &str,
        comm: &Comm,
        view: &View<T, R, L, S>,
        dest: i32,
        tag: i32,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace;

    /// Receives into `view` from `source` as a vertex that writes the view: kernels that read
    /// the view run after the whole message arrived.
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send); a size mismatch from [`CommVertex::wait`].
    fn recv<T, const R: usize, L, S>(
        &self,
        label: &str,
        comm: &Comm,
        view: &View<T, R, L, S>,
        source: i32,
        tag: i32,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace;

    /// Exchanges the ghost layers of `view` ([`Halo::exchange`]) as one vertex per dimension,
    /// each writing that dimension's ghost layers and reading the layers it sends: a kernel
    /// on the deep interior (no ghost, no sent layer written) overlaps it; one that reads the
    /// ghosts waits for it. Returns the last dimension's vertex, which follows the others.
    ///
    /// # Errors
    ///
    /// As for [`Halo::exchange`].
    fn halo_exchange<T, const D: usize, L, S>(
        &self,
        label: &str,
        halo: &Halo<D>,
        view: &View<T, D, L, S>,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace;
}

impl<Dv> CommExt for Context<Dv>
where
    Dv: Device,
    <Dv::Stream as Stream>::Space: Default,
{
    fn send<T, const R: usize, L, S>(
        &self,
        label: &str,
        comm: &Comm,
        view: &View<T, R, L, S>,
        dest: i32,
        tag: i32,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        comm.check_rank("send", view.label(), dest)?;
        check_tag("send", view.label(), tag)?;
        let comm = comm.clone();
        comm_task(self, label, (view.read(),), move |(reader,)| {
            // SAFETY: the vertex's reader, held by the context until this body returns, keeps
            // the allocation alive and writers out; the transfer is waited for before returning.
            unsafe { comm.raw_send(reader.view(), dest, tag) }.and_then(|t| t.wait())
        })
    }

    fn recv<T, const R: usize, L, S>(
        &self,
        label: &str,
        comm: &Comm,
        view: &View<T, R, L, S>,
        source: i32,
        tag: i32,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        comm.check_rank("receive", view.label(), source)?;
        check_tag("receive", view.label(), tag)?;
        let comm = comm.clone();
        comm_task(self, label, (view.write(),), move |(writer,)| {
            // SAFETY: the vertex's writer, held by the context until this body returns, keeps
            // the allocation alive and every other access out; the transfer is waited for before
            // returning.
            unsafe { comm.raw_recv(writer.view(), source, tag) }.and_then(|t| t.wait())
        })
    }

    fn halo_exchange<T, const D: usize, L, S>(
        &self,
        label: &str,
        halo: &Halo<D>,
        view: &View<T, D, L, S>,
    ) -> Result<CommVertex>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        halo.check_extents(view)?;
        let g = halo.ghost();
        let mut last = None;
        for d in 0..D {
            let n = view.extent(d);
            let slab = |range: std::ops::Range<usize>| -> Result<View<T, D, LayoutStride, S>> {
                let slices: [Slice; D] = std::array::from_fn(|k| {
                    if k == d {
                        Slice::Range(range.clone())
                    } else {
                        Slice::All
                    }
                });
                Ok(view.subview(slices)?)
            };
            let (lower_ghost, upper_ghost) = (slab(0..g)?, slab(n - g..n)?);
            let (lower_sent, upper_sent) = (slab(g..2 * g)?, slab(n - 2 * g..n - g)?);
            let halo = halo.clone();
            let vertex = comm_task(
                self,
                &format!("{label} (dimension {d})"),
                (
                    lower_ghost.write(),
                    upper_ghost.write(),
                    lower_sent.read(),
                    upper_sent.read(),
                ),
                move |(lg, ug, ls, us)| {
                    // SAFETY: the vertex's writers (ghost layers) and readers (sent layers), held
                    // by the context until this body returns, keep the allocation alive and other
                    // accesses out; `exchange_raw` waits for every transfer.
                    unsafe { halo.exchange_raw(d, lg.view(), ug.view(), ls.view(), us.view()) }
                },
            )?;
            last = Some(vertex);
        }
        last.ok_or_else(|| Error::BadDecomposition {
            reason: "a halo of no dimension".to_owned(),
        })
    }
}
