//! Views: labelled, reference-counted, multi-dimensional arrays in a memory space, and the
//! access handles through which kernels read and write them.
//!
//! A [`View`] is a handle: a clone is the same data (Kokkos semantics). Elements are never
//! reached through the view itself but through *access handles* that declare intent — see
//! [`access`] — which is how hoplite keeps data-parallel kernels free of data races in safe
//! Rust. `docs/views.md` explains the model and why it is sound.

pub mod access;
mod alloc;
mod borrow;
pub mod copy;
mod footprint;
pub mod held;
pub mod locked;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
pub(crate) mod recorded;
mod transfer;

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;

pub use access::{
    AccessibleArgs, AtomicHandle, AtomicValue, BoundLookup, BoundReader, BoundScatter, BoundTeamSlots,
    BoundWriter, HostRead, HostWrite, LaunchArgs, Lookup, PlaneRow, Reader, RowReader, ScatterAccess,
    ScatterMax, ScatterMin, ScatterOp, ScatterProd, ScatterSum, ScatterView, TeamPlane, TeamRow, TeamSlots,
    ViewIndex, Writer,
};
pub use copy::{create_mirror_view, create_mirror_view_and_copy, deep_copy, deep_copy_fill};
pub use footprint::{AccessKind, Footprint, MAX_VIEW_RANK};
pub use locked::{LockedAtomic, LockedCell};

use crate::error::{Error, Result};
use crate::space::{ArrayLayout, HostAccessibleSpace, HostSpace, LayoutRight, MemorySpace};
use alloc::TrackedAllocation;
use borrow::{BorrowId, Refused};

/// What a view can hold: plain data that is valid as all-zero bytes.
///
/// Implemented for every type that is `Copy + Send + Sync + Default + bytemuck::Zeroable`:
/// the numbers, `bool`, arrays of them, and `#[derive(Clone, Copy, Default, Zeroable)]`
/// structs. Zero-validity is what lets a view be created without an initialization pass
/// while staying sound.
pub trait ViewValue: Copy + Send + Sync + Default + bytemuck::Zeroable + 'static {}

impl<T: Copy + Send + Sync + Default + bytemuck::Zeroable + 'static> ViewValue for T {}

/// One entry of a subview request: a whole dimension, a range of it, or one index (which
/// drops the dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slice {
    /// The whole dimension (Kokkos `ALL`).
    All,
    /// `begin..end` of the dimension.
    Range(Range<usize>),
    /// One index; the dimension disappears from the subview.
    Index(usize),
}

/// A labelled, reference-counted, rank-`R` array of `T` in memory space `S` with layout `L`
/// (Kokkos `View<T*..., L, S>`). `R` runs from 0 (a scalar) to 8.
///
/// ```
/// use hoplite_core::{View, LayoutLeft};
/// let a: View<f64, 2> = View::new("a", [3, 4])?;
/// assert_eq!((a.label(), a.extents(), a.strides(), a.len()), ("a", [3, 4], [4, 1], 12));
/// let b: View<f64, 2, LayoutLeft> = View::new("b", [3, 4])?;
/// assert_eq!(b.strides(), [1, 3]);
/// let c = a.clone(); // the same data
/// assert!(c.same_allocation(&a));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct View<T: ViewValue, const R: usize, L: ArrayLayout = LayoutRight, S: MemorySpace = HostSpace> {
    pub(crate) alloc: Arc<TrackedAllocation<S>>,
    pub(crate) ptr: NonNull<T>,
    pub(crate) extents: [usize; R],
    pub(crate) strides: [usize; R],
    /// The root dimension each dimension of this view walks (subviews drop and narrow them).
    pub(crate) root_dims: [usize; R],
    pub(crate) footprint: Footprint,
    _layout: PhantomData<L>,
}

// SAFETY: a view is a handle to memory of `Send + Sync` elements; it never touches elements
// itself, and the handles that do are borrow-checked.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Send for View<T, R, L, S> {}
// SAFETY: as above.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Sync for View<T, R, L, S> {}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Clone for View<T, R, L, S> {
    fn clone(&self) -> Self {
        View {
            alloc: self.alloc.clone(),
            ptr: self.ptr,
            extents: self.extents,
            strides: self.strides,
            root_dims: self.root_dims,
            footprint: self.footprint.clone(),
            _layout: PhantomData,
        }
    }
}

/// Views are equal when they are the same window on the same allocation: the same memory, the
/// same first element, extents and strides (Kokkos `operator==`). Element values are not
/// compared.
///
/// ```
/// use hoplite_core::{Slice, View};
/// let a: View<i32, 1> = View::new("a", [4])?;
/// let b: View<i32, 1> = View::new("a", [4])?;
/// assert!(a == a.clone() && a != b); // equal contents, other memory
/// assert!(a.subview::<1, hoplite_core::LayoutRight>([Slice::Range(0..2)])? != a);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> PartialEq for View<T, R, L, S> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
            && self.ptr == other.ptr
            && self.extents == other.extents
            && self.strides == other.strides
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Eq for View<T, R, L, S> {}

/// An empty view (Kokkos' default-constructed view): label `""`, every extent 0 (a rank-0
/// view has its one element, zeroed). Useful as a placeholder in structs filled later.
///
/// ```
/// use hoplite_core::View;
/// let v: View<f64, 2> = View::default();
/// assert_eq!((v.label(), v.extents(), v.is_empty()), ("", [0, 0], true));
/// ```
/// A null view (Kokkos' default-constructed view): label `""`, extents 0, no memory —
/// [`data`](View::data) is null, [`use_count`](View::use_count) 0 and
/// [`is_allocated`](View::is_allocated) false, for the view and its clones. It takes handles
/// and launches over it run nothing. A rank-0 view has one element whatever its extents, so
/// its default holds that element, allocated (unlike Kokkos, where reading it is undefined).
///
/// ```
/// use hoplite_core::View;
/// let null: View<f64, 2> = View::default();
/// assert!(!null.is_allocated() && null.data().is_null());
/// assert_eq!((null.use_count(), null.clone().use_count(), null.extents()), (0, 0, [0, 0]));
/// let scalar: View<f64, 0> = View::default();
/// assert!(scalar.is_allocated());
/// ```
impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Default for View<T, R, L, S> {
    fn default() -> Self {
        if R == 0 {
            return match Self::without_initializing_in(S::default(), "", [0; R]) {
                Ok(view) => view,
                // A rank-0 view needs one element, and only running out of memory refuses
                // that, which `Default` answers as `Box::default` does.
                Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::new::<T>()),
            };
        }
        let extents = [0; R];
        let mut strides = [0; R];
        L::strides(&extents, &mut strides);
        let ptr = NonNull::<T>::dangling();
        Self::whole(
            TrackedAllocation::null(S::default(), ptr.cast()),
            ptr,
            extents,
            strides,
        )
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> fmt::Debug for View<T, R, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("label", &self.label())
            .field("extents", &self.extents)
            .field("strides", &self.strides)
            .field("layout", &L::NAME)
            .field("space", &self.alloc.space().name())
            .finish()
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> View<T, R, L, S> {
    /// Borrows the view for reading on the host; the guard reads any element and, for a
    /// contiguous view, gives the elements as a slice.
    ///
    /// (Kokkos' unmanaged views over user memory are [`from_vec`](View::from_vec) and
    /// [`into_vec`](View::into_vec) here: a view is shared and `'static`, so it owns its
    /// memory rather than borrowing it.)
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v: View<i32, 2> = View::from_slice("v", [2, 3], &[1, 2, 3, 4, 5, 6])?;
    /// let guard = v.host_read()?;
    /// assert_eq!(guard.get([1, 0]), 4);
    /// assert_eq!(guard.as_slice(), Some(&[1, 2, 3, 4, 5, 6][..]));
    /// assert!(v.host_write().is_err(), "a reader is out");
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn host_read(&self) -> Result<HostRead<'_, T, R, L, S>> {
        const {
            assert!(
                S::HOST_ACCESSIBLE,
                "a HostAccessibleSpace must say HOST_ACCESSIBLE"
            )
        };
        HostRead::new(self)
    }

    /// Borrows the view exclusively for writing on the host.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v: View<f64, 1> = View::new("v", [3])?;
    /// {
    ///     let mut guard = v.host_write()?;
    ///     guard.set([2], 1.5);
    ///     assert!(v.host_read().is_err(), "the writer is exclusive");
    /// }
    /// assert_eq!(v.to_vec()?, [0.0, 0.0, 1.5]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn host_write(&self) -> Result<HostWrite<'_, T, R, L, S>> {
        const {
            assert!(
                S::HOST_ACCESSIBLE,
                "a HostAccessibleSpace must say HOST_ACCESSIBLE"
            )
        };
        HostWrite::new(self)
    }

    /// Sets every element to `value` on the host.
    pub fn fill_host(&self, value: T) -> Result<()> {
        let mut guard = self.host_write()?;
        guard.fill(value);
        Ok(())
    }

    /// Replaces this handle's data with a new allocation of `extents`, keeping the elements
    /// whose indices exist in both (Kokkos `resize`). Other clones keep the old data.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let mut v: View<i32, 1> = View::from_slice("v", [3], &[1, 2, 3])?;
    /// v.resize([5])?;
    /// assert_eq!(v.to_vec()?, [1, 2, 3, 0, 0]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn resize(&mut self, extents: [usize; R]) -> Result<()> {
        let fresh = Self::new_in(self.space().clone(), self.label(), extents)?;
        let common: [usize; R] = std::array::from_fn(|d| self.extents[d].min(extents[d]));
        let whole = |e: usize| Slice::Range(0..e);
        let from: View<T, R, crate::space::LayoutStride, S> = self.subview(common.map(whole))?;
        let to: View<T, R, crate::space::LayoutStride, S> = fresh.subview(common.map(whole))?;
        deep_copy(&to, &from)?;
        *self = fresh;
        Ok(())
    }

    /// Replaces this handle's data with a new, default-initialized allocation of `extents`
    /// (Kokkos `realloc`). Other clones keep the old data.
    pub fn realloc(&mut self, extents: [usize; R]) -> Result<()> {
        *self = Self::new_in(self.space().clone(), self.label(), extents)?;
        Ok(())
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout> View<T, R, L, HostSpace> {
    /// A view over the memory of `data`, without copying (for interop: a buffer filled by
    /// other code becomes a view). The view takes the vector over and frees it with its last
    /// handle, or gives it back with [`into_vec`](Self::into_vec). The elements are in the
    /// view's own order (row-major for `LayoutRight`, column-major for `LayoutLeft`).
    /// The memory keeps the vector's alignment (that of `T`), not the space's 64 bytes.
    ///
    /// # Errors
    ///
    /// [`Error::ExtentMismatch`] if `data.len()` is not the number of elements (the vector
    /// is dropped).
    ///
    /// ```
    /// use hoplite_core::View;
    /// let data: Vec<f64> = (0..6).map(f64::from).collect();
    /// let address = data.as_ptr();
    /// let m: View<f64, 2> = View::from_vec("m", [2, 3], data)?;
    /// assert_eq!((m.data(), m.host_read()?.get([1, 2])), (address, 5.0)); // the same memory
    /// let back = m.into_vec()?;
    /// assert_eq!((back.as_ptr(), back.len()), (address, 6)); // and back, still no copy
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn from_vec(label: &str, extents: [usize; R], mut data: Vec<T>) -> Result<Self> {
        let () = Self::RANK_OK;
        let count = extents.iter().try_fold(1usize, |n, &e| n.checked_mul(e));
        if count != Some(data.len()) {
            return Err(Error::ExtentMismatch {
                what: "View::from_vec",
                left_label: label.to_owned(),
                left: extents.to_vec(),
                right_label: "the vector".to_owned(),
                right: vec![data.len()],
            });
        }
        let mut strides = [0; R];
        L::strides(&extents, &mut strides);
        let bytes = data.len() * size_of::<T>();
        let ptr = NonNull::new(data.as_mut_ptr()).unwrap_or(NonNull::dangling());
        // SAFETY: the vector's buffer is valid for its `len * size_of::<T>()` bytes while the
        // vector lives; moving the vector into the box moves only its header, not the buffer;
        // the allocation keeps the box, and only this view's handles reach the buffer. It is
        // ordinary host memory of the global allocator.
        let alloc = unsafe { TrackedAllocation::adopt(HostSpace, label, ptr.cast(), bytes, Box::new(data)) };
        Ok(Self::whole(alloc, ptr, extents, strides))
    }

    /// The elements as a vector in the view's own order: the vector the view was made from,
    /// without copying, when this is the last handle of a view made by
    /// [`from_vec`](Self::from_vec) and it covers the whole vector; otherwise a copy.
    ///
    /// # Errors
    ///
    /// A borrow conflict, when a live writer keeps the copy from being made.
    pub fn into_vec(self) -> Result<Vec<T>> {
        if !(self.footprint.is_whole() && self.is_contiguous()) {
            return self.to_vec();
        }
        let View {
            alloc,
            ptr,
            extents,
            strides,
            root_dims,
            footprint,
            _layout,
        } = self;
        match TrackedAllocation::try_into_owner(alloc) {
            Ok(owner) => match owner.downcast::<Vec<T>>() {
                Ok(vec) => Ok(*vec),
                // Adopted memory of another type (never made by `from_vec::<T>`).
                Err(_) => unreachable_owner(),
            },
            Err(alloc) => View::<T, R, L, HostSpace> {
                alloc,
                ptr,
                extents,
                strides,
                root_dims,
                footprint,
                _layout,
            }
            .to_vec(),
        }
    }
}

/// An adopted allocation's owner is always the `Vec<T>` of the view that adopted it, and a
/// whole view of that allocation has the same `T`.
#[cold]
fn unreachable_owner() -> ! {
    unreachable!("a whole view of adopted memory has the element type of the adopted vector")
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    const RANK_OK: () = assert!(R <= MAX_VIEW_RANK, "a view has rank 0 to 8");
    /// A view of `extents` without an initialization pass (Kokkos `WithoutInitializing`): the
    /// memory comes zeroed from the allocator, untouched, so the first kernel to write it
    /// places its pages.
    pub fn without_initializing(label: &str, extents: [usize; R]) -> Result<Self> {
        Self::without_initializing_in(S::default(), label, extents)
    }

    /// As [`without_initializing`](Self::without_initializing), in `space`.
    pub fn without_initializing_in(space: S, label: &str, extents: [usize; R]) -> Result<Self> {
        let mut strides = [0; R];
        L::strides(&extents, &mut strides);
        Self::allocate(space, label, extents, strides)
    }

    /// A view with explicit `strides` (element units), allocated to cover its span.
    ///
    /// Fails with [`Error::InvalidLayout`] if the strides would map two indices to one element
    /// (which would let two iterations write the same element) or do not suit `L`.
    ///
    /// ```
    /// use hoplite_core::{LayoutStride, View};
    /// let padded: View<f32, 2, LayoutStride> = View::with_strides("padded", [4, 3], [8, 1])?;
    /// assert_eq!((padded.span(), padded.is_contiguous()), (27, false));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn with_strides(label: &str, extents: [usize; R], strides: [usize; R]) -> Result<Self> {
        check_injective(label, &extents, &strides)?;
        if !L::accepts(&strides) {
            return Err(Error::InvalidLayout {
                label: label.to_owned(),
                reason: format!("strides {strides:?} do not have layout {}", L::NAME),
            });
        }
        Self::allocate(S::default(), label, extents, strides)
    }

    fn allocate(space: S, label: &str, extents: [usize; R], strides: [usize; R]) -> Result<Self> {
        let () = Self::RANK_OK;
        let span = span_of(&extents, &strides)
            .ok_or_else(|| too_large::<T>(label, S::default().name(), &extents))?;
        let bytes = span
            .checked_mul(size_of::<T>())
            .ok_or_else(|| too_large::<T>(label, space.name(), &extents))?;
        if align_of::<T>() > S::ALIGNMENT {
            return Err(Error::AllocationFailed {
                label: label.to_owned(),
                bytes,
                space: space.name(),
                reason: format!(
                    "the element alignment {} exceeds the space's alignment {}",
                    align_of::<T>(),
                    S::ALIGNMENT
                ),
            });
        }
        let alloc = TrackedAllocation::zeroed(space, label, bytes)?;
        let ptr = alloc.ptr().cast::<T>();
        Ok(Self::whole(alloc, ptr, extents, strides))
    }

    /// The view of the whole of `alloc`: `extents` laid out with `strides` from `ptr`.
    fn whole(
        alloc: Arc<TrackedAllocation<S>>,
        ptr: NonNull<T>,
        extents: [usize; R],
        strides: [usize; R],
    ) -> Self {
        View {
            alloc,
            ptr,
            extents,
            strides,
            root_dims: std::array::from_fn(|d| d),
            footprint: Footprint::whole(&extents),
            _layout: PhantomData,
        }
    }

    /// The label.
    pub fn label(&self) -> &str {
        self.alloc.label()
    }

    /// The rank (number of dimensions).
    pub const fn rank(&self) -> usize {
        R
    }

    /// Extent of every dimension.
    pub fn extents(&self) -> [usize; R] {
        self.extents
    }

    /// Extent of dimension `d` (Kokkos `extent(d)`); 1 past the rank.
    pub fn extent(&self, d: usize) -> usize {
        self.extents.get(d).copied().unwrap_or(1)
    }

    /// Element stride of every dimension.
    pub fn strides(&self) -> [usize; R] {
        self.strides
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.extents.iter().product()
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements from the first to one past the last, counting gaps between strided elements.
    pub fn span(&self) -> usize {
        // A view that exists was allocated with this span, so it does not overflow.
        span_of(&self.extents, &self.strides).unwrap_or(usize::MAX)
    }

    /// Whether the elements are contiguous in the view's own order (span == len).
    pub fn is_contiguous(&self) -> bool {
        self.span() == self.len() && {
            let mut natural = [0; R];
            L::strides(&self.extents, &mut natural);
            (0..R).all(|d| self.extents[d] <= 1 || natural[d] == self.strides[d])
        }
    }

    /// The memory space instance.
    pub fn space(&self) -> &S {
        self.alloc.space()
    }

    /// How many views and handles share this view's allocation (Kokkos `use_count`): clones,
    /// subviews, handles and the views inside them.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v: View<u8, 1> = View::new("v", [4])?;
    /// let w = v.clone();
    /// let r = v.read();
    /// assert_eq!(v.use_count(), 3);
    /// drop((w, r));
    /// assert_eq!(v.use_count(), 1);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn use_count(&self) -> usize {
        if self.alloc.is_null() {
            return 0; // a null view shares no allocation (Kokkos)
        }
        Arc::strong_count(&self.alloc)
    }

    /// Whether the view has memory: false only for a null view ([`View::default`], Kokkos'
    /// `is_allocated`).
    pub fn is_allocated(&self) -> bool {
        !self.alloc.is_null()
    }

    /// The address of the first element (Kokkos `data()`), for interop and for finding the
    /// allocation ([`AllocationRecords::find`](crate::space::AllocationRecords::find)); null for
    /// a null view ([`View::default`]). Dereferencing it is the caller's business.
    pub fn data(&self) -> *const T {
        if self.alloc.is_null() {
            return std::ptr::null();
        }
        self.ptr.as_ptr()
    }

    /// Whether `other` uses the same allocation (it may cover other elements of it).
    pub fn same_allocation<T2: ViewValue, const R2: usize, L2: ArrayLayout>(
        &self,
        other: &View<T2, R2, L2, S>,
    ) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    /// The part of the allocation this view covers (what its handles borrow).
    pub fn footprint(&self) -> Footprint {
        self.footprint.clone()
    }

    /// A subview (Kokkos `subview`): per dimension all of it, a range, or one index (which
    /// drops the dimension). The result shares the data. Its rank `R2` is the number of
    /// non-index entries and its layout `L2` must suit the resulting strides (a row of a
    /// `LayoutRight` matrix is `LayoutRight`; anything is `LayoutStride`).
    ///
    /// ```
    /// use hoplite_core::{LayoutStride, Slice, View};
    /// let m: View<f64, 2> = View::new("m", [4, 5])?;
    /// let row: View<f64, 1> = m.subview([Slice::Index(2), Slice::All])?;
    /// let col: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(1)])?;
    /// let block: View<f64, 2, LayoutStride> = m.subview([Slice::Range(1..3), Slice::Range(2..5)])?;
    /// assert_eq!((row.extents(), col.strides(), block.extents()), ([5], [5], [2, 3]));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn subview<const R2: usize, L2: ArrayLayout>(
        &self,
        slices: [Slice; R],
    ) -> Result<View<T, R2, L2, S>> {
        let kept = slices.iter().filter(|s| !matches!(s, Slice::Index(_))).count();
        if kept != R2 {
            return Err(Error::RankMismatch {
                what: format!("subview of `{}`", self.label()),
                expected: R2,
                found: kept,
            });
        }
        let mut offset = 0usize;
        let mut extents = [0; R2];
        let mut strides = [0; R2];
        let mut root_dims = [0; R2];
        // A whole-allocation footprint belongs to a root-shaped view (see below), whose
        // extents are the root's.
        let mut footprint = self.footprint.ranges(&self.extents);
        let mut out = 0;
        for (d, slice) in slices.iter().enumerate() {
            let extent = self.extents[d];
            let (lo, hi, keep) = match slice {
                Slice::All => (0, extent, true),
                Slice::Range(r) => (r.start, r.end, true),
                Slice::Index(i) => (*i, i.saturating_add(1), false),
            };
            if lo > hi || hi > extent {
                return Err(Error::SubviewOutOfBounds {
                    label: self.label().to_owned(),
                    what: if keep { "range" } else { "index" },
                    dim: d,
                    begin: lo,
                    end: hi,
                    extent,
                });
            }
            offset += lo * self.strides[d];
            let root = self.root_dims[d];
            let root_lo = footprint[root].0;
            footprint[root] = (root_lo + lo, root_lo + hi);
            if keep {
                extents[out] = hi - lo;
                strides[out] = self.strides[d];
                root_dims[out] = root;
                out += 1;
            }
        }
        if !L2::accepts(&strides) {
            return Err(Error::InvalidLayout {
                label: self.label().to_owned(),
                reason: format!(
                    "the subview has strides {strides:?}, which are not {}; ask for LayoutStride",
                    L2::NAME
                ),
            });
        }
        // An empty subview may start one past the end; it is never dereferenced.
        let ptr = if extents.contains(&0) && R2 > 0 {
            self.ptr
        } else {
            // SAFETY: `offset` is the offset of an element inside this view (every `lo` is
            // below its extent when the subview is non-empty), hence inside the allocation.
            unsafe { self.ptr.add(offset) }
        };
        Ok(View {
            alloc: self.alloc.clone(),
            ptr,
            extents,
            strides,
            root_dims,
            // A whole-allocation footprint is only ever held by a root-shaped view (root
            // extents, identity `root_dims`), which `ranges(&self.extents)` above relies on. A
            // subview keeps it only when it is root-shaped too: no dimension dropped, every
            // range full (a dropped dimension of extent 1 also covers everything, but the
            // result's dimensions no longer match the root's).
            footprint: if R2 == R
                && self.footprint.is_whole()
                && footprint.iter().zip(&self.extents).all(|(r, &e)| *r == (0, e))
            {
                self.footprint.clone()
            } else {
                Footprint::from_ranges(footprint)
            },
            _layout: PhantomData,
        })
    }

    /// Borrows the elements this view covers for `kind`, naming the view in a conflict.
    pub(crate) fn borrow(&self, kind: AccessKind) -> Result<BorrowId> {
        self.alloc.borrow(kind, &self.footprint)
    }

    /// As [`borrow`](Self::borrow), refused with the kinds that met only (see `Refused`).
    pub(crate) fn try_borrow(&self, kind: AccessKind) -> std::result::Result<BorrowId, Refused> {
        self.alloc.try_borrow(kind, &self.footprint)
    }

    /// As [`borrow`](Self::borrow), in borrow group `group` (non-zero).
    pub(crate) fn borrow_in(&self, kind: AccessKind, group: u64) -> Result<BorrowId> {
        self.alloc.borrow_in(kind, &self.footprint, group)
    }

    /// Moves a borrow granted on this view for `kind` into group `group` (non-zero).
    pub(crate) fn regroup(&self, borrow: BorrowId, kind: AccessKind, group: u64) -> Result<BorrowId> {
        self.alloc.regroup(borrow, kind, &self.footprint, group)
    }

    /// Ends a borrow taken with [`borrow`](Self::borrow) on this view (or a clone of it).
    pub(crate) fn release(&self, id: &BorrowId) {
        self.alloc.release(id);
    }

    /// The address of the element at `index`.
    #[inline(always)]
    pub(crate) fn element_ptr(&self, index: &[usize; R]) -> *mut T {
        // The caller has checked `index` against the extents.
        self.ptr.as_ptr().wrapping_add(L::offset(&self.strides, index))
    }
}

/// One past the largest element offset, or `None` on overflow; 0 for an empty view.
fn span_of<const R: usize>(extents: &[usize; R], strides: &[usize; R]) -> Option<usize> {
    if extents.contains(&0) {
        return Some(0);
    }
    let mut last = 0usize;
    for d in 0..R {
        last = last.checked_add((extents[d] - 1).checked_mul(strides[d])?)?;
    }
    last.checked_add(1)
}

fn too_large<T>(label: &str, space: &'static str, extents: &[usize]) -> Error {
    Error::AllocationFailed {
        label: label.to_owned(),
        bytes: usize::MAX,
        space,
        reason: format!(
            "extents {extents:?} of {}-byte elements overflow the address space",
            size_of::<T>()
        ),
    }
}

/// Checks that no two indices of `extents` share an element under `strides`: sorted by
/// stride, each dimension must step over everything the smaller ones cover.
fn check_injective<const R: usize>(label: &str, extents: &[usize; R], strides: &[usize; R]) -> Result<()> {
    let mut dims: Vec<usize> = (0..R).filter(|&d| extents[d] > 1).collect();
    dims.sort_by_key(|&d| strides[d]);
    let mut covered = 1usize;
    for d in dims {
        if strides[d] < covered {
            return Err(Error::InvalidLayout {
                label: label.to_owned(),
                reason: format!(
                    "stride {} of dimension {d} is smaller than the {covered} elements the smaller strides already cover, so two indices would share an element",
                    strides[d]
                ),
            });
        }
        covered = strides[d]
            .checked_mul(extents[d])
            .ok_or_else(|| Error::InvalidLayout {
                label: label.to_owned(),
                reason: "the strides overflow the address space".to_owned(),
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
