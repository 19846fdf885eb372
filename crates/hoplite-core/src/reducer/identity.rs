//! The identities reducers start from: [`ReductionIdentity`] for arithmetic and min/max,
//! [`BitIdentity`] for the bitwise reducers.

// ---------------------------------------------------------------------------
// Identities
// ---------------------------------------------------------------------------

/// Identity elements of the arithmetic reductions (Kokkos
/// `reduction_identity<T>`).
///
/// Implemented for all primitive integers and for `f32` / `f64`.
///
/// Because `f64::min`, `Ord::min` and friends share these names, call the
/// functions fully qualified in generic code:
/// `<T as ReductionIdentity>::min()`.
///
/// ```
/// use hoplite_core::ReductionIdentity;
///
/// assert_eq!(<i32 as ReductionIdentity>::min(), i32::MAX);
/// assert_eq!(<f64 as ReductionIdentity>::max(), f64::NEG_INFINITY);
/// assert_eq!(<u8 as ReductionIdentity>::prod(), 1);
/// ```
pub trait ReductionIdentity: Sized {
    /// Identity of a sum: `0`.
    fn sum() -> Self;
    /// Identity of a product: `1`.
    fn prod() -> Self;
    /// Identity of a **min** reduction, i.e. the largest value: `+inf` for
    /// floats, `T::MAX` for integers.
    fn min() -> Self;
    /// Identity of a **max** reduction, i.e. the smallest value: `-inf` for
    /// floats, `T::MIN` for integers.
    fn max() -> Self;
}

macro_rules! int_identities {
    ($($t:ty),* $(,)?) => {$(
        impl ReductionIdentity for $t {
            #[inline]
            fn sum() -> Self { 0 }
            #[inline]
            fn prod() -> Self { 1 }
            #[inline]
            fn min() -> Self { <$t>::MAX }
            #[inline]
            fn max() -> Self { <$t>::MIN }
        }

        impl BitIdentity for $t {
            #[inline]
            fn band() -> Self { !0 }
            #[inline]
            fn bor() -> Self { 0 }
        }
    )*};
}

macro_rules! float_identities {
    ($($t:ty),* $(,)?) => {$(
        impl ReductionIdentity for $t {
            #[inline]
            fn sum() -> Self { 0.0 }
            #[inline]
            fn prod() -> Self { 1.0 }
            #[inline]
            fn min() -> Self { <$t>::INFINITY }
            #[inline]
            fn max() -> Self { <$t>::NEG_INFINITY }
        }
    )*};
}

int_identities!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
float_identities!(f32, f64);

/// Identity elements of the bitwise reductions.
///
/// Implemented for all primitive integers, and for `bool` (where `band` is
/// `true` and `bor` is `false`, matching `&=` / `|=` on `bool`).
///
/// ```
/// use hoplite_core::BitIdentity;
///
/// assert_eq!(u8::band(), 0xff);
/// assert_eq!(i32::band(), -1);
/// assert_eq!(u64::bor(), 0);
/// ```
pub trait BitIdentity: Sized {
    /// Identity of a bitwise AND: all bits set (`!0`).
    fn band() -> Self;
    /// Identity of a bitwise OR: no bits set (`0`).
    fn bor() -> Self;
}

impl BitIdentity for bool {
    #[inline]
    fn band() -> Self {
        true
    }
    #[inline]
    fn bor() -> Self {
        false
    }
}
