//! Iteration tokens: the index a launch hands to one iteration of a kernel.
//!
//! A token is the proof that "this iteration owns this index". Writers (see the views module)
//! store only at the token of the current iteration, which is what makes data-parallel writes
//! race-free in safe Rust. Three properties make that proof unforgeable:
//!
//! * only backends make tokens, through `unsafe` constructors whose contract is that each index
//!   is handed to exactly one iteration at a time;
//! * a token carries the invariant lifetime brand `'it` of the launch that made it, and kernels
//!   are `for<'it> Fn(Idx<'it>)`, so a token cannot be stored past its iteration;
//! * tokens are `Copy` but neither `Send` nor `Sync`, so they cannot be smuggled to another
//!   thread.
//!
//! For reading, a token is just its index: `*i`, `i.get()`, `i + 1` and `usize::from(i)` all
//! give plain `usize` values.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Add, Deref, Sub};

/// Invariant in `'it`, and `!Send + !Sync` through the raw pointer.
type Brand<'it> = PhantomData<(fn(&'it ()) -> &'it (), *const ())>;

/// The index of one iteration of a one-dimensional launch (range policies, nested ranges).
///
/// ```
/// use hoplite_core::Idx;
/// fn body(i: Idx<'_>) -> usize {
///     *i + (i + 1) + i.get() // a token reads as a plain index
/// }
/// # let _ = body;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Idx<'it> {
    index: usize,
    brand: Brand<'it>,
}

impl<'it> Idx<'it> {
    /// Makes the token of index `index` for one iteration of a launch.
    ///
    /// # Safety
    ///
    /// For backend authors only. While this token (or a copy) is alive, no other live token of
    /// the same launch may carry the same index: each index is handed to exactly one iteration
    /// at a time, and the token is used only on the thread that runs that iteration. The launch
    /// must pass the token to a kernel that is generic over `'it`
    /// (`for<'it> Fn(Idx<'it>, ..)`), so the token cannot outlive the iteration.
    #[inline(always)]
    pub unsafe fn new_unchecked(index: usize) -> Self {
        Idx {
            index,
            brand: PhantomData,
        }
    }

    /// The index as a plain number.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }
}

impl Deref for Idx<'_> {
    type Target = usize;
    #[inline(always)]
    fn deref(&self) -> &usize {
        &self.index
    }
}

impl From<Idx<'_>> for usize {
    #[inline(always)]
    fn from(i: Idx<'_>) -> usize {
        i.index
    }
}

impl Add<usize> for Idx<'_> {
    type Output = usize;
    #[inline(always)]
    fn add(self, rhs: usize) -> usize {
        self.index + rhs
    }
}

impl Sub<usize> for Idx<'_> {
    type Output = usize;
    #[inline(always)]
    fn sub(self, rhs: usize) -> usize {
        self.index - rhs
    }
}

impl fmt::Debug for Idx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Idx({})", self.index)
    }
}

impl fmt::Display for Idx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.index, f)
    }
}

/// The index of one iteration of a rank-`R` [`MDRangePolicy`](crate::MDRangePolicy) launch.
///
/// ```
/// use hoplite_core::MdIdx;
/// fn body(ij: MdIdx<'_, 2>) -> usize {
///     let [i, j] = *ij;
///     i * 10 + j + ij[1]
/// }
/// # let _ = body;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MdIdx<'it, const R: usize> {
    index: [usize; R],
    brand: Brand<'it>,
}

impl<'it, const R: usize> MdIdx<'it, R> {
    /// Makes the token of the multi-index `index` for one iteration of a launch.
    ///
    /// # Safety
    ///
    /// The same contract as [`Idx::new_unchecked`]: each multi-index is handed to exactly one
    /// iteration at a time, on one thread, through a kernel generic over `'it`.
    #[inline(always)]
    pub unsafe fn new_unchecked(index: [usize; R]) -> Self {
        MdIdx {
            index,
            brand: PhantomData,
        }
    }

    /// The multi-index as plain numbers.
    #[inline(always)]
    pub fn get(self) -> [usize; R] {
        self.index
    }
}

impl<const R: usize> Deref for MdIdx<'_, R> {
    type Target = [usize; R];
    #[inline(always)]
    fn deref(&self) -> &[usize; R] {
        &self.index
    }
}

impl<const R: usize> fmt::Debug for MdIdx<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MdIdx{:?}", self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_as_plain_indices() {
        // SAFETY: a single token of index 7, used only on this thread.
        let i = unsafe { Idx::new_unchecked(7) };
        assert_eq!(*i, 7);
        assert_eq!(i + 1, 8);
        assert_eq!(i - 7, 0);
        assert_eq!(usize::from(i), 7);
        assert_eq!(format!("{i} {i:?}"), "7 Idx(7)");
        // SAFETY: a single token of index [1, 2], used only on this thread.
        let ij = unsafe { MdIdx::new_unchecked([1, 2]) };
        assert_eq!(ij[0] * 10 + ij[1], 12);
        assert_eq!(ij.get(), [1, 2]);
    }
}
