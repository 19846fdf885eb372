//! `deep_copy` and mirrors (Kokkos `deep_copy`, `create_mirror_view`,
//! `create_mirror_view_and_copy`).

use crate::error::{Error, Result};
use crate::space::{ArrayLayout, HostSpace, MemorySpace, MemorySpaceAccess};
use crate::view::access::for_each_index;
use crate::view::{View, ViewValue};

/// A memory space whose memory the host can read and write directly.
///
/// Host-to-host copies of views in such spaces are plain element loops; device backends add
/// their own `deep_copy` paths for the spaces the host cannot touch.
pub trait HostAccessibleSpace: MemorySpace + MemorySpaceAccess<HostSpace> {}

impl HostAccessibleSpace for HostSpace {}

/// Copies every element of `src` into `dst` (Kokkos `deep_copy(dst, src)`). The views may
/// differ in layout and memory space; their extents must be equal, or the result is
/// [`Error::ExtentMismatch`] and `dst` is untouched.
///
/// ```
/// use hoplite_core::{deep_copy, LayoutLeft, View};
/// let right: View<i32, 2> = View::from_slice("right", [2, 3], &[1, 2, 3, 4, 5, 6])?;
/// let left: View<i32, 2, LayoutLeft> = View::new("left", [2, 3])?;
/// deep_copy(&left, &right)?;
/// assert_eq!(left.to_vec()?, [1, 4, 2, 5, 3, 6]); // column-major order
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// An extent mismatch, or a borrow conflict (a live writer of `src`, or a live handle of
/// `dst`). Copying a view onto itself is a conflict too.
pub fn deep_copy<T, const R: usize, L1, L2, S1, S2>(
    dst: &View<T, R, L1, S1>,
    src: &View<T, R, L2, S2>,
) -> Result<()>
where
    T: ViewValue,
    L1: ArrayLayout,
    L2: ArrayLayout,
    S1: HostAccessibleSpace,
    S2: HostAccessibleSpace,
{
    if dst.extents() != src.extents() {
        return Err(Error::ExtentMismatch {
            what: "deep_copy",
            left_label: dst.label().to_owned(),
            left: dst.extents().to_vec(),
            right_label: src.label().to_owned(),
            right: src.extents().to_vec(),
        });
    }
    let from = src.host_read()?;
    let mut to = dst.host_write()?;
    if let (Some(s), Some(d)) = (from.as_slice(), to.as_mut_slice())
        && L1::NAME == L2::NAME
    {
        d.copy_from_slice(s);
        return Ok(());
    }
    for_each_index::<R, L1>(&dst.extents(), |idx| to.set(idx, from.get(idx)));
    Ok(())
}

/// Sets every element of `dst` to `value` (Kokkos `deep_copy(view, scalar)`).
///
/// ```
/// use hoplite_core::{deep_copy_fill, View};
/// let v: View<f32, 2> = View::new("v", [2, 2])?;
/// deep_copy_fill(&v, 1.5)?;
/// assert_eq!(v.to_vec()?, [1.5; 4]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// A borrow conflict with a live handle of `dst`.
pub fn deep_copy_fill<T, const R: usize, L, S>(dst: &View<T, R, L, S>, value: T) -> Result<()>
where
    T: ViewValue,
    L: ArrayLayout,
    S: HostAccessibleSpace,
{
    dst.fill_host(value)
}

/// A view of the same shape that the host can access: for a view already in a host-accessible
/// space, the view itself (no allocation, no copy), as in Kokkos.
///
/// ```
/// use hoplite_core::{create_mirror_view, View};
/// let v: View<u8, 1> = View::new("v", [8])?;
/// let m = create_mirror_view(&v)?;
/// assert!(m.same_allocation(&v));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// An allocation failure when a new host view is needed.
pub fn create_mirror_view<T, const R: usize, L>(
    view: &View<T, R, L, HostSpace>,
) -> Result<View<T, R, L, HostSpace>>
where
    T: ViewValue,
    L: ArrayLayout,
{
    Ok(view.clone())
}

/// A host-accessible view with the contents of `view`: the view itself when it is already on
/// the host (nothing to copy), as in Kokkos.
///
/// ```
/// use hoplite_core::{create_mirror_view_and_copy, View};
/// let v: View<u8, 1> = View::from_slice("v", [3], &[7, 8, 9])?;
/// let m = create_mirror_view_and_copy(&v)?;
/// assert_eq!(m.to_vec()?, [7, 8, 9]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`create_mirror_view`].
pub fn create_mirror_view_and_copy<T, const R: usize, L>(
    view: &View<T, R, L, HostSpace>,
) -> Result<View<T, R, L, HostSpace>>
where
    T: ViewValue,
    L: ArrayLayout,
{
    create_mirror_view(view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{LayoutLeft, LayoutStride};
    use crate::view::Slice;

    #[test]
    fn deep_copy_round_trips_between_layouts() {
        let data: Vec<i64> = (0..24).collect();
        let right: View<i64, 3> = View::from_slice("right", [2, 3, 4], &data).expect("alloc");
        let left: View<i64, 3, LayoutLeft> = View::new("left", [2, 3, 4]).expect("alloc");
        deep_copy(&left, &right).expect("to left");
        {
            let l = left.host_read().expect("read");
            assert_eq!(l.get([1, 2, 3]), 23);
            assert_eq!(l.get([1, 0, 0]), 12);
        }
        let back: View<i64, 3> = View::new("back", [2, 3, 4]).expect("alloc");
        deep_copy(&back, &left).expect("to right");
        assert_eq!(back.to_vec().expect("read"), data);
    }

    #[test]
    fn deep_copy_checks_extents_and_borrows() {
        let a: View<f64, 2> = View::new("a", [2, 3]).expect("alloc");
        let b: View<f64, 2> = View::new("b", [3, 2]).expect("alloc");
        let err = deep_copy(&a, &b).expect_err("mismatch");
        assert!(matches!(err, Error::ExtentMismatch { .. }));
        assert!(
            err.to_string().contains("[2, 3]") && err.to_string().contains("[3, 2]"),
            "{err}"
        );
        let err = deep_copy(&a, &a).expect_err("self copy conflicts");
        assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
        // Disjoint halves of one allocation copy into each other.
        let m: View<f64, 2> = View::from_slice("m", [2, 2], &[1.0, 2.0, 3.0, 4.0]).expect("alloc");
        let top: View<f64, 1> = m.subview([Slice::Index(0), Slice::All]).expect("row 0");
        let bottom: View<f64, 1> = m.subview([Slice::Index(1), Slice::All]).expect("row 1");
        deep_copy(&top, &bottom).expect("disjoint rows");
        assert_eq!(m.to_vec().expect("read"), [3.0, 4.0, 3.0, 4.0]);
        let col: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(1)]).expect("column");
        deep_copy_fill(&col, 9.0).expect("fill column");
        assert_eq!(m.to_vec().expect("read"), [3.0, 9.0, 3.0, 9.0]);
    }
}
