//! [`Min`], [`Max`] and [`MinMax`] (and [`MinMaxScalar`], the value of `MinMax`).

use std::marker::PhantomData;

use super::Reducer;
use super::arith::MinMaxValue;
use super::compare::{Dir, better};
use super::identity::ReductionIdentity;
use crate::device_kernel::DeviceJoin;

/// Minimum reduction: identity [`ReductionIdentity::min`] (`+inf` / `T::MAX`),
/// join keeps the smaller value.
///
/// **NaN:** NaNs are ignored, like [`f64::min`]: a NaN never replaces a number
/// in `join`, and a number does replace a NaN. A range whose values are all
/// NaN (or empty) reduces to the identity, `+inf`. The identity axioms hold
/// for every non-NaN value.
///
/// ```
/// use hoplite_core::{Min, Reducer};
///
/// let r = Min::<f64>::new();
/// let mut a = r.init();
/// for x in [3.0, f64::NAN, -1.0, 4.0] {
///     r.join(&mut a, x);
/// }
/// assert_eq!(a, -1.0);
/// ```
pub struct Min<T>(PhantomData<fn() -> T>);
phantom_reducer!(Min);

commutative_reducer! {
    impl[T: MinMaxValue] Min<T> => T, identity T::min_identity(), join |dst, src| dst.keep_min(src), device Min;
}

/// Maximum reduction: identity [`ReductionIdentity::max`] (`-inf` / `T::MIN`),
/// join keeps the larger value.
///
/// **NaN:** NaNs are ignored, like [`f64::max`]: a NaN never replaces a number
/// in `join`, and a number does replace a NaN. A range whose values are all
/// NaN (or empty) reduces to the identity, `-inf`. The identity axioms hold
/// for every non-NaN value.
///
/// ```
/// use hoplite_core::{Max, Reducer};
///
/// let r = Max::<i32>::new();
/// let mut a = r.init();
/// assert_eq!(a, i32::MIN);
/// r.join(&mut a, 7);
/// r.join(&mut a, 2);
/// assert_eq!(a, 7);
/// ```
pub struct Max<T>(PhantomData<fn() -> T>);
phantom_reducer!(Max);

commutative_reducer! {
    impl[T: MinMaxValue] Max<T> => T, identity T::max_identity(), join |dst, src| dst.keep_max(src), device Max;
}

// ---------------------------------------------------------------------------
// MinMax
// ---------------------------------------------------------------------------

/// The value of a [`MinMax`] reduction: the smallest and the largest value
/// seen.
///
/// The identity is `{ min: +inf, max: -inf }` (`T::MAX` / `T::MIN` for
/// integers). NaNs are ignored as in [`Min`] and [`Max`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Zeroable)]
pub struct MinMaxScalar<T> {
    /// The smallest value seen.
    pub min: T,
    /// The largest value seen.
    pub max: T,
}

impl<T: Copy + PartialOrd> MinMaxScalar<T> {
    /// Folds one value into both sides (what a kernel calls per element).
    ///
    /// ```
    /// use hoplite_core::{MinMax, Reducer};
    ///
    /// let mut acc = MinMax::<i32>::new().init();
    /// for x in [3, -1, 4] {
    ///     acc.update(x);
    /// }
    /// assert_eq!((acc.min, acc.max), (-1, 4));
    /// ```
    #[inline]
    pub fn update(&mut self, v: T) {
        if better(Dir::Min, &v, &self.min) {
            self.min = v;
        }
        if better(Dir::Max, &v, &self.max) {
            self.max = v;
        }
    }
}

/// Combined minimum and maximum reduction; value [`MinMaxScalar<T>`], kernels
/// call [`MinMaxScalar::update`].
pub struct MinMax<T>(PhantomData<fn() -> T>);
phantom_reducer!(MinMax);

impl<T> Reducer for MinMax<T>
where
    T: ReductionIdentity + Copy + Send + PartialOrd,
{
    type Value = MinMaxScalar<T>;

    #[inline]
    fn init(&self) -> MinMaxScalar<T> {
        MinMaxScalar {
            min: <T as ReductionIdentity>::min(),
            max: <T as ReductionIdentity>::max(),
        }
    }

    #[inline]
    fn join(&self, dst: &mut MinMaxScalar<T>, src: MinMaxScalar<T>) {
        if better(Dir::Min, &src.min, &dst.min) {
            dst.min = src.min;
        }
        if better(Dir::Max, &src.max, &dst.max) {
            dst.max = src.max;
        }
    }
}
