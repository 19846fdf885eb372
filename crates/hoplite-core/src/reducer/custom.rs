//! [`Custom`]: a reducer from an identity, a join and an optional finalize.

use std::fmt;
use std::marker::PhantomData;

use super::Reducer;

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
/// use hoplite_core::{Custom, Reducer};
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
