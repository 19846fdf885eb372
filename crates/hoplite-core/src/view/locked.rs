//! Atomics on types no hardware atomic fits (Kokkos' lock-based atomics): complex numbers,
//! 16-byte structs, small arrays. Each operation takes the lock of its element's address in a
//! global table of spin locks, does a plain read-modify-write, and releases the lock.
//!
//! The protocol, for one element at address `p`:
//!
//! 1. Every access to the element goes through an atomic handle (the borrow rules keep readers
//!    and writers of the same elements away while atomic handles live), and so through
//!    `with_lock` with the same `p`, hence the same lock `LOCKS[stripe(p)]`.
//! 2. The lock is taken with an `Acquire` compare-exchange and released with a `Release`
//!    store, so the accesses of successive holders are ordered: each sees the last write.
//! 3. The critical section is the user type's `Add`, `PartialOrd` or `PartialEq` and a copy;
//!    a panic inside it releases the lock (a guard), leaving the element as it was.
//!
//! Elements that share a stripe serialize with each other; that costs time, never
//! correctness.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_utils::{Backoff, CachePadded};

use crate::view::ViewValue;
use crate::view::access::AtomicValue;

/// A type whose atomic operations in views use the lock table: implement it (no methods) for
/// a `ViewValue` type with no hardware atomic, and `view.atomic()` works for it.
///
/// ```
/// use hoplite_core::{parallel_for, LockedAtomic, RangePolicy, View};
/// use hoplite_serial::Serial;
/// #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Zeroable)]
/// struct Moments { n: f64, sum: f64 }
/// impl std::ops::Add for Moments {
///     type Output = Self;
///     fn add(self, o: Self) -> Self { Moments { n: self.n + o.n, sum: self.sum + o.sum } }
/// }
/// impl LockedAtomic for Moments {}
/// let m: View<Moments, 1> = View::new("moments", [2])?;
/// let acc = m.atomic();
/// parallel_for("moments", RangePolicy::new(Serial::default(), 0..10), |i| {
///     acc.fetch_add(*i % 2, Moments { n: 1.0, sum: *i as f64 });
/// })?;
/// drop(acc);
/// assert_eq!(m.host_read()?.get(1), Moments { n: 5.0, sum: 25.0 });
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub trait LockedAtomic: ViewValue {}

/// An element accessed under the lock table (the `Atom` of [`LockedAtomic`] types).
#[repr(transparent)]
pub struct LockedCell<T>(UnsafeCell<T>);

// SAFETY: every access to the cell's value happens under the lock of its address (see the
// module protocol), so shared references on several threads never race; `T: Send` lets the
// value move between them.
unsafe impl<T: Send> Sync for LockedCell<T> {}

/// Number of locks: a power of two, enough that unrelated elements rarely share one.
const STRIPES: usize = 1024;

static LOCKS: [CachePadded<AtomicBool>; STRIPES] =
    [const { CachePadded::new(AtomicBool::new(false)) }; STRIPES];

/// The lock of address `p`: the address without its low bits (elements are at least a few
/// bytes apart), mixed so that strided elements spread over the table.
fn stripe(p: usize) -> &'static AtomicBool {
    let h = (p >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    &LOCKS[h >> (usize::BITS - STRIPES.trailing_zeros())]
}

/// Releases the lock when dropped, also when the critical section panics.
struct Held(&'static AtomicBool);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Runs `f` on the value of `cell` under its lock.
fn with_lock<T, R>(cell: &LockedCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    let lock = stripe(cell.0.get() as usize);
    let backoff = Backoff::new();
    while lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if backoff.is_completed() {
            std::thread::yield_now();
        } else {
            backoff.snooze();
        }
    }
    let _held = Held(lock);
    // SAFETY: the lock of this address is held (step 2), and every access to the value takes
    // it (step 1), so this is the only reference to the value until `_held` drops.
    f(unsafe { &mut *cell.0.get() })
}

// SAFETY: `LockedCell<T>` is `repr(transparent)` over `UnsafeCell<T>`, itself of the size,
// alignment and bit validity of `T`; every method below accesses the value under its lock.
unsafe impl<T: LockedAtomic> AtomicValue for T {
    type Atom = LockedCell<T>;

    fn fetch_add(a: &LockedCell<T>, v: T) -> T
    where
        T: std::ops::Add<Output = T>,
    {
        with_lock(a, |x| std::mem::replace(x, *x + v))
    }

    fn fetch_min(a: &LockedCell<T>, v: T) -> T
    where
        T: PartialOrd,
    {
        with_lock(a, |x| {
            let old = *x;
            if v < old {
                *x = v;
            }
            old
        })
    }

    fn fetch_max(a: &LockedCell<T>, v: T) -> T
    where
        T: PartialOrd,
    {
        with_lock(a, |x| {
            let old = *x;
            if v > old {
                *x = v;
            }
            old
        })
    }

    fn compare_exchange(a: &LockedCell<T>, current: T, new: T) -> Result<T, T>
    where
        T: PartialEq,
    {
        with_lock(a, |x| {
            let old = *x;
            if old == current {
                *x = new;
                Ok(old)
            } else {
                Err(old)
            }
        })
    }

    fn load(a: &LockedCell<T>) -> T {
        with_lock(a, |x| *x)
    }

    fn store(a: &LockedCell<T>, v: T) {
        with_lock(a, |x| *x = v);
    }
}

// Complex numbers (Kokkos' `complex` atomics): 8 and 16 bytes, no native atomic add.
impl LockedAtomic for num_complex::Complex<f32> {}
impl LockedAtomic for num_complex::Complex<f64> {}
