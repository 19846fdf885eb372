//! Multi-node hoplite on MPI, through the [`mpi`] crate (rsmpi).
//!
//! Views and subviews of host-accessible spaces travel between ranks without hand-written
//! pack kernels, hoplite's reducers become MPI operations, a halo exchange serves
//! block-decomposed views, and every communication can be a vertex of the implicit DAG runtime
//! so that compute overlaps it. See `docs/mpi.md` for the guide.
//!
//! * [`Mpi::init`] starts MPI (thread level `Multiple`, because DAG vertices communicate from
//!   worker threads); [`Mpi::world`] is the communicator of every rank.
//! * Point to point ([`Comm::send`], [`Comm::recv`], [`Comm::isend`], [`Comm::irecv`]): a send
//!   borrows the view as a reader and a receive as a writer until the transfer completes, so
//!   safe code never reads half-received data. Elements travel in row-major index order
//!   whatever the layouts: a contiguous row-major view goes straight from its memory, any other
//!   (a strided subview, a `LayoutLeft` matrix) through an MPI derived datatype built from its
//!   strides.
//! * Collectives ([`Comm::all_reduce`], [`Comm::all_reduce_view`], [`Comm::reduce`],
//!   [`Comm::broadcast`], [`Comm::broadcast_view`], [`Comm::gather_view`]) take hoplite's
//!   reducers ([`MpiReducer`]).
//! * [`Halo`] exchanges the ghost layers of a block-decomposed 1-, 2- or 3-D view.
//! * [`CommExt`] adds `ctx.send`, `ctx.recv` and `ctx.halo_exchange` to a DAG context.
//!
//! Bad input is a typed [`Error`]: a rank out of range, a view borrowed elsewhere, views whose
//! sizes or element types differ between ranks.
//!
//! ```no_run
//! use hoplite_core::View;
//! use hoplite_mpi::Mpi;
//!
//! let mpi = Mpi::init()?;
//! let world = mpi.world();
//! let x: View<f64, 1> = View::new("x", [1000])?;
//! if world.rank() == 0 {
//!     x.fill_host(1.0)?;
//!     world.send(&x, 1, 7)?;
//! } else if world.rank() == 1 {
//!     world.recv(&x, 0, 7)?;
//! }
//! # Ok::<(), hoplite_mpi::Error>(())
//! ```

mod collective;
mod comm;
mod dag;
mod datatype;
mod error;
mod halo;
mod p2p;

pub use collective::MpiReducer;
pub use comm::{Comm, Mpi};
pub use dag::{CommExt, CommVertex};
pub use datatype::MpiValue;
pub use error::{Error, Result};
pub use halo::Halo;
pub use p2p::{RecvRequest, SendRequest};

/// The guide (`docs/mpi.md`), whose examples compile as doctests.
#[doc = include_str!("../../../docs/mpi.md")]
pub mod guide {}

/// Re-exported so that users name the same rsmpi as hoplite-mpi.
pub use mpi;

/// The profile region of one MPI operation (`hoplite-mpi all_reduce`, ...), open until the
/// guard drops: Kokkos Tools connectors and the trace connector
/// (`hoplite_core::profiling::start_trace`) show communication beside the kernels. Without a
/// connector it costs one relaxed load.
pub(crate) fn region(name: &'static str) -> hoplite_core::profiling::ScopedRegion {
    hoplite_core::profiling::ScopedRegion::new(name)
}
