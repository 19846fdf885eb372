//! Starting MPI and the communicator handle.

use std::ffi::c_int;
use std::sync::Arc;

use mpi::environment::{Threading, Universe};
use mpi::ffi;
use mpi::raw::AsRaw;
use std::mem::ManuallyDrop;

use mpi::topology::{CartesianCommunicator, Communicator, SimpleCommunicator};

use crate::error::{Error, Result, check};

/// MPI, started for this process; MPI is finalized when this value is dropped.
///
/// Use no [`Comm`] after it is dropped: MPI calls after finalization make MPI abort the
/// process (dropping a communicator then is harmless).
///
/// ```no_run
/// let mpi = hoplite_mpi::Mpi::init()?;
/// let world = mpi.world();
/// println!("rank {} of {}", world.rank(), world.size());
/// # Ok::<(), hoplite_mpi::Error>(())
/// ```
pub struct Mpi {
    world: Comm,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

impl Mpi {
    /// Starts MPI with thread level `Multiple`.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyInitialized`] when MPI runs already in this process,
    /// [`Error::ThreadingUnavailable`] when the library cannot call MPI from several threads.
    pub fn init() -> Result<Self> {
        let (universe, provided) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or(Error::AlreadyInitialized)?;
        if provided != Threading::Multiple {
            return Err(Error::ThreadingUnavailable {
                provided: format!("{provided:?}"),
            });
        }
        let world = Comm::new(Inner::Simple(universe.world()))?;
        Ok(Mpi {
            world,
            _universe: universe,
        })
    }

    /// The communicator of every rank (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Comm {
        self.world.clone()
    }
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi").field("world", &self.world).finish()
    }
}

pub(crate) enum Inner {
    Simple(SimpleCommunicator),
    Cartesian(CartesianCommunicator),
}

/// The rsmpi communicator and its raw handle.
pub(crate) struct Shared {
    // Owns the communicator that `raw` names; not freed once MPI is finalized (MPI would
    // abort), see the Drop below.
    inner: ManuallyDrop<Inner>,
    raw: ffi::MPI_Comm,
    rank: i32,
    size: i32,
}

// SAFETY: MPI runs at thread level `Multiple` (checked in `Mpi::init`, the only way to make a
// `Comm`), so any thread may call MPI on this communicator, concurrently too; the handle itself
// is never changed after creation.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`: every use is an MPI call, which `Multiple` allows from any thread at
// any time.
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        if !mpi::environment::is_finalized() {
            // SAFETY: dropped exactly once, here; `raw` dies with it.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
        }
        // After finalization freeing a communicator would make MPI abort: the process is
        // ending its MPI life anyway, so the handle is left to the operating system.
    }
}

/// A communicator: a group of ranks that exchange views. Cheap to clone (the same
/// communicator); safe to use from several threads at once.
#[derive(Clone)]
pub struct Comm {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.shared.rank)
            .field("size", &self.shared.size)
            .finish()
    }
}

impl Comm {
    pub(crate) fn new(inner: Inner) -> Result<Self> {
        let (raw, rank, size) = match &inner {
            Inner::Simple(c) => (c.as_raw(), c.rank(), c.size()),
            Inner::Cartesian(c) => (c.as_raw(), c.rank(), c.size()),
        };
        // Errors come back as codes (then typed errors) instead of aborting every rank.
        // SAFETY: `raw` is a live communicator; MPI_ERRORS_RETURN is a predefined handler.
        let rc = unsafe { ffi::MPI_Comm_set_errhandler(raw, ffi::RSMPI_ERRORS_RETURN) };
        check(rc, "set error handler", "communicator")?;
        Ok(Comm {
            shared: Arc::new(Shared {
                inner: ManuallyDrop::new(inner),
                raw,
                rank,
                size,
            }),
        })
    }

    /// This process's rank in the communicator.
    ///
    /// ```no_run
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// assert!(mpi.world().rank() < mpi.world().size());
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn rank(&self) -> i32 {
        self.shared.rank
    }

    /// The number of ranks.
    ///
    /// ```no_run
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// assert!(mpi.world().size() >= 1);
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn size(&self) -> i32 {
        self.shared.size
    }

    /// Waits until every rank has called `barrier`.
    ///
    /// # Errors
    ///
    /// [`Error::Mpi`] when MPI fails.
    ///
    /// ```no_run
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// mpi.world().barrier()?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        let _region = crate::region("hoplite-mpi barrier");
        // SAFETY: a live communicator.
        let rc = unsafe { ffi::MPI_Barrier(self.raw()) };
        check(rc, "barrier", "communicator")
    }

    pub(crate) fn raw(&self) -> ffi::MPI_Comm {
        self.shared.raw
    }

    pub(crate) fn simple(&self) -> Option<&SimpleCommunicator> {
        match &*self.shared.inner {
            Inner::Simple(c) => Some(c),
            Inner::Cartesian(_) => None,
        }
    }

    /// Checks that `rank` names a rank of this communicator.
    pub(crate) fn check_rank(&self, op: &'static str, label: &str, rank: i32) -> Result<c_int> {
        if (0..self.size()).contains(&rank) {
            Ok(rank)
        } else {
            Err(Error::RankOutOfRange {
                op,
                label: label.to_owned(),
                rank,
                size: self.size(),
            })
        }
    }
}
