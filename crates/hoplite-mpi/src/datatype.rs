//! Element types that can travel between ranks, and the MPI datatypes of views.

use std::ffi::c_int;

use hoplite_core::{ArrayLayout, MemorySpace, View, ViewValue};
use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::raw::AsRaw;

use crate::error::{Error, Result, check};

/// An element type that can travel between ranks as its bytes.
///
/// Built in: the integers, `f32`, `f64`, `bool` (with an MPI datatype of their own, so the
/// built-in MPI operations apply), hoplite's `ValLoc` pairs, arrays and pairs of these.
///
/// # Safety
///
/// A value of the type must be plain data: its bytes copied into another process running the
/// same program must form a valid value there (no pointers, references or handles), and it
/// has no interior mutability. [`native_datatype`](Self::native_datatype), when it returns a
/// datatype, must name an MPI datatype with exactly the type's size and meaning.
///
/// ```
/// use hoplite_mpi::MpiValue;
/// #[derive(Clone, Copy, Default)]
/// struct Particle { x: f64, mass: f32 }
/// // SAFETY: two numbers; no pointers.
/// unsafe impl MpiValue for Particle {}
/// ```
pub unsafe trait MpiValue: Copy + Send + Sync + 'static {
    /// The MPI datatype equal to this type, if MPI has one (then built-in operations such as
    /// `MPI_SUM` apply); `None` sends the value as bytes.
    fn native_datatype() -> Option<ffi::MPI_Datatype> {
        None
    }
}

macro_rules! native {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number (or bool) with rsmpi's equivalent MPI datatype.
        unsafe impl MpiValue for $t {
            fn native_datatype() -> Option<ffi::MPI_Datatype> {
                Some(<$t as Equivalence>::equivalent_datatype().as_raw())
            }
        }
    )*};
}
native!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, bool);

// SAFETY: two plain-data fields.
unsafe impl<T: MpiValue, I: MpiValue> MpiValue for hoplite_core::ValLoc<T, I> {}
// SAFETY: an option of plain data is plain data (its tag travels with it).
unsafe impl<T: MpiValue> MpiValue for Option<T> {}
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: MpiValue, const N: usize> MpiValue for [T; N] {}
// SAFETY: tuples of plain data are plain data.
unsafe impl<A: MpiValue, B: MpiValue> MpiValue for (A, B) {}
// SAFETY: tuples of plain data are plain data.
unsafe impl<A: MpiValue, B: MpiValue, C: MpiValue> MpiValue for (A, B, C) {}

/// The null datatype, a placeholder for an out-parameter.
fn null_datatype() -> ffi::MPI_Datatype {
    // SAFETY: reads a constant handle that rsmpi's C shim defines once.
    unsafe { ffi::RSMPI_DATATYPE_NULL }
}

/// A datatype this crate made, freed on drop (MPI keeps it alive for operations under way).
pub(crate) struct OwnedType(ffi::MPI_Datatype);

// SAFETY: a datatype handle is immutable once committed; MPI (thread level Multiple) accepts it
// from any thread.
unsafe impl Send for OwnedType {}
// SAFETY: as for Send.
unsafe impl Sync for OwnedType {}

impl Drop for OwnedType {
    fn drop(&mut self) {
        // SAFETY: the handle was made by this crate and is freed once; MPI defers the free
        // until pending operations that use it complete.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

/// A datatype, either predefined or owned.
pub(crate) enum Datatype {
    Predefined(ffi::MPI_Datatype),
    Owned(OwnedType),
}

impl Datatype {
    pub(crate) fn raw(&self) -> ffi::MPI_Datatype {
        match self {
            Datatype::Predefined(d) => *d,
            Datatype::Owned(d) => d.0,
        }
    }
}

/// The datatype of one element of `T`.
pub(crate) fn element_datatype<T: MpiValue>() -> Result<Datatype> {
    if let Some(d) = T::native_datatype() {
        return Ok(Datatype::Predefined(d));
    }
    let bytes = c_int::try_from(size_of::<T>()).map_err(|_| Error::BadExtent {
        op: "datatype",
        label: std::any::type_name::<T>().to_owned(),
        reason: "an element larger than 2 GiB cannot be an MPI datatype".to_owned(),
    })?;
    let mut new = null_datatype();
    // SAFETY: MPI_UINT8_T is predefined; `new` receives the new handle.
    let rc = unsafe { ffi::MPI_Type_contiguous(bytes, ffi::RSMPI_UINT8_T, &mut new) };
    check(rc, "datatype", std::any::type_name::<T>())?;
    let owned = OwnedType(new);
    // SAFETY: a datatype just made.
    let rc = unsafe { ffi::MPI_Type_commit(&mut new) };
    check(rc, "datatype", std::any::type_name::<T>())?;
    Ok(Datatype::Owned(owned))
}

/// How a view travels: `count` items of `datatype` starting at the first element.
pub(crate) struct ViewLayout {
    pub(crate) datatype: Datatype,
    pub(crate) count: c_int,
}

/// Whether the view's elements lie one after another in row-major index order (the order in
/// which elements travel).
fn row_major_contiguous<const R: usize>(extents: [usize; R], strides: [usize; R]) -> bool {
    let mut expected = 1usize;
    for d in (0..R).rev() {
        if extents[d] > 1 && strides[d] != expected {
            return false;
        }
        expected = expected.saturating_mul(extents[d]);
    }
    true
}

/// The MPI description of `view`: its elements in row-major index order, read in place.
pub(crate) fn view_layout<T, const R: usize, L, S>(
    op: &'static str,
    view: &View<T, R, L, S>,
) -> Result<ViewLayout>
where
    T: ViewValue + MpiValue,
    L: ArrayLayout,
    S: MemorySpace,
{
    let too_large = || Error::BadExtent {
        op,
        label: view.label().to_owned(),
        reason: format!(
            "{} elements exceed MPI's count limit {}; split the view",
            view.len(),
            c_int::MAX
        ),
    };
    let element = element_datatype::<T>()?;
    let extents = view.extents();
    let strides = view.strides();
    if view.is_empty() {
        return Ok(ViewLayout {
            datatype: element,
            count: 0,
        });
    }
    if row_major_contiguous(extents, strides) {
        let count = c_int::try_from(view.len()).map_err(|_| too_large())?;
        return Ok(ViewLayout {
            datatype: element,
            count,
        });
    }
    // Innermost dimension first: each level repeats the one inside it `extent` times, `stride`
    // elements apart.
    let mut current = element;
    for d in (0..R).rev() {
        let count = c_int::try_from(extents[d]).map_err(|_| too_large())?;
        let stride = strides[d]
            .checked_mul(size_of::<T>())
            .and_then(|bytes| isize::try_from(bytes).ok())
            .ok_or_else(too_large)?;
        let mut new = null_datatype();
        // SAFETY: `current` is a valid datatype; `new` receives the new handle.
        let rc = unsafe {
            ffi::MPI_Type_create_hvector(count, 1, stride as ffi::MPI_Aint, current.raw(), &mut new)
        };
        check(rc, op, view.label())?;
        current = Datatype::Owned(OwnedType(new));
    }
    let mut raw = current.raw();
    // SAFETY: a datatype just made by this function.
    let rc = unsafe { ffi::MPI_Type_commit(&mut raw) };
    check(rc, op, view.label())?;
    Ok(ViewLayout {
        datatype: current,
        count: 1,
    })
}

/// A fingerprint of `T` for checking that every rank passes the same element type.
pub(crate) fn type_fingerprint<T>() -> i64 {
    // FNV-1a over the type's name: the same program gives every rank the same name.
    let hash = hoplite_core::device_kernel::stable_hash(&[std::any::type_name::<T>().as_bytes()]);
    // Two bits off, so the value and its negation both fit an i64.
    (hash >> 2) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_detection() {
        assert!(row_major_contiguous([3, 4], [4, 1]));
        assert!(
            !row_major_contiguous([3, 4], [1, 3]),
            "column-major is not row-major"
        );
        assert!(!row_major_contiguous([3, 2], [5, 1]), "padded rows are strided");
        assert!(
            row_major_contiguous([1, 4], [9, 1]),
            "a single row ignores its stride"
        );
    }

    #[test]
    fn fingerprints_tell_types_apart() {
        assert_ne!(type_fingerprint::<f64>(), type_fingerprint::<i64>());
        assert_eq!(type_fingerprint::<f64>(), type_fingerprint::<f64>());
        assert!(type_fingerprint::<f64>() >= 0);
        // The FNV-1a of "f64", two bits off: the fingerprint is core's stable hash of the name.
        assert_eq!(type_fingerprint::<f64>(), 0x375d_1306_3fdf_a86a);
    }
}
