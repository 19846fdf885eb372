//! Host guards: [`HostRead`] and [`HostWrite`], element access from host code outside launches.

use super::handle::{in_bounds, out_of_bounds};
use super::tokens::ViewIndex;
use crate::error::{Error, Result};
use crate::space::{ArrayLayout, MemorySpace};
use crate::view::borrow::BorrowId;
use crate::view::{AccessKind, View, ViewValue};

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

// The guards' methods are for every space, but a guard exists only over host-accessible
// memory: `View::host_read`/`host_write` ask for `HostAccessibleSpace` at compile time, and
// the constructors, which generic view code also calls, check `MemorySpace::HOST_ACCESSIBLE`.
impl<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> HostRead<'v, T, R, L, S> {
    pub(crate) fn new(view: &'v View<T, R, L, S>) -> Result<Self> {
        host_memory(view)?;
        Ok(HostRead {
            borrow: view.borrow(AccessKind::Read)?,
            view,
        })
    }

    /// The view this guard borrows (for the ndarray interop).
    #[cfg(feature = "ndarray")]
    pub(crate) fn view(&self) -> &'v View<T, R, L, S> {
        self.view
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

impl<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> HostWrite<'v, T, R, L, S> {
    pub(crate) fn new(view: &'v View<T, R, L, S>) -> Result<Self> {
        host_memory(view)?;
        Ok(HostWrite {
            borrow: view.borrow(AccessKind::Write)?,
            view,
        })
    }

    /// The view this guard borrows (for the ndarray interop).
    #[cfg(feature = "ndarray")]
    pub(crate) fn view(&self) -> &'v View<T, R, L, S> {
        self.view
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

/// Refuses a host guard over memory the host cannot dereference (the guards' soundness rests
/// on this check).
fn host_memory<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
    view: &View<T, R, L, S>,
) -> Result<()> {
    if S::HOST_ACCESSIBLE {
        return Ok(());
    }
    Err(Error::Device {
        space: view.space().name(),
        reason: format!(
            "view `{}`: the host cannot read or write this memory in place; copy it with `to_vec` or a mirror",
            view.label()
        ),
    })
}

/// The address of the element at `index`, after checking it against the extents (panics with
/// the view's label otherwise): the one bounds check of the host guards.
pub(super) fn checked_element_ptr<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
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
