//! Interop with [`ndarray`] (feature `ndarray`): a host view's elements as an
//! [`ArrayView`](ndarray::ArrayView) or [`ArrayViewMut`](ndarray::ArrayViewMut) without a copy,
//! its layout given as strides, through the host guards that borrow the view; and an
//! [`Array`](ndarray::Array) adopted as a view, without a copy when its memory is already in the
//! view's layout.

use ndarray::{Array, ArrayView, ArrayViewMut, Dim, Dimension, Ix, ShapeBuilder};

use super::access::{HostRead, HostWrite};
use super::{View, ViewValue};
use crate::error::{Error, Result};
use crate::space::{ArrayLayout, HostSpace, MemorySpace};

/// The shape and strides of `view` as ndarray's dimension type.
fn shape_of<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
    view: &View<T, R, L, S>,
) -> (Dim<[Ix; R]>, Dim<[Ix; R]>)
where
    Dim<[Ix; R]>: Dimension,
{
    let mut shape = Dim::<[Ix; R]>::zeros(R);
    let mut strides = Dim::<[Ix; R]>::zeros(R);
    shape.slice_mut().copy_from_slice(&view.extents());
    strides.slice_mut().copy_from_slice(&view.strides());
    (shape, strides)
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> HostRead<'_, T, R, L, S>
where
    Dim<[Ix; R]>: Dimension,
{
    /// The view's elements as an ndarray [`ArrayView`] of the same shape, sharing the view's
    /// memory: its strides are the view's (row-major for `LayoutRight`, column-major for
    /// `LayoutLeft`, a subview's own), so nothing is copied. It lives as long as this guard's
    /// borrow, which keeps writers away.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// let m = View::<f64, 2, LayoutLeft>::from_slice("m", [2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])?;
    /// let read = m.host_read()?;
    /// let a = read.as_array();
    /// assert_eq!((a.shape(), a.strides()), (&[2, 3][..], &[1, 2][..]));
    /// assert_eq!(a[[1, 2]], 5.0);
    /// assert_eq!(a.sum(), 15.0);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn as_array(&self) -> ArrayView<'_, T, Dim<[Ix; R]>> {
        let view = self.view();
        let (shape, strides) = shape_of(view);
        // SAFETY: the view's elements at `ptr + Σ index[d] * strides[d]` for every index inside
        // the extents are initialized values of `T` in one allocation the view keeps alive; the
        // pointer is non-null and aligned (for an empty view too); the strides are the view's,
        // non-negative and in elements, as ndarray counts them; the shared borrow this guard
        // holds keeps every writer away while the returned view, which borrows the guard, lives.
        unsafe { ArrayView::from_shape_ptr(shape.strides(strides), view.ptr.as_ptr().cast_const()) }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> HostWrite<'_, T, R, L, S>
where
    Dim<[Ix; R]>: Dimension,
{
    /// The view's elements as an ndarray [`ArrayViewMut`], sharing the view's memory as
    /// [`HostRead::as_array`] does; what it writes is the view's.
    ///
    /// ```
    /// use hoplite_core::View;
    /// let v = View::<i32, 2>::new("v", [2, 2])?;
    /// v.host_write()?.as_array_mut().assign(&ndarray::arr2(&[[1, 2], [3, 4]]));
    /// assert_eq!(v.to_vec()?, [1, 2, 3, 4]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn as_array_mut(&mut self) -> ArrayViewMut<'_, T, Dim<[Ix; R]>> {
        let view = self.view();
        let (shape, strides) = shape_of(view);
        let ptr = view.ptr.as_ptr();
        // SAFETY: as in `as_array`; besides, the view's layouts give distinct elements distinct
        // addresses, and the exclusive borrow this guard holds, with `&mut self`, makes the
        // returned view the only access to them while it lives.
        unsafe { ArrayViewMut::from_shape_ptr(shape.strides(strides), ptr) }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout> View<T, R, L, HostSpace>
where
    Dim<[Ix; R]>: Dimension,
{
    /// A view of `array`'s elements: its memory itself when it is laid out as this view's
    /// layout lays out its extents (a standard, row-major array for `LayoutRight`; a
    /// column-major one, `.reversed_axes()` of a standard array or `Array::zeros(shape.f())`,
    /// for `LayoutLeft`), as [`from_vec`](View::from_vec) adopts a vector; otherwise a copy
    /// in the view's layout.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// let a = ndarray::arr2(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    /// let address = a.as_ptr();
    /// let v: View<f64, 2> = View::from_ndarray("a", a)?;
    /// assert_eq!((v.data(), v.host_read()?.get([1, 0])), (address, 4.0)); // no copy
    /// let col: View<f64, 2, LayoutLeft> = View::from_ndarray("b", ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]))?;
    /// assert_eq!(col.to_vec()?, [1.0, 3.0, 2.0, 4.0]); // copied into column-major order
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::AllocationFailed`] when a copy is needed and its memory cannot be had;
    /// [`Error::InvalidLayout`] for an array whose memory does not hold its elements where its
    /// strides say (which ndarray does not make).
    pub fn from_ndarray(label: &str, array: Array<T, Dim<[Ix; R]>>) -> Result<Self> {
        let extents: [usize; R] = std::array::from_fn(|d| array.shape()[d]);
        let mut own = [0usize; R];
        L::strides(&extents, &mut own);
        let in_layout = array
            .strides()
            .iter()
            .zip(&own)
            .zip(&extents)
            // A dimension of one element may have any stride.
            .all(|((&have, &want), &e)| e <= 1 || usize::try_from(have) == Ok(want));
        if !in_layout {
            return copied(label, extents, &array.view());
        }
        let (data, offset) = array.into_raw_vec_and_offset();
        let offset = offset.unwrap_or(0);
        // An array that owns exactly its elements, from the start of its vector, is adopted.
        if offset == 0 && data.len() == extents.iter().product::<usize>() {
            return View::from_vec(label, extents, data);
        }
        // Otherwise (a row removed, say) its elements are where its strides, the view's, say.
        let rest = data.get(offset..).unwrap_or_default();
        let elements =
            ArrayView::from_shape(own_shape(&extents).strides(own_shape(&own)), rest).map_err(|e| {
                Error::InvalidLayout {
                    label: label.to_owned(),
                    reason: format!("the array's memory does not hold its elements: {e}"),
                }
            })?;
        copied(label, extents, &elements)
    }
}

/// `extents` as ndarray's dimension type.
fn own_shape<const R: usize>(extents: &[usize; R]) -> Dim<[Ix; R]>
where
    Dim<[Ix; R]>: Dimension,
{
    let mut shape = Dim::<[Ix; R]>::zeros(R);
    shape.slice_mut().copy_from_slice(extents);
    shape
}

/// A new view of `extents` in layout `L` holding `array`'s elements.
fn copied<T: ViewValue, const R: usize, L: ArrayLayout>(
    label: &str,
    extents: [usize; R],
    array: &ArrayView<'_, T, Dim<[Ix; R]>>,
) -> Result<View<T, R, L, HostSpace>>
where
    Dim<[Ix; R]>: Dimension,
{
    let view = View::<T, R, L, HostSpace>::new(label, extents)?;
    view.host_write()?.as_array_mut().assign(array);
    Ok(view)
}

#[cfg(test)]
mod tests {
    use ndarray::{Array2, Array3, Axis, ShapeBuilder, arr1, s};

    use super::*;
    use crate::space::{LayoutLeft, LayoutRight, LayoutStride};
    use crate::view::Slice;

    #[test]
    fn both_layouts_give_their_strides_and_the_same_elements() {
        let data: Vec<i64> = (0..24).collect();
        let right = View::<i64, 3, LayoutRight>::from_slice("r", [2, 3, 4], &data).expect("view");
        let left = View::<i64, 3, LayoutLeft>::from_slice("l", [2, 3, 4], &data).expect("view");
        let (r, l) = (right.host_read().expect("read"), left.host_read().expect("read"));
        let (ra, la) = (r.as_array(), l.as_array());
        assert_eq!(ra.strides(), [12, 4, 1]);
        assert_eq!(la.strides(), [1, 2, 6]);
        assert_eq!(ra.as_ptr(), right.data(), "the view's own memory");
        for (i, j, k) in [(0, 0, 0), (1, 2, 3), (1, 0, 2)] {
            assert_eq!(ra[[i, j, k]], r.get([i, j, k]));
            assert_eq!(la[[i, j, k]], l.get([i, j, k]));
        }
        let want = Array3::from_shape_vec((2, 3, 4), data).expect("shape");
        assert_eq!(ra, want);
    }

    #[test]
    fn a_subview_keeps_its_strides_and_writes_reach_the_view() {
        let v = View::<f64, 2>::from_slice("v", [4, 5], &(0..20).map(f64::from).collect::<Vec<_>>())
            .expect("view");
        let column: View<f64, 2, LayoutStride> = v
            .subview([Slice::Range(1..4), Slice::Range(2..3)])
            .expect("subview");
        {
            let mut guard = column.host_write().expect("write");
            let mut a = guard.as_array_mut();
            assert_eq!((a.shape(), a.strides()), (&[3, 1][..], &[5, 1][..]));
            a.map_inplace(|x| *x = -*x);
        }
        assert_eq!(
            v.host_read().expect("read").as_array().column(2),
            arr1(&[2.0, -7.0, -12.0, -17.0])
        );
        // While the guard lives the view is borrowed as the guard says.
        let guard = v.host_write().expect("write");
        assert!(v.host_read().is_err(), "a writer excludes readers");
        drop(guard);
    }

    #[test]
    fn arrays_in_the_layout_are_adopted_and_others_copied() {
        let standard = Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as u32);
        let own = standard.clone();
        let at = own.as_ptr();
        let right: View<u32, 2> = View::from_ndarray("right", own).expect("view");
        assert_eq!(right.data(), at, "row-major memory adopted");
        let column_major = Array2::from_shape_fn((3, 4).f(), |(i, j)| (10 * i + j) as u32);
        let at = column_major.as_ptr();
        let left: View<u32, 2, LayoutLeft> = View::from_ndarray("left", column_major).expect("view");
        assert_eq!(left.data(), at, "column-major memory adopted");
        let copied: View<u32, 2, LayoutLeft> = View::from_ndarray("copied", standard.clone()).expect("view");
        let sliced: View<u32, 2> =
            View::from_ndarray("sliced", standard.slice(s![.., 1..3]).to_owned()).expect("view");
        for (i, j) in [(0, 0), (2, 3), (1, 2)] {
            assert_eq!(left.host_read().expect("read").get([i, j]), standard[[i, j]]);
            assert_eq!(copied.host_read().expect("read").get([i, j]), standard[[i, j]]);
        }
        assert_eq!(
            sliced.host_read().expect("read").as_array(),
            standard.slice(s![.., 1..3])
        );
        // An array whose memory starts past its first element (a row removed) is copied.
        let mut trimmed = standard.clone();
        trimmed.remove_index(Axis(0), 0);
        let from_trimmed: View<u32, 2> = View::from_ndarray("trimmed", trimmed.clone()).expect("view");
        assert_eq!(from_trimmed.host_read().expect("read").as_array(), trimmed);
    }

    #[test]
    fn empty_and_rank_zero_views_convert() {
        let empty = View::<f32, 2>::new("empty", [0, 3]).expect("view");
        assert_eq!(empty.host_read().expect("read").as_array().shape(), [0, 3]);
        let scalar = View::<f32, 0>::from_slice("scalar", [], &[2.5]).expect("view");
        assert_eq!(scalar.host_read().expect("read").as_array().into_scalar(), &2.5);
        let adopted: View<f32, 2> = View::from_ndarray("none", Array2::zeros((0, 4))).expect("view");
        assert_eq!(adopted.extents(), [0, 4]);
    }
}
