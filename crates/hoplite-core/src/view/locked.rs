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
//! 4. The critical section may itself update another lock-based atomic (a user `Add` that
//!    counts into a second view). Each thread records the stripes and elements it holds: an
//!    update whose stripe this thread already holds runs without taking it again (no other
//!    thread can hold it, so the exclusion of step 2 still holds for the inner element), and
//!    an update of an element this thread is already updating panics, since it would make a
//!    second `&mut` to that element; the panic releases every lock on its way out (step 3).
//!
//! Elements that share a stripe serialize with each other; that costs time, never
//! correctness.

use std::cell::{RefCell, UnsafeCell};
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

/// The index of the lock of address `p` in the table: the address without its low bits
/// (elements are at least a few bytes apart), mixed so that strided elements spread over it.
fn stripe_index(p: usize) -> usize {
    let h = (p >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h >> (usize::BITS - STRIPES.trailing_zeros())
}

thread_local! {
    /// The stripes this thread holds and the elements it is updating under them, innermost
    /// last (step 4).
    static HELD: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// This thread's record of one update in progress: removed when dropped, and the stripe's
/// lock released if this update took it, also when the critical section panics.
struct Held {
    lock: Option<&'static AtomicBool>,
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|held| held.borrow_mut().pop());
        if let Some(lock) = self.lock {
            lock.store(false, Ordering::Release);
        }
    }
}

/// Runs `f` on the value of `cell` under its lock.
fn with_lock<T, R>(cell: &LockedCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    let element = cell.0.get() as usize;
    let index = stripe_index(element);
    let (same_element, stripe_held) = HELD.with(|held| {
        let held = held.borrow();
        (
            held.iter().any(|&(_, e)| e == element),
            held.iter().any(|&(s, _)| s == index),
        )
    });
    assert!(
        !same_element,
        "a lock-based atomic update of an element ran another update of the same element from inside its own operation (its `Add`, `PartialOrd` or `PartialEq`); update another element, or compute the value first"
    );
    let lock = if stripe_held {
        None // this thread holds it already (step 4)
    } else {
        let lock: &'static AtomicBool = &LOCKS[index];
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
        Some(lock)
    };
    HELD.with(|held| held.borrow_mut().push((index, element)));
    let _held = Held { lock };
    // SAFETY: the lock of this address is held by this thread, taken here or by an update in
    // progress further out on this thread (step 4), and every access to the value takes it
    // (step 1), so no other thread touches the value; no update further out on this thread is
    // of this element (checked above), so this is the only reference to the value until
    // `_held` drops.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two elements of `cells` whose addresses share a stripe.
    fn colliding_pair<T>(cells: &[LockedCell<T>]) -> (usize, usize) {
        let mut first_at = vec![None; STRIPES];
        for (k, cell) in cells.iter().enumerate() {
            let s = stripe_index(cell.0.get() as usize);
            match first_at[s] {
                Some(j) => return (j, k),
                None => first_at[s] = Some(k),
            }
        }
        unreachable!("more cells than stripes always collide")
    }

    /// An update that, inside its critical section, updates another element on the same
    /// stripe used to spin for ever on the lock its own thread held.
    #[test]
    fn an_update_inside_an_update_on_the_same_stripe_completes() {
        let cells: Vec<LockedCell<u64>> = (0..STRIPES as u64 + 1)
            .map(|k| LockedCell(UnsafeCell::new(k)))
            .collect();
        let (a, b) = colliding_pair(&cells);
        assert_eq!(
            stripe_index(cells[a].0.get() as usize),
            stripe_index(cells[b].0.get() as usize)
        );
        let inner = with_lock(&cells[a], |x| {
            *x += 100;
            with_lock(&cells[b], |y| {
                *y += 1;
                *y
            })
        });
        assert_eq!(inner, b as u64 + 1);
        assert_eq!(with_lock(&cells[a], |x| *x), a as u64 + 100);
        // The stripe is free again: another thread takes it.
        std::thread::scope(|s| {
            s.spawn(|| with_lock(&cells[b], |y| *y += 1));
        });
        assert_eq!(with_lock(&cells[b], |y| *y), b as u64 + 2);
    }

    #[test]
    fn an_update_of_the_same_element_from_inside_its_update_panics_and_releases_the_lock() {
        let cell = LockedCell(UnsafeCell::new(1u64));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_lock(&cell, |_| with_lock(&cell, |x| *x))
        }));
        let message = result.expect_err("a second `&mut` to one element is refused");
        let text = message.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(text.contains("same element"), "{text}");
        // Nothing stays held: this thread and another update the element again.
        assert_eq!(with_lock(&cell, |x| *x), 1);
        std::thread::scope(|s| {
            s.spawn(|| with_lock(&cell, |x| *x += 1));
        });
        assert_eq!(with_lock(&cell, |x| *x), 2);
    }
}
