//! The location reducers: [`MinLoc`], [`MaxLoc`], [`MinMaxLoc`], [`MinMaxFirstLastLoc`] with
//! their [`ValLoc`] and [`MinMaxLocScalar`] values, and [`FirstLoc`] / [`LastLoc`].

use std::fmt;
use std::marker::PhantomData;

use super::Reducer;
use super::compare::{Dir, Tie, replaces};
use super::identity::ReductionIdentity;

/// A location of the `*Loc` reducers: an index (`usize`) of a range, or a multi-index
/// (`[usize; R]`) of an MDRange. Ties compare locations with `Ord`, so for multi-indices
/// "lowest" is the first in row-major order.
pub trait Location: Copy + Ord + Send + fmt::Debug {}

impl Location for usize {}
impl<const R: usize> Location for [usize; R] {}

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
    /// use hoplite_core::{MinLoc, Reducer, ValLoc};
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

/// A value-and-location reducer over [`ValLoc`]: `init` is `$identity` with no location,
/// `join` keeps the pair that [`replaces`] the other in direction `$dir`, ties to the lowest
/// index. [`MinLoc`] and [`MaxLoc`] differ only in those two.
macro_rules! val_loc_reducer {
    ($($(#[$doc:meta])* $name:ident, identity $identity:ident, dir $dir:ident;)*) => {$(
        $(#[$doc])*
        pub struct $name<T, I = usize>(PhantomData<fn() -> (T, I)>);
        phantom_loc_reducer!($name);

        impl<T, I: Location> Reducer for $name<T, I>
        where
            T: ReductionIdentity + Copy + Send + PartialOrd,
        {
            type Value = ValLoc<T, I>;

            #[inline]
            fn init(&self) -> ValLoc<T, I> {
                ValLoc {
                    val: <T as ReductionIdentity>::$identity(),
                    loc: None,
                }
            }

            #[inline]
            fn join(&self, dst: &mut ValLoc<T, I>, src: ValLoc<T, I>) {
                if replaces(Dir::$dir, Tie::Lowest, &dst.val, dst.loc, &src.val, src.loc) {
                    *dst = src;
                }
            }
        }
    )*};
}

val_loc_reducer! {
    /// Minimum value and its index (Kokkos `MinLoc`); value [`ValLoc<T>`],
    /// kernels call [`ValLoc::update_min`].
    ///
    /// The identity is `{ val: <T as ReductionIdentity>::min(), loc: None }`.
    /// `join` keeps the smaller value; on equal values the lower index wins, and
    /// a side with `loc == None` always loses. Ties therefore go to the lowest
    /// index regardless of how the range was split.
    ///
    /// ```
    /// use hoplite_core::{MinLoc, Reducer, ValLoc};
    ///
    /// let r = MinLoc::<i32>::new();
    /// let mut a = ValLoc { val: 1, loc: Some(4) };
    /// r.join(&mut a, ValLoc { val: 1, loc: Some(2) });
    /// assert_eq!(a, ValLoc { val: 1, loc: Some(2) });
    /// ```
    MinLoc, identity min, dir Min;

    /// Maximum value and its index (Kokkos `MaxLoc`); value [`ValLoc<T>`],
    /// kernels call [`ValLoc::update_max`].
    ///
    /// The identity is `{ val: <T as ReductionIdentity>::max(), loc: None }`.
    /// `join` keeps the larger value; on equal values the lower index wins, and a
    /// side with `loc == None` always loses.
    MaxLoc, identity max, dir Max;
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
    /// use hoplite_core::{MinMaxLoc, Reducer};
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
    /// use hoplite_core::{MinMaxFirstLastLoc, Reducer};
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
pub(super) fn min_max_loc_identity<T: ReductionIdentity, I>() -> MinMaxLocScalar<T, I> {
    MinMaxLocScalar {
        min_val: <T as ReductionIdentity>::min(),
        max_val: <T as ReductionIdentity>::max(),
        min_loc: None,
        max_loc: None,
    }
}

/// A min-and-max-with-location reducer over [`MinMaxLocScalar`]: both sides start empty,
/// `join` merges the min side with ties to the lowest index and the max side with ties to
/// `$max_tie`. [`MinMaxLoc`] and [`MinMaxFirstLastLoc`] differ only in that tie.
macro_rules! min_max_loc_reducer {
    ($($(#[$doc:meta])* $name:ident, max tie $max_tie:ident;)*) => {$(
        $(#[$doc])*
        pub struct $name<T, I = usize>(PhantomData<fn() -> (T, I)>);
        phantom_loc_reducer!($name);

        impl<T, I: Location> Reducer for $name<T, I>
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
                dst.merge(src.min_val, src.min_loc, src.max_val, src.max_loc, Tie::$max_tie);
            }
        }
    )*};
}

min_max_loc_reducer! {
    /// Minimum and maximum with their indices (Kokkos `MinMaxLoc`); value
    /// [`MinMaxLocScalar<T>`], kernels call [`MinMaxLocScalar::update`].
    ///
    /// Ties go to the lowest index on both sides; a side with a `None` location
    /// always loses in `join`.
    MinMaxLoc, max tie Lowest;

    /// Minimum with its first index and maximum with its **last** index (Kokkos
    /// `MinMaxFirstLastLoc`, the semantics of C++ `std::minmax_element`).
    ///
    /// Shares the value type [`MinMaxLocScalar<T>`] with [`MinMaxLoc`]; kernels
    /// must call [`MinMaxLocScalar::update_first_last`] (calling
    /// [`update`](MinMaxLocScalar::update) would break max-side ties the wrong
    /// way within a chunk). Ties go to the lowest index on the min side and to
    /// the highest index on the max side; a side with a `None` location always
    /// loses in `join`.
    MinMaxFirstLastLoc, max tie Highest;
}

// ---------------------------------------------------------------------------
// FirstLoc / LastLoc
// ---------------------------------------------------------------------------

/// An index-only location reducer over `Option<usize>`: identity `None`, `update` and `join`
/// keep the `$keep` (`min` or `max`) of the present indices. [`FirstLoc`] and [`LastLoc`]
/// differ only in that.
macro_rules! index_loc_reducer {
    ($($(#[$doc:meta])* $name:ident, keep $keep:ident, $which:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// Creates the reducer.
            #[inline]
            pub const fn new() -> Self {
                Self
            }

            #[doc = concat!("Records a match at `loc`, keeping the ", $which, " index seen.")]
            #[inline]
            pub fn update(acc: &mut Option<usize>, loc: usize) {
                *acc = Some(acc.map_or(loc, |cur| cur.$keep(loc)));
            }
        }

        impl Reducer for $name {
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
    )*};
}

index_loc_reducer! {
    /// The lowest index at which the kernel reported a match (Kokkos
    /// `FirstLoc`); value `Option<usize>`, identity `None`.
    ///
    /// Kernels call [`FirstLoc::update`] on a match; `join` keeps the smaller of
    /// the present indices.
    ///
    /// ```
    /// use hoplite_core::{FirstLoc, Reducer};
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
    FirstLoc, keep min, "lowest";

    /// The highest index at which the kernel reported a match (Kokkos
    /// `LastLoc`); value `Option<usize>`, identity `None`.
    ///
    /// Kernels call [`LastLoc::update`] on a match; `join` keeps the larger of
    /// the present indices.
    LastLoc, keep max, "highest";
}
