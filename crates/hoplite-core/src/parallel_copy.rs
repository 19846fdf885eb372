//! `deep_copy` on an execution instance (Kokkos `deep_copy(exec, dst, src)`): the copy is a
//! launch of that instance, so it uses the instance's threads and is ordered with its other
//! launches. On the host backends launches finish when they return, so the copy has finished
//! when the call returns; an asynchronous instance returns once it has queued it.

use crate::dispatch::{ParallelFor, parallel_for};
use crate::error::Result;
use crate::policy::{IterationOrder, RangePolicy, for_each_point};
use crate::space::{ArrayLayout, ExecutionSpace, HostAccessibleSpace, LayoutLeft};
use crate::view::copy::{check_same_extents, profile_copy};
use crate::view::{View, ViewValue};

/// Elements per iteration of a contiguous copy: large enough that a launch's overhead is
/// small beside the copy, small enough to spread a few megabytes over every thread.
const CHUNK: usize = 1 << 14;

/// Copies every element of `src` into `dst` as a launch on `exec` (Kokkos
/// `deep_copy(exec, dst, src)`): contiguous views of one layout in chunks of
/// 16 Ki elements, others one outermost index per iteration. Extents must be equal.
///
/// ```
/// use hoplite_core::{deep_copy_on, View};
/// use hoplite_serial::Serial;
/// let src: View<f64, 2> = View::from_slice("src", [2, 3], &[1., 2., 3., 4., 5., 6.])?;
/// let dst: View<f64, 2, hoplite_core::LayoutLeft> = View::new("dst", [2, 3])?;
/// deep_copy_on(&Serial::default(), &dst, &src)?;
/// assert_eq!(dst.to_vec()?, [1., 4., 2., 5., 3., 6.]); // column-major order
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::ExtentMismatch`](crate::Error::ExtentMismatch) (and `dst` is untouched), a borrow
/// conflict (a live writer of `src`, a live handle of `dst`, or `dst` and `src` overlapping),
/// or what the launch reports.
pub fn deep_copy_on<E, T, const R: usize, L1, L2, S1, S2>(
    exec: &E,
    dst: &View<T, R, L1, S1>,
    src: &View<T, R, L2, S2>,
) -> Result<()>
where
    E: ExecutionSpace + ParallelFor<RangePolicy<E>>,
    T: ViewValue,
    L1: ArrayLayout,
    L2: ArrayLayout,
    S1: HostAccessibleSpace,
    S2: HostAccessibleSpace,
{
    check_same_extents("deep_copy_on", dst, src)?;
    // The guards hold the borrows for the whole copy: nobody else writes `dst` or `src`, and
    // the borrow table refuses a `dst` that overlaps `src`.
    let from = src.host_read()?;
    let mut to = dst.host_write()?;
    let _profiled = profile_copy(dst, src);
    if R == 0 {
        to.set([0; R], from.get([0; R]));
        return Ok(());
    }
    let pointers = Pointers {
        dst: dst.ptr.as_ptr(),
        src: src.ptr.as_ptr(),
    };
    let label = format!("deep_copy_on({} <- {})", dst.label(), src.label());
    if let (Some(_), Some(_)) = (from.as_slice(), to.as_mut_slice())
        && L1::NAME == L2::NAME
    {
        let len = dst.len();
        let chunks = len.div_ceil(CHUNK);
        return parallel_for(&label, RangePolicy::new(exec.clone(), 0..chunks), |k| {
            let begin = *k * CHUNK;
            let count = CHUNK.min(len - begin);
            let p = &pointers;
            // SAFETY: both views are contiguous in the same order with `len` elements, so
            // `begin..begin + count` is inside both. The launch visits each chunk index once
            // (the `ParallelFor` contract), so chunks written at once are disjoint; the guards
            // keep every other handle of both views away, and the views do not overlap (their
            // borrows would conflict).
            unsafe { std::ptr::copy_nonoverlapping(p.src.add(begin), p.dst.add(begin), count) };
        });
    }
    let extents = dst.extents();
    let (dst_strides, src_strides) = (dst.strides(), src.strides());
    let order = if L1::NAME == LayoutLeft::NAME {
        IterationOrder::Left
    } else {
        IterationOrder::Right
    };
    parallel_for(&label, RangePolicy::new(exec.clone(), 0..extents[0]), |i| {
        let mut lo = [0; R];
        lo[0] = *i;
        let mut hi = extents;
        hi[0] = *i + 1;
        let p = &pointers;
        for_each_point(lo, hi, order, |idx| {
            // SAFETY: `idx` is inside the extents of both views (the box is a slab of them),
            // so both offsets are elements of their allocations. Each outermost index is one
            // iteration (visited once), so the slabs written at once are disjoint; the guards
            // and the non-overlap argued above exclude every other access.
            unsafe {
                let value = p.src.add(L2::offset(&src_strides, &idx)).read();
                p.dst.add(L1::offset(&dst_strides, &idx)).write(value);
            }
        });
    })
}

/// The two views' first elements, shared by the iterations of the copy.
struct Pointers<T> {
    dst: *mut T,
    src: *const T,
}

// SAFETY: the iterations of one copy write disjoint elements of `dst` and only read `src`
// (see `deep_copy_on`), and `T: ViewValue` is `Send + Sync`.
unsafe impl<T: Send + Sync> Sync for Pointers<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Send for Pointers<T> {}
