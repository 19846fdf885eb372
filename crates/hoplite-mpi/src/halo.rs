//! Halo exchange for block-decomposed views.
//!
//! Each rank owns one block of a global 1-, 2- or 3-D grid, stored in a view with `ghost`
//! layers on every side: extents `interior + 2 * ghost` in each dimension. An exchange fills
//! the ghost layers with the neighbours' boundary layers. Dimensions are exchanged one after
//! another, each face spanning the whole extent of the other dimensions (ghosts included), so
//! edges and corners arrive too, through two hops.
//!
//! The exchange runs on a Cartesian communicator of its own (made by [`Halo::new`]), so its
//! tags never meet the application's.

use std::ffi::c_int;

use hoplite_core::{ArrayLayout, HostAccessibleSpace, LayoutStride, Slice, View, ViewValue};
use mpi::ffi;
use mpi::topology::Communicator;

use crate::comm::{Comm, Inner};
use crate::datatype::MpiValue;
use crate::error::{Error, Result, check};

/// A block decomposition of a `D`-dimensional grid over the ranks of a communicator, and the
/// halo exchange of views laid out on it.
///
/// ```no_run
/// use hoplite_core::View;
/// use hoplite_mpi::{Halo, Mpi};
///
/// let mpi = Mpi::init()?;
/// // Let MPI pick the process grid (0 = choose); periodic in x only; one ghost layer.
/// let halo = Halo::<2>::new(&mpi.world(), [0, 0], [true, false], 1)?;
/// let u: View<f64, 2> = View::new("u", [64 + 2, 64 + 2])?;
/// halo.exchange(&u)?;
/// # Ok::<(), hoplite_mpi::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Halo<const D: usize> {
    comm: Comm,
    dims: [usize; D],
    periodic: [bool; D],
    coords: [usize; D],
    // (lower, upper) neighbour per dimension; `None` past a non-periodic edge.
    neighbors: [(Option<i32>, Option<i32>); D],
    ghost: usize,
}

impl<const D: usize> Halo<D> {
    /// Lays the ranks of `comm` out on a `dims` grid (an entry 0 lets MPI choose, as
    /// `MPI_Dims_create` does), periodic or not per dimension, with `ghost` layers.
    ///
    /// Every rank of `comm` must call this together.
    ///
    /// # Errors
    ///
    /// [`Error::BadDecomposition`] when `D` is not 1, 2 or 3, when the grid does not have
    /// exactly `comm.size()` ranks, when `ghost` is 0, or when `comm` is itself a Cartesian
    /// communicator; [`Error::Mpi`].
    pub fn new(comm: &Comm, dims: [usize; D], periodic: [bool; D], ghost: usize) -> Result<Self> {
        if !(1..=3).contains(&D) {
            return Err(Error::BadDecomposition {
                reason: format!("a halo exchange serves 1-, 2- or 3-D views, not {D}-D ones"),
            });
        }
        if ghost == 0 {
            return Err(Error::BadDecomposition {
                reason: "a halo of 0 ghost layers exchanges nothing; use at least 1".to_owned(),
            });
        }
        let Some(simple) = comm.simple() else {
            return Err(Error::BadDecomposition {
                reason:
                    "the communicator is already a Cartesian grid; make the halo from the world communicator"
                        .to_owned(),
            });
        };
        let size = comm.size();
        let mut mpi_dims = [0 as c_int; D];
        for (m, &d) in mpi_dims.iter_mut().zip(&dims) {
            *m = c_int::try_from(d).map_err(|_| Error::BadDecomposition {
                reason: format!("grid extent {d} is too large for MPI"),
            })?;
        }
        let fixed: i64 = mpi_dims
            .iter()
            .filter(|&&d| d > 0)
            .map(|&d| i64::from(d))
            .product();
        if fixed == 0 || i64::from(size) % fixed != 0 || (fixed != i64::from(size) && !mpi_dims.contains(&0))
        {
            return Err(Error::BadDecomposition {
                reason: format!(
                    "a process grid of {dims:?} does not fit {size} ranks; the fixed extents must multiply to {size} (or divide it, with 0 for the extents MPI should choose)"
                ),
            });
        }
        // SAFETY: `mpi_dims` holds D entries, as MPI_Dims_create is told.
        let rc = unsafe { ffi::MPI_Dims_create(size, D as c_int, mpi_dims.as_mut_ptr()) };
        check(rc, "halo", "process grid")?;
        let cart = simple
            .create_cartesian_communicator(&mpi_dims, &periodic, false)
            .ok_or_else(|| Error::BadDecomposition {
                reason: format!(
                    "rank {} is not part of the process grid {mpi_dims:?}",
                    comm.rank()
                ),
            })?;
        let coords_mpi = cart.rank_to_coordinates(cart.rank());
        let mut neighbors = [(None, None); D];
        for (d, n) in neighbors.iter_mut().enumerate() {
            *n = cart.shift(d as c_int, 1);
        }
        let comm = Comm::new(Inner::Cartesian(cart))?;
        let mut coords = [0usize; D];
        let mut dims = [0usize; D];
        for d in 0..D {
            coords[d] = usize::try_from(coords_mpi[d]).unwrap_or(0);
            dims[d] = usize::try_from(mpi_dims[d]).unwrap_or(0);
        }
        Ok(Halo {
            comm,
            dims,
            periodic,
            coords,
            neighbors,
            ghost,
        })
    }

    /// The process grid's extents.
    pub fn dims(&self) -> [usize; D] {
        self.dims
    }

    /// This rank's coordinates in the process grid.
    pub fn coords(&self) -> [usize; D] {
        self.coords
    }

    /// Whether each dimension wraps around.
    pub fn periodic(&self) -> [bool; D] {
        self.periodic
    }

    /// The number of ghost layers on each side.
    pub fn ghost(&self) -> usize {
        self.ghost
    }

    /// The (lower, upper) neighbours' ranks (in [`comm`](Self::comm)) along dimension `d`;
    /// `None` past a non-periodic edge.
    pub fn neighbors(&self, d: usize) -> (Option<i32>, Option<i32>) {
        self.neighbors[d]
    }

    /// The grid's communicator.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Fills the ghost layers of `view` (every face, edges and corners included) with the
    /// neighbours' boundary layers; ghost layers past a non-periodic edge are left as they are.
    /// Every rank of the grid calls this together, with views of the same extents and type.
    ///
    /// # Errors
    ///
    /// [`Error::BadExtent`] when an extent is smaller than three times the ghost width (the
    /// interior must be at least as wide as the layers it sends), [`Error::View`] when the view
    /// is borrowed elsewhere, [`Error::SizeMismatch`] when neighbours' views differ, [`Error::Mpi`].
    pub fn exchange<T, L, S>(&self, view: &View<T, D, L, S>) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi halo exchange");
        self.check_extents(view)?;
        for d in 0..D {
            self.exchange_dimension(view, d)?;
        }
        Ok(())
    }

    /// Checks that every extent holds two ghost layers and an interior at least as wide.
    pub(crate) fn check_extents<T, L, S>(&self, view: &View<T, D, L, S>) -> Result<()>
    where
        T: ViewValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let g = self.ghost;
        let extents = view.extents();
        if let Some(d) = (0..D).find(|&d| extents[d] < 3 * g) {
            return Err(Error::BadExtent {
                op: "halo exchange",
                label: view.label().to_owned(),
                reason: format!(
                    "extent {} of dimension {d} is less than 3 x {g} (ghost layers on both sides and an interior at least as wide); make the block larger or the halo thinner",
                    extents[d]
                ),
            });
        }
        Ok(())
    }

    /// Exchanges dimension `d` given its four layers, without borrowing them.
    ///
    /// # Safety
    ///
    /// Until this returns, the caller keeps the allocation alive, the ghost layers to itself
    /// (no other reads or writes) and the sent layers unwritten.
    pub(crate) unsafe fn exchange_raw<T, S>(
        &self,
        d: usize,
        lower_ghost: &View<T, D, LayoutStride, S>,
        upper_ghost: &View<T, D, LayoutStride, S>,
        lower_sent: &View<T, D, LayoutStride, S>,
        upper_sent: &View<T, D, LayoutStride, S>,
    ) -> Result<()>
    where
        T: ViewValue + MpiValue,
        S: HostAccessibleSpace,
    {
        let (lower, upper) = self.neighbors[d];
        let up = 2 * d as i32;
        let down = up + 1;
        let mut transfers = Vec::new();
        let mut first_error = None;
        // Every started transfer is waited for below, errors or not.
        let started = (|| -> Result<()> {
            if let Some(lower) = lower {
                // SAFETY: the caller keeps this ghost layer alive and to itself until we return.
                transfers.push(unsafe { self.comm.raw_recv(lower_ghost, lower, up)? });
            }
            if let Some(upper) = upper {
                // SAFETY: as above, for the upper ghost layer.
                transfers.push(unsafe { self.comm.raw_recv(upper_ghost, upper, down)? });
            }
            if let Some(upper) = upper {
                // SAFETY: the caller keeps this layer alive and unwritten until we return.
                transfers.push(unsafe { self.comm.raw_send(upper_sent, upper, up)? });
            }
            if let Some(lower) = lower {
                // SAFETY: as above, for the lower sent layer.
                transfers.push(unsafe { self.comm.raw_send(lower_sent, lower, down)? });
            }
            Ok(())
        })();
        if let Err(e) = started {
            first_error = Some(e);
        }
        for t in transfers {
            if let Err(e) = t.wait() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn exchange_dimension<T, L, S>(&self, view: &View<T, D, L, S>, d: usize) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let g = self.ghost;
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
        let (lower, upper) = self.neighbors[d];
        // Tags: 2d for layers travelling up, 2d + 1 for layers travelling down.
        let up = 2 * d as i32;
        let down = up + 1;
        let mut receives = Vec::new();
        let mut sends = Vec::new();
        if let Some(lower) = lower {
            receives.push(self.comm.irecv(&slab(0..g)?, lower, up)?);
        }
        if let Some(upper) = upper {
            receives.push(self.comm.irecv(&slab(n - g..n)?, upper, down)?);
        }
        if let Some(upper) = upper {
            sends.push(self.comm.isend(&slab(n - 2 * g..n - g)?, upper, up)?);
        }
        if let Some(lower) = lower {
            sends.push(self.comm.isend(&slab(g..2 * g)?, lower, down)?);
        }
        let mut first_error = None;
        for r in receives {
            if let Err(e) = r.wait() {
                first_error.get_or_insert(e);
            }
        }
        for s in sends {
            if let Err(e) = s.wait() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
