//! The logical ([`LAnd`], [`LOr`]) and bitwise ([`BAnd`], [`BOr`]) reducers.

use std::marker::PhantomData;
use std::ops::{BitAndAssign, BitOrAssign};

use super::Reducer;
use super::identity::BitIdentity;
use crate::device_kernel::DeviceJoin;

// ---------------------------------------------------------------------------
// Logical and bitwise reducers
// ---------------------------------------------------------------------------

/// Logical AND over `bool` (Kokkos `LAnd`): identity `true`, join `&&`.
/// An empty range reduces to `true` ("all of none").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LAnd;

impl LAnd {
    /// Creates the reducer.
    #[inline]
    pub const fn new() -> Self {
        Self
    }
}

commutative_reducer! {
    impl[] LAnd => bool, identity true, join |dst, src| *dst = *dst && src, device LogicalAnd;
}

/// Logical OR over `bool` (Kokkos `LOr`): identity `false`, join `||`.
/// An empty range reduces to `false` ("any of none").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LOr;

impl LOr {
    /// Creates the reducer.
    #[inline]
    pub const fn new() -> Self {
        Self
    }
}

commutative_reducer! {
    impl[] LOr => bool, identity false, join |dst, src| *dst = *dst || src, device LogicalOr;
}

/// Bitwise AND (Kokkos `BAnd`): identity [`BitIdentity::band`] (all ones),
/// join `dst &= src`.
///
/// ```
/// use hoplite_core::{BAnd, Reducer};
///
/// let r = BAnd::<u8>::new();
/// let mut a = r.init();
/// r.join(&mut a, 0b1110);
/// r.join(&mut a, 0b0111);
/// assert_eq!(a, 0b0110);
/// ```
pub struct BAnd<T>(PhantomData<fn() -> T>);
phantom_reducer!(BAnd);

commutative_reducer! {
    impl[T] BAnd<T> => T where [T: BitIdentity + Copy + Send + BitAndAssign],
        identity T::band(), join |dst, src| *dst &= src, device BitAnd;
}

/// Bitwise OR (Kokkos `BOr`): identity [`BitIdentity::bor`] (`0`), join
/// `dst |= src`.
pub struct BOr<T>(PhantomData<fn() -> T>);
phantom_reducer!(BOr);

commutative_reducer! {
    impl[T] BOr<T> => T where [T: BitIdentity + Copy + Send + BitOrAssign],
        identity T::bor(), join |dst, src| *dst |= src, device BitOr;
}
