//! The `ExecutionPolicy` concept: [`RangePolicy`], [`MDRangePolicy`] and [`TeamPolicy`].
//!
//! Builders are infallible and cheap; a policy is checked once, when it is launched, so the
//! error can name the launch's label. The seed's wish that a range be "an MDRange of rank 1"
//! and "a team policy of one-thread teams" is provided by conversions:
//! `RangePolicy -> MDRangePolicy<_, 1> -> TeamPolicy`.

use std::fmt::Debug;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::index::IndexBounds;
use crate::space::ExecutionSpace;

/// How iterations are distributed over threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Equal shares fixed up front (Kokkos `Schedule<Static>`): lowest overhead.
    #[default]
    Static,
    /// Chunks handed out on demand (Kokkos `Schedule<Dynamic>`): balances uneven work.
    Dynamic,
}

/// Which index runs fastest (Kokkos `Iterate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IterationOrder {
    /// The last index runs fastest (row-major).
    #[default]
    Right,
    /// The first index runs fastest (column-major).
    Left,
}

/// The `ExecutionPolicy` concept: what to iterate over, on which instance, and how.
///
/// # Requirements
///
/// `Clone + Send + Sync + Debug`; the execution space instance it runs on; the kernel argument
/// type `Item<'it>` (the iteration token, or a team member); a launch-time check.
///
/// # Axioms
///
/// 1. *Exactly once.* A launch calls the kernel once for every point of the policy's index
///    space and for no other point.
/// 2. *Validation.* [`validate`](Self::validate) returns `Ok` exactly when the policy can be
///    launched on a space whose limits are those of [`space`](Self::space); every dispatch
///    calls it first, so a launched policy is a valid one.
/// 3. *Scheduling does not change results.* Chunk size, schedule and tiles change only how
///    work is distributed, never which points are visited; only the order of visits and,
///    for floating-point reductions, the rounding may differ.
///
/// # Safety
///
/// A launch checks view handles once against [`index_bounds`](Self::index_bounds), and bound
/// writers then store at the tokens of the launch without a bounds check. An implementation
/// promises that `index_bounds` contains every point of the policy's index space — every point
/// a dispatch of this policy visits, which dispatches read from the same policy value — that
/// it gives the same answer on every call and for every clone, and that `Item<'it>` carries
/// the brand `'it` wherever it holds a token or a team member. The three policies of this
/// crate are the implementations; a backend or application adding its own policy signs the
/// same contract (a policy that reported less than it visits would let safe kernels store out
/// of bounds).
///
/// ```
/// use hoplite_core::{ExecutionPolicy, RangePolicy};
/// use hoplite_serial::Serial;
/// let p = RangePolicy::new(Serial::default(), 0..100).with_chunk_size(16);
/// assert!(p.validate("ok").is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an execution policy",
    label = "expected a RangePolicy, MDRangePolicy or TeamPolicy",
    note = "the facade `hoplite` also accepts a plain `usize` or `Range<usize>` on the default execution space"
)]
pub unsafe trait ExecutionPolicy: Clone + Send + Sync + Debug {
    /// The execution space this policy launches on.
    type Space: ExecutionSpace;
    /// What the kernel receives for one iteration.
    type Item<'it>;
    /// The policy's name in messages.
    const KIND: &'static str;
    /// The instance this policy launches on.
    fn space(&self) -> &Self::Space;
    /// The same policy on another instance of its space: how a runtime that records launches
    /// (a graph node, a DAG vertex) runs one on the instance it picks.
    ///
    /// ```
    /// use hoplite_core::{ExecutionPolicy, RangePolicy};
    /// use hoplite_serial::Serial;
    /// let (first, second) = (Serial::new(), Serial::new());
    /// let on_first = RangePolicy::new(first.clone(), 0..100).with_chunk_size(10);
    /// let on_second = on_first.clone().with_space(second.clone());
    /// assert!(on_second.space() == &second && on_second.space() != &first);
    /// assert_eq!((on_second.begin(), on_second.end(), on_second.chunk_size()), (0, 100, Some(10)));
    /// ```
    fn with_space(self, space: Self::Space) -> Self;
    /// Checks the policy against its space's limits; `label` names the launch in the error.
    fn validate(&self, label: &str) -> Result<()>;
    /// The index space the launch's tokens cover, to check view handles against once.
    fn index_bounds(&self) -> IndexBounds;
}

/// Turns something into an execution policy on space `S`: a policy itself, or on the
/// facade's default space a plain `usize` (`0..n`) or `Range<usize>`.
///
/// ```
/// use hoplite_core::{IntoPolicy, RangePolicy};
/// use hoplite_serial::Serial;
/// let p: RangePolicy<Serial> = IntoPolicy::<Serial>::into_policy(10usize);
/// assert_eq!((p.begin(), p.end()), (0, 10));
/// ```
pub trait IntoPolicy<S: ExecutionSpace> {
    /// The policy it becomes.
    type Policy: ExecutionPolicy;
    /// Converts.
    fn into_policy(self) -> Self::Policy;
}

impl<S: ExecutionSpace, P: ExecutionPolicy> IntoPolicy<S> for P {
    type Policy = P;
    fn into_policy(self) -> P {
        self
    }
}

/// A policy by reference: the launch takes a copy (policies are cheap to clone: the space is
/// a handle), so one policy serves many launches without `.clone()` at each.
macro_rules! into_policy_by_reference {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<S: ExecutionSpace, $($g)*> IntoPolicy<S> for &$t {
            type Policy = $t;
            fn into_policy(self) -> $t {
                self.clone()
            }
        }
    )*};
}

into_policy_by_reference! {
    impl[S2: ExecutionSpace] RangePolicy<S2>;
    impl[S2: ExecutionSpace, const R: usize] MDRangePolicy<S2, R>;
    impl[S2: ExecutionSpace] TeamPolicy<S2>;
}

impl<S: ExecutionSpace> IntoPolicy<S> for usize {
    type Policy = RangePolicy<S>;
    fn into_policy(self) -> RangePolicy<S> {
        RangePolicy::new(S::default(), 0..self)
    }
}

impl<S: ExecutionSpace> IntoPolicy<S> for Range<usize> {
    type Policy = RangePolicy<S>;
    fn into_policy(self) -> RangePolicy<S> {
        RangePolicy::new(S::default(), self)
    }
}

/// Whether a desired occupancy is unset or a percentage from 1 to 100.
#[inline(always)]
fn occupancy_is_valid(occupancy: Option<u8>) -> bool {
    occupancy.is_none_or(|percent| (1..=100).contains(&percent))
}

fn check_occupancy(label: &str, occupancy: Option<u8>) -> Result<()> {
    match occupancy {
        Some(percent) if !occupancy_is_valid(occupancy) => Err(Error::InvalidOccupancy {
            label: label.to_owned(),
            percent,
        }),
        _ => Ok(()),
    }
}

#[inline(always)]
fn check_chunk(label: &str, chunk: Option<usize>) -> Result<()> {
    match chunk {
        Some(0) => Err(Error::ZeroChunk {
            label: label.to_owned(),
        }),
        _ => Ok(()),
    }
}

mod convert;
mod mdrange;
mod range;
mod team;

pub(crate) use mdrange::for_each_line;
pub use mdrange::{
    DEFAULT_LINE_TILE, MAX_MDRANGE_RANK, MDRangePolicy, MdBound, TileShare, Tiling, for_each_point,
};
pub use range::RangePolicy;
pub use team::{PerTeam, PerThread, SCRATCH_LEVELS, TeamPolicy, TeamSize, VectorLength};
