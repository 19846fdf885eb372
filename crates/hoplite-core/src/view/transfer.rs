//! Creating views with contents and reading them back, in every memory space: in place where
//! the host can dereference the memory, through the space's host copies
//! ([`MemorySpace::copy_from_host`], [`MemorySpace::copy_to_host`]) where it cannot. So
//! `View::<f64, 1, LayoutRight, S::MemorySpace>::from_slice(..)` and `to_vec` are the same
//! code on every backend, a GPU's memory included (Kokkos' mirror and `deep_copy` round trip).

use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::access::{HostRead, HostWrite};
use crate::view::borrow::BorrowId;
use crate::view::{AccessKind, View, ViewValue};

/// Elements per host copy when a device view is filled with one value: bounded staging memory
/// for any view size.
const FILL_CHUNK: usize = 1 << 16;

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    /// A view of `extents` in the default instance of `S`, every element `T::default()`.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v: View<u32, 2> = View::new("v", [2, 2])?;
    /// assert_eq!(v.to_vec()?, [0; 4]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn new(label: &str, extents: [usize; R]) -> Result<Self> {
        Self::new_in(S::default(), label, extents)
    }

    /// A view of `extents` in `space`, every element `T::default()`.
    pub fn new_in(space: S, label: &str, extents: [usize; R]) -> Result<Self> {
        let view = Self::without_initializing_in(space, label, extents)?;
        if S::HOST_ACCESSIBLE {
            HostWrite::new(&view)?.fill(T::default());
        } else if size_of::<T>() != 0 {
            let write = Borrowed::new(&view, AccessKind::Write)?;
            let chunk = vec![T::default(); view.len().min(FILL_CHUNK)];
            // A new view is contiguous: its elements are `len` consecutive ones from `ptr`.
            let mut done = 0;
            while done < view.len() {
                let n = chunk.len().min(view.len() - done);
                // SAFETY: `chunk` holds at least `n` elements; elements `done..done + n` of
                // the new view are inside its allocation, and the write borrow keeps every
                // handle away during the copy.
                unsafe { view.copy_in(done, chunk.as_ptr(), n)? };
                done += n;
            }
            drop(write);
        }
        Ok(view)
    }

    /// A new view holding a copy of `data` (row-major for `LayoutRight`, column-major for
    /// `LayoutLeft`: the view's own element order), in the default instance of `S`, host or
    /// device memory alike. Fails if `data.len()` is not the number of elements.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v: View<i32, 2> = View::from_slice("v", [2, 3], &[1, 2, 3, 4, 5, 6])?;
    /// assert_eq!(v.to_vec()?, [1, 2, 3, 4, 5, 6]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn from_slice(label: &str, extents: [usize; R], data: &[T]) -> Result<Self> {
        let view = Self::without_initializing(label, extents)?;
        if S::HOST_ACCESSIBLE {
            HostWrite::new(&view)?.copy_from_slice(label, data)?;
            return Ok(view);
        }
        if data.len() != view.len() {
            return Err(Error::ExtentMismatch {
                what: "copy from slice",
                left_label: label.to_owned(),
                left: view.extents.to_vec(),
                right_label: "slice".to_owned(),
                right: vec![data.len()],
            });
        }
        {
            let _write = Borrowed::new(&view, AccessKind::Write)?;
            // SAFETY: a new view is contiguous, so its own order is its memory order and its
            // `len` elements are consecutive from `ptr`; `data` holds exactly `len` elements;
            // the write borrow keeps every handle away during the copy.
            unsafe { view.copy_in(0, data.as_ptr(), data.len())? };
        }
        Ok(view)
    }

    /// The elements in the view's own order (row-major for `LayoutRight`, column-major for
    /// `LayoutLeft`, row-major by index otherwise), from host or device memory alike. Fails
    /// with a borrow conflict while a writer of the view is live.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if S::HOST_ACCESSIBLE {
            let guard = HostRead::new(self)?;
            let mut out = Vec::with_capacity(self.len());
            guard.for_each_in_order(|v| out.push(v));
            return Ok(out);
        }
        let _read = Borrowed::new(self, AccessKind::Read)?;
        if self.is_contiguous() {
            let mut out = vec![T::zeroed(); self.len()];
            // SAFETY: a contiguous view's `len` elements are consecutive from `ptr` in its own
            // order; `out` holds `len` elements; the read borrow keeps writers away.
            unsafe { self.copy_out(out.as_mut_ptr(), self.len())? };
            return Ok(out);
        }
        // A strided view: its whole span comes over, then the host picks its elements.
        let mut span = vec![T::zeroed(); self.span()];
        // SAFETY: the span's elements, from `ptr`, are inside the allocation; `span` holds
        // that many; the read borrow keeps writers away.
        unsafe { self.copy_out(span.as_mut_ptr(), span.len())? };
        let mut out = Vec::with_capacity(self.len());
        super::access::for_each_index::<R, L>(&self.extents, |idx| {
            out.push(span[L::offset(&self.strides, &idx)]);
        });
        Ok(out)
    }

    /// Overwrites every element with `data`, given in the view's own order (the order
    /// [`to_vec`](Self::to_vec) returns: row-major, column-major for `LayoutLeft`), in host or
    /// device memory alike. A strided view of device memory is written run by run of
    /// consecutive elements, never touching memory between its elements.
    ///
    /// ```
    /// use hoplite_core::{LayoutStride, Slice, View};
    /// let v: View<i32, 2> = View::new("v", [2, 3])?;
    /// v.copy_from_slice(&[1, 2, 3, 4, 5, 6])?;
    /// let column: View<i32, 1, LayoutStride> = v.subview([Slice::All, Slice::Index(1)])?;
    /// column.copy_from_slice(&[-2, -5])?;
    /// assert_eq!(v.to_vec()?, [1, -2, 3, 4, -5, 6]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ExtentMismatch`] when `data` does not hold one value per element (the view is
    /// untouched), a borrow conflict with a live handle of the view, or the space's copy error.
    pub fn copy_from_slice(&self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::ExtentMismatch {
                what: "copy from slice",
                left_label: self.label().to_owned(),
                left: self.extents.to_vec(),
                right_label: "slice".to_owned(),
                right: vec![data.len()],
            });
        }
        if S::HOST_ACCESSIBLE {
            return HostWrite::new(self)?.copy_from_slice(self.label(), data);
        }
        let _write = Borrowed::new(self, AccessKind::Write)?;
        if size_of::<T>() == 0 || self.is_empty() {
            return Ok(());
        }
        if self.is_contiguous() {
            // SAFETY: a contiguous view's `len` elements are consecutive from `ptr` in its own
            // order; `data` holds `len` of them; the write borrow keeps every handle away.
            return unsafe { self.copy_in(0, data.as_ptr(), data.len()) };
        }
        // Each value at its element's offset, then one copy per run of consecutive offsets.
        let mut at: Vec<(usize, T)> = Vec::with_capacity(data.len());
        let mut values = data.iter();
        super::access::for_each_index::<R, L>(&self.extents, |idx| {
            if let Some(&v) = values.next() {
                at.push((L::offset(&self.strides, &idx), v));
            }
        });
        at.sort_unstable_by_key(|&(offset, _)| offset);
        let mut run: Vec<T> = Vec::new();
        let mut start = 0;
        for (offset, v) in at {
            if !run.is_empty() && offset != start + run.len() {
                // SAFETY: elements `start..start + run.len()` are elements of the view (their
                // offsets came from its indices), so inside its allocation; `run` holds them;
                // the write borrow keeps every handle away.
                unsafe { self.copy_in(start, run.as_ptr(), run.len())? };
                run.clear();
            }
            if run.is_empty() {
                start = offset;
            }
            run.push(v);
        }
        // SAFETY: as above, for the last run.
        unsafe { self.copy_in(start, run.as_ptr(), run.len()) }
    }

    /// Copies `n` host elements from `src` to the elements `first..first + n` after `ptr`.
    ///
    /// # Safety
    ///
    /// `src` is valid for reading `n` elements; those elements of the view are inside its
    /// allocation and nothing else uses them during the call.
    unsafe fn copy_in(&self, first: usize, src: *const T, n: usize) -> Result<()> {
        let dst = self.ptr.as_ptr().wrapping_add(first).cast::<u8>();
        // SAFETY: `dst` is inside the allocation by the caller's promise, so non-null; the
        // byte count of `n` elements fits, since the allocation holds them.
        unsafe {
            self.space()
                .copy_from_host(NonNull::new_unchecked(dst), src.cast(), n * size_of::<T>())
        }
    }

    /// Copies the `n` elements from `ptr` on into host memory at `dst`.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writing `n` elements; the `n` elements from `ptr` are inside the
    /// allocation and nothing writes them during the call.
    unsafe fn copy_out(&self, dst: *mut T, n: usize) -> Result<()> {
        // SAFETY: by the caller's promise; `T: Zeroable` values copied byte for byte from
        // elements of the view are values of `T` (a view holds only `T`s or zeros).
        unsafe {
            self.space()
                .copy_to_host(dst.cast(), self.ptr.cast(), n * size_of::<T>())
        }
    }
}

/// A borrow of a whole view for a host copy, released when dropped.
struct Borrowed<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> {
    view: &'v View<T, R, L, S>,
    id: BorrowId,
}

impl<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Borrowed<'v, T, R, L, S> {
    fn new(view: &'v View<T, R, L, S>, kind: AccessKind) -> Result<Self> {
        Ok(Borrowed {
            id: view.borrow(kind)?,
            view,
        })
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> Drop for Borrowed<'_, T, R, L, S> {
    fn drop(&mut self) {
        self.view.release(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::FILL_CHUNK;
    use crate::error::{Error, Result};
    use crate::space::{AllocationRecords, HostSpace, LayoutLeft, LayoutStride, MemorySpace};
    use crate::view::{Slice, View};

    /// Host memory presented as memory the host cannot dereference, as a GPU's is: the generic
    /// operations must go through its copies, which count themselves.
    #[derive(Clone, Copy, Default, Debug)]
    struct OpaqueSpace;

    static COPIES: AtomicUsize = AtomicUsize::new(0);

    // SAFETY: allocations are `HostSpace`'s; the copies copy exactly the bytes asked for.
    unsafe impl MemorySpace for OpaqueSpace {
        const ALIGNMENT: usize = HostSpace::ALIGNMENT;
        const HOST_ACCESSIBLE: bool = false;

        fn name(&self) -> &'static str {
            "OpaqueSpace"
        }

        fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
            HostSpace.allocate(label, bytes)
        }

        fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
            HostSpace.allocate_zeroed(label, bytes)
        }

        fn records(&self) -> &'static AllocationRecords {
            static RECORDS: AllocationRecords = AllocationRecords::new();
            &RECORDS
        }

        unsafe fn copy_from_host(&self, dst: NonNull<u8>, src: *const u8, bytes: usize) -> Result<()> {
            COPIES.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the caller's promise; the memory is host memory underneath.
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
            Ok(())
        }

        unsafe fn copy_to_host(&self, dst: *mut u8, src: NonNull<u8>, bytes: usize) -> Result<()> {
            COPIES.fetch_add(1, Ordering::Relaxed);
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, bytes) };
            Ok(())
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
            // SAFETY: allocated by `HostSpace` with these bytes.
            unsafe { HostSpace.deallocate(ptr, bytes) }
        }
    }

    /// A device space that provides no host copies.
    #[derive(Clone, Copy, Default, Debug)]
    struct NoCopySpace;

    // SAFETY: as `OpaqueSpace`, and the provided copies refuse.
    unsafe impl MemorySpace for NoCopySpace {
        const ALIGNMENT: usize = HostSpace::ALIGNMENT;
        const HOST_ACCESSIBLE: bool = false;

        fn name(&self) -> &'static str {
            "NoCopySpace"
        }

        fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
            HostSpace.allocate(label, bytes)
        }

        fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
            HostSpace.allocate_zeroed(label, bytes)
        }

        fn records(&self) -> &'static AllocationRecords {
            static RECORDS: AllocationRecords = AllocationRecords::new();
            &RECORDS
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
            // SAFETY: allocated by `HostSpace` with these bytes.
            unsafe { HostSpace.deallocate(ptr, bytes) }
        }
    }

    /// An element whose default is not zero bytes.
    #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Zeroable)]
    struct Seven(u32);

    impl Default for Seven {
        fn default() -> Self {
            Seven(7)
        }
    }

    #[test]
    fn from_slice_and_to_vec_round_trip_through_the_space_copies() {
        let data: Vec<i64> = (0..24).collect();
        let before = COPIES.load(Ordering::Relaxed);
        let v = View::<i64, 2, LayoutLeft, OpaqueSpace>::from_slice("v", [4, 6], &data).expect("upload");
        assert_eq!(v.to_vec().expect("download"), data);
        assert!(COPIES.load(Ordering::Relaxed) >= before + 2);
        let wrong = View::<i64, 1, LayoutLeft, OpaqueSpace>::from_slice("w", [3], &[1, 2]);
        assert!(matches!(wrong, Err(Error::ExtentMismatch { .. })), "{wrong:?}");
    }

    #[test]
    fn new_fills_every_element_with_the_default_in_bounded_chunks() {
        let n = 2 * FILL_CHUNK + 5;
        let v = View::<Seven, 1, LayoutLeft, OpaqueSpace>::new("sevens", [n]).expect("new");
        let all = v.to_vec().expect("download");
        assert_eq!(all.len(), n);
        assert!(all.iter().all(|&s| s == Seven(7)));
    }

    #[test]
    fn a_strided_subview_reads_back_only_its_elements_in_its_order() {
        let data: Vec<u32> = (0..20).collect();
        let m = View::<u32, 2, crate::space::LayoutRight, OpaqueSpace>::from_slice("m", [4, 5], &data)
            .expect("upload");
        let column: View<u32, 1, LayoutStride, OpaqueSpace> =
            m.subview([Slice::All, Slice::Index(2)]).expect("column");
        assert_eq!(column.to_vec().expect("download"), [2, 7, 12, 17]);
    }

    #[test]
    fn a_live_writer_makes_to_vec_a_borrow_conflict() {
        let v = View::<u8, 1, LayoutLeft, OpaqueSpace>::from_slice("v", [3], &[1, 2, 3]).expect("upload");
        let w = v.write();
        assert!(matches!(v.to_vec(), Err(Error::BorrowConflict { .. })));
        drop(w);
        assert_eq!(v.to_vec().expect("free again"), [1, 2, 3]);
    }

    #[test]
    fn a_space_without_host_copies_refuses_with_a_typed_error() {
        let e =
            View::<u8, 1, LayoutLeft, NoCopySpace>::from_slice("v", [3], &[1, 2, 3]).expect_err("refused");
        assert!(
            matches!(&e, Error::Device { space: "NoCopySpace", reason } if reason.contains("copy_from_host")),
            "{e}"
        );
        let v = View::<u8, 1, LayoutLeft, NoCopySpace>::without_initializing("v", [3]).expect("alloc");
        assert!(matches!(v.to_vec(), Err(Error::Device { .. })));
    }

    #[test]
    fn copy_from_slice_writes_a_strided_subview_run_by_run_and_nothing_between() {
        let m = View::<u32, 2, crate::space::LayoutRight, OpaqueSpace>::from_slice(
            "m",
            [4, 5],
            &(0..20).collect::<Vec<_>>(),
        )
        .expect("upload");
        let block: View<u32, 2, LayoutStride, OpaqueSpace> = m
            .subview([Slice::Range(1..3), Slice::Range(1..4)])
            .expect("block");
        let before = COPIES.load(Ordering::Relaxed);
        block
            .copy_from_slice(&[100, 101, 102, 103, 104, 105])
            .expect("write");
        // One copy per row of the block (other tests may copy at the same time).
        assert!(COPIES.load(Ordering::Relaxed) >= before + 2);
        let mut want: Vec<u32> = (0..20).collect();
        want[6..9].copy_from_slice(&[100, 101, 102]);
        want[11..14].copy_from_slice(&[103, 104, 105]);
        assert_eq!(m.to_vec().expect("download"), want);
        let e = block
            .copy_from_slice(&[1, 2])
            .expect_err("two values for six elements");
        assert!(matches!(e, Error::ExtentMismatch { .. }), "{e}");
        assert_eq!(
            m.to_vec().expect("download"),
            want,
            "untouched by the refused copy"
        );
    }

    #[test]
    fn deep_copy_moves_data_between_host_and_device_memory_in_any_layouts() {
        use crate::space::LayoutRight;
        use crate::view::{deep_copy, deep_copy_fill};
        let data: Vec<i32> = (0..35).collect();
        let host = View::<i32, 2, LayoutRight, HostSpace>::from_slice("host", [5, 7], &data).expect("host");
        let left = View::<i32, 2, LayoutLeft, OpaqueSpace>::new("left", [5, 7]).expect("device");
        deep_copy(&left, &host).expect("host to device, transposing the order");
        let column_major: Vec<i32> = (0..7).flat_map(|j| (0..5).map(move |i| i * 7 + j)).collect();
        assert_eq!(left.to_vec().expect("download"), column_major);
        let right = View::<i32, 2, LayoutRight, OpaqueSpace>::new("right", [5, 7]).expect("device");
        deep_copy(&right, &left).expect("device to device");
        assert_eq!(right.to_vec().expect("download"), data);
        let back = View::<i32, 2, LayoutLeft, HostSpace>::new("back", [5, 7]).expect("host");
        deep_copy(&back, &right).expect("device to host");
        assert_eq!(back.to_vec().expect("host"), column_major);
        let wrong = View::<i32, 2, LayoutRight, OpaqueSpace>::new("wrong", [7, 5]).expect("device");
        let e = deep_copy(&wrong, &host).expect_err("other extents");
        assert!(matches!(e, Error::ExtentMismatch { .. }), "{e}");
        assert_eq!(wrong.to_vec().expect("download"), [0; 35], "untouched");
        deep_copy_fill(&wrong, 3).expect("fill");
        assert_eq!(wrong.to_vec().expect("download"), [3; 35]);
    }

    #[test]
    fn a_reduction_result_goes_into_a_rank_0_device_view() {
        use crate::dispatch::ReduceInto;
        let total = View::<f64, 0, LayoutLeft, OpaqueSpace>::new("total", []).expect("device");
        (&total).store(2.5).expect("store");
        assert_eq!(total.to_vec().expect("download"), [2.5]);
        let w = total.write();
        assert!(matches!((&total).store(1.0), Err(Error::BorrowConflict { .. })));
        drop(w);
    }
}
