//! `deep_copy` and mirrors (Kokkos `deep_copy`, `create_mirror_view`,
//! `create_mirror_view_and_copy`).

use crate::error::{Error, Result};
use crate::policy::{IterationOrder, for_each_point};
use crate::profiling::{CopySide, DeepCopyScope};
use crate::space::{ArrayLayout, HostSpace, MemorySpace};
use crate::view::access::{HostRead, HostWrite, for_each_index};
use crate::view::{View, ViewValue};

/// Copies every element of `src` into `dst` (Kokkos `deep_copy(dst, src)`). The views may
/// differ in layout and memory space — host memory, a device's, or one of each; their extents
/// must be equal, or the result is [`Error::ExtentMismatch`] and `dst` is untouched. Where
/// either side is memory the host cannot dereference, the copy goes through the spaces'
/// host copies ([`MemorySpace::copy_to_host`], [`MemorySpace::copy_from_host`]), staged in
/// host memory.
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
    S1: MemorySpace,
    S2: MemorySpace,
{
    check_same_extents("deep_copy", dst, src)?;
    if !(S1::HOST_ACCESSIBLE && S2::HOST_ACCESSIBLE) {
        return staged_deep_copy(dst, src);
    }
    let from = HostRead::new(src)?;
    let mut to = HostWrite::new(dst)?;
    let _profiled = profile_copy(dst, src);
    if let (Some(s), Some(d)) = (from.as_slice(), to.as_mut_slice())
        && L1::NAME == L2::NAME
    {
        d.copy_from_slice(s);
        return Ok(());
    }
    let extents = dst.extents();
    match (
        fastest_dim(&extents, &dst.strides()),
        fastest_dim(&extents, &src.strides()),
    ) {
        (Some(a), Some(b)) if a != b => {
            // The views run fastest along different dimensions (a transpose, in 2-D): an
            // element loop in either order strides through the other view a cache line per
            // element. Tiles of TILE x TILE over those two dimensions keep both views' lines
            // in cache while a tile is copied.
            const TILE: usize = 32;
            let tile: [usize; R] = std::array::from_fn(|d| if d == a || d == b { TILE } else { 1 });
            let counts: [usize; R] = std::array::from_fn(|d| extents[d].div_ceil(tile[d]));
            // Inside a tile, the destination's fastest dimension is the innermost loop.
            let inner = if a > b {
                IterationOrder::Right
            } else {
                IterationOrder::Left
            };
            for_each_point([0; R], counts, IterationOrder::Right, |t| {
                let lo: [usize; R] = std::array::from_fn(|d| t[d] * tile[d]);
                let hi: [usize; R] = std::array::from_fn(|d| (lo[d] + tile[d]).min(extents[d]));
                for_each_point(lo, hi, inner, |idx| to.set(idx, from.get(idx)));
            });
        }
        _ => for_each_index::<R, L1>(&extents, |idx| to.set(idx, from.get(idx))),
    }
    Ok(())
}

/// Whether a layout's own element order (the order of `to_vec`) runs the first index fastest.
fn first_index_fastest<L: ArrayLayout>() -> bool {
    L::NAME == crate::space::LayoutLeft::NAME
}

/// [`deep_copy`] where one side is memory the host cannot dereference: `src`'s elements come
/// to the host in its own order, are put into `dst`'s own order when the two orders differ,
/// and go to `dst`.
fn staged_deep_copy<T, const R: usize, L1, L2, S1, S2>(
    dst: &View<T, R, L1, S1>,
    src: &View<T, R, L2, S2>,
) -> Result<()>
where
    T: ViewValue,
    L1: ArrayLayout,
    L2: ArrayLayout,
    S1: MemorySpace,
    S2: MemorySpace,
{
    let from = src.to_vec()?;
    let _profiled = profile_copy(dst, src);
    let src_left = first_index_fastest::<L2>();
    if first_index_fastest::<L1>() == src_left {
        return dst.copy_from_slice(&from);
    }
    let extents = src.extents();
    // The position of an index in `src`'s own order.
    let position = |idx: [usize; R]| {
        let mut p = 0;
        if src_left {
            for d in (0..R).rev() {
                p = p * extents[d] + idx[d];
            }
        } else {
            for d in 0..R {
                p = p * extents[d] + idx[d];
            }
        }
        p
    };
    let mut ordered = Vec::with_capacity(from.len());
    for_each_index::<R, L1>(&extents, |idx| ordered.push(from[position(idx)]));
    dst.copy_from_slice(&ordered)
}

/// The check every copy makes before it borrows anything: `dst` and `src` have the same
/// extents, or the copy named `what` fails with [`Error::ExtentMismatch`] naming both views.
pub(crate) fn check_same_extents<T, const R: usize, L1, L2, S1, S2>(
    what: &'static str,
    dst: &View<T, R, L1, S1>,
    src: &View<T, R, L2, S2>,
) -> Result<()>
where
    T: ViewValue,
    L1: ArrayLayout,
    L2: ArrayLayout,
    S1: MemorySpace,
    S2: MemorySpace,
{
    if dst.extents() == src.extents() {
        return Ok(());
    }
    Err(Error::ExtentMismatch {
        what,
        left_label: dst.label().to_owned(),
        left: dst.extents().to_vec(),
        right_label: src.label().to_owned(),
        right: src.extents().to_vec(),
    })
}

/// The dimension with the smallest stride among those of extent above 1 (the one a walk in
/// memory order runs fastest along), or `None` when there is none.
fn fastest_dim<const R: usize>(extents: &[usize; R], strides: &[usize; R]) -> Option<usize> {
    (0..R).filter(|&d| extents[d] > 1).min_by_key(|&d| strides[d])
}

/// Sets every element of `dst` to `value` (Kokkos `deep_copy(view, scalar)`), in host or
/// device memory alike.
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
    S: MemorySpace,
{
    // Kokkos reports a fill as a copy from a host scalar.
    let _profiled = DeepCopyScope::begin(
        copy_side(dst),
        CopySide {
            space: HostSpace.profiling_name(),
            label: "Scalar",
            ptr: (&raw const value).cast(),
        },
        (dst.len() * size_of::<T>()) as u64,
    );
    if S::HOST_ACCESSIBLE {
        let mut guard = HostWrite::new(dst)?;
        guard.fill(value);
        return Ok(());
    }
    dst.copy_from_slice(&vec![value; dst.len()])
}

/// `view` as one side of a deep copy, for Kokkos Tools connectors.
pub(crate) fn copy_side<T, const R: usize, L, S>(view: &View<T, R, L, S>) -> CopySide<'_>
where
    T: ViewValue,
    L: ArrayLayout,
    S: MemorySpace,
{
    CopySide {
        space: view.space().profiling_name(),
        label: view.label(),
        ptr: view.ptr.as_ptr().cast_const().cast(),
    }
}

/// Reports a copy of `src` into `dst` to the Kokkos Tools connector, until the value drops.
pub(crate) fn profile_copy<T, const R: usize, L1, L2, S1, S2>(
    dst: &View<T, R, L1, S1>,
    src: &View<T, R, L2, S2>,
) -> DeepCopyScope
where
    T: ViewValue,
    L1: ArrayLayout,
    L2: ArrayLayout,
    S1: MemorySpace,
    S2: MemorySpace,
{
    DeepCopyScope::begin(
        copy_side(dst),
        copy_side(src),
        (dst.len() * size_of::<T>()) as u64,
    )
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

    /// Copies whose views run fastest along different dimensions go tile by tile; every
    /// element must land where the element loop puts it, for extents that are not multiples of
    /// the tile, ranks 2 and 3, and strided subviews.
    #[test]
    fn tiled_layout_changing_copies_move_every_element() {
        let value = |i: usize, j: usize, k: usize| (i * 10_000 + j * 100 + k) as i64;
        let data: Vec<i64> = (0..5)
            .flat_map(|i| (0..70).flat_map(move |j| (0..45).map(move |k| value(i, j, k))))
            .collect();
        let right: View<i64, 3> = View::from_slice("right", [5, 70, 45], &data).expect("alloc");
        let left: View<i64, 3, LayoutLeft> = View::new("left", [5, 70, 45]).expect("alloc");
        deep_copy(&left, &right).expect("to left");
        let back: View<i64, 3> = View::new("back", [5, 70, 45]).expect("alloc");
        deep_copy(&back, &left).expect("to right");
        assert_eq!(back.to_vec().expect("read"), data);
        {
            let l = left.host_read().expect("read");
            assert_eq!(l.get([4, 69, 44]), value(4, 69, 44));
            assert_eq!(l.get([3, 33, 1]), value(3, 33, 1));
        }
        // A strided plane (fastest along k) into a LayoutLeft matrix (fastest along j).
        let plane: View<i64, 2, LayoutStride> = right
            .subview([Slice::Range(1..4), Slice::Index(37), Slice::All])
            .expect("plane");
        let dst: View<i64, 2, LayoutLeft> = View::new("dst", [3, 45]).expect("alloc");
        deep_copy(&dst, &plane).expect("plane copy");
        let d = dst.host_read().expect("read");
        for i in 0..3 {
            for k in 0..45 {
                assert_eq!(d.get([i, k]), value(i + 1, 37, k), "[{i}, {k}]");
            }
        }
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
