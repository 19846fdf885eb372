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
//! use hoplite_core::{MinLoc, Reducer, ValLoc};
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
/// use hoplite_core::Reducer;
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
                Self(::std::marker::PhantomData)
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

        impl<T> ::std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(
                    f,
                    concat!(stringify!($name), "<{}>"),
                    std::any::type_name::<T>()
                )
            }
        }
    };
}

/// The `Reducer` impl of a commutative reducer whose identity and join are one expression each
/// and which a device joins natively (`DeviceJoin::$device`): Sum, Prod, Min, Max and the
/// logical and bitwise reducers differ only in those three.
macro_rules! commutative_reducer {
    ($(impl[$($generics:tt)*] $name:ty => $value:ty $(where [$($bounds:tt)*])?,
        identity $identity:expr, join |$dst:ident, $src:ident| $join:expr, device $device:ident;)*) => {$(
        impl<$($generics)*> Reducer for $name $(where $($bounds)*)? {
            type Value = $value;
            #[inline(always)]
            fn is_commutative(&self) -> bool {
                true
            }

            #[inline]
            fn init(&self) -> $value {
                $identity
            }

            #[inline]
            fn join(&self, $dst: &mut $value, $src: $value) {
                $join;
            }

            fn device_join(&self) -> Option<DeviceJoin> {
                Some(DeviceJoin::$device)
            }
        }
    )*};
}

/// [`phantom_reducer`] for the location reducers `Name<T, I>` (value type and location type).
macro_rules! phantom_loc_reducer {
    ($name:ident) => {
        impl<T, I> $name<T, I> {
            /// Creates the reducer.
            #[inline]
            pub const fn new() -> Self {
                Self(::std::marker::PhantomData)
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

        impl<T, I> ::std::fmt::Debug for $name<T, I> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
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

mod arith;
mod compare;
mod custom;
mod identity;
mod location;
mod logical;
mod minmax;

pub use arith::{MinMaxValue, Prod, ProdValue, ScanValue, Sum, SumValue};
pub use custom::Custom;
pub use identity::{BitIdentity, ReductionIdentity};
pub use location::{
    FirstLoc, LastLoc, Location, MaxFirstLoc, MaxLoc, MinFirstLoc, MinLoc, MinMaxFirstLastLoc, MinMaxLoc,
    MinMaxLocScalar, ValLoc,
};
pub use logical::{BAnd, BOr, LAnd, LOr};
pub use minmax::{Max, Min, MinMax, MinMaxScalar};
