//! The [`AtomicValue`] types atomic handles update: integers natively, floats by
//! compare-and-swap on their bits, other types under a lock of a global lock table.

use std::marker::PhantomData;
use std::sync::atomic;
use std::sync::atomic::Ordering;

use crate::view::ViewValue;

/// A value type with atomic operations in views: integers natively, floats by
/// compare-and-swap on their bits, and any other [`LockedAtomic`](crate::LockedAtomic) type (complex numbers,
/// small structs) under a lock of a global lock table.
///
/// The operations that need more of the type say so: `fetch_add` needs `Add`, `fetch_min`
/// and `fetch_max` need `PartialOrd`, `compare_exchange` needs `PartialEq`.
///
/// # Safety
///
/// Atomic handles reinterpret a view's elements of type `Self` in place as `Self::Atom`. An
/// implementation promises that `Atom` has the same size as `Self` and an alignment no
/// greater than `Self`'s, that every bit pattern of a `Self` is a valid `Atom` (and back), and
/// that `Atom`'s operations here are safe to call from several threads at once on one element:
/// every access to an element goes through these methods (the borrow rules keep readers and
/// writers away), and each of them is atomic with respect to the others.
pub unsafe trait AtomicValue: ViewValue {
    /// The atomic type of the same size and alignment.
    type Atom: Send + Sync;
    /// Atomically adds `v`; returns the old value.
    fn fetch_add(a: &Self::Atom, v: Self) -> Self
    where
        Self: std::ops::Add<Output = Self>;
    /// Atomically keeps the smaller; returns the old value.
    fn fetch_min(a: &Self::Atom, v: Self) -> Self
    where
        Self: PartialOrd;
    /// Atomically keeps the larger; returns the old value.
    fn fetch_max(a: &Self::Atom, v: Self) -> Self
    where
        Self: PartialOrd;
    /// Atomically replaces `current` with `new`; the old value in `Err` if it was not `current`.
    fn compare_exchange(a: &Self::Atom, current: Self, new: Self) -> std::result::Result<Self, Self>
    where
        Self: PartialEq;
    /// Atomic load.
    fn load(a: &Self::Atom) -> Self;
    /// Atomic store.
    fn store(a: &Self::Atom, v: Self);
}

macro_rules! atomic_int {
    ($($t:ty => $atom:ty),*) => {$(
        // SAFETY: `$atom` is the standard atomic of the integer `$t`: same size and alignment,
        // the same bit patterns, and every method is an atomic operation.
        unsafe impl AtomicValue for $t {
            type Atom = $atom;
            #[inline(always)]
            fn fetch_add(a: &$atom, v: $t) -> $t { a.fetch_add(v, Ordering::Relaxed) }
            #[inline(always)]
            fn fetch_min(a: &$atom, v: $t) -> $t { a.fetch_min(v, Ordering::Relaxed) }
            #[inline(always)]
            fn fetch_max(a: &$atom, v: $t) -> $t { a.fetch_max(v, Ordering::Relaxed) }
            #[inline(always)]
            fn compare_exchange(a: &$atom, current: $t, new: $t) -> std::result::Result<$t, $t> {
                a.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
            }
            #[inline(always)]
            fn load(a: &$atom) -> $t { a.load(Ordering::Relaxed) }
            #[inline(always)]
            fn store(a: &$atom, v: $t) { a.store(v, Ordering::Relaxed) }
        }
    )*};
}

atomic_int!(
    i32 => atomic::AtomicI32, i64 => atomic::AtomicI64, u32 => atomic::AtomicU32,
    u64 => atomic::AtomicU64, usize => atomic::AtomicUsize, isize => atomic::AtomicIsize
);

macro_rules! atomic_float {
    ($($t:ty => $atom:ty),*) => {$(
        // SAFETY: `$atom` is the standard atomic of the float's bits: same size and alignment,
        // every bit pattern valid both ways (`to_bits`/`from_bits`), every method atomic.
        unsafe impl AtomicValue for $t {
            type Atom = $atom;
            #[inline(always)]
            fn fetch_add(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| x + v) }
            #[inline(always)]
            fn fetch_min(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| if v < x { v } else { x }) }
            #[inline(always)]
            fn fetch_max(a: &$atom, v: $t) -> $t { float_rmw(a, |x: $t| if v > x { v } else { x }) }
            #[inline(always)]
            fn compare_exchange(a: &$atom, current: $t, new: $t) -> std::result::Result<$t, $t> {
                a.compare_exchange(current.to_bits(), new.to_bits(), Ordering::AcqRel, Ordering::Relaxed)
                    .map(<$t>::from_bits)
                    .map_err(<$t>::from_bits)
            }
            #[inline(always)]
            fn load(a: &$atom) -> $t { <$t>::from_bits(a.load(Ordering::Relaxed)) }
            #[inline(always)]
            fn store(a: &$atom, v: $t) { a.store(v.to_bits(), Ordering::Relaxed) }
        }
    )*};
}

atomic_float!(f32 => atomic::AtomicU32, f64 => atomic::AtomicU64);

/// A compare-and-swap loop applying `f` to a float stored as bits.
#[inline(always)]
fn float_rmw<A: FloatAtom>(a: &A, f: impl Fn(A::Float) -> A::Float) -> A::Float {
    let mut old = a.load_bits();
    loop {
        let new = f(A::from_bits(old));
        match a.cas_bits(old, A::to_bits(new)) {
            Ok(_) => return A::from_bits(old),
            Err(now) => old = now,
        }
    }
}

trait FloatAtom {
    type Float: Copy;
    type Bits: Copy;
    fn load_bits(&self) -> Self::Bits;
    fn cas_bits(&self, old: Self::Bits, new: Self::Bits) -> std::result::Result<Self::Bits, Self::Bits>;
    fn from_bits(b: Self::Bits) -> Self::Float;
    fn to_bits(f: Self::Float) -> Self::Bits;
}

macro_rules! float_atom {
    ($($atom:ty => $f:ty, $bits:ty),*) => {$(
        impl FloatAtom for $atom {
            type Float = $f;
            type Bits = $bits;
            #[inline(always)]
            fn load_bits(&self) -> $bits { self.load(Ordering::Relaxed) }
            #[inline(always)]
            fn cas_bits(&self, old: $bits, new: $bits) -> std::result::Result<$bits, $bits> {
                self.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed)
            }
            #[inline(always)]
            fn from_bits(b: $bits) -> $f { <$f>::from_bits(b) }
            #[inline(always)]
            fn to_bits(f: $f) -> $bits { f.to_bits() }
        }
    )*};
}

float_atom!(atomic::AtomicU32 => f32, u32, atomic::AtomicU64 => f64, u64);

pub(super) struct AtomLayout<T: AtomicValue>(PhantomData<T>);

impl<T: AtomicValue> AtomLayout<T> {
    pub(super) const SAME: () = assert!(
        size_of::<T>() == size_of::<T::Atom>() && align_of::<T::Atom>() <= size_of::<T>(),
        "an atomic element type must have the size of its value and an alignment its size provides"
    );
}
