//! Reducers: the identity, join and final step of a parallel reduction.
//!
//! A parallel reduction gives every worker (thread, chunk, tree node) its own
//! accumulator, started from [`Reducer::init`]. The kernel folds the elements
//! of its part of the range into that accumulator, the partial results are
//! combined with [`Reducer::join`], and the total goes through
//! [`Reducer::finalize`] exactly once. The axioms every reducer must satisfy
//! are listed on [`Reducer`].
//!
//! # Built-in reducers
//!
//! | Reducer                  | Value                    | Identity                      | Kernel update                         |
//! |--------------------------|--------------------------|-------------------------------|---------------------------------------|
//! | [`Sum<T>`]               | `T`                      | [`ReductionIdentity::sum`]    | `*acc += x`                           |
//! | [`Prod<T>`]              | `T`                      | [`ReductionIdentity::prod`]   | `*acc *= x`                           |
//! | [`Min<T>`]               | `T`                      | [`ReductionIdentity::min`]    | `if x < *acc { *acc = x }`            |
//! | [`Max<T>`]               | `T`                      | [`ReductionIdentity::max`]    | `if x > *acc { *acc = x }`            |
//! | [`MinMax<T>`]            | [`MinMaxScalar<T>`]      | `{ min: +inf, max: -inf }`    | [`acc.update(x)`](MinMaxScalar::update) |
//! | [`MinLoc<T>`]            | [`ValLoc<T>`]            | `{ val: +inf, loc: None }`    | [`acc.update_min(x, i)`](ValLoc::update_min) |
//! | [`MaxLoc<T>`]            | [`ValLoc<T>`]            | `{ val: -inf, loc: None }`    | [`acc.update_max(x, i)`](ValLoc::update_max) |
//! | [`MinMaxLoc<T>`]         | [`MinMaxLocScalar<T>`]   | both sides empty              | [`acc.update(x, i)`](MinMaxLocScalar::update) |
//! | [`MinMaxFirstLastLoc<T>`]| [`MinMaxLocScalar<T>`]   | both sides empty              | [`acc.update_first_last(x, i)`](MinMaxLocScalar::update_first_last) |
//! | [`FirstLoc`]             | `Option<usize>`          | `None`                        | [`FirstLoc::update(acc, i)`](FirstLoc::update) |
//! | [`LastLoc`]              | `Option<usize>`          | `None`                        | [`LastLoc::update(acc, i)`](LastLoc::update) |
//! | [`LAnd`]                 | `bool`                   | `true`                        | `*acc = *acc && p`                    |
//! | [`LOr`]                  | `bool`                   | `false`                       | `*acc = *acc \|\| p`                  |
//! | [`BAnd<T>`]              | `T`                      | [`BitIdentity::band`] (`!0`)  | `*acc &= x`                           |
//! | [`BOr<T>`]               | `T`                      | [`BitIdentity::bor`] (`0`)    | `*acc \|= x`                          |
//! | [`Custom`]               | any `V: Send`            | user closure                  | user code                             |
//! | `(R1, R2, ...)` (2 to 8) | `(R1::Value, R2::Value, ...)` | each component's          | `acc.0 += x; acc.1.update_min(x, i)` |
//!
//! (`+inf` / `-inf` stand for `T::MAX` / `T::MIN` on integers.) Every `*Loc`
//! reducer breaks ties toward the lowest index (except the max side of
//! [`MinMaxFirstLastLoc`], which goes to the highest), and does so by comparing
//! the stored indices, so its result does not depend on how a backend splits or
//! orders the work.
//!
//! # Several results in one pass
//!
//! A tuple of two to eight reducers is a reducer (Kokkos' `parallel_reduce` with several
//! reducers): its value is the tuple of their values, and `init`, `join` and `finalize` act
//! component by component, so each component keeps its reducer's axioms.
//!
//! ```
//! use hoplite_core::{MaxLoc, Min, RangePolicy, Sum, ValLoc, parallel_reduce};
//! use hoplite_serial::Serial;
//!
//! let x = [3.0, -1.0, 4.0, 1.0, 5.0, -9.0];
//! let (sum, min, max) = parallel_reduce(
//!     "sum, min and argmax",
//!     RangePolicy::new(Serial::default(), 0..x.len()),
//!     |i, acc: &mut (f64, f64, ValLoc<f64>)| {
//!         acc.0 += x[*i];
//!         acc.1 = acc.1.min(x[*i]);
//!         acc.2.update_max(x[*i], *i);
//!     },
//!     (Sum::<f64>::new(), Min::<f64>::new(), MaxLoc::<f64>::new()),
//! )?;
//! assert_eq!((sum, min, max.loc), (3.0, -9.0, Some(4)));
//! # Ok::<(), hoplite_core::Error>(())
//! ```
//!
//! # Example
//!
//! Folding a slice by hand the way a backend would: two chunks, each folded
//! from `init`, joined in index order, then finalized.
//!
//! ```
//! use hoplite_core::reducer::{MinLoc, Reducer, ValLoc};
//!
//! let x = [3.0, -1.0, 4.0, -1.0, 5.0];
//! let r = MinLoc::<f64>::new();
//! let kernel = |i: usize, acc: &mut ValLoc<f64>| acc.update_min(x[i], i);
//!
//! let mut left = r.init();
//! (0..2).for_each(|i| kernel(i, &mut left));
//! let mut right = r.init();
//! (2..5).for_each(|i| kernel(i, &mut right));
//! r.join(&mut left, right);
//! r.finalize(&mut left);
//!
//! assert_eq!(left, ValLoc { val: -1.0, loc: Some(1) });
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{BitAndAssign, BitOrAssign};

use crate::device_kernel::DeviceJoin;

// ---------------------------------------------------------------------------
// The concept
// ---------------------------------------------------------------------------

/// The reducer concept (Kokkos `Reducer`): an identity, an associative join
/// and an optional final step.
///
/// A backend reduces a range by giving each worker an accumulator started
/// from [`init`](Reducer::init), letting the kernel fold elements into it,
/// combining the partial results with [`join`](Reducer::join), and applying
/// [`finalize`](Reducer::finalize) once to the total.
///
/// # Axioms
///
/// Every implementation must satisfy the following; backends rely on them and
/// are free to split, schedule and combine the work in any way they allow.
///
/// 1. **Identity.** For every value `v` a kernel can produce,
///    `join(&mut v, init())` leaves `v` unchanged, and joining `v` into a fresh
///    `init()` yields `v`. Backends may create and join any number of identity
///    values (one per thread, chunk or tree node, including empty ones).
/// 2. **Associativity.** `join(join(a, b), c)` equals `join(a, join(b, c))`.
///    The shape of the join tree depends on the backend, the thread count and
///    the schedule, so the result may differ between backends or runs — but
///    only by floating-point rounding. `join` need **not** be commutative.
/// 3. **Index order.** `join(dst, src)` is always called with `dst` holding the
///    contribution of indices lower than those in `src` (both cover contiguous
///    ranges, `dst`'s to the left of `src`'s). Non-commutative reducers such as
///    concatenation rely on this, and it lets `*Loc` reducers break ties by
///    index. (The built-in `*Loc` reducers compare the stored indices
///    themselves, so they would be correct even without it.)
/// 4. **Finalize once.** [`finalize`](Reducer::finalize) runs exactly once, on
///    the total, also for an empty range — it then receives `init()`.
///
/// # Implementing a reducer
///
/// ```
/// use hoplite_core::reducer::Reducer;
///
/// /// Counts and sums the values; `finalize` turns the sum into the mean.
/// struct Mean;
///
/// impl Reducer for Mean {
///     type Value = (u64, f64);
///     fn init(&self) -> (u64, f64) {
///         (0, 0.0)
///     }
///     fn join(&self, dst: &mut (u64, f64), src: (u64, f64)) {
///         dst.0 += src.0;
///         dst.1 += src.1;
///     }
///     fn finalize(&self, v: &mut (u64, f64)) {
///         if v.0 > 0 {
///             v.1 /= v.0 as f64;
///         }
///     }
/// }
///
/// let r = Mean;
/// let mut total = r.init();
/// for x in [1.0, 2.0, 6.0] {
///     r.join(&mut total, (1, x));
/// }
/// r.finalize(&mut total);
/// assert_eq!(total, (3, 3.0));
/// ```
///
/// For one-off reductions, [`Custom`] builds a reducer from closures.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a reducer",
    label = "expected a reducer such as `Sum`, `Min`, `MinLoc` or a `Custom` reducer",
    note = "implement `hoplite_core::Reducer` (init, join, optional finalize) for a custom reduction"
)]
pub trait Reducer: Send + Sync {
    /// The value accumulated per thread and joined across threads.
    type Value: Send;

    /// The identity: `join(&mut v, init())` leaves `v` unchanged, and so does
    /// joining `v` into `init()`.
    fn init(&self) -> Self::Value;

    /// Folds `src` into `dst`.
    ///
    /// Must be associative; joins are applied in index order (`dst` covers
    /// lower indices than `src`), but the grouping of joins varies by backend.
    /// Need not be commutative.
    fn join(&self, dst: &mut Self::Value, src: Self::Value);

    /// Optional last step applied once to the total (Kokkos `final`), also for
    /// an empty range (then to `init()`). Default: nothing.
    fn finalize(&self, _value: &mut Self::Value) {}

    /// Whether the join is also commutative (`join(a, b)` and `join(b, a)` agree, as far as
    /// the value's arithmetic does: floating-point sums are grouped differently, as across
    /// threads). Then a backend may fold interleaved points into several partials and join
    /// those in any order: a host point loop folds a range into a few independent lanes, so
    /// that the fold is not bound by the latency of one chain of joins (a dot product runs at
    /// the memory's speed). The library's `Sum`, `Prod`, `Min`, `Max`, `BAnd`, `BOr`, `LAnd`,
    /// `LOr` and tuples of them say so. Default: `false`, so a reducer that is only
    /// associative keeps the index-order joins. Saying `true` of a join that is not
    /// commutative gives wrong values, never undefined behavior.
    ///
    /// ```
    /// use hoplite_core::{MinLoc, Reducer, Sum};
    /// assert!(Sum::<f64>::new().is_commutative() && !MinLoc::<f64>::new().is_commutative());
    /// ```
    #[inline]
    fn is_commutative(&self) -> bool {
        false
    }

    /// The join as one device code applies itself, when it is one of those
    /// ([`DeviceJoin`]: the library's `Sum`, `Max`, `Min`, `Prod`, `BAnd`, `BOr`,
    /// `LAnd`, `LOr`): a device backend then joins a block's partials on the
    /// device and copies back one per block. `None` (the default) for every other
    /// join, which the host applies. Answering a join that is not this reducer's
    /// gives wrong values, never undefined behavior.
    ///
    /// ```
    /// use hoplite_core::device_kernel::DeviceJoin;
    /// use hoplite_core::{MinLoc, Reducer, Sum};
    /// assert_eq!(Sum::<f64>::new().device_join(), Some(DeviceJoin::Sum));
    /// assert_eq!(MinLoc::<f64>::new().device_join(), None);
    /// ```
    fn device_join(&self) -> Option<DeviceJoin> {
        None
    }
}

impl<R: Reducer + ?Sized> Reducer for &R {
    type Value = R::Value;

    #[inline]
    fn init(&self) -> Self::Value {
        (**self).init()
    }

    #[inline]
    fn join(&self, dst: &mut Self::Value, src: Self::Value) {
        (**self).join(dst, src);
    }

    #[inline]
    fn finalize(&self, value: &mut Self::Value) {
        (**self).finalize(value);
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        (**self).device_join()
    }

    #[inline]
    fn is_commutative(&self) -> bool {
        (**self).is_commutative()
    }
}

// ---------------------------------------------------------------------------
// Combined reducers
// ---------------------------------------------------------------------------

// A tuple of reducers is a reducer: `init`, `join` and `finalize` act component by
// component, so each component keeps its own reducer's axioms (see the module docs).
macro_rules! tuple_reducer {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Reducer),+> Reducer for ($($name,)+) {
            type Value = ($($name::Value,)+);

            #[inline]
            fn init(&self) -> Self::Value {
                ($(self.$idx.init(),)+)
            }

            #[inline]
            fn join(&self, dst: &mut Self::Value, src: Self::Value) {
                $(self.$idx.join(&mut dst.$idx, src.$idx);)+
            }

            #[inline]
            fn finalize(&self, value: &mut Self::Value) {
                $(self.$idx.finalize(&mut value.$idx);)+
            }

            #[inline]
            fn is_commutative(&self) -> bool {
                $(self.$idx.is_commutative())&&+
            }
        }
    };
}

tuple_reducer!(A 0, B 1);
tuple_reducer!(A 0, B 1, C 2);
tuple_reducer!(A 0, B 1, C 2, D 3);
tuple_reducer!(A 0, B 1, C 2, D 3, E 4);
tuple_reducer!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_reducer!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_reducer!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

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
/// use hoplite_core::reducer::ReductionIdentity;
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
/// use hoplite_core::reducer::BitIdentity;
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

// ---------------------------------------------------------------------------
// Comparison helpers (NaN handling, ties)
// ---------------------------------------------------------------------------

/// Which end of the order a comparison reducer is after.
#[derive(Clone, Copy)]
enum Dir {
    Min,
    Max,
}

/// Which index wins when two values compare equal.
#[derive(Clone, Copy)]
enum Tie {
    Lowest,
    Highest,
}

/// `true` for values not comparable with themselves (NaN).
#[inline]
fn is_unordered<T: PartialOrd>(x: &T) -> bool {
    x.partial_cmp(x).is_none()
}

/// Ranks `a` against `b`: `Less` means `a` is better for `dir`.
///
/// Unordered values (NaN) rank below every ordered value and equal to each
/// other; two ordered but incomparable values rank equal.
#[inline]
fn rank<T: PartialOrd>(dir: Dir, a: &T, b: &T) -> Ordering {
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
fn better<T: PartialOrd>(dir: Dir, new: &T, cur: &T) -> bool {
    rank(dir, new, cur) == Ordering::Less
}

/// Whether the pair (`new_val`, `new_loc`) should replace (`cur_val`,
/// `cur_loc`): a `None` location always loses, otherwise the better value
/// wins and equal values go to the index chosen by `tie`.
#[inline]
fn replaces<T: PartialOrd, I: Ord>(
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

// ---------------------------------------------------------------------------
// Boilerplate for the zero-sized generic reducers
// ---------------------------------------------------------------------------

/// `new`, `Default`, `Clone`, `Copy` and `Debug` for a `struct Name<T>(PhantomData<fn() -> T>)`,
/// without bounds on `T`.
macro_rules! phantom_reducer {
    ($name:ident) => {
        impl<T> $name<T> {
            /// Creates the reducer.
            #[inline]
            pub const fn new() -> Self {
                Self(PhantomData)
            }
        }

        impl<T> Default for $name<T> {
            #[inline]
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> Clone for $name<T> {
            #[inline]
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T> Copy for $name<T> {}

        impl<T> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    concat!(stringify!($name), "<{}>"),
                    std::any::type_name::<T>()
                )
            }
        }
    };
}

/// [`phantom_reducer`] for the location reducers `Name<T, I>` (value type and location type).
macro_rules! phantom_loc_reducer {
    ($name:ident) => {
        impl<T, I> $name<T, I> {
            /// Creates the reducer.
            #[inline]
            pub const fn new() -> Self {
                Self(PhantomData)
            }
        }

        impl<T, I> Default for $name<T, I> {
            #[inline]
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T, I> Clone for $name<T, I> {
            #[inline]
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T, I> Copy for $name<T, I> {}

        impl<T, I> fmt::Debug for $name<T, I> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    concat!(stringify!($name), "<{}, {}>"),
                    std::any::type_name::<T>(),
                    std::any::type_name::<I>()
                )
            }
        }
    };
}

/// A location of the `*Loc` reducers: an index (`usize`) of a range, or a multi-index
/// (`[usize; R]`) of an MDRange. Ties compare locations with `Ord`, so for multi-indices
/// "lowest" is the first in row-major order.
pub trait Location: Copy + Ord + Send + fmt::Debug {}

impl Location for usize {}
impl<const R: usize> Location for [usize; R] {}

// ---------------------------------------------------------------------------
// Arithmetic reducers
// ---------------------------------------------------------------------------

/// Sum reduction: identity [`ReductionIdentity::sum`] (`0`), join `dst += src`.
///
/// ```
/// use hoplite_core::reducer::{Reducer, Sum};
///
/// let r = Sum::<i64>::new();
/// let mut a = r.init();
/// r.join(&mut a, 5);
/// r.join(&mut a, -2);
/// assert_eq!(a, 3);
/// ```
pub struct Sum<T>(PhantomData<fn() -> T>);
phantom_reducer!(Sum);

impl<T: SumValue> Reducer for Sum<T> {
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::zero()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        dst.accumulate(src);
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::Sum)
    }
}

/// Product reduction: identity [`ReductionIdentity::prod`] (`1`), join
/// `dst *= src`.
///
/// ```
/// use hoplite_core::reducer::{Prod, Reducer};
///
/// let r = Prod::<f64>::new();
/// let mut a = r.init();
/// r.join(&mut a, 2.0);
/// r.join(&mut a, 1.5);
/// assert_eq!(a, 3.0);
/// ```
pub struct Prod<T>(PhantomData<fn() -> T>);
phantom_reducer!(Prod);

impl<T: ProdValue> Reducer for Prod<T> {
    type Value = T;
    #[inline(always)]
    fn is_commutative(&self) -> bool {
        true
    }

    #[inline]
    fn init(&self) -> T {
        T::one()
    }

    #[inline]
    fn join(&self, dst: &mut T, src: T) {
        dst.multiply(src);
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        Some(DeviceJoin::Prod)
    }
}

/// What [`Sum`] reduces: a zero and an accumulation. Implemented for the primitive numbers
/// (`+=`, wrapping as `+=` does in release builds), complex numbers ([`num_complex::Complex`])
/// and arrays of them, element by element (Kokkos' array reductions). Implement it for your
/// own types.
///
/// ```
/// use hoplite_core::reducer::{Reducer, Sum};
/// let r = Sum::<[f64; 3]>::new();
/// let mut a = r.init();
/// r.join(&mut a, [1.0, 2.0, 3.0]);
/// r.join(&mut a, [10.0, 20.0, 30.0]);
/// assert_eq!(a, [11.0, 22.0, 33.0]);
/// ```
pub trait SumValue: Copy + Send {
    /// The identity: zero.
    fn zero() -> Self;
    /// `*self += other`.
    fn accumulate(&mut self, other: Self);
}

/// What [`Prod`] reduces: a one and a multiplication (primitive numbers, complex numbers and
/// arrays of them, element by element).
pub trait ProdValue: Copy + Send {
    /// The identity: one.
    fn one() -> Self;
    /// `*self *= other`.
    fn multiply(&mut self, other: Self);
}

/// What [`Min`] and [`Max`] reduce: the identities and a comparison that ignores NaN
/// (primitive numbers, and arrays of them element by element).
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

// ---------------------------------------------------------------------------
// Value + location
// ---------------------------------------------------------------------------

/// A value and the index where it was found: the value of [`MinLoc`] and
/// [`MaxLoc`].
///
/// `loc` is `None` only for the identity, i.e. for an empty range. Any pair
/// with a location replaces a `None` one, so a range whose values all equal
/// the identity (e.g. all `+inf` under [`MinLoc`]) still reports a valid
/// index.
///
/// Ties go to the lowest index. NaN values lose to every number; a range of
/// only NaNs reports a NaN at its lowest index.
///
/// The location is an index (`I = usize`, the default) or, for MDRange reductions, a
/// multi-index (`ValLoc<T, [usize; R]>` with `MinLoc::<T, [usize; R]>`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ValLoc<T, I = usize> {
    /// The best value seen.
    pub val: T,
    /// The index of `val`; `None` only when nothing has been seen.
    pub loc: Option<I>,
}

impl<T: PartialOrd, I: Location> ValLoc<T, I> {
    /// Folds the pair (`val`, `loc`) into a minimum search (what a [`MinLoc`]
    /// kernel calls per element).
    ///
    /// Takes the new pair if `self.loc` is `None`, if `val` is strictly
    /// smaller, or if it is equal and `loc` is lower (ties go to the lowest
    /// index, whatever order the updates come in).
    ///
    /// ```
    /// use hoplite_core::reducer::{MinLoc, Reducer, ValLoc};
    ///
    /// let mut acc = MinLoc::<f64>::new().init();
    /// acc.update_min(2.0, 5);
    /// acc.update_min(1.0, 7);
    /// acc.update_min(1.0, 3);
    /// assert_eq!(acc, ValLoc { val: 1.0, loc: Some(3) });
    /// ```
    #[inline]
    pub fn update_min(&mut self, val: T, loc: I) {
        if replaces(Dir::Min, Tie::Lowest, &self.val, self.loc, &val, Some(loc)) {
            self.val = val;
            self.loc = Some(loc);
        }
    }

    /// Folds the pair (`val`, `loc`) into a maximum search (what a [`MaxLoc`]
    /// kernel calls per element).
    ///
    /// Takes the new pair if `self.loc` is `None`, if `val` is strictly
    /// larger, or if it is equal and `loc` is lower (ties go to the lowest
    /// index, whatever order the updates come in).
    #[inline]
    pub fn update_max(&mut self, val: T, loc: I) {
        if replaces(Dir::Max, Tie::Lowest, &self.val, self.loc, &val, Some(loc)) {
            self.val = val;
            self.loc = Some(loc);
        }
    }
}

// Reducer values are view values too (Kokkos reduces into views of them): their locations
// are `Option`s, which `bytemuck` cannot vouch for, so the zero pattern of each location type
// is checked at compile time below — `mem::zeroed` of an invalid pattern, or reading an
// invalid tag, is a const-evaluation error — and must be `None`.
macro_rules! zeroable_locations {
    ($($loc:ty),*) => {$(
        const _: () = assert!(
            // SAFETY: evaluated at compile time, where an invalid value is an error, not UB.
            unsafe { std::mem::zeroed::<Option<$loc>>() }.is_none(),
            "an all-zero location must read as None"
        );
        // SAFETY: every field is zero-valid: `T: Zeroable`, and the assertion above shows
        // that an all-zero `Option` of this location type is `None`.
        unsafe impl<T: bytemuck::Zeroable> bytemuck::Zeroable for ValLoc<T, $loc> {}
        // SAFETY: as above.
        unsafe impl<T: bytemuck::Zeroable> bytemuck::Zeroable for MinMaxLocScalar<T, $loc> {}
    )*};
}

zeroable_locations!(
    usize, [usize; 1], [usize; 2], [usize; 3], [usize; 4], [usize; 5], [usize; 6], [usize; 7], [usize; 8]
);

/// Minimum value and its index (Kokkos `MinLoc`); value [`ValLoc<T>`],
/// kernels call [`ValLoc::update_min`].
///
/// The identity is `{ val: <T as ReductionIdentity>::min(), loc: None }`.
/// `join` keeps the smaller value; on equal values the lower index wins, and
/// a side with `loc == None` always loses. Ties therefore go to the lowest
/// index regardless of how the range was split.
///
/// ```
/// use hoplite_core::reducer::{MinLoc, Reducer, ValLoc};
///
/// let r = MinLoc::<i32>::new();
/// let mut a = ValLoc { val: 1, loc: Some(4) };
/// r.join(&mut a, ValLoc { val: 1, loc: Some(2) });
/// assert_eq!(a, ValLoc { val: 1, loc: Some(2) });
/// ```
pub struct MinLoc<T, I = usize>(PhantomData<fn() -> (T, I)>);
phantom_loc_reducer!(MinLoc);

impl<T, I: Location> Reducer for MinLoc<T, I>
where
    T: ReductionIdentity + Copy + Send + PartialOrd,
{
    type Value = ValLoc<T, I>;

    #[inline]
    fn init(&self) -> ValLoc<T, I> {
        ValLoc {
            val: <T as ReductionIdentity>::min(),
            loc: None,
        }
    }

    #[inline]
    fn join(&self, dst: &mut ValLoc<T, I>, src: ValLoc<T, I>) {
        if replaces(Dir::Min, Tie::Lowest, &dst.val, dst.loc, &src.val, src.loc) {
            *dst = src;
        }
    }
}

/// Maximum value and its index (Kokkos `MaxLoc`); value [`ValLoc<T>`],
/// kernels call [`ValLoc::update_max`].
///
/// The identity is `{ val: <T as ReductionIdentity>::max(), loc: None }`.
/// `join` keeps the larger value; on equal values the lower index wins, and a
/// side with `loc == None` always loses.
pub struct MaxLoc<T, I = usize>(PhantomData<fn() -> (T, I)>);
phantom_loc_reducer!(MaxLoc);

impl<T, I: Location> Reducer for MaxLoc<T, I>
where
    T: ReductionIdentity + Copy + Send + PartialOrd,
{
    type Value = ValLoc<T, I>;

    #[inline]
    fn init(&self) -> ValLoc<T, I> {
        ValLoc {
            val: <T as ReductionIdentity>::max(),
            loc: None,
        }
    }

    #[inline]
    fn join(&self, dst: &mut ValLoc<T, I>, src: ValLoc<T, I>) {
        if replaces(Dir::Max, Tie::Lowest, &dst.val, dst.loc, &src.val, src.loc) {
            *dst = src;
        }
    }
}

/// Kokkos `MinFirstLoc`. Every hoplite `*Loc` reducer breaks ties toward the
/// lowest index, so this is the same reducer as [`MinLoc`].
pub type MinFirstLoc<T, I = usize> = MinLoc<T, I>;

/// Kokkos `MaxFirstLoc`. Every hoplite `*Loc` reducer breaks ties toward the
/// lowest index, so this is the same reducer as [`MaxLoc`].
pub type MaxFirstLoc<T, I = usize> = MaxLoc<T, I>;

// ---------------------------------------------------------------------------
// MinMaxLoc / MinMaxFirstLastLoc
// ---------------------------------------------------------------------------

/// Minimum and maximum with their indices: the value of [`MinMaxLoc`] and
/// [`MinMaxFirstLastLoc`].
///
/// A location is `None` only for the identity (an empty range); any located
/// value replaces it. NaN values lose to every number.
///
/// The two reducers share this type but differ in tie breaking on the max
/// side, so kernels must call the matching update:
/// [`update`](MinMaxLocScalar::update) for [`MinMaxLoc`],
/// [`update_first_last`](MinMaxLocScalar::update_first_last) for
/// [`MinMaxFirstLastLoc`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MinMaxLocScalar<T, I = usize> {
    /// The smallest value seen.
    pub min_val: T,
    /// The largest value seen.
    pub max_val: T,
    /// The index of `min_val`; `None` only when nothing has been seen.
    pub min_loc: Option<I>,
    /// The index of `max_val`; `None` only when nothing has been seen.
    pub max_loc: Option<I>,
}

impl<T: Copy + PartialOrd, I: Location> MinMaxLocScalar<T, I> {
    /// Folds (`v`, `loc`) in for [`MinMaxLoc`]: ties go to the lowest index on
    /// both sides.
    ///
    /// ```
    /// use hoplite_core::reducer::{MinMaxLoc, Reducer};
    ///
    /// let mut acc = MinMaxLoc::<i32>::new().init();
    /// for (i, x) in [2, 9, 1, 9, 1].into_iter().enumerate() {
    ///     acc.update(x, i);
    /// }
    /// assert_eq!((acc.min_val, acc.min_loc), (1, Some(2)));
    /// assert_eq!((acc.max_val, acc.max_loc), (9, Some(1)));
    /// ```
    #[inline]
    pub fn update(&mut self, v: T, loc: I) {
        self.merge(v, Some(loc), v, Some(loc), Tie::Lowest);
    }

    /// Folds (`v`, `loc`) in for [`MinMaxFirstLastLoc`]: ties go to the lowest
    /// index on the min side and to the **highest** index on the max side
    /// (like C++ `std::minmax_element`).
    ///
    /// ```
    /// use hoplite_core::reducer::{MinMaxFirstLastLoc, Reducer};
    ///
    /// let mut acc = MinMaxFirstLastLoc::<i32>::new().init();
    /// for (i, x) in [2, 9, 1, 9, 1].into_iter().enumerate() {
    ///     acc.update_first_last(x, i);
    /// }
    /// assert_eq!((acc.min_val, acc.min_loc), (1, Some(2)));
    /// assert_eq!((acc.max_val, acc.max_loc), (9, Some(3)));
    /// ```
    #[inline]
    pub fn update_first_last(&mut self, v: T, loc: I) {
        self.merge(v, Some(loc), v, Some(loc), Tie::Highest);
    }

    /// Merges a candidate min pair and max pair; `max_tie` picks the max-side
    /// tie rule (the min side always prefers the lowest index).
    #[inline]
    fn merge(&mut self, min_val: T, min_loc: Option<I>, max_val: T, max_loc: Option<I>, max_tie: Tie) {
        if replaces(
            Dir::Min,
            Tie::Lowest,
            &self.min_val,
            self.min_loc,
            &min_val,
            min_loc,
        ) {
            self.min_val = min_val;
            self.min_loc = min_loc;
        }
        if replaces(Dir::Max, max_tie, &self.max_val, self.max_loc, &max_val, max_loc) {
            self.max_val = max_val;
            self.max_loc = max_loc;
        }
    }
}

/// The identity of both min/max-with-location reducers.
#[inline]
fn min_max_loc_identity<T: ReductionIdentity, I>() -> MinMaxLocScalar<T, I> {
    MinMaxLocScalar {
        min_val: <T as ReductionIdentity>::min(),
        max_val: <T as ReductionIdentity>::max(),
        min_loc: None,
        max_loc: None,
    }
}

/// Minimum and maximum with their indices (Kokkos `MinMaxLoc`); value
/// [`MinMaxLocScalar<T>`], kernels call [`MinMaxLocScalar::update`].
///
/// Ties go to the lowest index on both sides; a side with a `None` location
/// always loses in `join`.
pub struct MinMaxLoc<T, I = usize>(PhantomData<fn() -> (T, I)>);
phantom_loc_reducer!(MinMaxLoc);

impl<T, I: Location> Reducer for MinMaxLoc<T, I>
where
    T: ReductionIdentity + Copy + Send + PartialOrd,
{
    type Value = MinMaxLocScalar<T, I>;

    #[inline]
    fn init(&self) -> MinMaxLocScalar<T, I> {
        min_max_loc_identity()
    }

    #[inline]
    fn join(&self, dst: &mut MinMaxLocScalar<T, I>, src: MinMaxLocScalar<T, I>) {
        dst.merge(src.min_val, src.min_loc, src.max_val, src.max_loc, Tie::Lowest);
    }
}

/// Minimum with its first index and maximum with its **last** index (Kokkos
/// `MinMaxFirstLastLoc`, the semantics of C++ `std::minmax_element`).
///
/// Shares the value type [`MinMaxLocScalar<T>`] with [`MinMaxLoc`]; kernels
/// must call [`MinMaxLocScalar::update_first_last`] (calling
/// [`update`](MinMaxLocScalar::update) would break max-side ties the wrong
/// way within a chunk). Ties go to the lowest index on the min side and to
/// the highest index on the max side; a side with a `None` location always
/// loses in `join`.
pub struct MinMaxFirstLastLoc<T, I = usize>(PhantomData<fn() -> (T, I)>);
phantom_loc_reducer!(MinMaxFirstLastLoc);

impl<T, I: Location> Reducer for MinMaxFirstLastLoc<T, I>
where
    T: ReductionIdentity + Copy + Send + PartialOrd,
{
    type Value = MinMaxLocScalar<T, I>;

    #[inline]
    fn init(&self) -> MinMaxLocScalar<T, I> {
        min_max_loc_identity()
    }

    #[inline]
    fn join(&self, dst: &mut MinMaxLocScalar<T, I>, src: MinMaxLocScalar<T, I>) {
        dst.merge(src.min_val, src.min_loc, src.max_val, src.max_loc, Tie::Highest);
    }
}

// ---------------------------------------------------------------------------
// FirstLoc / LastLoc
// ---------------------------------------------------------------------------

/// The lowest index at which the kernel reported a match (Kokkos
/// `FirstLoc`); value `Option<usize>`, identity `None`.
///
/// Kernels call [`FirstLoc::update`] on a match; `join` keeps the smaller of
/// the present indices.
///
/// ```
/// use hoplite_core::reducer::{FirstLoc, Reducer};
///
/// let x = [1, 4, 6, 3, 8];
/// let r = FirstLoc::new();
/// let mut acc = r.init();
/// for i in (0..x.len()).rev() {
///     if x[i] % 2 == 0 {
///         FirstLoc::update(&mut acc, i);
///     }
/// }
/// assert_eq!(acc, Some(1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FirstLoc;

impl FirstLoc {
    /// Creates the reducer.
    #[inline]
    pub const fn new() -> Self {
        Self
    }

    /// Records a match at `loc`, keeping the lowest index seen.
    #[inline]
    pub fn update(acc: &mut Option<usize>, loc: usize) {
        *acc = Some(acc.map_or(loc, |cur| cur.min(loc)));
    }
}

impl Reducer for FirstLoc {
    type Value = Option<usize>;

    #[inline]
    fn init(&self) -> Option<usize> {
        None
    }

    #[inline]
    fn join(&self, dst: &mut Option<usize>, src: Option<usize>) {
        if let Some(loc) = src {
            Self::update(dst, loc);
        }
    }
}

/// The highest index at which the kernel reported a match (Kokkos
/// `LastLoc`); value `Option<usize>`, identity `None`.
///
/// Kernels call [`LastLoc::update`] on a match; `join` keeps the larger of
/// the present indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LastLoc;

impl LastLoc {
    /// Creates the reducer.
    #[inline]
    pub const fn new() -> Self {
        Self
    }

    /// Records a match at `loc`, keeping the highest index seen.
    #[inline]
    pub fn update(acc: &mut Option<usize>, loc: usize) {
        *acc = Some(acc.map_or(loc, |cur| cur.max(loc)));
    }
}

impl Reducer for LastLoc {
    type Value = Option<usize>;

    #[inline]
    fn init(&self) -> Option<usize> {
        None
    }

    #[inline]
    fn join(&self, dst: &mut Option<usize>, src: Option<usize>) {
        if let Some(loc) = src {
            Self::update(dst, loc);
        }
    }
}

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

// ---------------------------------------------------------------------------
// Custom
// ---------------------------------------------------------------------------

/// The finalize step of a [`Custom`] reducer built without one.
fn no_finalize<V>(_: &mut V) {}

/// A reducer built from closures: `init: Fn() -> V`, `join: Fn(&mut V, V)`
/// and optionally `finalize: Fn(&mut V)`.
///
/// [`Custom::new`] builds one without a final step (`F` is then a no-op
/// function pointer); [`Custom::with_finalize`] adds one. The closures must
/// satisfy the [`Reducer`] axioms: `init` returns the identity of `join`, and
/// `join` is associative (it may rely on `dst` covering the lower indices).
///
/// ```
/// use hoplite_core::reducer::{Custom, Reducer};
///
/// // Concatenation: associative but not commutative.
/// let r = Custom::new(Vec::new, |dst: &mut Vec<u32>, src| dst.extend(src));
/// let mut a = r.init();
/// r.join(&mut a, vec![1, 2]);
/// r.join(&mut a, vec![3]);
/// assert_eq!(a, [1, 2, 3]);
///
/// // (count, sum) turned into (count, mean) at the end.
/// let mean = Custom::with_finalize(
///     || (0u32, 0.0f64),
///     |d: &mut (u32, f64), s| {
///         d.0 += s.0;
///         d.1 += s.1;
///     },
///     |v: &mut (u32, f64)| {
///         if v.0 > 0 {
///             v.1 /= f64::from(v.0);
///         }
///     },
/// );
/// let mut m = mean.init();
/// mean.join(&mut m, (2, 3.0));
/// mean.join(&mut m, (1, 6.0));
/// mean.finalize(&mut m);
/// assert_eq!(m, (3, 3.0));
/// ```
pub struct Custom<V, I, J, F = fn(&mut V)> {
    init: I,
    join: J,
    finalize: F,
    _value: PhantomData<fn() -> V>,
}

impl<V, I, J> Custom<V, I, J>
where
    I: Fn() -> V,
    J: Fn(&mut V, V),
{
    /// Builds a reducer from an identity constructor and a join, with no
    /// final step.
    #[inline]
    pub fn new(init: I, join: J) -> Self {
        Self {
            init,
            join,
            finalize: no_finalize::<V>,
            _value: PhantomData,
        }
    }
}

impl<V, I, J, F> Custom<V, I, J, F>
where
    I: Fn() -> V,
    J: Fn(&mut V, V),
    F: Fn(&mut V),
{
    /// Builds a reducer from an identity constructor, a join and a final step
    /// applied once to the total.
    #[inline]
    pub fn with_finalize(init: I, join: J, finalize: F) -> Self {
        Self {
            init,
            join,
            finalize,
            _value: PhantomData,
        }
    }
}

impl<V, I, J, F> Reducer for Custom<V, I, J, F>
where
    V: Send,
    I: Fn() -> V + Send + Sync,
    J: Fn(&mut V, V) + Send + Sync,
    F: Fn(&mut V) + Send + Sync,
{
    type Value = V;

    #[inline]
    fn init(&self) -> V {
        (self.init)()
    }

    #[inline]
    fn join(&self, dst: &mut V, src: V) {
        (self.join)(dst, src);
    }

    #[inline]
    fn finalize(&self, value: &mut V) {
        (self.finalize)(value);
    }
}

impl<V, I: Clone, J: Clone, F: Clone> Clone for Custom<V, I, J, F> {
    fn clone(&self) -> Self {
        Self {
            init: self.init.clone(),
            join: self.join.clone(),
            finalize: self.finalize.clone(),
            _value: PhantomData,
        }
    }
}

impl<V, I: Copy, J: Copy, F: Copy> Copy for Custom<V, I, J, F> {}

impl<V, I, J, F> fmt::Debug for Custom<V, I, J, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Custom<{}>", std::any::type_name::<V>())
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Debug;

    const DATA: [i32; 8] = [3, -1, 4, -1, 5, 9, -2, 6];

    fn data_f64() -> [f64; 8] {
        DATA.map(f64::from)
    }

    /// Folds `lo..hi` sequentially from `init`.
    fn fold_range<R: Reducer>(r: &R, lo: usize, hi: usize, f: &impl Fn(&mut R::Value, usize)) -> R::Value {
        let mut acc = r.init();
        for i in lo..hi {
            f(&mut acc, i);
        }
        acc
    }

    /// Chunks of `chunk` indices, each folded from `init`, joined in index
    /// order into a fresh `init` (so the first chunk is joined as `src` into an
    /// identity `dst`).
    fn fold_chunked<R: Reducer>(
        r: &R,
        n: usize,
        chunk: usize,
        f: &impl Fn(&mut R::Value, usize),
    ) -> R::Value {
        let mut total = r.init();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            r.join(&mut total, fold_range(r, lo, hi, f));
            lo = hi;
        }
        total
    }

    /// Chunks folded separately, then joined so that the first chunk is the
    /// `dst` of every join.
    fn fold_chunked_first_dst<R: Reducer>(
        r: &R,
        n: usize,
        chunk: usize,
        f: &impl Fn(&mut R::Value, usize),
    ) -> R::Value {
        let mut parts = Vec::new();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            parts.push(fold_range(r, lo, hi, f));
            lo = hi;
        }
        let mut parts = parts.into_iter();
        let mut total = parts.next().unwrap_or_else(|| r.init());
        for p in parts {
            r.join(&mut total, p);
        }
        total
    }

    /// Recursive halving: left half is `dst`, right half is `src`.
    fn fold_tree<R: Reducer>(r: &R, lo: usize, hi: usize, f: &impl Fn(&mut R::Value, usize)) -> R::Value {
        if hi - lo <= 1 {
            return fold_range(r, lo, hi, f);
        }
        let mid = lo + (hi - lo) / 2;
        let mut left = fold_tree(r, lo, mid, f);
        let right = fold_tree(r, mid, hi, f);
        r.join(&mut left, right);
        left
    }

    /// Reduces `0..n` sequentially, in chunks of several sizes (joined both
    /// ways), and as a tree; asserts all agree and returns the finalized total.
    fn reduce_all<R>(r: &R, n: usize, f: impl Fn(&mut R::Value, usize)) -> R::Value
    where
        R: Reducer,
        R::Value: PartialEq + Debug,
    {
        let finish = |mut v: R::Value| {
            r.finalize(&mut v);
            v
        };
        let seq = finish(fold_range(r, 0, n, &f));
        for chunk in [1, 2, 3, 5, n.max(1)] {
            assert_eq!(finish(fold_chunked(r, n, chunk, &f)), seq, "chunk {chunk}");
            assert_eq!(
                finish(fold_chunked_first_dst(r, n, chunk, &f)),
                seq,
                "chunk {chunk} (first as dst)"
            );
        }
        assert_eq!(finish(fold_tree(r, 0, n, &f)), seq, "tree");
        seq
    }

    /// Joins chunks in reverse index order (not required by the axioms; the
    /// `*Loc` reducers compare indices, so they still agree).
    fn fold_chunked_reversed<R: Reducer>(
        r: &R,
        n: usize,
        chunk: usize,
        f: &impl Fn(&mut R::Value, usize),
    ) -> R::Value {
        let mut parts = Vec::new();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            parts.push(fold_range(r, lo, hi, f));
            lo = hi;
        }
        let mut total = r.init();
        for p in parts.into_iter().rev() {
            r.join(&mut total, p);
        }
        total
    }

    /// Both identity laws for `v`.
    fn check_identity<R>(r: &R, v: R::Value)
    where
        R: Reducer,
        R::Value: Clone + PartialEq + Debug,
    {
        let mut right = v.clone();
        r.join(&mut right, r.init());
        assert_eq!(right, v, "join(v, init)");
        let mut left = r.init();
        r.join(&mut left, v.clone());
        assert_eq!(left, v, "join(init, v)");
    }

    // --- identities ---------------------------------------------------------

    #[test]
    fn identity_values() {
        assert_eq!(<i8 as ReductionIdentity>::min(), i8::MAX);
        assert_eq!(<u128 as ReductionIdentity>::max(), 0);
        assert_eq!(<isize as ReductionIdentity>::max(), isize::MIN);
        assert_eq!(<f32 as ReductionIdentity>::min(), f32::INFINITY);
        assert_eq!(<f64 as ReductionIdentity>::max(), f64::NEG_INFINITY);
        assert_eq!(<f64 as ReductionIdentity>::sum(), 0.0);
        assert_eq!(<u16 as ReductionIdentity>::prod(), 1);
        assert_eq!(u8::band(), 0xff);
        assert_eq!(i16::band(), -1);
        assert_eq!(usize::bor(), 0);
        assert!(bool::band());
        assert!(!bool::bor());
    }

    #[test]
    fn identity_laws_arithmetic() {
        for v in [0, 1, -7, i64::MAX, i64::MIN] {
            check_identity(&Sum::<i64>::new(), v);
            check_identity(&Prod::<i64>::new(), v);
            check_identity(&Min::<i64>::new(), v);
            check_identity(&Max::<i64>::new(), v);
        }
        for v in [0.0, -0.5, 3.25, f64::INFINITY, f64::NEG_INFINITY] {
            check_identity(&Prod::<f64>::new(), v);
            check_identity(&Min::<f64>::new(), v);
            check_identity(&Max::<f64>::new(), v);
        }
        for v in [0.0, -0.5, 3.25, 1e300] {
            check_identity(&Sum::<f64>::new(), v);
        }
        for v in [0u8, 1, 255] {
            check_identity(&Sum::<u8>::new(), v);
            check_identity(&Min::<u8>::new(), v);
            check_identity(&Max::<u8>::new(), v);
        }
    }

    #[test]
    fn identity_laws_minmax_and_loc() {
        check_identity(&MinMax::<i32>::new(), MinMaxScalar { min: -3, max: 8 });
        check_identity(&MinMax::<f64>::new(), MinMaxScalar { min: -0.5, max: 2.0 });
        {
            let r = MinLoc::<i32>::new();
            check_identity(&r, ValLoc { val: 4, loc: Some(2) });
            check_identity(
                &r,
                ValLoc {
                    val: i32::MAX,
                    loc: Some(0),
                },
            );
            check_identity(&r, r.init());
        }
        check_identity(
            &MaxLoc::<i32>::new(),
            ValLoc {
                val: i32::MIN,
                loc: Some(5),
            },
        );
        check_identity(
            &MinLoc::<f64>::new(),
            ValLoc {
                val: f64::INFINITY,
                loc: Some(1),
            },
        );
        check_identity(
            &MaxLoc::<f64>::new(),
            ValLoc {
                val: -2.5,
                loc: Some(7),
            },
        );
        let mml = MinMaxLocScalar {
            min_val: -1.0,
            max_val: 9.0,
            min_loc: Some(1),
            max_loc: Some(5),
        };
        check_identity(&MinMaxLoc::<f64>::new(), mml);
        check_identity(&MinMaxFirstLastLoc::<f64>::new(), mml);
        let mmi = MinMaxLocScalar {
            min_val: i32::MAX,
            max_val: i32::MIN,
            min_loc: Some(0),
            max_loc: Some(0),
        };
        check_identity(&MinMaxLoc::<i32>::new(), mmi);
        check_identity(&MinMaxFirstLastLoc::<i32>::new(), mmi);
    }

    #[test]
    fn identity_laws_logical_bitwise_locs() {
        for v in [true, false] {
            check_identity(&LAnd::new(), v);
            check_identity(&LOr::new(), v);
            check_identity(&BAnd::<bool>::new(), v);
            check_identity(&BOr::<bool>::new(), v);
        }
        for v in [0u32, 1, 0xdead_beef, u32::MAX] {
            check_identity(&BAnd::<u32>::new(), v);
            check_identity(&BOr::<u32>::new(), v);
        }
        for v in [-1i64, 0, 42] {
            check_identity(&BAnd::<i64>::new(), v);
            check_identity(&BOr::<i64>::new(), v);
        }
        for v in [None, Some(0), Some(17)] {
            check_identity(&FirstLoc::new(), v);
            check_identity(&LastLoc::new(), v);
        }
    }

    // --- arithmetic ---------------------------------------------------------

    #[test]
    fn sum_prod_min_max_fold() {
        let d = DATA;
        let n = d.len();
        assert_eq!(reduce_all(&Sum::<i32>::new(), n, |a, i| *a += d[i]), 23);
        assert_eq!(
            reduce_all(&Prod::<i64>::new(), n, |a, i| *a *= i64::from(d[i])),
            -6480
        );
        assert_eq!(
            reduce_all(&Min::<i32>::new(), n, |a, i| Min::new().join(a, d[i])),
            -2
        );
        assert_eq!(
            reduce_all(&Max::<i32>::new(), n, |a, i| Max::new().join(a, d[i])),
            9
        );

        let f = data_f64();
        assert_eq!(reduce_all(&Sum::<f64>::new(), n, |a, i| *a += f[i]), 23.0);
        assert_eq!(
            reduce_all(&Min::<f64>::new(), n, |a, i| if f[i] < *a {
                *a = f[i];
            }),
            -2.0
        );
        assert_eq!(
            reduce_all(&Max::<f64>::new(), n, |a, i| if f[i] > *a {
                *a = f[i];
            }),
            9.0
        );
    }

    #[test]
    fn empty_range_gives_identity() {
        assert_eq!(reduce_all(&Sum::<i32>::new(), 0, |_, _| {}), 0);
        assert_eq!(reduce_all(&Prod::<i32>::new(), 0, |_, _| {}), 1);
        assert_eq!(reduce_all(&Min::<f64>::new(), 0, |_, _| {}), f64::INFINITY);
        assert_eq!(reduce_all(&MinLoc::<f64>::new(), 0, |_, _| {}).loc, None);
        assert_eq!(reduce_all(&FirstLoc::new(), 0, |_, _| {}), None);
        assert!(reduce_all(&LAnd::new(), 0, |_, _| {}));
        assert!(!reduce_all(&LOr::new(), 0, |_, _| {}));
    }

    #[test]
    fn min_max_nan_is_ignored() {
        let min = Min::<f64>::new();
        let max = Max::<f64>::new();

        let mut a = 1.0;
        min.join(&mut a, f64::NAN);
        assert_eq!(a, 1.0);
        let mut a = f64::NAN;
        min.join(&mut a, 1.0);
        assert_eq!(a, 1.0);
        let mut a = 1.0;
        max.join(&mut a, f64::NAN);
        assert_eq!(a, 1.0);
        let mut a = f64::NAN;
        max.join(&mut a, -1.0);
        assert_eq!(a, -1.0);

        let x = [f64::NAN, 2.0, f64::NAN, -3.0, 7.0, f64::NAN];
        let r = reduce_all(&Min::<f64>::new(), x.len(), |a, i| min.join(a, x[i]));
        assert_eq!(r, -3.0);
        let r = reduce_all(&Max::<f64>::new(), x.len(), |a, i| max.join(a, x[i]));
        assert_eq!(r, 7.0);

        // All NaN: the identity.
        let mut a = min.init();
        min.join(&mut a, f64::NAN);
        min.join(&mut a, f64::NAN);
        assert_eq!(a, f64::INFINITY);

        let mm = MinMax::<f64>::new();
        let r = reduce_all(&mm, x.len(), |a, i| a.update(x[i]));
        assert_eq!(r, MinMaxScalar { min: -3.0, max: 7.0 });
    }

    #[test]
    fn minmax_fold() {
        let d = DATA;
        let r = reduce_all(&MinMax::<i32>::new(), d.len(), |a, i| a.update(d[i]));
        assert_eq!(r, MinMaxScalar { min: -2, max: 9 });
        let f = data_f64();
        let r = reduce_all(&MinMax::<f64>::new(), f.len(), |a, i| a.update(f[i]));
        assert_eq!(r, MinMaxScalar { min: -2.0, max: 9.0 });
    }

    // --- locations ----------------------------------------------------------

    #[test]
    fn min_loc_max_loc_fold() {
        let d = DATA;
        let n = d.len();
        let r = reduce_all(&MinLoc::<i32>::new(), n, |a, i| a.update_min(d[i], i));
        assert_eq!(
            r,
            ValLoc {
                val: -2,
                loc: Some(6)
            }
        );
        let r = reduce_all(&MaxLoc::<i32>::new(), n, |a, i| a.update_max(d[i], i));
        assert_eq!(r, ValLoc { val: 9, loc: Some(5) });
        let f = data_f64();
        let r = reduce_all(&MinLoc::<f64>::new(), n, |a, i| a.update_min(f[i], i));
        assert_eq!(
            r,
            ValLoc {
                val: -2.0,
                loc: Some(6)
            }
        );
        let r = reduce_all(&MaxFirstLoc::<f64>::new(), n, |a, i| a.update_max(f[i], i));
        assert_eq!(
            r,
            ValLoc {
                val: 9.0,
                loc: Some(5)
            }
        );
    }

    #[test]
    fn loc_ties_go_to_lowest_index() {
        // Minimum -1 at 1 and 3; maximum 5 at 2, 4 and 7.
        let d = [3, -1, 5, -1, 5, 0, 2, 5];
        let n = d.len();
        let min_k = |a: &mut ValLoc<i32>, i: usize| a.update_min(d[i], i);
        let max_k = |a: &mut ValLoc<i32>, i: usize| a.update_max(d[i], i);
        let minr = MinLoc::<i32>::new();
        let maxr = MaxLoc::<i32>::new();
        assert_eq!(
            reduce_all(&minr, n, min_k),
            ValLoc {
                val: -1,
                loc: Some(1)
            }
        );
        assert_eq!(reduce_all(&maxr, n, max_k), ValLoc { val: 5, loc: Some(2) });
        // Even if a backend joined right-to-left, the stored indices decide.
        for chunk in [1, 2, 3] {
            assert_eq!(
                fold_chunked_reversed(&minr, n, chunk, &min_k),
                ValLoc {
                    val: -1,
                    loc: Some(1)
                }
            );
            assert_eq!(
                fold_chunked_reversed(&maxr, n, chunk, &max_k),
                ValLoc { val: 5, loc: Some(2) }
            );
        }
        // Updates arriving in reverse index order inside one accumulator.
        let mut acc = minr.init();
        for i in (0..n).rev() {
            min_k(&mut acc, i);
        }
        assert_eq!(
            acc,
            ValLoc {
                val: -1,
                loc: Some(1)
            }
        );
        // Direct joins with equal values, lower index on either side.
        let lo = ValLoc { val: 7, loc: Some(3) };
        let hi = ValLoc { val: 7, loc: Some(9) };
        {
            let r = MinLoc::<i32>::new();
            let mut a = lo;
            r.join(&mut a, hi);
            assert_eq!(a, lo);
            let mut a = hi;
            r.join(&mut a, lo);
            assert_eq!(a, lo);
        }
        let mut a = hi;
        MaxLoc::<i32>::new().join(&mut a, lo);
        assert_eq!(a, lo);
    }

    #[test]
    fn loc_over_identity_values_reports_an_index() {
        let inf = [f64::INFINITY; 5];
        let r = reduce_all(&MinLoc::<f64>::new(), inf.len(), |a, i| a.update_min(inf[i], i));
        assert_eq!(
            r,
            ValLoc {
                val: f64::INFINITY,
                loc: Some(0)
            }
        );

        let imax = [i32::MAX; 6];
        let r = reduce_all(&MinLoc::<i32>::new(), imax.len(), |a, i| {
            a.update_min(imax[i], i);
        });
        assert_eq!(
            r,
            ValLoc {
                val: i32::MAX,
                loc: Some(0)
            }
        );

        let imin = [i32::MIN; 4];
        let r = reduce_all(&MaxLoc::<i32>::new(), imin.len(), |a, i| {
            a.update_max(imin[i], i);
        });
        assert_eq!(
            r,
            ValLoc {
                val: i32::MIN,
                loc: Some(0)
            }
        );

        let r = reduce_all(&MinMaxLoc::<f64>::new(), inf.len(), |a, i| a.update(inf[i], i));
        assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(0)));
        let r = reduce_all(&MinMaxFirstLastLoc::<f64>::new(), inf.len(), |a, i| {
            a.update_first_last(inf[i], i);
        });
        assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(4)));
    }

    #[test]
    fn loc_nan_loses_to_numbers() {
        let x = [f64::NAN, 3.0, f64::NAN, 1.0, f64::NAN];
        let r = MinLoc::<f64>::new();
        let mut seq = r.init();
        for (i, &v) in x.iter().enumerate() {
            seq.update_min(v, i);
        }
        assert_eq!(
            seq,
            ValLoc {
                val: 1.0,
                loc: Some(3)
            }
        );
        let tree = fold_tree(&r, 0, x.len(), &|a: &mut ValLoc<f64>, i| a.update_min(x[i], i));
        assert_eq!(tree, seq);

        let mut mx = MaxLoc::<f64>::new().init();
        for (i, &v) in x.iter().enumerate() {
            mx.update_max(v, i);
        }
        assert_eq!(
            mx,
            ValLoc {
                val: 3.0,
                loc: Some(1)
            }
        );

        // Only NaNs: a NaN at the lowest index.
        let nan = [f64::NAN; 4];
        let all = fold_tree(&r, 0, nan.len(), &|a: &mut ValLoc<f64>, i| {
            a.update_min(nan[i], i)
        });
        assert!(all.val.is_nan());
        assert_eq!(all.loc, Some(0));
    }

    #[test]
    fn min_max_loc_fold_and_ties() {
        // min -1 at 1, 3; max 9 at 2, 5, 6.
        let d = [3, -1, 9, -1, 5, 9, 9, 0];
        let n = d.len();
        let r = reduce_all(&MinMaxLoc::<i32>::new(), n, |a, i| a.update(d[i], i));
        assert_eq!(
            r,
            MinMaxLocScalar {
                min_val: -1,
                max_val: 9,
                min_loc: Some(1),
                max_loc: Some(2),
            }
        );
        let r = reduce_all(&MinMaxFirstLastLoc::<i32>::new(), n, |a, i| {
            a.update_first_last(d[i], i);
        });
        assert_eq!(
            r,
            MinMaxLocScalar {
                min_val: -1,
                max_val: 9,
                min_loc: Some(1),
                max_loc: Some(6),
            }
        );
        // Reverse join order still agrees.
        for chunk in [1, 2, 3] {
            let k = |a: &mut MinMaxLocScalar<i32>, i: usize| a.update_first_last(d[i], i);
            let rev = fold_chunked_reversed(&MinMaxFirstLastLoc::<i32>::new(), n, chunk, &k);
            assert_eq!((rev.min_loc, rev.max_loc), (Some(1), Some(6)));
            let k = |a: &mut MinMaxLocScalar<i32>, i: usize| a.update(d[i], i);
            let rev = fold_chunked_reversed(&MinMaxLoc::<i32>::new(), n, chunk, &k);
            assert_eq!((rev.min_loc, rev.max_loc), (Some(1), Some(2)));
        }
        let f = data_f64();
        let r = reduce_all(&MinMaxLoc::<f64>::new(), f.len(), |a, i| a.update(f[i], i));
        assert_eq!(
            r,
            MinMaxLocScalar {
                min_val: -2.0,
                max_val: 9.0,
                min_loc: Some(6),
                max_loc: Some(5),
            }
        );
    }

    #[test]
    fn first_loc_last_loc() {
        let d = DATA;
        let n = d.len();
        // Negative values at 1, 3, 6.
        let neg = |i: usize| d[i] < 0;
        let first = reduce_all(&FirstLoc::new(), n, |a, i| {
            if neg(i) {
                FirstLoc::update(a, i);
            }
        });
        assert_eq!(first, Some(1));
        let last = reduce_all(&LastLoc::new(), n, |a, i| {
            if neg(i) {
                LastLoc::update(a, i);
            }
        });
        assert_eq!(last, Some(6));
        let none = reduce_all(&FirstLoc::new(), n, |a, i| {
            if d[i] > 100 {
                FirstLoc::update(a, i);
            }
        });
        assert_eq!(none, None);
        let none = reduce_all(&LastLoc::new(), n, |a, i| {
            if d[i] > 100 {
                LastLoc::update(a, i);
            }
        });
        assert_eq!(none, None);

        let mut a = Some(4);
        FirstLoc::new().join(&mut a, Some(2));
        assert_eq!(a, Some(2));
        let mut a = Some(4);
        LastLoc::new().join(&mut a, Some(2));
        assert_eq!(a, Some(4));
    }

    // --- logical / bitwise --------------------------------------------------

    #[test]
    fn logical_and_bitwise() {
        let d = DATA;
        let n = d.len();
        assert!(!reduce_all(&LAnd::new(), n, |a, i| *a = *a && d[i] > 0));
        assert!(reduce_all(&LAnd::new(), n, |a, i| *a = *a && d[i] > -5));
        assert!(reduce_all(&LOr::new(), n, |a, i| *a = *a || d[i] == 9));
        assert!(!reduce_all(&LOr::new(), n, |a, i| *a = *a || d[i] > 9));

        let bits: [u32; 4] = [0b1111_0110, 0b0111_1110, 0b1110_0111, 0b1111_1110];
        assert_eq!(
            reduce_all(&BAnd::<u32>::new(), bits.len(), |a, i| *a &= bits[i]),
            0b0110_0110
        );
        assert_eq!(
            reduce_all(&BOr::<u32>::new(), bits.len(), |a, i| *a |= bits[i]),
            0b1111_1111
        );
        let flags = [true, true, false];
        assert!(!reduce_all(&BAnd::<bool>::new(), 3, |a, i| *a &= flags[i]));
        assert!(reduce_all(&BOr::<bool>::new(), 3, |a, i| *a |= flags[i]));
    }

    // --- custom -------------------------------------------------------------

    #[test]
    fn custom_concatenation_keeps_index_order() {
        let r = Custom::new(Vec::new, |dst: &mut Vec<usize>, src| dst.extend(src));
        let d = DATA;
        let odd = reduce_all(&r, d.len(), |a, i| {
            if d[i] % 2 != 0 {
                a.push(i);
            }
        });
        assert_eq!(odd, [0, 1, 3, 4, 5]);
        check_identity(&r, vec![4, 2]);
        let copy = r;
        assert_eq!(copy.init(), Vec::<usize>::new());
    }

    #[test]
    fn custom_mean_with_finalize() {
        let r = Custom::with_finalize(
            || (0u32, 0.0f64),
            |d: &mut (u32, f64), s| {
                d.0 += s.0;
                d.1 += s.1;
            },
            |v: &mut (u32, f64)| {
                if v.0 > 0 {
                    v.1 /= f64::from(v.0);
                }
            },
        );
        let f = data_f64();
        let mean = reduce_all(&r, f.len(), |a, i| {
            a.0 += 1;
            a.1 += f[i];
        });
        assert_eq!(mean, (8, 23.0 / 8.0));
        check_identity(&r, (3, 1.5));
        // Finalize also runs on the identity of an empty range.
        assert_eq!(reduce_all(&r, 0, |_, _| {}), (0, 0.0));
    }

    #[test]
    fn custom_finalize_runs_once() {
        let r = Custom::with_finalize(|| 0i64, |d: &mut i64, s| *d += s, |v: &mut i64| *v *= 10);
        assert_eq!(reduce_all(&r, 4, |a, i| *a += i as i64), 60);
        assert_eq!(reduce_all(&r, 0, |_, _| {}), 0);
        // Without finalize nothing happens at the end.
        let plain = Custom::new(|| 0i64, |d: &mut i64, s| *d += s);
        let mut v = 5;
        plain.finalize(&mut v);
        assert_eq!(v, 5);
    }

    // --- misc ---------------------------------------------------------------

    fn total_via_ref<R: Reducer>(r: R, xs: &[R::Value]) -> R::Value
    where
        R::Value: Copy,
    {
        let mut a = r.init();
        for &x in xs {
            r.join(&mut a, x);
        }
        r.finalize(&mut a);
        a
    }

    #[test]
    fn reducers_by_reference() {
        let s = Sum::<i32>::new();
        assert_eq!(total_via_ref(&s, &DATA), 23);
        assert_eq!(total_via_ref(&&s, &DATA), 23);
        let dynr: &dyn Reducer<Value = i32> = &Max::<i32>::new();
        assert_eq!(total_via_ref(dynr, &DATA), 9);
        let fin = Custom::with_finalize(|| 0i32, |d: &mut i32, s| *d += s, |v: &mut i32| *v = -*v);
        assert_eq!(total_via_ref(&fin, &DATA), -23);
    }

    #[test]
    fn send_sync_debug_default() {
        fn assert_send_sync<T: Send + Sync + Copy + Default + Debug>() {}
        // PhantomData<fn() -> T>: no bounds on T for these traits.
        assert_send_sync::<Sum<std::rc::Rc<i32>>>();
        assert_send_sync::<MinLoc<std::cell::Cell<u8>>>();
        assert_send_sync::<FirstLoc>();
        assert_send_sync::<LAnd>();
        assert_eq!(format!("{:?}", Sum::<f64>::new()), "Sum<f64>");
        assert_eq!(
            format!("{:?}", MinMaxFirstLastLoc::<i32>::default()),
            "MinMaxFirstLastLoc<i32, usize>"
        );
        assert_eq!(format!("{:?}", LOr::new()), "LOr");
        let c = Custom::new(|| 1u8, |_: &mut u8, _| {});
        assert_eq!(format!("{c:?}"), "Custom<u8>");
    }
}
