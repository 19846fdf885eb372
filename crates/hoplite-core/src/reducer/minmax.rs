//! [`Min`], [`Max`] and [`MinMax`], and the comparison rules (NaN handling, ties) they share
//! with the location reducers.

use std::cmp::Ordering;
use std::marker::PhantomData;

use super::Reducer;
use super::arith::MinMaxValue;
use super::identity::ReductionIdentity;
use crate::device_kernel::DeviceJoin;

// ---------------------------------------------------------------------------
// Comparison helpers (NaN handling, ties)
// ---------------------------------------------------------------------------

/// Which end of the order a comparison reducer is after.
#[derive(Clone, Copy)]
pub(super) enum Dir {
    Min,
    Max,
}

/// Which index wins when two values compare equal.
#[derive(Clone, Copy)]
pub(super) enum Tie {
    Lowest,
    Highest,
}

/// `true` for values not comparable with themselves (NaN).
#[inline]
pub(super) fn is_unordered<T: PartialOrd>(x: &T) -> bool {
    x.partial_cmp(x).is_none()
}

/// Ranks `a` against `b`: `Less` means `a` is better for `dir`.
///
/// Unordered values (NaN) rank below every ordered value and equal to each
/// other; two ordered but incomparable values rank equal.
#[inline]
pub(super) fn rank<T: PartialOrd>(dir: Dir, a: &T, b: &T) -> Ordering {
    match (is_unordered(a), is_unordered(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => {
            let ord = a.partial_cmp(b).unwrap_or(Ordering::Equal);
            match dir {
                Dir::Min => ord,
                Dir::Max => ord.reverse(),
            }
        }
    }
}

/// Whether `new` is strictly better than `cur` (NaN loses to any number).
#[inline]
pub(super) fn better<T: PartialOrd>(dir: Dir, new: &T, cur: &T) -> bool {
    rank(dir, new, cur) == Ordering::Less
}

/// Whether the pair (`new_val`, `new_loc`) should replace (`cur_val`,
/// `cur_loc`): a `None` location always loses, otherwise the better value
/// wins and equal values go to the index chosen by `tie`.
#[inline]
pub(super) fn replaces<T: PartialOrd, I: Ord>(
    dir: Dir,
    tie: Tie,
    cur_val: &T,
    cur_loc: Option<I>,
    new_val: &T,
    new_loc: Option<I>,
) -> bool {
    match (cur_loc, new_loc) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(cur), Some(new)) => match rank(dir, new_val, cur_val) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => match tie {
                Tie::Lowest => new < cur,
                Tie::Highest => new > cur,
            },
        },
    }
}

/// Minimum reduction: identity [`ReductionIdentity::min`] (`+inf` / `T::MAX`),
/// join keeps the smaller value.
///
/// **NaN:** NaNs are ignored, like [`f64::min`]: a NaN never replaces a number
/// in `join`, and a number does replace a NaN. A range whose values are all
/// NaN (or empty) reduces to the identity, `+inf`. The identity axioms hold
/// for every non-NaN value.
///
/// ```
/// use hoplite_core::reducer::{Min, Reducer};
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

impl<T: MinMaxValue> Reducer for Min<T> {
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::min_identity()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        dst.keep_min(src);
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::Min)
    }
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
/// use hoplite_core::reducer::{Max, Reducer};
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

impl<T: MinMaxValue> Reducer for Max<T> {
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::max_identity()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        dst.keep_max(src);
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::Max)
    }
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
    /// use hoplite_core::reducer::{MinMax, Reducer};
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
