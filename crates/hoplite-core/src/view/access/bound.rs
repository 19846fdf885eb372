//! Handles bound to one launch's iteration brand `'it` (writers store only at that launch's
//! tokens, readers read at them without a bounds check), and the prepared form a launch keeps
//! of each handle.

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::atomic::{AtomLayout, AtomicValue};
use super::handle::{
    AtomicHandle, Handle, checked_element, in_bounds, neighbor_out_of_bounds, out_of_bounds,
};
use super::tokens::{ReadIndex, Token, ViewIndex};
use crate::index::Brand;
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::ViewValue;

/// A writer bound to one launch: loads and stores only at that launch's tokens, without a
/// bounds check (the launch checked its range against the view once).
pub struct BoundWriter<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    pub(super) prepared: PreparedWriter<T, R>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

impl<'it, T: ViewValue, const R: usize, L: ArrayLayout> BoundWriter<'it, T, R, L> {
    /// The address of the element at `index`, checked against the extents when `check` is set
    /// (otherwise the caller knows it is inside).
    #[inline(always)]
    pub(super) fn element(&self, index: [usize; R], check: bool) -> *mut T {
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

/// A reader bound to one launch: unchecked loads at the launch's tokens, checked loads at any
/// other index, and [`neighbor`](Self::neighbor) loads at a constant offset from a token.
pub struct BoundReader<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    pub(super) prepared: PreparedReader<T, R>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

/// What a launch computes once for a reader: where it is, and how far the launch's tokens stay
/// from the edges of its extents.
#[derive(Clone, Copy)]
pub struct PreparedReader<T, const R: usize> {
    pub(super) ptr: NonNull<T>,
    pub(super) strides: [usize; R],
    pub(super) extents: [usize; R],
    /// Per dimension, the smallest token index of the launch (0 if ranks differ).
    pub(super) room_below: [usize; R],
    /// Per dimension, the extent minus the largest token index of the launch, minus 1.
    pub(super) room_above: [usize; R],
    pub(super) label: *const str,
}

impl<T: ViewValue, const R: usize> PreparedReader<T, R> {
    /// What a launch keeps of a reading handle whose tokens stay `room_below` and `room_above`
    /// from the edges of its extents.
    pub(super) fn of<L: ArrayLayout, S: MemorySpace>(
        handle: &Handle<T, R, L, S>,
        room_below: [usize; R],
        room_above: [usize; R],
    ) -> Self {
        PreparedReader {
            ptr: handle.view.ptr,
            strides: handle.view.strides,
            extents: handle.extents,
            room_below,
            room_above,
            label: handle.view.label() as *const str,
        }
    }
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

/// A [`Lookup`](crate::Lookup) bound to one launch: loads at any index, tokens included, each checked against
/// the extents (a panic names the view; inside a launch it becomes `Error::KernelPanicked`).
pub struct BoundLookup<'it, T: ViewValue, const R: usize, L: ArrayLayout> {
    pub(super) prepared: PreparedReader<T, R>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
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

/// An atomic handle handed to a launch: atomic read-modify-writes at any index, from any
/// iteration. It names no memory space, so one `#[kernel]` takes the atomic handles of host
/// and device views alike.
pub struct BoundAtomic<'it, T: AtomicValue, const R: usize, L: ArrayLayout> {
    pub(super) prepared: PreparedAtomic<T, R>,
    pub(super) brand: Brand<'it>,
    pub(super) _layout: PhantomData<L>,
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout> BoundAtomic<'_, T, R, L> {
    /// The atom at `index` (panics with the view's label if `index` is out of bounds).
    #[inline(always)]
    fn atom(&self, index: impl ViewIndex<R>) -> &T::Atom {
        let p = &self.prepared;
        let ptr = checked_element::<T, R, L>(p.ptr, &p.strides, &p.extents, p.label, index.index());
        // SAFETY: `ptr` points at a live element inside the extents (checked above; the launch
        // keeps the view alive while bound handles exist). `T::Atom` has the size and alignment
        // of `T` (checked at compile time) and every bit pattern of `T` is one of it. While the
        // launch runs only atomic handles touch these elements (its borrow excludes readers
        // and writers), so all concurrent accesses are atomic.
        unsafe {
            let () = AtomLayout::<T>::SAME;
            &*ptr.cast::<T::Atom>()
        }
    }

    /// The extents.
    pub fn extents(&self) -> [usize; R] {
        self.prepared.extents
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

/// What a launch computes once for a writer.
#[derive(Clone, Copy)]
pub struct PreparedWriter<T, const R: usize> {
    pub(super) ptr: NonNull<T>,
    pub(super) strides: [usize; R],
    pub(super) extents: [usize; R],
    pub(super) label: *const str,
}

impl<T: ViewValue, const R: usize> PreparedWriter<T, R> {
    /// What a launch keeps of a writing handle (a writer, or team slots).
    pub(super) fn of<L: ArrayLayout, S: MemorySpace>(handle: &Handle<T, R, L, S>) -> Self {
        PreparedWriter {
            ptr: handle.view.ptr,
            strides: handle.view.strides,
            extents: handle.extents,
            label: handle.view.label() as *const str,
        }
    }
}

// SAFETY: the writer the launch owns holds the exclusive borrow; the pointer is only used by
// bound writers, each storing at its own iteration's tokens; the label pointer refers to the
// view's label, which the launch keeps alive.
unsafe impl<T: Send, const R: usize> Send for PreparedWriter<T, R> {}
// SAFETY: as above: concurrent bound writers never touch the same element.
unsafe impl<T: Send, const R: usize> Sync for PreparedWriter<T, R> {}

/// What a launch computes once for an atomic handle: where its elements are.
#[derive(Clone, Copy)]
pub struct PreparedAtomic<T, const R: usize> {
    pub(super) ptr: NonNull<T>,
    pub(super) strides: [usize; R],
    pub(super) extents: [usize; R],
    pub(super) label: *const str,
}

impl<T: AtomicValue, const R: usize> PreparedAtomic<T, R> {
    /// What a launch keeps of an atomic handle.
    pub(super) fn of<L: ArrayLayout, S: MemorySpace>(handle: &AtomicHandle<T, R, L, S>) -> Self {
        let handle = &handle.handle;
        PreparedAtomic {
            ptr: handle.view.ptr,
            strides: handle.view.strides,
            extents: handle.extents,
            label: handle.view.label() as *const str,
        }
    }
}

// SAFETY: the atomic handle the launch owns holds the atomic borrow; the pointer is only used
// for atomic accesses by bound atomic handles; the label pointer refers to the view's label,
// which the launch keeps alive.
unsafe impl<T: Send, const R: usize> Send for PreparedAtomic<T, R> {}
// SAFETY: as above: every access through it is atomic.
unsafe impl<T: Send, const R: usize> Sync for PreparedAtomic<T, R> {}

/// One row of a rank-2 handle bound to a launch, as [`TeamRow`] and [`RowReader`] share it:
/// the row is checked once when it is made, each column when it is used.
#[derive(Clone, Copy)]
pub(super) struct RowAccess<T> {
    ptr: NonNull<T>,
    strides: [usize; 2],
    pub(super) extents: [usize; 2],
    label: *const str,
    pub(super) row: usize,
}

impl<T> RowAccess<T> {
    /// Row `row` of the handle at `ptr`.
    ///
    /// # Panics
    ///
    /// If `row` is not below the first extent.
    #[inline(always)]
    pub(super) fn new(
        ptr: NonNull<T>,
        strides: [usize; 2],
        extents: [usize; 2],
        label: *const str,
        row: usize,
    ) -> Self {
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
    pub(super) fn element<L: ArrayLayout>(&self, column: usize) -> *mut T {
        let index = [self.row, column];
        if column >= self.extents[1] {
            // SAFETY: as in `new`.
            out_of_bounds(unsafe { &*self.label }, index, self.extents, None);
        }
        self.ptr.as_ptr().wrapping_add(L::offset(&self.strides, &index))
    }
}
