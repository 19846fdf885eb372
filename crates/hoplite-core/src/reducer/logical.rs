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

impl Reducer for LAnd {
    type Value = bool;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> bool {
        true
    }

    #[inline]
    fn join(&self, dst: &mut bool, src: bool) {
        *dst = *dst && src;
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::LogicalAnd)
    }
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

impl Reducer for LOr {
    type Value = bool;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> bool {
        false
    }

    #[inline]
    fn join(&self, dst: &mut bool, src: bool) {
        *dst = *dst || src;
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::LogicalOr)
    }
}

/// Bitwise AND (Kokkos `BAnd`): identity [`BitIdentity::band`] (all ones),
/// join `dst &= src`.
///
/// ```
/// use hoplite_core::reducer::{BAnd, Reducer};
///
/// let r = BAnd::<u8>::new();
/// let mut a = r.init();
/// r.join(&mut a, 0b1110);
/// r.join(&mut a, 0b0111);
/// assert_eq!(a, 0b0110);
/// ```
pub struct BAnd<T>(PhantomData<fn() -> T>);
phantom_reducer!(BAnd);

impl<T> Reducer for BAnd<T>
where
    T: BitIdentity + Copy + Send + BitAndAssign,
{
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::band()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        *dst &= src;
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::BitAnd)
    }
}

/// Bitwise OR (Kokkos `BOr`): identity [`BitIdentity::bor`] (`0`), join
/// `dst |= src`.
pub struct BOr<T>(PhantomData<fn() -> T>);
phantom_reducer!(BOr);

impl<T> Reducer for BOr<T>
where
    T: BitIdentity + Copy + Send + BitOrAssign,
{
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::bor()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        *dst |= src;
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::BitOr)
    }
}
