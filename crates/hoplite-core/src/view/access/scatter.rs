//! Scatter views (Kokkos' `ScatterView`): many iterations update arbitrary elements of one
//! view — histograms, particle deposits, finite-element assembly — without atomics on the
//! target and without a data race.
//!
//! A [`ScatterView`] wraps a host view. Handed to a launch, its [`access`](ScatterView::access)
//! handle becomes a [`BoundScatter`] whose updates (`add`, `multiply`, `min`, `max`, or
//! `update` for the view's operation) go into a private copy of the thread that runs the
//! iteration, made at its first update and set to the operation's identity; no two threads
//! share a copy, so each update is a plain load and store. [`contribute`](ScatterView::contribute)
//! then folds every copy into the target view and resets the copies, ready for the next launch.
//! This is Kokkos' duplicated strategy, the fast one on host threads; on every host backend
//! (serial, rayon, NUMA pools) the copies are per OS thread, so they need no backend support.
//! Device kernels update views with [`atomic`](crate::View::atomic) handles instead (Kokkos'
//! atomic strategy, the one it picks on GPUs); a scatter handle in a device launch is a compile
//! error.
//!
//! ```
//! use hoplite_core::{parallel_for, RangePolicy, ScatterView, View};
//! use hoplite_serial::Serial;
//! let samples: Vec<u8> = (0..1000u32).map(|k| (k * 7 % 16) as u8).collect();
//! let bins: View<u64, 1> = View::new("bins", [16])?;
//! let mut scatter = ScatterView::new(&bins);
//! parallel_for("histogram", (RangePolicy::new(Serial::default(), 0..samples.len()), (scatter.access(),)),
//!     |(i, (hist,))| hist.add(samples[*i] as usize, 1))?;
//! scatter.contribute()?;
//! let counts = bins.to_vec()?;
//! assert_eq!(counts.iter().sum::<u64>(), 1000);
//! assert_eq!(counts[0], 63);
//! # Ok::<(), hoplite_core::Error>(())
//! ```

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::handle::{in_bounds, out_of_bounds};
use super::launch::{AccessibleArgs, LaunchArgs};
use super::tokens::ViewIndex;
use crate::error::Result;
use crate::index::{Brand, IndexBounds};
use crate::reducer::{MinMaxValue, ProdValue, SumValue};
use crate::space::{
    ArrayLayout, ExecutionSpace, HostAccessibleSpace, HostSpace, LayoutRight, SpaceAccessibility,
};
use crate::view::{View, ViewValue};

/// How a [`ScatterView`]'s updates combine: the identity its copies start from and the
/// operation (Kokkos' `ScatterSum`, `ScatterProd`, `ScatterMin`, `ScatterMax`). The operation
/// must be associative and commutative: copies are folded in no particular order.
pub trait ScatterOp<T>: Send + Sync + 'static {
    /// The name, for messages.
    const NAME: &'static str;
    /// The value a fresh copy's elements hold.
    fn identity() -> T;
    /// `*into = *into op value`.
    fn combine(into: &mut T, value: T);
}

/// Updates add ([`SumValue`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScatterSum;
/// Updates multiply ([`ProdValue`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScatterProd;
/// Updates keep the smaller value ([`MinMaxValue`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScatterMin;
/// Updates keep the larger value ([`MinMaxValue`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScatterMax;

impl<T: SumValue> ScatterOp<T> for ScatterSum {
    const NAME: &'static str = "sum";
    #[inline(always)]
    fn identity() -> T {
        T::zero()
    }
    #[inline(always)]
    fn combine(into: &mut T, value: T) {
        into.accumulate(value);
    }
}

impl<T: ProdValue> ScatterOp<T> for ScatterProd {
    const NAME: &'static str = "product";
    #[inline(always)]
    fn identity() -> T {
        T::one()
    }
    #[inline(always)]
    fn combine(into: &mut T, value: T) {
        into.multiply(value);
    }
}

impl<T: MinMaxValue> ScatterOp<T> for ScatterMin {
    const NAME: &'static str = "min";
    #[inline(always)]
    fn identity() -> T {
        T::min_identity()
    }
    #[inline(always)]
    fn combine(into: &mut T, value: T) {
        into.keep_min(value);
    }
}

impl<T: MinMaxValue> ScatterOp<T> for ScatterMax {
    const NAME: &'static str = "max";
    #[inline(always)]
    fn identity() -> T {
        T::max_identity()
    }
    #[inline(always)]
    fn combine(into: &mut T, value: T) {
        into.keep_max(value);
    }
}

/// Small indices of the live OS threads: each thread takes the lowest free index at its first
/// scatter update and gives it back when it ends, so the indices stay below the number of
/// threads alive at once and no two live threads hold the same one.
mod thread_slot {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use parking_lot::Mutex;

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    /// Holds the thread's index and gives it back when the thread ends.
    struct Slot(usize);

    impl Slot {
        fn take() -> Slot {
            let mut free = FREE.lock();
            // The lowest free index first, so that the indices stay dense.
            let lowest = free
                .iter()
                .enumerate()
                .min_by_key(|(_, k)| **k)
                .map(|(pos, _)| pos);
            let index = match lowest {
                Some(pos) => free.swap_remove(pos),
                None => NEXT.fetch_add(1, Ordering::Relaxed),
            };
            INDEX_PLUS_ONE.with(|i| i.set(index + 1));
            Slot(index)
        }
    }

    impl Drop for Slot {
        fn drop(&mut self) {
            // Forget the index, and the copy of that index cached as the last one used,
            // before giving it back: an update later in this thread's teardown must not use
            // an index (or its copy) another thread may take now.
            INDEX_PLUS_ONE.with(|i| i.set(0));
            super::LAST_COPY.with(|last| last.set((0, std::ptr::null_mut())));
            FREE.lock().push(self.0);
        }
    }

    thread_local! {
        /// The index plus one, 0 while the thread holds none: a plain thread-local (constant
        /// initializer, no destructor), so reading it is one load.
        static INDEX_PLUS_ONE: Cell<usize> = const { Cell::new(0) };
        static SLOT: Slot = Slot::take();
    }

    /// This thread's index; `usize::MAX` once the thread is being torn down (its slot given
    /// back).
    #[inline(always)]
    pub(super) fn current() -> usize {
        match INDEX_PLUS_ONE.with(Cell::get) {
            0 => take(),
            index => index - 1,
        }
    }

    #[cold]
    fn take() -> usize {
        SLOT.try_with(|s| s.0).unwrap_or(usize::MAX)
    }
}

/// Identifies a scatter view's copies for the per-thread cache of the last copy used: never
/// reused, so a cached pointer is never taken for another scatter view's copy.
static NEXT_COPIES_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The copies id and this thread's copy of the scatter view this thread updated last, so
    /// that an update in a loop is one thread-local load and a compare before the element.
    /// Constant-initialized without a destructor: always readable, one load.
    static LAST_COPY: Cell<(u64, *mut ())> = const { Cell::new((0, std::ptr::null_mut())) };
}

/// How many threads get a copy of their own; updates of threads with higher indices go into
/// one shared copy under a lock (correct, slower: more threads than this update one scatter
/// view only in unusual programs).
const COPY_SLOTS: usize = 256;

/// The private copies of one scatter view: per thread slot a pointer to `len` elements (null
/// until the thread's first update), and the shared copy of the threads past the slots.
struct Copies<T> {
    /// Unique among all copies ever made ([`NEXT_COPIES_ID`]).
    id: u64,
    len: usize,
    slots: Box<[AtomicPtr<UnsafeCell<T>>]>,
    overflow: Mutex<Option<Box<[T]>>>,
    /// How many copies exist (for [`ScatterView::copies`]).
    made: AtomicUsize,
}

impl<T: ViewValue> Copies<T> {
    fn new(len: usize) -> Self {
        Copies {
            id: NEXT_COPIES_ID.fetch_add(1, Ordering::Relaxed),
            len,
            slots: (0..COPY_SLOTS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            overflow: Mutex::new(None),
            made: AtomicUsize::new(0),
        }
    }

    /// Folds `value` into element `k` (below `len`) of the calling thread's copy.
    #[inline(always)]
    fn update<Op: ScatterOp<T>>(&self, k: usize, value: T) {
        let (id, cached) = LAST_COPY.with(Cell::get);
        let copy = if id == self.id {
            cached.cast::<UnsafeCell<T>>()
        } else {
            match self.own_copy::<Op>() {
                Some(copy) => copy,
                None => return self.update_shared::<Op>(k, value),
            }
        };
        // SAFETY: `copy` points to `len` elements this view owns until it drops (freed only in
        // `Drop`, which needs the view, while a bound handle borrows it; the cache holds it
        // under this view's id, which no other copies ever get); `k < len` (checked by the
        // caller). Only the thread holding the copy's slot touches it while launches run (no
        // two live threads hold one slot), and `contribute`/`reset` touch it only with the view
        // borrowed exclusively, after the launches that updated it returned (which orders
        // their threads' stores before).
        unsafe { combine_at::<T, Op>((*copy.add(k)).get(), value) }
    }

    /// The calling thread's copy, made if this is its first update, and remembered as its
    /// last one; `None` for a thread past the slots.
    #[cold]
    fn own_copy<Op: ScatterOp<T>>(&self) -> Option<*mut UnsafeCell<T>> {
        let cell = self.slots.get(thread_slot::current())?;
        let mut copy = cell.load(Ordering::Acquire);
        if copy.is_null() {
            copy = self.make_copy::<Op>(cell);
        }
        LAST_COPY.with(|last| last.set((self.id, copy.cast())));
        Some(copy)
    }

    #[cold]
    fn make_copy<Op: ScatterOp<T>>(&self, cell: &AtomicPtr<UnsafeCell<T>>) -> *mut UnsafeCell<T> {
        let pad = copy_padding::<T>();
        let fresh: Box<[UnsafeCell<T>]> = (0..self.len + 2 * pad)
            .map(|_| UnsafeCell::new(Op::identity()))
            .collect();
        // SAFETY: the allocation holds `pad + len + pad` elements, so `pad` is inside it.
        let fresh = unsafe { Box::into_raw(fresh).cast::<UnsafeCell<T>>().add(pad) };
        // Only this thread fills its slot, so the exchange succeeds; the loser's copy would be
        // freed had another thread raced it.
        match cell.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                self.made.fetch_add(1, Ordering::Relaxed);
                fresh
            }
            Err(existing) => {
                // SAFETY: `fresh` is a copy made just above and never shared.
                unsafe { free_copy(fresh, self.len) };
                existing
            }
        }
    }

    #[cold]
    fn update_shared<Op: ScatterOp<T>>(&self, k: usize, value: T) {
        let mut shared = self.overflow.lock();
        let copy = shared.get_or_insert_with(|| {
            self.made.fetch_add(1, Ordering::Relaxed);
            (0..self.len).map(|_| Op::identity()).collect()
        });
        Op::combine(&mut copy[k], value);
    }

    /// Calls `f` with each element index and the values of every copy at it, then sets the
    /// copies back to the identity. Needs the copies to themselves (`&mut self`).
    fn drain<Op: ScatterOp<T>>(&mut self, mut f: impl FnMut(usize, T)) {
        let len = self.len;
        for cell in self.slots.iter_mut() {
            let copy = *cell.get_mut();
            if copy.is_null() {
                continue;
            }
            for k in 0..len {
                // SAFETY: `copy` points to `len` live elements (see `update`); `&mut self`
                // means no launch and no other thread uses them now.
                let element = unsafe { &mut *(*copy.add(k)).get() };
                f(k, std::mem::replace(element, Op::identity()));
            }
        }
        if let Some(shared) = self.overflow.get_mut() {
            for (k, element) in shared.iter_mut().enumerate() {
                f(k, std::mem::replace(element, Op::identity()));
            }
        }
    }
}

impl<T> Drop for Copies<T> {
    fn drop(&mut self) {
        for cell in self.slots.iter_mut() {
            let copy = *cell.get_mut();
            if !copy.is_null() {
                // SAFETY: a non-null slot holds a copy of `len` elements made by `make_copy`,
                // freed once, here.
                unsafe { free_copy(copy, self.len) };
            }
        }
    }
}

/// `*element = *element op value`, with no reference to the element held while the
/// operation (user code, which might start a nested launch that updates the same copy on
/// this thread) runs: the value is copied out, combined and written back.
///
/// # Safety
///
/// `element` points to a live element that no other thread accesses during the call.
#[inline(always)]
unsafe fn combine_at<T: ViewValue, Op: ScatterOp<T>>(element: *mut T, value: T) {
    // SAFETY: the caller's contract; `T: Copy`, so reading leaves the element as it is.
    let mut current = unsafe { element.read() };
    Op::combine(&mut current, value);
    // SAFETY: as above.
    unsafe { element.write(current) };
}

/// Elements of padding on each side of a copy: at least 128 bytes, so that two threads'
/// copies never share a cache line (nor the pair of lines a core fetches together), which
/// would pass the line between their cores at every update near a copy's ends.
fn copy_padding<T>() -> usize {
    match size_of::<T>() {
        0 => 0,
        size => 128usize.div_ceil(size),
    }
}

/// Frees a copy of `len` elements that `make_copy` made (`copy` is past its front padding).
///
/// # Safety
///
/// `copy` came from `make_copy` for `len` elements and is freed once, with nothing using it.
unsafe fn free_copy<T>(copy: *mut UnsafeCell<T>, len: usize) {
    let pad = copy_padding::<T>();
    // SAFETY: the caller's contract: `copy - pad` is the start of a boxed slice of
    // `len + 2 * pad` elements.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(copy.sub(pad), len + 2 * pad)) });
}

/// A view that many iterations update at arbitrary elements through thread-private copies,
/// folded into the view by [`contribute`](Self::contribute) (Kokkos' `ScatterView` with the
/// duplicated strategy). `Op` is how updates combine: [`ScatterSum`] (the default),
/// [`ScatterProd`], [`ScatterMin`] or [`ScatterMax`].
///
/// Handed to a launch, the [`access`](Self::access) handle becomes a [`BoundScatter`] whose
/// updates go into a private copy of the thread that runs the iteration, made at its first
/// update and set to the operation's identity; no two threads share a copy, so an update is a
/// plain load and store. `contribute` folds every copy into the target and resets the copies.
/// The copies are per OS thread, so every host backend (serial, rayon, NUMA pools) runs it
/// without backend code. Device kernels update views with
/// [`atomic`](crate::View::atomic) handles instead (Kokkos' atomic strategy, the one it picks
/// on GPUs): a scatter handle in a device launch is a compile error. Graph nodes and DAG
/// vertices do not take scatter handles.
///
/// ```
/// use hoplite_core::{parallel_for, RangePolicy, ScatterMax, ScatterView, View};
/// use hoplite_serial::Serial;
/// let peaks: View<f64, 2> = View::new("peaks", [2, 3])?;
/// let mut scatter: ScatterView<f64, 2, ScatterMax> = ScatterView::new(&peaks);
/// parallel_for("peaks", (RangePolicy::new(Serial::default(), 0..60), (scatter.access(),)),
///     |(i, (p,))| p.max([*i % 2, *i % 3], *i as f64))?;
/// scatter.contribute()?;
/// // Element [a, b] holds the largest i below 60 with i % 2 == a and i % 3 == b.
/// assert_eq!(peaks.to_vec()?, [54.0, 58.0, 56.0, 57.0, 55.0, 59.0]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct ScatterView<
    T: ViewValue,
    const R: usize,
    Op = ScatterSum,
    L: ArrayLayout = LayoutRight,
    S: HostAccessibleSpace = HostSpace,
> {
    target: View<T, R, L, S>,
    copies: Copies<T>,
    /// Row-major strides of the copies (they are dense whatever the target's layout).
    strides: [usize; R],
    op: PhantomData<fn() -> Op>,
}

impl<T: ViewValue, const R: usize, Op: ScatterOp<T>, L: ArrayLayout, S: HostAccessibleSpace>
    ScatterView<T, R, Op, L, S>
{
    /// A scatter view over `target` (which it shares; the view keeps its values, and
    /// [`contribute`](Self::contribute) folds the updates into them). No copy exists until a
    /// thread's first update.
    pub fn new(target: &View<T, R, L, S>) -> Self {
        let mut strides = [0; R];
        LayoutRight::strides(&target.extents(), &mut strides);
        ScatterView {
            target: target.clone(),
            copies: Copies::new(target.len()),
            strides,
            op: PhantomData,
        }
    }

    /// The handle a launch takes: bound to the launch, it updates the running thread's copy.
    /// It borrows the scatter view, so the view cannot contribute while a launch may update.
    pub fn access(&self) -> ScatterAccess<'_, T, R, Op> {
        ScatterAccess {
            prepared: PreparedScatter {
                copies: &raw const self.copies,
                own: std::ptr::null_mut(),
                extents: self.target.extents(),
                strides: self.strides,
                label: std::ptr::from_ref::<str>(self.target.label()),
            },
            scatter: PhantomData,
            op: PhantomData,
        }
    }

    /// Folds every copy into the target view (`target[i] = target[i] op copy[i]` for each
    /// copy) and sets the copies back to the identity, so the next launches start afresh (Kokkos'
    /// `contribute` followed by `reset`).
    ///
    /// # Errors
    ///
    /// [`Error::BorrowConflict`](crate::Error::BorrowConflict) if the target is borrowed
    /// elsewhere (its copies are then kept, so nothing is lost: contribute again later).
    pub fn contribute(&mut self) -> Result<()> {
        let mut target = self.target.host_write()?;
        let strides = self.strides;
        // The index of element `k` of a copy, row-major.
        let index_of = |mut k: usize| {
            let mut index = [0; R];
            for d in 0..R {
                index[d] = k / strides[d].max(1);
                k -= index[d] * strides[d];
            }
            index
        };
        self.copies.drain::<Op>(|k, value| {
            let index = index_of(k);
            let mut element = target.get(index);
            Op::combine(&mut element, value);
            target.set(index, element);
        });
        Ok(())
    }

    /// Sets every copy back to the identity, dropping the updates not yet contributed (Kokkos'
    /// `reset`); the target view is untouched.
    pub fn reset(&mut self) {
        self.copies.drain::<Op>(|_, _| {});
    }

    /// The target view.
    pub fn target(&self) -> &View<T, R, L, S> {
        &self.target
    }

    /// How many private copies exist: one per thread that has updated through this view.
    pub fn copies(&self) -> usize {
        self.copies.made.load(Ordering::Relaxed)
    }
}

impl<T: ViewValue, const R: usize, Op: ScatterOp<T>, L: ArrayLayout, S: HostAccessibleSpace> fmt::Debug
    for ScatterView<T, R, Op, L, S>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScatterView")
            .field("target", &self.target.label())
            .field("extents", &self.target.extents())
            .field("op", &Op::NAME)
            .field("copies", &self.copies())
            .finish()
    }
}

/// What a launch keeps of a [`ScatterAccess`]: the copies and the geometry, and once a thread
/// runs a share of the launch, that thread's copy.
pub struct PreparedScatter<T, const R: usize> {
    copies: *const Copies<T>,
    /// The copy of the thread that resolved it ([`LaunchArgs::for_this_thread`]), or null:
    /// then each update finds its thread's copy.
    own: *mut UnsafeCell<T>,
    extents: [usize; R],
    strides: [usize; R],
    label: *const str,
}

impl<T, const R: usize> Clone for PreparedScatter<T, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize> Copy for PreparedScatter<T, R> {}

// SAFETY: the pointers are to the scatter view's copies and its target's label, which the
// access handle borrows for the launch; `Copies` is used from many threads only through
// `update`, which touches the calling thread's own copy (or the shared one under its lock).
unsafe impl<T: Send, const R: usize> Send for PreparedScatter<T, R> {}
// SAFETY: as above.
unsafe impl<T: Send, const R: usize> Sync for PreparedScatter<T, R> {}

/// The handle of a [`ScatterView`] for one launch ([`ScatterView::access`]).
pub struct ScatterAccess<'s, T, const R: usize, Op> {
    prepared: PreparedScatter<T, R>,
    scatter: PhantomData<&'s ()>,
    op: PhantomData<fn() -> Op>,
}

impl<T: ViewValue, const R: usize, Op: ScatterOp<T>> LaunchArgs for ScatterAccess<'_, T, R, Op> {
    type Prepared = PreparedScatter<T, R>;
    type Bound<'it> = BoundScatter<'it, T, R, Op>;

    const UNROLL: bool = true;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // Updates are checked per element; the copies belong to the scatter view alone.
        Ok(self.prepared)
    }

    /// Finds the calling thread's copy once for a share of points, so that its updates are a
    /// plain load and store (a thread past the slots keeps null: the shared copy).
    #[inline(always)]
    fn for_this_thread(prepared: &Self::Prepared) -> Self::Prepared {
        let mut mine = *prepared;
        // SAFETY: the access handle borrows the scatter view for the launch, so its copies
        // are alive.
        mine.own = unsafe { &*prepared.copies }
            .own_copy::<Op>()
            .unwrap_or(std::ptr::null_mut());
        mine
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundScatter<'it, T, R, Op> {
        BoundScatter {
            prepared: *prepared,
            brand: PhantomData,
            op: PhantomData,
        }
    }
}

// SAFETY: the handle's memory is the copies, host memory the scatter view owns, which every
// space whose kernels reach host memory reaches.
unsafe impl<T: ViewValue, const R: usize, Op: ScatterOp<T>, E: ExecutionSpace + SpaceAccessibility<HostSpace>>
    AccessibleArgs<E> for ScatterAccess<'_, T, R, Op>
{
}

/// A scatter handle bound to a launch: updates any element (checked against the extents)
/// through the running thread's private copy.
pub struct BoundScatter<'it, T, const R: usize, Op> {
    prepared: PreparedScatter<T, R>,
    brand: Brand<'it>,
    op: PhantomData<fn() -> Op>,
}

impl<T: ViewValue, const R: usize, Op: ScatterOp<T>> BoundScatter<'_, T, R, Op> {
    /// Folds `value` into the element at `index` with the view's operation (panics with the
    /// view's label if `index` is out of bounds).
    #[inline(always)]
    pub fn update(&self, index: impl ViewIndex<R>, value: T) {
        let p = &self.prepared;
        let index = index.index();
        if !in_bounds(&index, &p.extents) {
            // SAFETY: the label is the target view's, which the scatter view keeps alive
            // while the access handle borrows it.
            out_of_bounds(unsafe { &*p.label }, index, p.extents, None);
        }
        let k = LayoutRight::offset(&p.strides, &index);
        if !p.own.is_null() {
            // SAFETY: `own` is the copy of the thread that resolved it for the share this
            // iteration belongs to, which this thread runs (`PointSet::visit` runs a share on
            // one thread), alive while the access handle borrows the scatter view; `k` is
            // inside it. No other thread touches it while launches run (see `Copies::update`).
            unsafe { combine_at::<T, Op>((*p.own.add(k)).get(), value) };
            return;
        }
        // SAFETY: the access handle borrows the scatter view for the launch, so its copies
        // are alive; `k` is inside them (the index is inside the extents).
        unsafe { &*p.copies }.update::<Op>(k, value);
    }

    /// The extents.
    pub fn extents(&self) -> [usize; R] {
        self.prepared.extents
    }
}

impl<T: ViewValue + SumValue, const R: usize> BoundScatter<'_, T, R, ScatterSum> {
    /// Adds `value` to the element at `index` (Kokkos' `access(i) += value`).
    #[inline(always)]
    pub fn add(&self, index: impl ViewIndex<R>, value: T) {
        self.update(index, value);
    }
}

impl<T: ViewValue + ProdValue, const R: usize> BoundScatter<'_, T, R, ScatterProd> {
    /// Multiplies the element at `index` by `value`.
    #[inline(always)]
    pub fn multiply(&self, index: impl ViewIndex<R>, value: T) {
        self.update(index, value);
    }
}

impl<T: ViewValue + MinMaxValue, const R: usize> BoundScatter<'_, T, R, ScatterMin> {
    /// Keeps the smaller of the element at `index` and `value`.
    #[inline(always)]
    pub fn min(&self, index: impl ViewIndex<R>, value: T) {
        self.update(index, value);
    }
}

impl<T: ViewValue + MinMaxValue, const R: usize> BoundScatter<'_, T, R, ScatterMax> {
    /// Keeps the larger of the element at `index` and `value`.
    #[inline(always)]
    pub fn max(&self, index: impl ViewIndex<R>, value: T) {
        self.update(index, value);
    }
}
