//! [`Sum`] and [`Prod`], and the value traits of the arithmetic and min/max reducers
//! (primitives, complex numbers, arrays).

use std::marker::PhantomData;
use std::ops::Add;

use super::Reducer;
use super::compare::{Dir, better};
use super::identity::ReductionIdentity;
use crate::device_kernel::DeviceJoin;

// ---------------------------------------------------------------------------
// Arithmetic reducers
// ---------------------------------------------------------------------------

/// Sum reduction: identity [`ReductionIdentity::sum`] (`0`), join `dst += src`.
///
/// ```
/// use hoplite_core::{Reducer, Sum};
///
/// let r = Sum::<i64>::new();
/// let mut a = r.init();
/// r.join(&mut a, 5);
/// r.join(&mut a, -2);
/// assert_eq!(a, 3);
/// ```
pub struct Sum<T>(PhantomData<fn() -> T>);
phantom_reducer!(Sum);

commutative_reducer! {
    impl[T: SumValue] Sum<T> => T, identity T::zero(), join |dst, src| dst.accumulate(src), device Sum;
}

/// Product reduction: identity [`ReductionIdentity::prod`] (`1`), join
/// `dst *= src`.
///
/// ```
/// use hoplite_core::{Prod, Reducer};
///
/// let r = Prod::<f64>::new();
/// let mut a = r.init();
/// r.join(&mut a, 2.0);
/// r.join(&mut a, 1.5);
/// assert_eq!(a, 3.0);
/// ```
pub struct Prod<T>(PhantomData<fn() -> T>);
phantom_reducer!(Prod);

commutative_reducer! {
    impl[T: ProdValue] Prod<T> => T, identity T::one(), join |dst, src| dst.multiply(src), device Prod;
}

/// What [`Sum`] reduces: a zero and an accumulation. Implemented for the primitive numbers
/// (`+=`, wrapping as `+=` does in release builds), complex numbers ([`num_complex::Complex`])
/// and arrays of them, element by element (Kokkos' array reductions). Implement it for your
/// own types.
///
/// ```
/// use hoplite_core::{Reducer, Sum};
/// let r = Sum::<[f64; 3]>::new();
/// let mut a = r.init();
/// r.join(&mut a, [1.0, 2.0, 3.0]);
/// r.join(&mut a, [10.0, 20.0, 30.0]);
/// assert_eq!(a, [11.0, 22.0, 33.0]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be summed by `Sum`",
    label = "the accumulator's type",
    note = "`Sum` adds numbers, complex numbers and arrays of them; if the type is `!` or unknown, annotate the accumulator: `|i, acc: &mut f64|` or `Sum::<f64>::new()`"
)]
pub trait SumValue: Copy + Send {
    /// The identity: zero.
    fn zero() -> Self;
    /// `*self += other`.
    fn accumulate(&mut self, other: Self);
}

/// What [`Prod`] reduces: a one and a multiplication (primitive numbers, complex numbers and
/// arrays of them, element by element).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be multiplied by `Prod`",
    label = "the accumulator's type",
    note = "`Prod` multiplies numbers, complex numbers and arrays of them; if the type is `!` or unknown, annotate the accumulator: `|i, acc: &mut f64|` or `Prod::<f64>::new()`"
)]
pub trait ProdValue: Copy + Send {
    /// The identity: one.
    fn one() -> Self;
    /// `*self *= other`.
    fn multiply(&mut self, other: Self);
}

/// What [`Min`](super::Min) and [`Max`](super::Max) reduce: the identities and a comparison that ignores NaN
/// (primitive numbers, and arrays of them element by element).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be compared by `Min` or `Max`",
    label = "the accumulator's type",
    note = "`Min` and `Max` compare numbers and arrays of them; if the type is `!` or unknown, annotate the accumulator: `|i, acc: &mut f64|` or `Max::<f64>::new()`"
)]
pub trait MinMaxValue: Copy + Send {
    /// The identity of a minimum: the largest value (`+inf`, `T::MAX`).
    fn min_identity() -> Self;
    /// The identity of a maximum: the smallest value (`-inf`, `T::MIN`).
    fn max_identity() -> Self;
    /// Keeps the smaller of `self` and `other` (a NaN never replaces a number).
    fn keep_min(&mut self, other: Self);
    /// Keeps the larger of `self` and `other` (a NaN never replaces a number).
    fn keep_max(&mut self, other: Self);
}

macro_rules! primitive_values {
    ($($t:ty),* $(,)?) => {$(
        impl SumValue for $t {
            #[inline(always)]
            fn zero() -> Self { <$t as ReductionIdentity>::sum() }
            #[inline(always)]
            fn accumulate(&mut self, other: Self) { *self += other; }
        }
        impl ProdValue for $t {
            #[inline(always)]
            fn one() -> Self { <$t as ReductionIdentity>::prod() }
            #[inline(always)]
            fn multiply(&mut self, other: Self) { *self *= other; }
        }
        impl MinMaxValue for $t {
            #[inline(always)]
            fn min_identity() -> Self { <$t as ReductionIdentity>::min() }
            #[inline(always)]
            fn max_identity() -> Self { <$t as ReductionIdentity>::max() }
            #[inline(always)]
            fn keep_min(&mut self, other: Self) {
                if better(Dir::Min, &other, self) { *self = other; }
            }
            #[inline(always)]
            fn keep_max(&mut self, other: Self) {
                if better(Dir::Max, &other, self) { *self = other; }
            }
        }
    )*};
}

primitive_values!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64
);

macro_rules! complex_values {
    ($($t:ty),*) => {$(
        impl SumValue for num_complex::Complex<$t> {
            #[inline(always)]
            fn zero() -> Self { num_complex::Complex::new(0.0, 0.0) }
            #[inline(always)]
            fn accumulate(&mut self, other: Self) { *self += other; }
        }
        impl ProdValue for num_complex::Complex<$t> {
            #[inline(always)]
            fn one() -> Self { num_complex::Complex::new(1.0, 0.0) }
            #[inline(always)]
            fn multiply(&mut self, other: Self) { *self *= other; }
        }
    )*};
}

complex_values!(f32, f64);

impl<T: SumValue, const N: usize> SumValue for [T; N] {
    #[inline(always)]
    fn zero() -> Self {
        [T::zero(); N]
    }
    #[inline(always)]
    fn accumulate(&mut self, other: Self) {
        for (a, b) in self.iter_mut().zip(other) {
            a.accumulate(b);
        }
    }
}

impl<T: ProdValue, const N: usize> ProdValue for [T; N] {
    #[inline(always)]
    fn one() -> Self {
        [T::one(); N]
    }
    #[inline(always)]
    fn multiply(&mut self, other: Self) {
        for (a, b) in self.iter_mut().zip(other) {
            a.multiply(b);
        }
    }
}

impl<T: MinMaxValue, const N: usize> MinMaxValue for [T; N] {
    #[inline(always)]
    fn min_identity() -> Self {
        [T::min_identity(); N]
    }
    #[inline(always)]
    fn max_identity() -> Self {
        [T::max_identity(); N]
    }
    #[inline(always)]
    fn keep_min(&mut self, other: Self) {
        for (a, b) in self.iter_mut().zip(other) {
            a.keep_min(b);
        }
    }
    #[inline(always)]
    fn keep_max(&mut self, other: Self) {
        for (a, b) in self.iter_mut().zip(other) {
            a.keep_max(b);
        }
    }
}

/// A value a scan can accumulate: summed, starting from zero.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be accumulated by a scan",
    label = "the scan's partial sum",
    note = "a scan sums numbers from zero; if the type is `!` or unknown, annotate it: `|i, partial: &mut i64, is_final|` or `let total: i64 = parallel_scan(..)`"
)]
pub trait ScanValue: Copy + Send + Sync + Add<Output = Self> + 'static {
    /// The identity of the sum.
    fn zero() -> Self;
}

impl<T> ScanValue for T
where
    T: ReductionIdentity + Copy + Send + Sync + Add<Output = T> + 'static,
{
    #[inline(always)]
    fn zero() -> Self {
        T::sum()
    }
}
