//! The unbound handles a view makes (`read`, `write`, `atomic`, `lookup`, `team_slots`): each
//! holds a borrow of the view's elements. Their bounds checks, the atomic handle's operations,
//! and their runtime hooks (the implementations of `view::held::GroupedHandle`).

use std::fmt;
use std::ptr::NonNull;

use super::atomic::{AtomLayout, AtomicValue};
use super::tokens::ViewIndex;
use crate::error::{Error, Result};
use crate::index::IndexBounds;
use crate::space::{ArrayLayout, HostAccessibleSpace, MemorySpace};
use crate::view::borrow::{BorrowId, Refused};
use crate::view::held::sealed::Sealed;
use crate::view::held::{BorrowGroup, GroupedHandle, HeldBorrow};
use crate::view::{AccessKind, View, ViewValue};

#[cold]
#[inline(never)]
pub(super) fn neighbor_out_of_bounds<const R: usize>(
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
pub(super) fn out_of_bounds<const R: usize>(
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
pub(super) fn checked_element<T, const R: usize, L: ArrayLayout>(
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
pub(super) fn in_bounds<const R: usize>(index: &[usize; R], extents: &[usize; R]) -> bool {
    let mut ok = true;
    for d in 0..R {
        ok &= index[d] < extents[d];
    }
    ok
}

/// The part shared by every handle: the view and its borrow, or the conflict that refused it.
pub(super) struct Handle<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    pub(super) view: View<T, R, L, S>,
    /// `Ok` while the borrow is held; `Err` carries the conflict. A handle with a conflict
    /// has zero extents so that every access takes the checked path and reports it.
    borrow: std::result::Result<BorrowId, Refusal>,
    pub(super) extents: [usize; R],
}

/// Why a handle holds no borrow. A refusal by the handle's own borrow keeps only the kinds
/// that met and makes the error when first asked for it: the implicit DAG runtime meets one
/// on nearly every launch (the user's writer against the context's pending one) and asks the
/// borrow anew in its group instead, so building the message there would be wasted. The error
/// is boxed either way: handles move through every launch, and an inline error would triple
/// their size.
pub(super) enum Refusal {
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
    pub(super) fn new(view: &View<T, R, L, S>, kind: AccessKind) -> Self {
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

    pub(super) fn conflict(&self) -> Option<&Error> {
        self.borrow.as_ref().err().map(|r| r.error(self.view.label()))
    }

    /// The handle with its borrow moved into group `group` (a refused one is asked for anew
    /// in the group): see `GroupedHandle::new_in` for what the caller guarantees.
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

    /// The handle with its borrow given over to `held` (see `GroupedHandle::into_held` for what
    /// the caller guarantees): a borrow `held` already has covers it and the handle's own ends;
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
    pub(super) fn admits(&self, index: &[usize; R]) -> bool {
        in_bounds(index, &self.extents) && (R > 0 || self.borrow.is_ok())
    }

    /// `index` as an array, once [`admits`](Self::admits) lets it through; otherwise panics with
    /// the view's label, the index, the extents and the conflict, if any.
    #[inline(always)]
    pub(super) fn admitted(&self, index: impl ViewIndex<R>) -> [usize; R] {
        let index = index.index();
        if !self.admits(&index) {
            out_of_bounds(self.view.label(), index, self.view.extents, self.conflict());
        }
        index
    }

    /// The conflict that refused this handle's borrow, as the launch's error.
    pub(super) fn borrowed(&self) -> Result<()> {
        match &self.borrow {
            Ok(_) => Ok(()),
            Err(r) => Err(r.error(self.view.label()).clone()),
        }
    }

    /// Checks the handle for a launch over `bounds`: no conflict, and every token in bounds.
    pub(super) fn check(&self, label: &str, bounds: &IndexBounds) -> Result<()> {
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

pub(super) fn bounds_nonempty(bounds: &IndexBounds) -> bool {
    match *bounds {
        IndexBounds::Range { begin, end } => begin < end,
        IndexBounds::Box { rank, lo, hi } => (0..rank).all(|d| lo[d] < hi[d]),
        IndexBounds::League { size } => size > 0,
    }
}

/// A shared read borrow of a view. Loads at any index, bounds-checked; hand it to a launch to
/// read at that launch's tokens without a check.
pub struct Reader<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    pub(super) handle: Handle<T, R, L, S>,
}

/// A shared read borrow for random access — lookup tables, gathers: handed to a launch it
/// loads at any index, each access checked against the extents, and unlike a [`Reader`] it
/// does not require the launch's range to fit the view (a 3-entry coefficient table in a
/// 100-iteration launch). Conflicts as a reader does.
pub struct Lookup<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    pub(super) handle: Handle<T, R, L, S>,
}

/// An exclusive write borrow of a rank-2 view for team launches: each team thread loads and
/// stores the element at its own `[league rank, team rank]` ([`TeamMember::team_slot`](
/// crate::TeamMember::team_slot)), each access checked against the extents. A distinct handle
/// from a [`Writer`], whose team rows hand columns to threads by another rule: the exclusive
/// borrow keeps the two from writing one view in the same launch.
pub struct TeamSlots<T: ViewValue, L: ArrayLayout, S: MemorySpace> {
    pub(super) handle: Handle<T, 2, L, S>,
}

/// An exclusive write borrow of a view. It does nothing by itself: handed to a launch it
/// becomes a [`BoundWriter`](crate::BoundWriter) that loads and stores at the launch's tokens.
pub struct Writer<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    pub(super) handle: Handle<T, R, L, S>,
}

/// A shared atomic borrow of a view: atomic read-modify-writes at any index (scatter-add,
/// histograms). Excludes readers and writers of the same elements.
pub struct AtomicHandle<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    pub(super) handle: Handle<T, R, L, S>,
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

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> TeamSlots<T, L, S> {
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
        let index = self.handle.admitted(index);
        // SAFETY: `index` is inside the extents and the reader holds a shared borrow, so no
        // writer or atomic handle touches these elements while it lives.
        unsafe { self.handle.view.element_ptr(&index).read() }
    }
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> AtomicHandle<T, R, L, S> {
    #[inline(always)]
    fn atom(&self, index: impl ViewIndex<R>) -> &T::Atom {
        let index = self.handle.admitted(index);
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

/// The runtime hooks ([`GroupedHandle`]) of each handle kind: the same three functions for
/// every kind, which differ only in the access kind their borrow is of.
macro_rules! grouped_handle {
    ($kind:ident => impl[$($generics:tt)*] $handle:ty, of $view:ty) => {
        impl<$($generics)*> Sealed for $handle {}

        impl<$($generics)*> GroupedHandle for $handle {
            type View = $view;

            unsafe fn new_in(view: &$view, group: &BorrowGroup) -> Self {
                Self {
                    handle: Handle::with_borrow(view, view.borrow_in(AccessKind::$kind, group.id())),
                }
            }

            unsafe fn into_group(self, group: &BorrowGroup) -> Self {
                Self {
                    handle: self.handle.into_group(AccessKind::$kind, group.id()),
                }
            }

            unsafe fn into_held(self, group: &BorrowGroup, held: &mut Option<HeldBorrow>) -> Self {
                Self {
                    handle: self.handle.into_held(AccessKind::$kind, group.id(), held),
                }
            }
        }
    };
}

grouped_handle!(Read => impl[T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Reader<T, R, L, S>, of View<T, R, L, S>);
grouped_handle!(Read => impl[T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Lookup<T, R, L, S>, of View<T, R, L, S>);
grouped_handle!(Write => impl[T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    Writer<T, R, L, S>, of View<T, R, L, S>);
grouped_handle!(Write => impl[T: ViewValue, L: ArrayLayout, S: MemorySpace]
    TeamSlots<T, L, S>, of View<T, 2, L, S>);
grouped_handle!(Atomic => impl[T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace]
    AtomicHandle<T, R, L, S>, of View<T, R, L, S>);
