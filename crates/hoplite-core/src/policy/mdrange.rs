//! [`MDRangePolicy`]: a rank-`R` box cut into tiles, its tilings and point visits.

use std::ops::Range;

use super::{ExecutionPolicy, IterationOrder, Schedule};
use crate::error::{Error, Result};
use crate::index::{IndexBounds, MdIdx};
use crate::space::ExecutionSpace;

/// The largest rank of an [`MDRangePolicy`], as in Kokkos.
pub const MAX_MDRANGE_RANK: usize = 6;

/// The longest default tile of an [`MDRangePolicy`] along its fastest dimension. Longer lines
/// are cut into tiles of this many points, so a rank-1 box, or a box with few long lines,
/// still has tiles to share among threads; it is a constant, not a function of the space, so
/// that a deterministic reduction's tiles (and bits) are the same on every backend.
pub const DEFAULT_LINE_TILE: usize = 4096;

/// An integer type MDRange bounds can be given in: every primitive integer. Bounds are
/// converted to the policy's `usize` storage coordinates (see
/// [`MDRangePolicy::with_origin`]); one that does not fit is a typed error at launch.
pub trait MdBound: Copy + sealed_bound::Sealed + std::fmt::Display {
    /// The bound as an `i128` (`u128` values past `i128::MAX` saturate; a policy reports such
    /// a bound or origin when it is launched).
    fn to_i128(self) -> i128;

    /// The bound as an `i128`, if it is one exactly.
    fn exact_i128(self) -> Option<i128>;
}

mod sealed_bound {
    pub trait Sealed {}
}

macro_rules! md_bounds {
    ($($t:ty),*) => {$(
        impl sealed_bound::Sealed for $t {}
        impl MdBound for $t {
            #[inline]
            fn to_i128(self) -> i128 {
                i128::try_from(self).unwrap_or(i128::MAX)
            }
            #[inline]
            fn exact_i128(self) -> Option<i128> {
                i128::try_from(self).ok()
            }
        }
    )*};
}

md_bounds!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// A bound or origin no `i128` holds: its dimension, which it is, and its value as given.
type Unrepresentable = (usize, &'static str, String);

/// A rank-`R` box `begin..end` cut into tiles (Kokkos `MDRangePolicy<Rank<R>>`), `R` in 1..=6.
/// Kernels receive an [`MdIdx`].
///
/// Tiles are visited in the *outer* iteration order and the points of a tile in the *inner*
/// order. Tiles need not divide the extents: edge tiles are cut short. Without explicit
/// tiles, a tile is a line along the fastest dimension (by the inner order) of at most
/// [`DEFAULT_LINE_TILE`] points, at one index of the others, and tiles are visited in the inner
/// order, so the visit order is that of plain nested loops.
///
/// ```
/// use hoplite_core::{IterationOrder, MDRangePolicy};
/// use hoplite_serial::Serial;
/// let p = MDRangePolicy::new(Serial::default(), [0, 0], [100, 50])
///     .with_tiles([16, 16])
///     .with_iteration(IterationOrder::Right, IterationOrder::Left);
/// assert_eq!(p.tile_counts(), [7, 4]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MDRangePolicy<S: ExecutionSpace, const R: usize> {
    pub(super) space: S,
    /// The box in storage coordinates (logical minus origin), what tokens and views index.
    pub(super) begin: [usize; R],
    pub(super) end: [usize; R],
    /// The box as given, in logical coordinates, and the logical index of storage index 0.
    logical: [[i128; R]; 2],
    origin: [i128; R],
    /// A bound that is below the origin or past `usize::MAX` (reported by `validate`).
    bad_bound: Option<(usize, i128)>,
    /// A bound, then an origin, that no `i128` holds (a `u128` past `i128::MAX`): the
    /// dimension, what it is and its value, reported by `validate`. Boxed: it is rare, and
    /// launches copy policies, so it costs them one word.
    unrepresentable: Option<Box<[Option<Unrepresentable>; 2]>>,
    pub(super) tiles: Option<[usize; R]>,
    outer: IterationOrder,
    inner: IterationOrder,
    deterministic: bool,
    pub(super) schedule: Schedule,
    occupancy: Option<u8>,
}

impl<S: ExecutionSpace, const R: usize> MDRangePolicy<S, R> {
    const RANK_OK: () = assert!(
        R >= 1 && R <= MAX_MDRANGE_RANK,
        "MDRangePolicy rank must be between 1 and 6"
    );

    /// The box `begin..end` on `space`, with bounds of any primitive integer type. A rank
    /// outside 1..=6 fails to compile.
    ///
    /// Tokens and views index from 0; a box with negative lower bounds (ghost cells of a
    /// stencil: `[-1, -1]..[128, 32]`) names the logical index of the views' element 0 with
    /// [`with_origin`](Self::with_origin), and its tokens are then `logical - origin`.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, MDRangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let grid: View<f64, 2> = View::new("grid", [3, 4])?;
    /// let policy = MDRangePolicy::new(Serial::default(), [0, 0], [3, 4]);
    /// parallel_for("fill", (policy, (grid.write(),)), |(ij, (grid,))| {
    ///     let [i, j] = ij.get();
    ///     grid.set(ij, (10 * i + j) as f64);
    /// })?;
    /// assert_eq!(grid.host_read()?.get([2, 3]), 23.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn new<B: MdBound>(space: S, begin: [B; R], end: [B; R]) -> Self {
        let () = Self::RANK_OK;
        let logical = [begin.map(MdBound::to_i128), end.map(MdBound::to_i128)];
        let unrepresentable_bound = (0..R).find_map(|d| {
            [("begin", begin[d]), ("end", end[d])]
                .into_iter()
                .find(|(_, b)| b.exact_i128().is_none())
                .map(|(what, b)| (d, what, b.to_string()))
        });
        let mut policy = MDRangePolicy {
            space,
            begin: [0; R],
            end: [0; R],
            logical,
            origin: [0; R],
            bad_bound: None,
            unrepresentable: unrepresentable_bound.map(|b| Box::new([Some(b), None])),
            tiles: None,
            outer: IterationOrder::Right,
            inner: IterationOrder::Right,
            deterministic: false,
            schedule: Schedule::Static,
            occupancy: None,
        };
        policy.place();
        policy
    }

    /// Sets the logical index of the views' element 0 in each dimension (Kokkos `OffsetView`
    /// begins, Fortran lower bounds): tokens are `logical - origin`. The box must not start
    /// below it.
    ///
    /// ```
    /// use hoplite_core::{MDRangePolicy, View, parallel_for};
    /// use hoplite_serial::Serial;
    /// // u(-1:2, -1:3) with one ghost layer: 4 x 5 elements, logical -1 is element 0.
    /// let u: View<i64, 2> = View::new("u", [4, 5])?;
    /// let whole = MDRangePolicy::new(Serial::default(), [-1, -1], [3, 4]).with_origin([-1, -1]);
    /// parallel_for("init", (whole, (u.write(),)), |(ij, (u,))| {
    ///     let [i, j] = ij.get().map(|k| k as i64 - 1); // back to logical indices
    ///     u.set(ij, 10 * i + j);
    /// })?;
    /// assert_eq!(u.host_read()?.get([0, 0]), -11); // u(-1, -1)
    /// assert_eq!(u.host_read()?.get([3, 4]), 23); // u(2, 3)
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn with_origin<B: MdBound>(mut self, origin: [B; R]) -> Self {
        self.origin = origin.map(MdBound::to_i128);
        let unrepresentable_origin = (0..R)
            .find(|&d| origin[d].exact_i128().is_none())
            .map(|d| (d, "origin", origin[d].to_string()));
        let bound = self.unrepresentable.take().and_then(|u| u[0].clone());
        if bound.is_some() || unrepresentable_origin.is_some() {
            self.unrepresentable = Some(Box::new([bound, unrepresentable_origin]));
        }
        self.place();
        self
    }

    /// The origin set by [`with_origin`](Self::with_origin) (0 by default).
    pub fn origin(&self) -> [i128; R] {
        self.origin
    }

    /// Recomputes the storage box from the logical one and the origin; a bound that does not
    /// land in `0..=usize::MAX` is kept for `validate` to report.
    fn place(&mut self) {
        self.bad_bound = None;
        for d in 0..R {
            for (side, out) in [(0, &mut self.begin), (1, &mut self.end)] {
                let bound = self.logical[side][d];
                match bound.checked_sub(self.origin[d]).map(usize::try_from) {
                    Some(Ok(v)) => out[d] = v,
                    _ => {
                        out[d] = 0;
                        if self.bad_bound.is_none() {
                            self.bad_bound = Some((d, bound));
                        }
                    }
                }
            }
        }
    }

    /// Sets the schedule (Kokkos `MDRangePolicy<Rank<R>, Schedule<Dynamic>>`): with
    /// [`Schedule::Dynamic`] a multi-threaded backend hands out tiles on demand, which
    /// balances boxes whose tiles cost unequal work (a triangular region, a boundary layer).
    /// Results never depend on the schedule (axiom 3 of [`ExecutionPolicy`]).
    ///
    /// ```
    /// use hoplite_core::{MDRangePolicy, Schedule};
    /// use hoplite_serial::Serial;
    /// let p = MDRangePolicy::new(Serial::default(), [0, 0], [64, 64])
    ///     .with_tiles([8, 8])
    ///     .with_schedule(Schedule::Dynamic);
    /// assert_eq!(p.schedule(), Schedule::Dynamic);
    /// ```
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// The schedule.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// Asks for a deterministic reduction (see [`RangePolicy::with_deterministic_reduction`](crate::RangePolicy::with_deterministic_reduction)):
    /// partial results per tile, joined in tile order.
    pub fn with_deterministic_reduction(mut self, deterministic: bool) -> Self {
        self.deterministic = deterministic;
        self
    }

    /// Whether a deterministic reduction was asked for.
    pub fn deterministic_reduction(&self) -> bool {
        self.deterministic
    }

    /// Asks a device backend to launch at most `percent` (1 to 100) of the blocks the device
    /// keeps resident for this kernel, as
    /// [`RangePolicy::with_desired_occupancy`](crate::RangePolicy::with_desired_occupancy)
    /// does; host backends ignore it.
    ///
    /// ```
    /// use hoplite_core::MDRangePolicy;
    /// use hoplite_serial::Serial;
    /// let p = MDRangePolicy::new(Serial::default(), [0, 0], [512, 512]).with_desired_occupancy(50);
    /// assert_eq!(p.desired_occupancy(), Some(50));
    /// ```
    pub fn with_desired_occupancy(mut self, percent: u8) -> Self {
        self.occupancy = Some(percent);
        self
    }

    /// The desired occupancy asked for, in percent, if any.
    pub fn desired_occupancy(&self) -> Option<u8> {
        self.occupancy
    }

    /// The box from slices, checking that both have `R` entries.
    pub fn from_slices(space: S, begin: &[usize], end: &[usize]) -> Result<Self> {
        let begin = to_array::<R>("MDRangePolicy begin", begin)?;
        let end = to_array::<R>("MDRangePolicy end", end)?;
        Ok(Self::new(space, begin, end))
    }

    /// Sets the tile extents (each at least 1; checked at launch).
    pub fn with_tiles(mut self, tiles: [usize; R]) -> Self {
        self.tiles = Some(tiles);
        self
    }

    /// Sets the tile extents from a slice, checking that it has `R` entries.
    pub fn try_with_tiles(self, tiles: &[usize]) -> Result<Self> {
        Ok(self.with_tiles(to_array::<R>("MDRangePolicy tiles", tiles)?))
    }

    /// Sets the order of tiles (`outer`) and of points within a tile (`inner`).
    pub fn with_iteration(mut self, outer: IterationOrder, inner: IterationOrder) -> Self {
        self.outer = outer;
        self.inner = inner;
        self
    }

    /// The same box, tiles (set or default), iteration orders, schedule, reduction mode and
    /// desired occupancy on an instance of another space, visiting the same tiles in the same
    /// order.
    ///
    /// ```
    /// use hoplite_core::{IterationOrder, MDRangePolicy};
    /// use hoplite_serial::Serial;
    /// let p = MDRangePolicy::new(Serial::default(), [0, 0], [10, 7])
    ///     .with_iteration(IterationOrder::Left, IterationOrder::Right);
    /// let q: MDRangePolicy<Serial, 2> = p.clone().on_space(Serial::default());
    /// assert_eq!((q.num_tiles(), q.tile_bounds(3)), (p.num_tiles(), p.tile_bounds(3)));
    /// ```
    pub fn on_space<S2: ExecutionSpace>(self, space: S2) -> MDRangePolicy<S2, R> {
        MDRangePolicy {
            space,
            begin: self.begin,
            end: self.end,
            logical: self.logical,
            origin: self.origin,
            bad_bound: self.bad_bound,
            unrepresentable: self.unrepresentable,
            tiles: self.tiles,
            outer: self.outer,
            inner: self.inner,
            deterministic: self.deterministic,
            schedule: self.schedule,
            occupancy: self.occupancy,
        }
    }

    /// Lower corner.
    pub fn begin(&self) -> [usize; R] {
        self.begin
    }

    /// Upper corner (exclusive).
    pub fn end(&self) -> [usize; R] {
        self.end
    }

    /// Order of tiles.
    pub fn outer_order(&self) -> IterationOrder {
        self.outer
    }

    /// Order of points within a tile.
    pub fn inner_order(&self) -> IterationOrder {
        self.inner
    }

    /// Extent of each dimension.
    pub fn extents(&self) -> [usize; R] {
        std::array::from_fn(|d| self.end[d].saturating_sub(self.begin[d]))
    }

    /// Number of points (`usize::MAX` if they are more: validation rejects such boxes).
    pub fn len(&self) -> usize {
        saturating_product(&self.extents())
    }

    /// Whether the box has no points.
    pub fn is_empty(&self) -> bool {
        self.extents().contains(&0)
    }

    /// The tile extents in effect: the ones set, or the default described on the type.
    pub fn tiles(&self) -> [usize; R] {
        self.tiles.unwrap_or_else(|| {
            let fast = fastest_dim::<R>(self.inner);
            let ext = self.extents();
            std::array::from_fn(|d| {
                if d == fast {
                    ext[d].clamp(1, DEFAULT_LINE_TILE)
                } else {
                    1
                }
            })
        })
    }

    /// Number of tiles along each dimension.
    pub fn tile_counts(&self) -> [usize; R] {
        let ext = self.extents();
        let tiles = self.tiles();
        std::array::from_fn(|d| ext[d].div_ceil(tiles[d].max(1)))
    }

    /// Total number of tiles (`usize::MAX` if they are more: validation rejects such boxes).
    pub fn num_tiles(&self) -> usize {
        saturating_product(&self.tile_counts())
    }

    /// The bounds `(lo, hi)` of tile number `t`, counting tiles in the outer order (in the
    /// inner order for the default tiles, which makes the visit order that of nested loops).
    ///
    /// Backends split `0..num_tiles()` among threads and call this per tile.
    pub fn tile_bounds(&self, t: usize) -> ([usize; R], [usize; R]) {
        self.tiling().tile_bounds(t)
    }

    /// Whether the launch visits the points in the order of plain nested loops over the box in
    /// the inner order (the last index fastest for `IterationOrder::Right`): the index order
    /// in which a backend joins the partial results of a reducer that is not commutative.
    /// True for the default tiles, and for explicit tiles that span every dimension faster
    /// (in the inner order) than one, are one index deep in every slower one, and are walked
    /// in the inner order where more than one dimension is cut; a backend that walks the box
    /// as nested loops follows the index order of exactly these policies.
    ///
    /// ```
    /// use hoplite_core::{IterationOrder, MDRangePolicy};
    /// use hoplite_serial::Serial;
    /// let p = MDRangePolicy::new(Serial::default(), [0, 0], [8, 8]);
    /// assert!(p.visits_in_nested_order());
    /// // Rows of the box, a few at a time: still nested loops.
    /// assert!(p.clone().with_tiles([3, 8]).visits_in_nested_order());
    /// // Square tiles: each tile's rows before the next tile's.
    /// assert!(!p.clone().with_tiles([2, 2]).visits_in_nested_order());
    /// // Lines of 4 along the last index, walked with the first index fastest.
    /// let lines = p.with_tiles([1, 4]).with_iteration(IterationOrder::Left, IterationOrder::Right);
    /// assert!(!lines.visits_in_nested_order());
    /// ```
    pub fn visits_in_nested_order(&self) -> bool {
        if self.is_empty() {
            return true;
        }
        let (ext, tiles, counts) = (self.extents(), self.tiles(), self.tile_counts());
        // The dimensions from the fastest to the slowest in the inner order.
        let dims: [usize; R] = std::array::from_fn(|step| match self.inner {
            IterationOrder::Right => R - 1 - step,
            IterationOrder::Left => step,
        });
        // The first dimension a tile does not span; a tile spans the faster ones.
        let Some(cut) = dims.iter().position(|&d| counts[d] > 1) else {
            return true; // one tile: the box itself
        };
        // A tile one index deep in every slower dimension is a run of consecutive points.
        if dims[cut + 1..].iter().any(|&d| tiles[d].min(ext[d]) > 1) {
            return false;
        }
        // Such runs follow each other in index order if the tiles are walked in it.
        dims.iter().filter(|&&d| counts[d] > 1).count() <= 1 || self.tiling().tile_order == self.inner
    }

    /// The box's tiling, without the space: what walking its tiles needs.
    pub fn tiling(&self) -> Tiling<R> {
        Tiling {
            begin: self.begin,
            end: self.end,
            tiles: self.tiles(),
            counts: self.tile_counts(),
            // Default tiles are single lines along the inner order's fastest dimension;
            // walking them in the outer order would interleave the slower dimensions when
            // outer != inner.
            tile_order: if self.tiles.is_some() {
                self.outer
            } else {
                self.inner
            },
            inner: self.inner,
        }
    }

    /// Tiles `tiles` (numbered as [`tile_bounds`](Self::tile_bounds) numbers them), as the
    /// share of the launch one thread walks.
    pub fn tile_share(&self, tiles: Range<usize>) -> TileShare<R> {
        TileShare {
            tiling: self.tiling(),
            tiles,
        }
    }
}

/// The tiling of an MDRange box: what walking its tiles needs, without the space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling<const R: usize> {
    begin: [usize; R],
    end: [usize; R],
    tiles: [usize; R],
    counts: [usize; R],
    tile_order: IterationOrder,
    inner: IterationOrder,
}

impl<const R: usize> Tiling<R> {
    /// The bounds `(lo, hi)` of tile number `t`; see [`MDRangePolicy::tile_bounds`].
    #[inline]
    pub fn tile_bounds(&self, t: usize) -> ([usize; R], [usize; R]) {
        let mut coord = [0usize; R];
        let mut rest = t;
        for step in 0..R {
            let d = match self.tile_order {
                IterationOrder::Right => R - 1 - step,
                IterationOrder::Left => step,
            };
            coord[d] = rest % self.counts[d];
            rest /= self.counts[d];
        }
        // `lo` is below `end` for every tile number below the tile count; saturation keeps
        // other numbers (and tiles reaching past `usize::MAX`) inside the box.
        let lo: [usize; R] = std::array::from_fn(|d| {
            self.begin[d]
                .saturating_add(coord[d].saturating_mul(self.tiles[d]))
                .min(self.end[d])
        });
        let hi: [usize; R] = std::array::from_fn(|d| lo[d].saturating_add(self.tiles[d]).min(self.end[d]));
        (lo, hi)
    }

    /// The order of points within a tile.
    pub fn inner_order(&self) -> IterationOrder {
        self.inner
    }
}

/// A range of an MDRange's tiles, counted as [`MDRangePolicy::tile_bounds`] counts them: the
/// share of an MDRange launch one thread walks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileShare<const R: usize> {
    /// The box's tiling.
    pub tiling: Tiling<R>,
    /// The tile numbers.
    pub tiles: Range<usize>,
}

/// The product of `factors`: 0 if one is 0, `usize::MAX` if it does not fit (or is exactly
/// `usize::MAX`, which no box reaches either: its points could not all be numbered).
fn saturating_product(factors: &[usize]) -> usize {
    if factors.contains(&0) {
        return 0;
    }
    factors
        .iter()
        .try_fold(1usize, |n, &f| n.checked_mul(f))
        .unwrap_or(usize::MAX)
}

/// The dimension that runs fastest in `order`.
fn fastest_dim<const R: usize>(order: IterationOrder) -> usize {
    match order {
        IterationOrder::Right => R - 1,
        IterationOrder::Left => 0,
    }
}

fn to_array<const R: usize>(what: &str, s: &[usize]) -> Result<[usize; R]> {
    s.try_into().map_err(|_| Error::RankMismatch {
        what: what.to_owned(),
        expected: R,
        found: s.len(),
    })
}

/// Calls `f` for every point of the box `lo..hi` in `order`, the fastest dimension innermost.
///
/// The helper every host backend uses to walk one MDRange tile.
///
/// ```
/// use hoplite_core::{for_each_point, IterationOrder};
/// let mut seen = Vec::new();
/// for_each_point([0, 0], [2, 2], IterationOrder::Left, |p| seen.push(p));
/// assert_eq!(seen, [[0, 0], [1, 0], [0, 1], [1, 1]]);
/// ```
#[inline(always)]
pub fn for_each_point<const R: usize>(
    lo: [usize; R],
    hi: [usize; R],
    order: IterationOrder,
    mut f: impl FnMut([usize; R]),
) {
    for_each_line(lo, hi, order, |mut idx, fast| {
        for k in lo[fast]..hi[fast] {
            idx[fast] = k;
            f(idx);
        }
    });
}

/// Calls `line(start, fast)` for every line of the box `lo..hi` along its fastest dimension
/// `fast` in `order`, `start` being the line's first point; the slower dimensions advance like
/// an odometer.
#[inline(always)]
pub(crate) fn for_each_line<const R: usize>(
    lo: [usize; R],
    hi: [usize; R],
    order: IterationOrder,
    mut line: impl FnMut([usize; R], usize),
) {
    if (0..R).any(|d| lo[d] >= hi[d]) {
        return;
    }
    let fast = fastest_dim::<R>(order);
    let mut idx = lo;
    loop {
        line(idx, fast);
        let mut done = true;
        for step in 1..R {
            let d = match order {
                IterationOrder::Right => R - 1 - step,
                IterationOrder::Left => step,
            };
            idx[d] += 1;
            if idx[d] < hi[d] {
                done = false;
                break;
            }
            idx[d] = lo[d];
        }
        if done {
            return;
        }
    }
}

// SAFETY: the box `begin..end` per dimension is the index space and the bounds; tiles only
// partition it (`tile_bounds` clamps to `end`).
unsafe impl<S: ExecutionSpace, const R: usize> ExecutionPolicy for MDRangePolicy<S, R> {
    type Space = S;
    type Item<'it> = MdIdx<'it, R>;
    const KIND: &'static str = "MDRangePolicy";

    fn space(&self) -> &S {
        &self.space
    }
    fn with_space(mut self, space: S) -> Self {
        self.space = space;
        self
    }

    fn index_bounds(&self) -> IndexBounds {
        let mut lo = [0; 8];
        let mut hi = [0; 8];
        lo[..R].copy_from_slice(&self.begin);
        hi[..R].copy_from_slice(&self.end);
        IndexBounds::Box { rank: R, lo, hi }
    }

    fn validate(&self, label: &str) -> Result<()> {
        if let Some((dim, what, value)) = self
            .unrepresentable
            .iter()
            .flat_map(|u| u.iter().flatten())
            .next()
        {
            return Err(Error::BoundNotRepresentable {
                label: label.to_owned(),
                dim: *dim,
                what,
                value: value.clone(),
            });
        }
        if let Some((dim, bound)) = self.bad_bound {
            let narrow = |v: i128| i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX });
            return Err(Error::BoundOutsideIndexSpace {
                label: label.to_owned(),
                dim,
                bound: narrow(bound),
                origin: narrow(self.origin[dim]),
            });
        }
        for d in 0..R {
            if self.begin[d] > self.end[d] {
                return Err(Error::InvalidRange {
                    label: label.to_owned(),
                    dim: Some(d),
                    begin: self.begin[d],
                    end: self.end[d],
                });
            }
        }
        if let Some(tiles) = self.tiles
            && let Some(dim) = tiles.iter().position(|&t| t == 0)
        {
            return Err(Error::ZeroTile {
                label: label.to_owned(),
                dim,
            });
        }
        super::check_occupancy(label, self.occupancy)?;
        self.check_counts(label)
    }
}

impl<S: ExecutionSpace, const R: usize> MDRangePolicy<S, R> {
    /// Rejects boxes whose point count or tile count does not fit in `usize`, or whose last
    /// tile would end past `usize::MAX` (backends compute all three).
    fn check_counts(&self, label: &str) -> Result<()> {
        let too_large = |reason: String| Error::IndexSpaceTooLarge {
            label: label.to_owned(),
            reason,
        };
        let (ext, tiles, counts) = (self.extents(), self.tiles(), self.tile_counts());
        for d in 0..R {
            if counts[d]
                .checked_mul(tiles[d])
                .and_then(|span| self.begin[d].checked_add(span))
                .is_none()
            {
                return Err(too_large(format!(
                    "the tiles of {} from {} reach past usize::MAX in dimension {d}",
                    tiles[d], self.begin[d]
                )));
            }
        }
        if self.is_empty() {
            return Ok(());
        }
        if saturating_product(&ext) == usize::MAX {
            return Err(too_large(format!(
                "the box of extents {ext:?} has more than usize::MAX points"
            )));
        }
        if saturating_product(&counts) == usize::MAX {
            return Err(too_large(format!("{counts:?} tiles are more than usize::MAX")));
        }
        Ok(())
    }
}
