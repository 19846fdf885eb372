//! Access handles: how kernels touch view data without data races or per-element cost.
//!
//! | handle            | made by         | in a kernel                                        |
//! |-------------------|-----------------|----------------------------------------------------|
//! | [`Reader`]        | `x.read()`      | `get(i)` at any index (checked)                    |
//! | [`Writer`]        | `y.write()`     | nothing until handed to a launch, then [`BoundWriter`] |
//! | [`AtomicHandle`]  | `h.atomic()`    | `fetch_add`, `fetch_min`, ... at any index         |
//! | [`Lookup`]        | `t.lookup()`    | `get(i)` at any index, each checked; any launch range |
//! | [`TeamSlots`]     | `p.team_slots()`| rank 2, team launches: `get`/`set` at the thread's `[league, team rank]` |
//!
//! Making a handle borrows the elements the view covers, like `RefCell` at kernel
//! granularity: one writer, or many readers, or many atomic handles. A conflicting handle is
//! made anyway but carries the conflict, and the launch it is handed to fails with
//! [`Error::BorrowConflict`] naming both views.
//!
//! Handles handed to a launch — `parallel_for("axpy", (n, (y.write(), x.read())), |(i, (y, x))| ..)`
//! — come back *bound* to the launch's iteration brand `'it`: a [`BoundWriter<'it, ..>`] stores
//! only at the tokens of that launch, and a [`BoundReader<'it, ..>`] reads at them without a
//! bounds check, because the launch checked the policy against every handle's extents once.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{self, Ordering};

use crate::error::{Error, Result};
use crate::index::{Idx, LeagueIdx, LeagueToken, MdIdx, TeamIdx, TeamSlotIdx};
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::borrow::{BorrowId, Refused};
use crate::view::copy::HostAccessibleSpace;
use crate::view::graph_support::HeldBorrow;
use crate::view::{AccessKind, View, ViewValue};

/// The index space a launch covers, for checking handles against it once per launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexBounds {
    /// A one-dimensional range `begin..end`.
    Range {
        /// First index.
        begin: usize,
        /// One past the last index.
        end: usize,
    },
    /// A box `lo..hi` of rank `rank` (entries past the rank are unused).
    Box {
        /// Rank of the box.
        rank: usize,
        /// Lower corner.
        lo: [usize; 8],
        /// Upper corner (exclusive).
        hi: [usize; 8],
    },
    /// A league of teams; team kernels have no element tokens of the launch.
    League {
        /// Number of teams.
        size: usize,
    },
}

impl IndexBounds {
    /// The rank of the iteration tokens, and the exclusive upper bound of each dimension.
    fn token_extents(&self) -> Option<(usize, [usize; 8], [usize; 8])> {
        match *self {
            IndexBounds::Range { begin, end } => {
                let mut lo = [0; 8];
                let mut hi = [0; 8];
                lo[0] = begin;
                hi[0] = end;
                Some((1, lo, hi))
            }
            IndexBounds::Box { rank, lo, hi } => Some((rank, lo, hi)),
            IndexBounds::League { .. } => None,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An index a handle accepts anywhere: a number for rank 1, an array, or a token (read as its
/// plain value). Such accesses are bounds-checked.
pub trait ViewIndex<const R: usize>: Copy + sealed::Sealed {
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl sealed::Sealed for usize {}
impl<const R: usize> sealed::Sealed for [usize; R] {}
impl sealed::Sealed for Idx<'_> {}
impl<const R: usize> sealed::Sealed for MdIdx<'_, R> {}
impl sealed::Sealed for LeagueIdx<'_> {}
impl sealed::Sealed for LeagueToken<'_> {}
impl sealed::Sealed for TeamIdx<'_> {}

/// Team tokens read as their plain index anywhere (checked).
macro_rules! plain_view_index {
    ($($t:ident),*) => {$(
        impl ViewIndex<1> for $t<'_> {
            #[inline(always)]
            fn index(self) -> [usize; 1] {
                [self.get()]
            }
        }
    )*};
}

plain_view_index!(LeagueIdx, LeagueToken, TeamIdx);

impl ViewIndex<1> for usize {
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self]
    }
}

impl<const R: usize> ViewIndex<R> for [usize; R] {
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self
    }
}

impl ViewIndex<1> for Idx<'_> {
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl<const R: usize> ViewIndex<R> for MdIdx<'_, R> {
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

/// An iteration token of the launch with brand `'it`, of rank `R`: what bound writers store
/// at. [`Idx`] (rank 1) and [`MdIdx`] are tokens of ranges the launch checked against every
/// handle; [`LeagueIdx`] (rank 1) is the league rank of a team launch, which no launch-wide
/// range covers, so accesses at it are checked. The trait is sealed.
pub trait Token<'it, const R: usize>: Copy + sealed::Sealed {
    /// Whether an access at this token must be checked against the extents.
    const CHECKED: bool;
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl<'it> Token<'it, 1> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

/// A rank-0 view has one element: a writer of it accepts the token of a launch with one
/// iteration (the launch refuses a rank-0 writer when it has more,
/// [`Error::ScalarWriterInWideLaunch`]), so exactly one iteration stores it.
impl<'it> Token<'it, 0> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 0] {
        []
    }
}

impl<'it, const R: usize> Token<'it, R> for MdIdx<'it, R> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

impl<'it> Token<'it, 1> for LeagueIdx<'it> {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

/// What a bound reader takes: a token of its launch (unchecked) or any plain index (checked).
pub trait ReadIndex<'it, const R: usize>: Copy + sealed::Sealed {
    /// Whether the index must be checked against the extents.
    const CHECKED: bool;
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl<'it> ReadIndex<'it, 1> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl<'it, const R: usize> ReadIndex<'it, R> for MdIdx<'it, R> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

impl<'it> ReadIndex<'it, 1> for LeagueIdx<'it> {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl ReadIndex<'_, 1> for usize {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self]
    }
}

impl<const R: usize> ReadIndex<'_, R> for [usize; R] {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self
    }
}

#[cold]
#[inline(never)]
fn neighbor_out_of_bounds<const R: usize>(
    label: *const str,
    at: [usize; R],
    offset: [isize; R],
    room_below: [usize; R],
    room_above: [usize; R],
) -> ! {
    // SAFETY: the label belongs to the view of the reader this was bound from, which the
    // launch keeps alive while bound handles exist.
    let label = unsafe { &*label };
    panic!(
        "view `{label}`: neighbor offset {offset:?} from token {at:?} can leave the extents; this launch leaves room {room_below:?} below and {room_above:?} above its indices"
    )
}

#[cold]
#[inline(never)]
fn out_of_bounds<const R: usize>(
    label: &str,
    index: [usize; R],
    extents: [usize; R],
    conflict: Option<&Error>,
) -> ! {
    match conflict {
        Some(e) => panic!("{e}"),
        None => panic!("view `{label}`: index {index:?} is out of bounds for extents {extents:?}"),
    }
}

/// The address of the element at `index` of a bound handle, after checking `index` against
/// `extents` (a panic naming the view otherwise), so it lies in the allocation.
#[inline(always)]
fn checked_element<T, const R: usize, L: ArrayLayout>(
    ptr: NonNull<T>,
    strides: &[usize; R],
    extents: &[usize; R],
    label: *const str,
    index: [usize; R],
) -> *mut T {
    if !in_bounds(&index, extents) {
        // SAFETY: the label belongs to the view of the handle this was bound from, which the
        // launch keeps alive while bound handles exist.
        out_of_bounds(unsafe { &*label }, index, *extents, None);
    }
    ptr.as_ptr().wrapping_add(L::offset(strides, &index))
}

#[inline(always)]
fn in_bounds<const R: usize>(index: &[usize; R], extents: &[usize; R]) -> bool {
    let mut ok = true;
    for d in 0..R {
        ok &= index[d] < extents[d];
    }
    ok
}

/// The part shared by every handle: the view and its borrow, or the conflict that refused it.
struct Handle<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    view: View<T, R, L, S>,
    /// `Ok` while the borrow is held; `Err` carries the conflict. A handle with a conflict
    /// has zero extents so that every access takes the checked path and reports it.
    borrow: std::result::Result<BorrowId, Refusal>,
    extents: [usize; R],
}

/// Why a handle holds no borrow. A refusal by the handle's own borrow keeps only the kinds
/// that met and makes the error when first asked for it: the implicit DAG runtime meets one
/// on nearly every launch (the user's writer against the context's pending one) and asks the
/// borrow anew in its group instead, so building the message there would be wasted. The error
/// is boxed either way: handles move through every launch, and an inline error would triple
/// their size.
enum Refusal {
    Met {
        refused: Refused,
        error: std::sync::OnceLock<Box<Error>>,
    },
    Known(Box<Error>),
}

impl Refusal {
    /// The refusal as an error naming the allocation `label`.
    fn error(&self, label: &str) -> &Error {
        match self {
            Refusal::Met { refused, error } => error.get_or_init(|| Box::new(refused.error(label))),
            Refusal::Known(e) => e,
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Drop for Handle<T, R, L, S> {
    fn drop(&mut self) {
        if let Ok(id) = &self.borrow {
            self.view.release(id);
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Handle<T, R, L, S> {
    fn new(view: &View<T, R, L, S>, kind: AccessKind) -> Self {
        let borrow = view.try_borrow(kind).map_err(|refused| Refusal::Met {
            refused,
            error: std::sync::OnceLock::new(),
        });
        Self::with_refusal(view, borrow)
    }

    fn with_borrow(view: &View<T, R, L, S>, borrow: Result<BorrowId>) -> Self {
        Self::with_refusal(view, borrow.map_err(|e| Refusal::Known(Box::new(e))))
    }

    fn with_refusal(view: &View<T, R, L, S>, borrow: std::result::Result<BorrowId, Refusal>) -> Self {
        let extents = if borrow.is_ok() { view.extents } else { [0; R] };
        Handle {
            view: view.clone(),
            borrow,
            extents,
        }
    }

    fn conflict(&self) -> Option<&Error> {
        self.borrow.as_ref().err().map(|r| r.error(self.view.label()))
    }

    /// The handle with its borrow moved into group `group` (a refused one is asked for anew
    /// in the group): see `View::*_in` for what the caller guarantees.
    fn into_group(mut self, kind: AccessKind, group: u64) -> Self {
        // Empty while it moves: should anything below panic, the drop ends nothing twice.
        let borrow = match std::mem::replace(&mut self.borrow, Ok(BorrowId::Empty)) {
            Ok(granted) => self.view.regroup(granted, kind, group),
            Err(_) => self.view.borrow_in(kind, group),
        };
        self.borrow = borrow.map_err(|e| Refusal::Known(Box::new(e)));
        self.extents = if self.borrow.is_ok() {
            self.view.extents
        } else {
            [0; R]
        };
        self
    }

    /// The handle with its borrow given over to `held` (see `Reader::into_held` for what the
    /// caller guarantees): a borrow `held` already has covers it and the handle's own ends;
    /// else the handle's granted borrow moves into `held` as it is (a refused one is asked
    /// for anew in group `group`). Either way the handle keeps no borrow of its own
    /// (`Ok(Empty)`: its drop ends nothing), unless the group refused it too.
    fn into_held(mut self, kind: AccessKind, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        // Empty while it moves: should anything below panic, the drop ends nothing twice.
        let own = std::mem::replace(&mut self.borrow, Ok(BorrowId::Empty));
        match held {
            Some(h) => {
                // A borrow of other elements or another kind would not cover this handle.
                assert!(
                    h.covers(&self.view, kind),
                    "a held borrow of {} given to another view's handle",
                    self.view.label()
                );
                if let Ok(id) = own {
                    self.view.release(&id);
                }
            }
            None => {
                // A granted borrow stays where it is (a whole-allocation one in the table's
                // word, where later handles of the same kind take and end theirs without the
                // lock); the holder moves it into the group if it ever needs a conflicting one.
                let moved = match own {
                    Ok(granted) => Ok((granted, None)),
                    Err(_) => self.view.borrow_in(kind, group).map(|id| (id, Some(group))),
                };
                match moved {
                    Ok((id, group)) => *held = Some(HeldBorrow::new(&self.view, kind, id, group)),
                    Err(e) => self.borrow = Err(Refusal::Known(Box::new(e))),
                }
            }
        }
        self.extents = if self.borrow.is_ok() {
            self.view.extents
        } else {
            [0; R]
        };
        self
    }

    /// Whether an element access at `index` may go ahead: inside the extents, and (for rank 0,
    /// where zero extents cannot express "no element") the borrow was granted.
    #[inline(always)]
    fn admits(&self, index: &[usize; R]) -> bool {
        in_bounds(index, &self.extents) && (R > 0 || self.borrow.is_ok())
    }

    /// The conflict that refused this handle's borrow, as the launch's error.
    fn borrowed(&self) -> Result<()> {
        match &self.borrow {
            Ok(_) => Ok(()),
            Err(r) => Err(r.error(self.view.label()).clone()),
        }
    }

    /// Checks the handle for a launch over `bounds`: no conflict, and every token in bounds.
    fn check(&self, label: &str, bounds: &IndexBounds) -> Result<()> {
        self.borrowed()?;
        let Some((rank, _lo, hi)) = bounds.token_extents() else {
            return Ok(());
        };
        // Tokens of another rank cannot index this handle, so they need no check.
        if rank != R {
            return Ok(());
        }
        if !bounds_nonempty(bounds) {
            return Ok(());
        }
        for (dim, (&end, &extent)) in hi.iter().zip(&self.view.extents).enumerate() {
            if end > extent {
                return Err(Error::OutOfExtent {
                    label: label.to_owned(),
                    view: self.view.label().to_owned(),
                    dim,
                    end,
                    extent,
                });
            }
        }
        Ok(())
    }
}

fn bounds_nonempty(bounds: &IndexBounds) -> bool {
    match *bounds {
        IndexBounds::Range { begin, end } => begin < end,
        IndexBounds::Box { rank, lo, hi } => (0..rank).all(|d| lo[d] < hi[d]),
        IndexBounds::League { size } => size > 0,
    }
}

/// A shared read borrow of a view. Loads at any index, bounds-checked; hand it to a launch to
/// read at that launch's tokens without a check.
pub struct Reader<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    handle: Handle<T, R, L, S>,
}

/// A shared read borrow for random access — lookup tables, gathers: handed to a launch it
/// loads at any index, each access checked against the extents, and unlike a [`Reader`] it
/// does not require the launch's range to fit the view (a 3-entry coefficient table in a
/// 100-iteration launch). Conflicts as a reader does.
pub struct Lookup<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    handle: Handle<T, R, L, S>,
}

/// An exclusive write borrow of a rank-2 view for team launches: each team thread loads and
/// stores the element at its own `[league rank, team rank]` ([`TeamMember::team_slot`](
/// crate::TeamMember::team_slot)), each access checked against the extents. A distinct handle
/// from a [`Writer`], whose team rows hand columns to threads by another rule: the exclusive
/// borrow keeps the two from writing one view in the same launch.
pub struct TeamSlots<T: ViewValue, L: ArrayLayout, S: MemorySpace> {
    handle: Handle<T, 2, L, S>,
}

/// An exclusive write borrow of a view. It does nothing by itself: handed to a launch it
/// becomes a [`BoundWriter`] that loads and stores at the launch's tokens.
pub struct Writer<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    handle: Handle<T, R, L, S>,
}

/// A shared atomic borrow of a view: atomic read-modify-writes at any index (scatter-add,
/// histograms). Excludes readers and writers of the same elements.
pub struct AtomicHandle<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    handle: Handle<T, R, L, S>,
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    /// A reader: shared borrow, loads at any index.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let x: View<f64, 1> = View::from_slice("x", [3], &[1.0, 2.0, 3.0])?;
    /// let r = x.read();
    /// assert_eq!(r.get(2), 3.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn read(&self) -> Reader<T, R, L, S> {
        Reader {
            handle: Handle::new(self, AccessKind::Read),
        }
    }

    /// A lookup handle: shared read borrow for loads at indices the kernel computes, each
    /// checked, in a launch of any range.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let coef: View<f64, 1> = View::from_slice("coef", [3], &[1.0, -2.0, 1.0])?;
    /// let y: View<f64, 1> = View::new("y", [100])?;
    /// parallel_for("poly", (RangePolicy::new(Serial::default(), 0..100), (y.write(), coef.lookup())), |(i, (y, c))| {
    ///     let x = *i as f64;
    ///     y.set(i, c.get(0) + c.get(1) * x + c.get(2) * x * x);
    /// })?;
    /// assert_eq!(y.host_read()?.get(3), 4.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn lookup(&self) -> Lookup<T, R, L, S> {
        Lookup {
            handle: Handle::new(self, AccessKind::Read),
        }
    }

    /// A writer: exclusive borrow, to hand to a launch.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let y: View<f64, 1> = View::new("y", [4])?;
    /// parallel_for("iota", (RangePolicy::new(Serial::default(), 0..4), (y.write(),)), |(i, (y,))| {
    ///     y.set(i, *i as f64)
    /// })?;
    /// assert_eq!(y.to_vec()?, [0.0, 1.0, 2.0, 3.0]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn write(&self) -> Writer<T, R, L, S> {
        Writer {
            handle: Handle::new(self, AccessKind::Write),
        }
    }
}

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> View<T, 2, L, S> {
    /// A team-slots handle: exclusive borrow; in a team launch each thread stores at its own
    /// `[league rank, team rank]` (see [`TeamMember::team_slot`](crate::TeamMember::team_slot)).
    pub fn team_slots(&self) -> TeamSlots<T, L, S> {
        TeamSlots {
            handle: Handle::new(self, AccessKind::Write),
        }
    }
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    /// An atomic handle: shared with other atomic handles only.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let hist: View<u32, 1> = View::new("hist", [4])?;
    /// let h = hist.atomic();
    /// parallel_for("hist", RangePolicy::new(Serial::default(), 0..100), |i| {
    ///     h.fetch_add(*i % 4, 1);
    /// })?;
    /// drop(h);
    /// assert_eq!(hist.to_vec()?, [25, 25, 25, 25]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn atomic(&self) -> AtomicHandle<T, R, L, S> {
        AtomicHandle {
            handle: Handle::new(self, AccessKind::Atomic),
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Reader<T, R, L, S> {
    pub(crate) fn from_borrow(view: &View<T, R, L, S>, borrow: Result<BorrowId>) -> Self {
        Reader {
            handle: Handle::with_borrow(view, borrow),
        }
    }

    pub(crate) fn moved_into_group(self, group: u64) -> Self {
        Reader {
            handle: self.handle.into_group(AccessKind::Read, group),
        }
    }

    pub(crate) fn moved_into_held(self, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        Reader {
            handle: self.handle.into_held(AccessKind::Read, group, held),
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Lookup<T, R, L, S> {
    pub(crate) fn from_borrow(view: &View<T, R, L, S>, borrow: Result<BorrowId>) -> Self {
        Lookup {
            handle: Handle::with_borrow(view, borrow),
        }
    }

    pub(crate) fn moved_into_group(self, group: u64) -> Self {
        Lookup {
            handle: self.handle.into_group(AccessKind::Read, group),
        }
    }

    pub(crate) fn moved_into_held(self, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        Lookup {
            handle: self.handle.into_held(AccessKind::Read, group, held),
        }
    }
}

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> TeamSlots<T, L, S> {
    pub(crate) fn from_borrow(view: &View<T, 2, L, S>, borrow: Result<BorrowId>) -> Self {
        TeamSlots {
            handle: Handle::with_borrow(view, borrow),
        }
    }

    pub(crate) fn moved_into_group(self, group: u64) -> Self {
        TeamSlots {
            handle: self.handle.into_group(AccessKind::Write, group),
        }
    }

    pub(crate) fn moved_into_held(self, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        TeamSlots {
            handle: self.handle.into_held(AccessKind::Write, group, held),
        }
    }

    /// The view's label.
    pub fn label(&self) -> &str {
        self.handle.view.label()
    }

    /// The view this handle borrows.
    pub fn view(&self) -> &View<T, 2, L, S> {
        &self.handle.view
    }

    /// The conflict that kept this handle from borrowing, if any.
    pub fn conflict(&self) -> Option<&Error> {
        self.handle.conflict()
    }
}

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> fmt::Debug for TeamSlots<T, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamSlots")
            .field("view", &self.handle.view.label())
            .field("extents", &self.handle.view.extents)
            .field("conflict", &self.handle.conflict().map(ToString::to_string))
            .finish()
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Writer<T, R, L, S> {
    pub(crate) fn from_borrow(view: &View<T, R, L, S>, borrow: Result<BorrowId>) -> Self {
        Writer {
            handle: Handle::with_borrow(view, borrow),
        }
    }

    pub(crate) fn moved_into_group(self, group: u64) -> Self {
        Writer {
            handle: self.handle.into_group(AccessKind::Write, group),
        }
    }

    pub(crate) fn moved_into_held(self, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        Writer {
            handle: self.handle.into_held(AccessKind::Write, group, held),
        }
    }
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace> AtomicHandle<T, R, L, S> {
    pub(crate) fn from_borrow(view: &View<T, R, L, S>, borrow: Result<BorrowId>) -> Self {
        AtomicHandle {
            handle: Handle::with_borrow(view, borrow),
        }
    }

    pub(crate) fn moved_into_group(self, group: u64) -> Self {
        AtomicHandle {
            handle: self.handle.into_group(AccessKind::Atomic, group),
        }
    }

    pub(crate) fn moved_into_held(self, group: u64, held: &mut Option<HeldBorrow>) -> Self {
        AtomicHandle {
            handle: self.handle.into_held(AccessKind::Atomic, group, held),
        }
    }
}

macro_rules! handle_common {
    ($name:ident, $bound:ident) => {
        impl<T: $bound, const R: usize, L: ArrayLayout, S: MemorySpace> $name<T, R, L, S> {
            /// The view's label.
            pub fn label(&self) -> &str {
                self.handle.view.label()
            }

            /// The view's extents.
            pub fn extents(&self) -> [usize; R] {
                self.handle.view.extents
            }

            /// The view this handle borrows.
            pub fn view(&self) -> &View<T, R, L, S> {
                &self.handle.view
            }

            /// The conflict that kept this handle from borrowing, if any (a launch given this
            /// handle fails with it).
            pub fn conflict(&self) -> Option<&Error> {
                self.handle.conflict()
            }
        }

        impl<T: $bound, const R: usize, L: ArrayLayout, S: MemorySpace> fmt::Debug for $name<T, R, L, S> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("view", &self.handle.view.label())
                    .field("extents", &self.handle.view.extents)
                    .field("conflict", &self.handle.conflict().map(ToString::to_string))
                    .finish()
            }
        }
    };
}

handle_common!(Reader, ViewValue);
handle_common!(Lookup, ViewValue);
handle_common!(Writer, ViewValue);
handle_common!(AtomicHandle, AtomicValue);

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Reader<T, R, L, S> {
    /// The element at `index` (panics if out of bounds, or if the reader was refused by a
    /// conflicting handle — inside a launch that becomes `Error::KernelPanicked`).
    #[inline(always)]
    pub fn get(&self, index: impl ViewIndex<R>) -> T {
        let index = index.index();
        if !self.handle.admits(&index) {
            out_of_bounds(
                self.label(),
                index,
                self.handle.view.extents,
                self.handle.conflict(),
            );
        }
        // SAFETY: `index` is inside the extents and the reader holds a shared borrow, so no
        // writer or atomic handle touches these elements while it lives.
        unsafe { self.handle.view.element_ptr(&index).read() }
    }
}

/// A value type with atomic operations in views: integers natively, floats by
/// compare-and-swap on their bits, and any other [`LockedAtomic`](crate::LockedAtomic) type (complex numbers,
/// small structs) under a lock of a global lock table.
///
/// The operations that need more of the type say so: `fetch_add` needs `Add`, `fetch_min`
/// and `fetch_max` need `PartialOrd`, `compare_exchange` needs `PartialEq`.
///
/// # Safety
///
/// Atomic handles reinterpret a view's elements of type `Self` in place as `Self::Atom`. An
/// implementation promises that `Atom` has the same size as `Self` and an alignment no
/// greater than `Self`'s, that every bit pattern of a `Self` is a valid `Atom` (and back), and
/// that `Atom`'s operations here are safe to call from several threads at once on one element:
/// every access to an element goes through these methods (the borrow rules keep readers and
/// writers away), and each of them is atomic with respect to the others.
pub unsafe trait AtomicValue: ViewValue {
    /// The atomic type of the same size and alignment.
    type Atom: Send + Sync;
    /// Atomically adds `v`; returns the old value.
    fn fetch_add(a: &Self::Atom, v: Self) -> Self
    where
        Self: std::ops::Add<Output = Self>;
    /// Atomically keeps the smaller; returns the old value.
    fn fetch_min(a: &Self::Atom, v: Self) -> Self
    where
        Self: PartialOrd;
    /// Atomically keeps the larger; returns the old value.
    fn fetch_max(a: &Self::Atom, v: Self) -> Self
    where
        Self: PartialOrd;
    /// Atomically replaces `current` with `new`; the old value in `Err` if it was not `current`.
    fn compare_exchange(a: &Self::Atom, current: Self, new: Self) -> std::result::Result<Self, Self>
    where
        Self: PartialEq;
    /// Atomic load.
    fn load(a: &Self::Atom) -> Self;
    /// Atomic store.
    fn store(a: &Self::Atom, v: Self);
}

macro_rules! atomic_int {
    ($($t:ty => $atom:ty),*) => {$(
        // SAFETY: `$atom` is the standard atomic of the integer `$t`: same size and alignment,
        // the same bit patterns, and every method is an atomic operation.
        unsafe impl AtomicValue for $t {
            type Atom = $atom;
            #[inline(always)]
            fn fetch_add(a: &$atom, v: $t) -> $t { a.fetch_add(v, Ordering::Relaxed) }
            #[inline(always)]
            fn fetch_min(a: &$atom, v: $t) -> $t { a.fetch_min(v, Ordering::Relaxed) }
            #[inline(always)]
            fn fetch_max(a: &$atom, v: $t) -> $t { a.fetch_max(v, Ordering::Relaxed) }
            #[inline(always)]
            fn compare_exchange(a: &$atom, current: $t, new: $t) -> std::result::Result<$t, $t> {
                a.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
            }
            #[inline(always)]
            fn load(a: &$atom) -> $t { a.load(Ordering::Relaxed) }
            #[inline(always)]
            fn store(a: &$atom, v: $t) { a.store(v, Ordering::Relaxed) }
        }
    )*};
}

atomic_int!(
    i32 => atomic::AtomicI32, i64 => atomic::AtomicI64, u32 => atomic::AtomicU32,
    u64 => atomic::AtomicU64, usize => atomic::AtomicUsize, isize => atomic::AtomicIsize
);

macro_rules! atomic_float {
    ($($t:ty => $atom:ty),*) => {$(
        // SAFETY: `$atom` is the standard atomic of the float's bits: same size and alignment,
        // every bit pattern valid both ways (`to_bits`/`from_bits`), every method atomic.
        unsafe impl AtomicValue for $t {
            type Atom = $atom;
            #[inline(always)]
            fn fetch_add(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| x + v) }
            #[inline(always)]
            fn fetch_min(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| if v < x { v } else { x }) }
            #[inline(always)]
            fn fetch_max(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| if v > x { v } else { x }) }
            #[inline(always)]
            fn compare_exchange(a: &$atom, current: $t, new: $t) -> std::result::Result<$t, $t> {
                a.compare_exchange(current.to_bits(), new.to_bits(), Ordering::AcqRel, Ordering::Relaxed)
                    .map(<$t>::from_bits)
                    .map_err(<$t>::from_bits)
            }
            #[inline(always)]
            fn load(a: &$atom) -> $t { <$t>::from_bits(a.load(Ordering::Relaxed)) }
            #[inline(always)]
            fn store(a: &$atom, v: $t) { a.store(v.to_bits(), Ordering::Relaxed) }
        }
    )*};
}

atomic_float!(f32 => atomic::AtomicU32, f64 => atomic::AtomicU64);

/// A compare-and-swap loop applying `f` to a float stored as bits.
#[inline(always)]
fn float_rmw<A: FloatAtom>(a: &A, f: impl Fn(A::Float) -> A::Float) -> A::Float {
    let mut old = a.load_bits();
    loop {
        let new = f(A::from_bits(old));
        match a.cas_bits(old, A::to_bits(new)) {
            Ok(_) => return A::from_bits(old),
            Err(now) => old = now,
        }
    }
}

trait FloatAtom {
    type Float: Copy;
    type Bits: Copy;
    fn load_bits(&self) -> Self::Bits;
    fn cas_bits(&self, old: Self::Bits, new: Self::Bits) -> std::result::Result<Self::Bits, Self::Bits>;
    fn from_bits(b: Self::Bits) -> Self::Float;
    fn to_bits(f: Self::Float) -> Self::Bits;
}

macro_rules! float_atom {
    ($($atom:ty => $f:ty, $bits:ty),*) => {$(
        impl FloatAtom for $atom {
            type Float = $f;
            type Bits = $bits;
            #[inline(always)]
            fn load_bits(&self) -> $bits { self.load(Ordering::Relaxed) }
            #[inline(always)]
            fn cas_bits(&self, old: $bits, new: $bits) -> std::result::Result<$bits, $bits> {
                self.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed)
            }
            #[inline(always)]
            fn from_bits(b: $bits) -> $f { <$f>::from_bits(b) }
            #[inline(always)]
            fn to_bits(f: $f) -> $bits { f.to_bits() }
        }
    )*};
}

float_atom!(atomic::AtomicU32 => f32, u32, atomic::AtomicU64 => f64, u64);

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> AtomicHandle<T, R, L, S> {
    #[inline(always)]
    fn atom(&self, index: impl ViewIndex<R>) -> &T::Atom {
        let index = index.index();
        if !self.handle.admits(&index) {
            out_of_bounds(
                self.label(),
                index,
                self.handle.view.extents,
                self.handle.conflict(),
            );
        }
        let ptr = self.handle.view.element_ptr(&index).cast::<T::Atom>();
        // SAFETY: `index` is inside the extents, so `ptr` points at a live element. `T::Atom`
        // has the size and alignment of `T` (checked at compile time below) and every bit
        // pattern of `T` is one of it. While this handle lives only atomic handles touch these
        // elements (the borrow excludes readers and writers), so all concurrent accesses are
        // atomic.
        unsafe {
            let () = AtomLayout::<T>::SAME;
            &*ptr
        }
    }

    /// Atomically adds `v` at `index`; returns the old value.
    #[inline(always)]
    pub fn fetch_add(&self, index: impl ViewIndex<R>, v: T) -> T
    where
        T: std::ops::Add<Output = T>,
    {
        T::fetch_add(self.atom(index), v)
    }

    /// Atomically keeps the smaller of the element and `v`; returns the old value.
    #[inline(always)]
    pub fn fetch_min(&self, index: impl ViewIndex<R>, v: T) -> T
    where
        T: PartialOrd,
    {
        T::fetch_min(self.atom(index), v)
    }

    /// Atomically keeps the larger of the element and `v`; returns the old value.
    #[inline(always)]
    pub fn fetch_max(&self, index: impl ViewIndex<R>, v: T) -> T
    where
        T: PartialOrd,
    {
        T::fetch_max(self.atom(index), v)
    }

    /// Atomically replaces `current` with `new` at `index`: `Ok(old)` on success, `Err(actual)`
    /// otherwise.
    #[inline(always)]
    pub fn compare_exchange(&self, index: impl ViewIndex<R>, current: T, new: T) -> std::result::Result<T, T>
    where
        T: PartialEq,
    {
        T::compare_exchange(self.atom(index), current, new)
    }

    /// Atomic load.
    #[inline(always)]
    pub fn load(&self, index: impl ViewIndex<R>) -> T {
        T::load(self.atom(index))
    }

    /// Atomic store.
    #[inline(always)]
    pub fn store(&self, index: impl ViewIndex<R>, v: T) {
        T::store(self.atom(index), v)
    }
}

struct AtomLayout<T: AtomicValue>(PhantomData<T>);

impl<T: AtomicValue> AtomLayout<T> {
    const SAME: () = assert!(
        size_of::<T>() == size_of::<T::Atom>() && align_of::<T::Atom>() <= size_of::<T>(),
        "an atomic element type must have the size of its value and an alignment its size provides"
    );
}

/// Brand type: invariant in `'it`, and neither `Send` nor `Sync`.
type Brand<'it> = PhantomData<(fn(&'it ()) -> &'it (), *const ())>;

/// A writer bound to one launch: loads and stores only at that launch's tokens, without a
/// bounds check (the launch checked its range against the view once).
pub struct BoundWriter<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    prepared: PreparedWriter<T, R>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
}

impl<'it, T: ViewValue, const R: usize, L: ArrayLayout> BoundWriter<'it, T, R, L> {
    /// The address of the element at `index`, checked against the extents when `check` is set
    /// (otherwise the caller knows it is inside).
    #[inline(always)]
    fn element(&self, index: [usize; R], check: bool) -> *mut T {
        let p = &self.prepared;
        if check {
            return checked_element::<T, R, L>(p.ptr, &p.strides, &p.extents, p.label, index);
        }
        p.ptr.as_ptr().wrapping_add(L::offset(&p.strides, &index))
    }

    #[inline(always)]
    fn slot<K: Token<'it, R>>(&self, token: K) -> *mut T {
        // The launch checked that every range token it makes is inside the extents; league
        // tokens are checked here (a constant-false test for the others).
        self.element(token.index(), K::CHECKED)
    }

    /// The extents.
    pub fn extents(&self) -> [usize; R] {
        self.prepared.extents
    }

    /// The element at the current iteration's token.
    #[inline(always)]
    pub fn get(&self, token: impl Token<'it, R>) -> T {
        // SAFETY: the token is one the launch handed to this iteration, inside the extents
        // (checked at launch); the writer's exclusive borrow keeps other handles away, and
        // no other iteration holds this token, so nobody stores here concurrently.
        unsafe { self.slot(token).read() }
    }

    /// Stores `value` at the current iteration's token.
    #[inline(always)]
    pub fn set(&self, token: impl Token<'it, R>, value: T) {
        // SAFETY: as in `get`: the element is inside the allocation and owned by this
        // iteration for the duration of the launch.
        unsafe { self.slot(token).write(value) }
    }

    /// Replaces the element at the token with `f(old)`.
    #[inline(always)]
    pub fn update(&self, token: impl Token<'it, R>, f: impl FnOnce(T) -> T) {
        let slot = self.slot(token);
        // SAFETY: as in `get` and `set`.
        unsafe { slot.write(f(slot.read())) }
    }

    /// **Expert escape hatch.** Stores `value` at any `index`, not only at this iteration's
    /// token: for scatters whose targets the caller knows to be distinct (a permutation, a
    /// coloring) and that the type system cannot see. The index is checked against the
    /// extents (a panic names the view). Where the targets may repeat, use an atomic handle
    /// (`y.atomic()`), whose `store` and `fetch_add` are safe.
    ///
    /// # Safety
    ///
    /// While the launch runs, no other iteration may load or store the element at `index`:
    /// neither through this writer (its token's element, or `index` in another iteration's
    /// call of this method) nor otherwise. Two iterations storing to one element is a data
    /// race, which is undefined behaviour.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let n = 6;
    /// let perm = [3, 0, 5, 1, 4, 2]; // a permutation: every target is written once
    /// let x: View<i64, 1> = View::from_slice("x", [n], &[10, 11, 12, 13, 14, 15])?;
    /// let y: View<i64, 1> = View::new("y", [n])?;
    /// parallel_for("scatter", (RangePolicy::new(Serial::default(), 0..n), (y.write(), x.read())), |(i, (y, x))| {
    ///     // SAFETY: `perm` is a permutation, so no two iterations store to one element.
    ///     unsafe { y.set_at(perm[*i], x.get(i)) }
    /// })?;
    /// assert_eq!(y.to_vec()?, [11, 13, 15, 10, 14, 12]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    pub unsafe fn set_at(&self, index: impl ViewIndex<R>, value: T) {
        let slot = self.element(index.index(), true);
        // SAFETY: `element` checked the index, so the slot is inside the view; the writer's
        // exclusive borrow keeps other handles away, and the caller promises no other
        // iteration touches the element.
        unsafe { slot.write(value) }
    }

    /// **Expert escape hatch.** Loads the element at any `index` (checked against the
    /// extents), for kernels that gather what other iterations do not store.
    ///
    /// # Safety
    ///
    /// While the launch runs, no other iteration may store to the element at `index` (through
    /// its token or [`set_at`](Self::set_at)).
    #[inline(always)]
    pub unsafe fn get_at(&self, index: impl ViewIndex<R>) -> T {
        let slot = self.element(index.index(), true);
        // SAFETY: `element` checked the index, so the slot is inside the view; the caller
        // promises no concurrent store to the element.
        unsafe { slot.read() }
    }
}

impl<'it, T: ViewValue, L: ArrayLayout> BoundWriter<'it, T, 2, L> {
    /// The row `league` of this rank-2 writer: the elements `(league, j)` the team owns.
    ///
    /// The threads of the team store into the row through the [`TeamIdx`] tokens of team
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

/// One team's plane of a rank-3 writer ([`BoundWriter::team_plane`]): its rows go to the
/// threads that own them in team loops ([`row`](Self::row) takes the row's [`TeamIdx`]).
pub struct TeamPlane<'it, T: ViewValue, L: ArrayLayout> {
    ptr: NonNull<T>,
    strides: [usize; 3],
    extents: [usize; 3],
    label: *const str,
    plane: usize,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
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

/// One row of a rank-2 handle bound to a launch, as [`TeamRow`] and [`RowReader`] share it:
/// the row is checked once when it is made, each column when it is used.
#[derive(Clone, Copy)]
struct RowAccess<T> {
    ptr: NonNull<T>,
    strides: [usize; 2],
    extents: [usize; 2],
    label: *const str,
    row: usize,
}

impl<T> RowAccess<T> {
    /// Row `row` of the handle at `ptr`.
    ///
    /// # Panics
    ///
    /// If `row` is not below the first extent.
    #[inline(always)]
    fn new(ptr: NonNull<T>, strides: [usize; 2], extents: [usize; 2], label: *const str, row: usize) -> Self {
        if row >= extents[0] {
            // SAFETY: the label belongs to the view of the handle this row comes from, which
            // the launch keeps alive while bound handles exist.
            out_of_bounds(unsafe { &*label }, [row, 0], extents, None);
        }
        RowAccess {
            ptr,
            strides,
            extents,
            label,
            row,
        }
    }

    /// The address of the element at `column`, after checking the column against the row's
    /// length (panics otherwise); the row was checked in `new`, so it lies in the allocation.
    #[inline(always)]
    fn element<L: ArrayLayout>(&self, column: usize) -> *mut T {
        let index = [self.row, column];
        if column >= self.extents[1] {
            // SAFETY: as in `new`.
            out_of_bounds(unsafe { &*self.label }, index, self.extents, None);
        }
        self.ptr.as_ptr().wrapping_add(L::offset(&self.strides, &index))
    }
}

/// One team's row of a rank-2 writer ([`BoundWriter::team_row`]): loads and stores at the
/// [`TeamIdx`] tokens of team loops, each column on the thread that owns it. The tokens carry
/// the launch's brand `'it` (team loops over the launch's own member make them), so the team
/// loops of a member from another (nested) launch, which owns every column itself, cannot
/// store here.
///
/// Columns are checked against the second extent, one compare per access.
pub struct TeamRow<'it, T: ViewValue, L: ArrayLayout> {
    row: RowAccess<T>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
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

/// A reader bound to one launch: unchecked loads at the launch's tokens, checked loads at any
/// other index, and [`neighbor`](Self::neighbor) loads at a constant offset from a token.
pub struct BoundReader<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    prepared: PreparedReader<T, R>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
}

/// What a launch computes once for a reader: where it is, and how far the launch's tokens stay
/// from the edges of its extents.
#[derive(Clone, Copy)]
pub struct PreparedReader<T, const R: usize> {
    ptr: NonNull<T>,
    strides: [usize; R],
    extents: [usize; R],
    /// Per dimension, the smallest token index of the launch (0 if ranks differ).
    room_below: [usize; R],
    /// Per dimension, the extent minus the largest token index of the launch, minus 1.
    room_above: [usize; R],
    label: *const str,
}

// SAFETY: a prepared reader is read-only access to elements of `Send + Sync` type that a shared
// borrow (held by the reader the launch owns) protects from writers; the label pointer refers to
// the view's label, which the launch keeps alive.
unsafe impl<T: Sync, const R: usize> Send for PreparedReader<T, R> {}
// SAFETY: as above.
unsafe impl<T: Sync, const R: usize> Sync for PreparedReader<T, R> {}

impl<'it, T: ViewValue, const R: usize, L: ArrayLayout> BoundReader<'it, T, R, L> {
    #[inline(always)]
    fn load(&self, index: &[usize; R]) -> T {
        let p = &self.prepared;
        // SAFETY: every caller has established that `index` is inside the extents; the shared
        // borrow excludes writers while the launch runs.
        unsafe { p.ptr.as_ptr().wrapping_add(L::offset(&p.strides, index)).read() }
    }

    /// The element at `index`: a token of this launch (no check) or a plain index (checked).
    #[inline(always)]
    pub fn get<I: ReadIndex<'it, R>>(&self, index: I) -> T {
        let index = index.index();
        if I::CHECKED && !in_bounds(&index, &self.prepared.extents) {
            // SAFETY: the label belongs to the view of the reader this was bound from, which
            // the launch keeps alive while bound handles exist.
            out_of_bounds(
                unsafe { &*self.prepared.label },
                index,
                self.prepared.extents,
                None,
            );
        }
        self.load(&index)
    }

    /// The element at `token + offset`: a stencil neighbour. The check compares the constant
    /// offset with how far this launch's tokens stay from the edges, which does not depend on
    /// the token, so the compiler hoists it out of the loop: in a stencil the neighbour loads
    /// cost what the raw slice loop's do.
    ///
    /// # Panics
    ///
    /// If `token + offset` can leave the extents for some token of the launch (inside a launch
    /// this becomes `Error::KernelPanicked`).
    ///
    /// ```
    /// use hoplite_core::{MDRangePolicy, View, parallel_for};
    /// use hoplite_serial::Serial;
    /// let u: View<f64, 2> = View::from_slice("u", [3, 3], &[0., 1., 0., 1., 4., 1., 0., 1., 0.])?;
    /// let out: View<f64, 2> = View::new("out", [3, 3])?;
    /// let interior = MDRangePolicy::new(Serial::default(), [1, 1], [2, 2]);
    /// parallel_for("laplace", (interior, (out.write(), u.read())), |(ij, (out, u))| {
    ///     let sum = u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    ///     out.set(ij, sum - 4.0 * u.get(ij));
    /// })?;
    /// assert_eq!(out.host_read()?.get([1, 1]), -12.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    pub fn neighbor<K: Token<'it, R>>(&self, token: K, offset: [isize; R]) -> T {
        let p = &self.prepared;
        if K::CHECKED {
            // No launch-wide range covers this token: check the neighbour itself.
            let at = token.index();
            let index: [usize; R] = std::array::from_fn(|d| at[d].wrapping_add_signed(offset[d]));
            return self.get(index);
        }
        let mut ok = true;
        // An index loop: the zipped-iterator form measured 3x slower in the stencil benchmark
        // because the check then no longer folds away.
        #[expect(clippy::needless_range_loop, reason = "keeps the check foldable; see above")]
        for d in 0..R {
            let o = offset[d];
            ok &= o.unsigned_abs() <= if o < 0 { p.room_below[d] } else { p.room_above[d] };
        }
        let at = token.index();
        if !ok {
            // Cold, and given values rather than addresses, so that nothing on the hot path
            // has to live in memory.
            neighbor_out_of_bounds(p.label, at, offset, p.room_below, p.room_above);
        }
        let index: [usize; R] = std::array::from_fn(|d| at[d].wrapping_add_signed(offset[d]));
        self.load(&index)
    }

    /// The extents.
    pub fn extents(&self) -> [usize; R] {
        self.prepared.extents
    }
}

impl<'it, T: ViewValue, L: ArrayLayout> BoundReader<'it, T, 2, L> {
    /// Row `row` of this rank-2 reader: loads at any column, each checked against the row
    /// length only. In a team kernel, `a.row(*league)` reads the team's row as fast as a slice.
    ///
    /// # Panics
    ///
    /// If `row` is not below the first extent (inside a launch this becomes
    /// `Error::KernelPanicked` naming the view).
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, Sum, TeamMember, TeamPolicy, TeamThreadRange, View};
    /// use hoplite_serial::Serial;
    /// let a: View<f64, 2> = View::from_slice("a", [2, 3], &[1., 2., 3., 4., 5., 6.])?;
    /// let total = parallel_reduce("rows", (TeamPolicy::new(Serial::default(), 2, 1), (a.read(),)), |(m, (a,)), acc: &mut f64| {
    ///     let row = a.row(m.league_rank());
    ///     *acc += TeamThreadRange::new(m, row.len()).parallel_reduce(|j, s: &mut f64| *s += row.get(*j), Sum::new());
    /// }, Sum::new())?;
    /// assert_eq!(total, 21.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    pub fn row(&self, row: usize) -> RowReader<'it, T, L> {
        let p = &self.prepared;
        RowReader {
            row: RowAccess::new(p.ptr, p.strides, p.extents, p.label, row),
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

/// One row of a rank-2 reader bound to a launch ([`BoundReader::row`]): checked loads at any
/// column.
pub struct RowReader<'it, T: ViewValue, L: ArrayLayout> {
    row: RowAccess<T>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
}

impl<T: ViewValue, L: ArrayLayout> RowReader<'_, T, L> {
    /// Number of columns.
    pub fn len(&self) -> usize {
        self.row.extents[1]
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `column` (panics if it is not below [`len`](Self::len)).
    #[inline(always)]
    pub fn get(&self, column: impl ViewIndex<1>) -> T {
        // SAFETY: `element` checked the column and `RowAccess::new` the row, so the element is
        // inside the allocation; the shared borrow excludes writers while the launch runs.
        unsafe { self.row.element::<L>(column.index()[0]).read() }
    }
}

/// The handles a launch takes (a handle, or a tuple of up to eight): checked once against the
/// launch's index space, then bound to its iteration brand.
///
/// Implemented for [`Reader`], [`Writer`], [`AtomicHandle`], `()` and tuples of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be handed to a launch",
    label = "expected view handles such as `(y.write(), x.read())`",
    note = "launch arguments are a tuple of handles made with `read()`, `write()` or `atomic()`"
)]
pub trait LaunchArgs: Send + Sync {
    /// What the launch computes once per handle (addresses, strides, margins).
    type Prepared: Send + Sync;
    /// The handles bound to a launch with brand `'it`.
    type Bound<'it>;

    /// Checks every handle — no borrow conflict, the index space inside its extents — and
    /// computes what binding needs.
    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared>;

    /// Binds prepared handles to brand `'it`.
    ///
    /// # Safety
    ///
    /// `prepared` came from [`prepare`](Self::prepare) of handles that are still alive, for the
    /// launch's index space; the bound handles are used only with tokens of that launch (brand
    /// `'it`), and the launch hands each token to one iteration at a time.
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> Self::Bound<'it>;
}

impl LaunchArgs for () {
    type Prepared = ();
    type Bound<'it> = ();
    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<()> {
        Ok(())
    }
    #[inline(always)]
    unsafe fn bind<'it>(_prepared: &()) -> Self::Bound<'it> {}
}

/// What a launch computes once for a writer.
#[derive(Clone, Copy)]
pub struct PreparedWriter<T, const R: usize> {
    ptr: NonNull<T>,
    strides: [usize; R],
    extents: [usize; R],
    label: *const str,
}

// SAFETY: the writer the launch owns holds the exclusive borrow; the pointer is only used by
// bound writers, each storing at its own iteration's tokens; the label pointer refers to the
// view's label, which the launch keeps alive.
unsafe impl<T: Send, const R: usize> Send for PreparedWriter<T, R> {}
// SAFETY: as above: concurrent bound writers never touch the same element.
unsafe impl<T: Send, const R: usize> Sync for PreparedWriter<T, R> {}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> LaunchArgs for Writer<T, R, L, S> {
    type Prepared = PreparedWriter<T, R>;
    type Bound<'it> = BoundWriter<'it, T, R, L>;

    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
        self.handle.check(label, bounds)?;
        if R == 0 {
            // Rank-1 tokens store the one element (`Token<0> for Idx`): only one may exist.
            if let IndexBounds::Range { begin, end } = *bounds
                && end.saturating_sub(begin) > 1
            {
                return Err(Error::ScalarWriterInWideLaunch {
                    label: label.to_owned(),
                    view: self.handle.view.label().to_owned(),
                    iterations: end - begin,
                });
            }
        }
        Ok(PreparedWriter {
            ptr: self.handle.view.ptr,
            strides: self.handle.view.strides,
            extents: self.handle.extents,
            label: self.handle.view.label() as *const str,
        })
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundWriter<'it, T, R, L> {
        BoundWriter {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> LaunchArgs for Reader<T, R, L, S> {
    type Prepared = PreparedReader<T, R>;
    type Bound<'it> = BoundReader<'it, T, R, L>;

    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
        self.handle.check(label, bounds)?;
        let extents = self.handle.extents;
        let mut room_below = [0; R];
        let mut room_above = [0; R];
        if let Some((rank, lo, hi)) = bounds.token_extents()
            && rank == R
            && bounds_nonempty(bounds)
        {
            for d in 0..R {
                room_below[d] = lo[d];
                // `check` guaranteed hi <= extent, and the box is non-empty so hi >= 1.
                room_above[d] = extents[d] - hi[d];
            }
        }
        Ok(PreparedReader {
            ptr: self.handle.view.ptr,
            strides: self.handle.view.strides,
            extents,
            room_below,
            room_above,
            label: self.handle.view.label() as *const str,
        })
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundReader<'it, T, R, L> {
        BoundReader {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> LaunchArgs for Lookup<T, R, L, S> {
    type Prepared = PreparedReader<T, R>;
    type Bound<'it> = BoundLookup<'it, T, R, L>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // No range check: every access is checked instead. Only a refused borrow fails.
        self.handle.borrowed()?;
        Ok(PreparedReader {
            ptr: self.handle.view.ptr,
            strides: self.handle.view.strides,
            extents: self.handle.extents,
            room_below: [0; R],
            room_above: [0; R],
            label: self.handle.view.label() as *const str,
        })
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundLookup<'it, T, R, L> {
        BoundLookup {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

/// A [`Lookup`] bound to one launch: loads at any index, tokens included, each checked against
/// the extents (a panic names the view; inside a launch it becomes `Error::KernelPanicked`).
pub struct BoundLookup<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    prepared: PreparedReader<T, R>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
}

impl<T: ViewValue, const R: usize, L: ArrayLayout> BoundLookup<'_, T, R, L> {
    /// The element at `index` (a number, an array or any token), checked.
    #[inline(always)]
    pub fn get(&self, index: impl ViewIndex<R>) -> T {
        let p = &self.prepared;
        let at = checked_element::<T, R, L>(p.ptr, &p.strides, &p.extents, p.label, index.index());
        // SAFETY: `checked_element` checked the index against the extents; the shared borrow
        // the launch holds excludes writers while the launch runs.
        unsafe { at.read() }
    }

    /// The extents.
    pub fn extents(&self) -> [usize; R] {
        self.prepared.extents
    }
}

impl<T: ViewValue, L: ArrayLayout, S: HostAccessibleSpace> LaunchArgs for TeamSlots<T, L, S> {
    type Prepared = PreparedWriter<T, 2>;
    type Bound<'it> = BoundTeamSlots<'it, T, L>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // No launch-wide check: slots are checked per access.
        self.handle.borrowed()?;
        Ok(PreparedWriter {
            ptr: self.handle.view.ptr,
            strides: self.handle.view.strides,
            extents: self.handle.extents,
            label: self.handle.view.label() as *const str,
        })
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundTeamSlots<'it, T, L> {
        BoundTeamSlots {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }
}

/// A [`TeamSlots`] handle bound to one team launch: loads and stores at the thread's own
/// `[league rank, team rank]`, checked against the extents (a panic names the view).
pub struct BoundTeamSlots<'it, T: ViewValue, L: ArrayLayout> {
    prepared: PreparedWriter<T, 2>,
    brand: Brand<'it>,
    _layout: PhantomData<L>,
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

/// What a launch keeps for an atomic handle: the handle itself.
pub struct PreparedAtomic<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> {
    handle: *const AtomicHandle<T, R, L, S>,
}

// SAFETY: atomic handles are `Sync`; the pointer refers to the handle the launch owns.
unsafe impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Send
    for PreparedAtomic<T, R, L, S>
{
}
// SAFETY: as above.
unsafe impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Sync
    for PreparedAtomic<T, R, L, S>
{
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> LaunchArgs
    for AtomicHandle<T, R, L, S>
{
    type Prepared = PreparedAtomic<T, R, L, S>;
    type Bound<'it> = BoundAtomic<'it, T, R, L, S>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // Atomic accesses are checked per element; only the borrow matters here.
        match self.handle.conflict() {
            Some(e) => Err(e.clone()),
            None => Ok(PreparedAtomic {
                handle: self as *const Self,
            }),
        }
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundAtomic<'it, T, R, L, S> {
        BoundAtomic {
            handle: prepared.handle,
            brand: PhantomData,
        }
    }
}

/// An atomic handle handed to a launch; derefs to the [`AtomicHandle`].
pub struct BoundAtomic<'it, T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> {
    handle: *const AtomicHandle<T, R, L, S>,
    brand: Brand<'it>,
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> std::ops::Deref
    for BoundAtomic<'_, T, R, L, S>
{
    type Target = AtomicHandle<T, R, L, S>;
    #[inline(always)]
    fn deref(&self) -> &AtomicHandle<T, R, L, S> {
        // SAFETY: the launch keeps the handle alive while bound handles exist (the `bind`
        // contract), and a bound handle cannot leave its iteration (brand `'it`).
        unsafe { &*self.handle }
    }
}

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: LaunchArgs),+> LaunchArgs for ($($name,)+) {
            type Prepared = ($($name::Prepared,)+);
            type Bound<'it> = ($($name::Bound<'it>,)+);

            fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                Ok(($($name.prepare(label, bounds)?,)+))
            }

            #[inline(always)]
            unsafe fn bind<'it>(prepared: &Self::Prepared) -> Self::Bound<'it> {
                #[allow(non_snake_case)]
                let ($($name,)+) = prepared;
                // SAFETY: the caller upholds `bind`'s contract for the whole tuple, hence for
                // each element.
                unsafe { ($(<$name as LaunchArgs>::bind($name),)+) }
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);

/// A host-side shared borrow: reads any element; a contiguous view derefs to a slice.
pub struct HostRead<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    view: &'v View<T, R, L, S>,
    borrow: BorrowId,
}

/// A host-side exclusive borrow: reads and writes any element.
pub struct HostWrite<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    view: &'v View<T, R, L, S>,
    borrow: BorrowId,
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Drop for HostRead<'_, T, R, L, S> {
    fn drop(&mut self) {
        self.view.release(&self.borrow);
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Drop for HostWrite<'_, T, R, L, S> {
    fn drop(&mut self) {
        self.view.release(&self.borrow);
    }
}

impl<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> HostRead<'v, T, R, L, S> {
    pub(crate) fn new(view: &'v View<T, R, L, S>) -> Result<Self> {
        Ok(HostRead {
            borrow: view.borrow(AccessKind::Read)?,
            view,
        })
    }

    /// The element at `index` (panics if out of bounds).
    pub fn get(&self, index: impl ViewIndex<R>) -> T {
        // SAFETY: `checked_element_ptr` points at an element inside the view; the shared borrow
        // excludes writers.
        unsafe { checked_element_ptr(self.view, index).read() }
    }

    /// The elements as a slice in the view's own order, if the view is contiguous.
    pub fn as_slice(&self) -> Option<&[T]> {
        self.view.is_contiguous().then(|| {
            // SAFETY: a contiguous view covers `len` consecutive initialized elements from
            // `ptr`; the shared borrow keeps writers away while the guard (and so the slice)
            // lives.
            unsafe { std::slice::from_raw_parts(self.view.ptr.as_ptr(), self.view.len()) }
        })
    }

    /// Calls `f` with every element in the view's own order.
    pub fn for_each_in_order(&self, mut f: impl FnMut(T)) {
        if let Some(s) = self.as_slice() {
            s.iter().for_each(|&v| f(v));
            return;
        }
        for_each_index::<R, L>(&self.view.extents, |idx| {
            // SAFETY: `for_each_index` yields only indices inside the extents; shared borrow.
            f(unsafe { self.view.element_ptr(&idx).read() })
        });
    }
}

impl<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> HostWrite<'v, T, R, L, S> {
    pub(crate) fn new(view: &'v View<T, R, L, S>) -> Result<Self> {
        Ok(HostWrite {
            borrow: view.borrow(AccessKind::Write)?,
            view,
        })
    }

    /// The element at `index` (panics if out of bounds).
    pub fn get(&self, index: impl ViewIndex<R>) -> T {
        // SAFETY: `checked_element_ptr` points at an element inside the view; the exclusive
        // borrow excludes every other handle.
        unsafe { checked_element_ptr(self.view, index).read() }
    }

    /// Stores `value` at `index` (panics if out of bounds).
    pub fn set(&mut self, index: impl ViewIndex<R>, value: T) {
        // SAFETY: `checked_element_ptr` points at an element inside the view; the exclusive
        // borrow excludes every other handle, and `&mut self` other uses of this guard.
        unsafe { checked_element_ptr(self.view, index).write(value) }
    }

    /// The elements as a mutable slice in the view's own order, if the view is contiguous.
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        self.view.is_contiguous().then(|| {
            // SAFETY: contiguous elements from `ptr`; the exclusive borrow and `&mut self`
            // make this the only access while the slice lives.
            unsafe { std::slice::from_raw_parts_mut(self.view.ptr.as_ptr(), self.view.len()) }
        })
    }

    /// Sets every element to `value`.
    pub fn fill(&mut self, value: T) {
        if size_of::<T>() == 0 {
            // A zero-sized type has one value, which every element already holds: nothing to
            // write (and a view of them may have more elements than a loop could visit).
            return;
        }
        for_each_index::<R, L>(&self.view.extents, |idx| {
            // SAFETY: in bounds by construction; the exclusive borrow excludes other handles.
            unsafe { self.view.element_ptr(&idx).write(value) }
        });
    }

    /// Copies `data`, given in the view's own order, into the view.
    pub fn copy_from_slice(&mut self, label: &str, data: &[T]) -> Result<()> {
        if data.len() != self.view.len() {
            return Err(Error::ExtentMismatch {
                what: "copy from slice",
                left_label: label.to_owned(),
                left: self.view.extents.to_vec(),
                right_label: "slice".to_owned(),
                right: vec![data.len()],
            });
        }
        let mut next = data.iter();
        for_each_index::<R, L>(&self.view.extents, |idx| {
            if let Some(&v) = next.next() {
                // SAFETY: in bounds by construction; exclusive borrow.
                unsafe { self.view.element_ptr(&idx).write(v) }
            }
        });
        Ok(())
    }
}

/// The address of the element at `index`, after checking it against the extents (panics with
/// the view's label otherwise): the one bounds check of the host guards.
fn checked_element_ptr<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
    view: &View<T, R, L, S>,
    index: impl ViewIndex<R>,
) -> *mut T {
    let index = index.index();
    if !in_bounds(&index, &view.extents) {
        out_of_bounds(view.label(), index, view.extents, None);
    }
    view.element_ptr(&index)
}

/// Calls `f` with every index of `extents` in the layout's natural order: the last index
/// fastest except for `LayoutLeft`, whose first index is fastest.
pub(crate) fn for_each_index<const R: usize, L: ArrayLayout>(
    extents: &[usize; R],
    f: impl FnMut([usize; R]),
) {
    let order = if L::NAME == crate::space::LayoutLeft::NAME {
        crate::policy::IterationOrder::Left
    } else {
        crate::policy::IterationOrder::Right
    };
    if R == 0 {
        let mut f = f;
        f([0; R]);
        return;
    }
    crate::policy::for_each_point([0; R], *extents, order, f);
}
