//! Team handles: the planes and rows of a bound writer that team loops store through, and
//! per-thread team slots.

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::bound::{BoundWriter, PreparedWriter, RowAccess};
use super::handle::{checked_element, out_of_bounds};
use crate::index::{Brand, LeagueToken, TeamIdx, TeamSlotIdx};
use crate::space::ArrayLayout;
use crate::view::ViewValue;

/// One team's plane of a rank-3 writer ([`BoundWriter::team_plane`](crate::BoundWriter::team_plane)): its rows go to the
/// threads that own them in team loops ([`row`](Self::row) takes the row's [`TeamIdx`]).
pub struct TeamPlane<'it, T: ViewValue, L: ArrayLayout> {
    pub(super) ptr: NonNull<T>,
    pub(super) strides: [usize; 3],
    pub(super) extents: [usize; 3],
    pub(super) label: *const str,
    pub(super) plane: usize,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

impl<'it, T: ViewValue, L: ArrayLayout> TeamPlane<'it, T, L> {
    /// The league rank of the plane.
    pub fn plane(&self) -> usize {
        self.plane
    }

    /// Number of rows (the writer's second extent).
    pub fn rows(&self) -> usize {
        self.extents[1]
    }

    /// Number of columns (the writer's third extent).
    pub fn cols(&self) -> usize {
        self.extents[2]
    }

    /// Row `row` of the plane, for the thread that owns it: stores at any column. The row token
    /// must come from a team loop over this launch's member (the same brand `'it`), so a
    /// member of another launch cannot claim rows this team's threads own.
    ///
    /// # Panics
    ///
    /// If the row is not below the second extent.
    #[inline(always)]
    pub fn row(&self, row: TeamIdx<'it>) -> PlaneRow<'it, T, L> {
        let row = row.get();
        if row >= self.extents[1] {
            // SAFETY: as in `team_plane`.
            out_of_bounds(unsafe { &*self.label }, [self.plane, row, 0], self.extents, None);
        }
        PlaneRow {
            ptr: self.ptr,
            strides: self.strides,
            extents: self.extents,
            label: self.label,
            index: [self.plane, row],
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

/// A row `(plane, row, ·)` of a rank-3 writer, held by the thread that owns it
/// ([`TeamPlane::row`]): loads and stores at any column, checked against the third extent.
pub struct PlaneRow<'i, T: ViewValue, L: ArrayLayout> {
    ptr: NonNull<T>,
    strides: [usize; 3],
    extents: [usize; 3],
    label: *const str,
    index: [usize; 2],
    brand: Brand<'i>,
    _layout: PhantomData<L>,
}

impl<T: ViewValue, L: ArrayLayout> PlaneRow<'_, T, L> {
    #[inline(always)]
    fn slot(&self, column: usize) -> *mut T {
        let index = [self.index[0], self.index[1], column];
        if column >= self.extents[2] {
            // SAFETY: as in `BoundWriter::team_plane`.
            out_of_bounds(unsafe { &*self.label }, index, self.extents, None);
        }
        self.ptr.as_ptr().wrapping_add(L::offset(&self.strides, &index))
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.extents[2]
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `column`.
    #[inline(always)]
    pub fn get(&self, column: usize) -> T {
        // SAFETY: `slot` checked the column, `TeamPlane::row` the row and `team_plane` the
        // plane, so the element is inside the allocation. The writer's exclusive borrow keeps
        // other handles away; the plane belongs to this team alone (its league rank is handed
        // to one team), and the row's token exists only on the thread that owns the row for
        // the whole launch (`team_owner`), so no other thread touches this row. The row is not
        // `Send`, so it stays on that thread.
        unsafe { self.slot(column).read() }
    }

    /// Stores `value` at `column`.
    #[inline(always)]
    pub fn set(&self, column: usize, value: T) {
        // SAFETY: as in `get`.
        unsafe { self.slot(column).write(value) }
    }

    /// Replaces the element at `column` with `f(old)`.
    #[inline(always)]
    pub fn update(&self, column: usize, f: impl FnOnce(T) -> T) {
        let slot = self.slot(column);
        // SAFETY: as in `get`.
        unsafe { slot.write(f(slot.read())) }
    }
}

/// One team's row of a rank-2 writer ([`BoundWriter::team_row`](crate::BoundWriter::team_row)): loads and stores at the
/// [`TeamIdx`] tokens of team loops, each column on the thread that owns it. The tokens carry
/// the launch's brand `'it` (team loops over the launch's own member make them), so the team
/// loops of a member from another (nested) launch, which owns every column itself, cannot
/// store here.
///
/// Columns are checked against the second extent, one compare per access.
pub struct TeamRow<'it, T: ViewValue, L: ArrayLayout> {
    pub(super) row: RowAccess<T>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

impl<'it, T: ViewValue, L: ArrayLayout> TeamRow<'it, T, L> {
    #[inline(always)]
    fn slot(&self, column: TeamIdx<'it>) -> *mut T {
        self.row.element::<L>(column.get())
    }

    /// The league rank of the row.
    pub fn row(&self) -> usize {
        self.row.row
    }

    /// Number of columns (the writer's second extent).
    pub fn len(&self) -> usize {
        self.row.extents[1]
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at column `column`.
    #[inline(always)]
    pub fn get(&self, column: TeamIdx<'it>) -> T {
        // SAFETY: `slot` checked the column and the row (at `team_row`), so the element is
        // inside the allocation. The writer's exclusive borrow keeps other handles away; the
        // row belongs to this team alone (its league rank is handed to one team), and within
        // the team the column token exists only on the thread that owns the column for the
        // whole launch (`team_owner`), so no other thread stores here.
        unsafe { self.slot(column).read() }
    }

    /// Stores `value` at column `column`.
    #[inline(always)]
    pub fn set(&self, column: TeamIdx<'it>, value: T) {
        // SAFETY: as in `get`.
        unsafe { self.slot(column).write(value) }
    }

    /// Replaces the element at column `column` with `f(old)`.
    #[inline(always)]
    pub fn update(&self, column: TeamIdx<'it>, f: impl FnOnce(T) -> T) {
        let slot = self.slot(column);
        // SAFETY: as in `get`.
        unsafe { slot.write(f(slot.read())) }
    }
}

/// A [`TeamSlots`](crate::TeamSlots) handle bound to one team launch: loads and stores at the thread's own
/// `[league rank, team rank]`, checked against the extents (a panic names the view).
pub struct BoundTeamSlots<'it, T: ViewValue, L: ArrayLayout> {
    pub(super) prepared: PreparedWriter<T, 2>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

impl<'it, T: ViewValue, L: ArrayLayout> BoundTeamSlots<'it, T, L> {
    #[inline(always)]
    fn slot(&self, slot: TeamSlotIdx<'it>) -> *mut T {
        let p = &self.prepared;
        checked_element::<T, 2, L>(p.ptr, &p.strides, &p.extents, p.label, slot.get())
    }

    /// The element at the thread's slot.
    #[inline(always)]
    pub fn get(&self, slot: TeamSlotIdx<'it>) -> T {
        // SAFETY: `slot` checked the index; the pair belongs to this thread alone in the
        // launch (the token's contract) and the exclusive borrow keeps other handles away, so
        // no other thread touches the element while the launch runs.
        unsafe { self.slot(slot).read() }
    }

    /// Stores `value` at the thread's slot.
    #[inline(always)]
    pub fn set(&self, slot: TeamSlotIdx<'it>, value: T) {
        // SAFETY: as in `get`.
        unsafe { self.slot(slot).write(value) }
    }

    /// The extents.
    pub fn extents(&self) -> [usize; 2] {
        self.prepared.extents
    }
}

impl<'it, T: ViewValue, L: ArrayLayout> BoundWriter<'it, T, 2, L> {
    /// The row `league` of this rank-2 writer: the elements `(league, j)` the team owns.
    ///
    /// The threads of the team store into the row through the [`TeamIdx`](crate::TeamIdx) tokens of team
    /// loops ([`TeamThreadRange`](crate::TeamThreadRange),
    /// [`TeamVectorRange`](crate::TeamVectorRange)), which hand each column to one thread of
    /// the team for the whole launch. That makes every element of the row single-writer
    /// without a barrier, however many loops the kernel runs and whatever their ranges.
    ///
    /// # Panics
    ///
    /// If the league rank is not below the first extent (inside a launch this becomes
    /// `Error::KernelPanicked` naming the view).
    ///
    /// ```
    /// use hoplite_core::{parallel_for, TeamMember, TeamPolicy, TeamThreadRange, View};
    /// use hoplite_serial::Serial;
    /// let a: View<usize, 2> = View::new("a", [3, 5])?;
    /// parallel_for("rows", (TeamPolicy::new(Serial::default(), 3, 1), (a.write(),)), |(m, (a,))| {
    ///     let row = a.team_row(m.league_token());
    ///     TeamThreadRange::new(m, row.len()).parallel_for(|j| row.set(j, 10 * m.league_rank() + *j));
    /// })?;
    /// assert_eq!(a.host_read()?.get([2, 4]), 24);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    pub fn team_row(&self, league: LeagueToken<'it>) -> TeamRow<'it, T, L> {
        let p = &self.prepared;
        TeamRow {
            row: RowAccess::new(p.ptr, p.strides, p.extents, p.label, league.get()),
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

impl<'it, T: ViewValue, L: ArrayLayout> BoundWriter<'it, T, 3, L> {
    /// The plane `league` of this rank-3 writer: the elements `(league, j, k)` the team owns.
    ///
    /// A team loop over the plane's rows ([`TeamThreadRange`](crate::TeamThreadRange) over
    /// `0..plane.rows()`) hands each row `j` to one thread of the team for the whole launch;
    /// [`row(j)`](TeamPlane::row) then gives that thread the whole row, to store at any column
    /// (for example in a [`ThreadVectorRange`](crate::ThreadVectorRange) loop). Kokkos' usual
    /// three-level pattern — league over the first index, team threads over the second, vector
    /// lanes over the third — in safe code.
    ///
    /// # Panics
    ///
    /// If the league rank is not below the first extent (inside a launch this becomes
    /// `Error::KernelPanicked` naming the view).
    ///
    /// ```
    /// use hoplite_core::{parallel_for, TeamMember, TeamPolicy, TeamThreadRange, ThreadVectorRange, View};
    /// use hoplite_serial::Serial;
    /// let a: View<usize, 3> = View::new("a", [2, 3, 4])?;
    /// parallel_for("planes", (TeamPolicy::new(Serial::default(), 2, 1), (a.write(),)), |(m, (a,))| {
    ///     let plane = a.team_plane(m.league_token());
    ///     TeamThreadRange::new(m, plane.rows()).parallel_for(|j| {
    ///         let row = plane.row(j);
    ///         ThreadVectorRange::new(m, row.len()).parallel_for(|k| row.set(*k, 100 * plane.plane() + 10 * *j + *k));
    ///     });
    /// })?;
    /// assert_eq!(a.host_read()?.get([1, 2, 3]), 123);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    pub fn team_plane(&self, league: LeagueToken<'it>) -> TeamPlane<'it, T, L> {
        let p = &self.prepared;
        let plane = league.get();
        if plane >= p.extents[0] {
            // SAFETY: the label belongs to the view of the writer this was bound from, which
            // the launch keeps alive while bound handles exist.
            out_of_bounds(unsafe { &*p.label }, [plane, 0, 0], p.extents, None);
        }
        TeamPlane {
            ptr: p.ptr,
            strides: p.strides,
            extents: p.extents,
            label: p.label,
            plane,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}
