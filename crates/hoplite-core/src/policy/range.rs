//! [`RangePolicy`]: a one-dimensional range.

use std::num::NonZeroUsize;
use std::ops::Range;

use super::{ExecutionPolicy, Schedule, check_chunk, check_occupancy, occupancy_is_valid};
use crate::error::{Error, Result};
use crate::index::{Idx, IndexBounds};
use crate::space::ExecutionSpace;

/// A one-dimensional range `begin..end` (Kokkos `RangePolicy`). Kernels receive an [`Idx`].
///
/// ```
/// use hoplite_core::{RangePolicy, Schedule};
/// use hoplite_serial::Serial;
/// let p = RangePolicy::new(Serial::default(), 10..20)
///     .with_schedule(Schedule::Dynamic)
///     .with_chunk_size(4);
/// assert_eq!(p.len(), 10);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RangePolicy<S: ExecutionSpace> {
    pub(super) space: S,
    pub(super) begin: usize,
    pub(super) end: usize,
    // Eight bytes with a niche rather than `Option<usize>`'s sixteen: building a policy then
    // takes single stores, and the serial launch no longer stalls on reading it back.
    chunk: Option<NonZeroUsize>,
    /// `with_chunk_size(0)` was asked for; reported at launch.
    zero_chunk: bool,
    pub(super) schedule: Schedule,
    pub(super) deterministic: bool,
    pub(super) occupancy: Option<u8>,
}

impl<S: ExecutionSpace> RangePolicy<S> {
    /// The range `range` on the instance `space`.
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, RangePolicy, Sum};
    /// use hoplite_serial::Serial;
    /// let policy = RangePolicy::new(Serial::default(), 10..20);
    /// assert_eq!((policy.begin(), policy.end(), policy.len()), (10, 20, 10));
    /// let total = parallel_reduce("sum", policy, |i, acc: &mut usize| *acc += *i, Sum::new())?;
    /// assert_eq!(total, (10..20).sum::<usize>());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn new(space: S, range: Range<usize>) -> Self {
        RangePolicy {
            space,
            begin: range.start,
            end: range.end,
            chunk: None,
            zero_chunk: false,
            schedule: Schedule::Static,
            deterministic: false,
            occupancy: None,
        }
    }

    /// Asks for a deterministic reduction: the same bits for any number of threads and any
    /// run. Backends split the range by size and chunk alone (never by thread count) and
    /// join the partial results in a fixed order. Costs a little speed on parallel backends;
    /// the serial backend is always deterministic.
    pub fn with_deterministic_reduction(mut self, deterministic: bool) -> Self {
        self.deterministic = deterministic;
        self
    }

    /// Whether a deterministic reduction was asked for.
    pub fn deterministic_reduction(&self) -> bool {
        self.deterministic
    }

    /// Sets how many consecutive iterations a thread takes at a time (at least 1).
    pub fn with_chunk_size(mut self, chunk: usize) -> Self {
        self.chunk = NonZeroUsize::new(chunk);
        self.zero_chunk = chunk == 0;
        self
    }

    /// Sets the schedule.
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Asks a device backend to launch at most `percent` (1 to 100) of the blocks the device
    /// keeps resident for this kernel (Kokkos `DesiredOccupancy`).
    ///
    /// A GPU runs kernels of different streams side by side only where the first leaves
    /// room: a launch whose grid covers its whole range fills every multiprocessor, and a
    /// kernel queued on another stream starts as its blocks drain. With a desired occupancy
    /// the launched threads walk the rest of the range, so what is computed does not change
    /// (axiom 3 of [`ExecutionPolicy`]), only how much of the device the launch holds at a
    /// time. It pays where independent launches on several streams (a DAG's, or streams
    /// ordered by hand) are each too small to fill the device, and costs a launch that is
    /// alone on it. Host backends run every launch on all their threads and ignore it. A
    /// value outside 1 to 100 is [`Error::InvalidOccupancy`] at launch, on every backend.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, Error, RangePolicy, View};
    /// use hoplite_serial::Serial;
    /// let p = RangePolicy::new(Serial::default(), 0..1 << 20).with_desired_occupancy(25);
    /// assert_eq!(p.desired_occupancy(), Some(25));
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// let none = RangePolicy::new(Serial::default(), 0..8).with_desired_occupancy(0);
    /// let refused = parallel_for("none", (none, (x.write(),)), |(i, (x,))| x.set(i, 1.0));
    /// assert!(matches!(refused, Err(Error::InvalidOccupancy { percent: 0, .. })));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn with_desired_occupancy(mut self, percent: u8) -> Self {
        self.occupancy = Some(percent);
        self
    }

    /// The desired occupancy asked for, in percent, if any.
    pub fn desired_occupancy(&self) -> Option<u8> {
        self.occupancy
    }

    /// The same range, chunk size, schedule, reduction mode and desired occupancy on an instance of another space:
    /// how a backend that runs its launches on another backend's instances hands a policy on.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Schedule};
    /// use hoplite_serial::Serial;
    /// let p = RangePolicy::new(Serial::default(), 3..9).with_chunk_size(2).with_schedule(Schedule::Dynamic);
    /// let q: RangePolicy<Serial> = p.clone().on_space(Serial::default());
    /// assert_eq!(q, p);
    /// ```
    pub fn on_space<S2: ExecutionSpace>(self, space: S2) -> RangePolicy<S2> {
        RangePolicy {
            space,
            begin: self.begin,
            end: self.end,
            chunk: self.chunk,
            zero_chunk: self.zero_chunk,
            schedule: self.schedule,
            deterministic: self.deterministic,
            occupancy: self.occupancy,
        }
    }

    /// First index.
    pub fn begin(&self) -> usize {
        self.begin
    }

    /// One past the last index.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Number of iterations (0 when `begin >= end`).
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.begin)
    }

    /// Whether there are no iterations.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk size asked for, if any.
    pub fn chunk_size(&self) -> Option<usize> {
        if self.zero_chunk {
            Some(0)
        } else {
            self.chunk.map(NonZeroUsize::get)
        }
    }

    /// The schedule.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }
}

// SAFETY: the range `begin..end` is the index space and the bounds; both are fields fixed at
// construction, and dispatches visit exactly `begin..end` (the `ParallelFor` contract).
unsafe impl<S: ExecutionSpace> ExecutionPolicy for RangePolicy<S> {
    type Space = S;
    type Item<'it> = Idx<'it>;
    const KIND: &'static str = "RangePolicy";

    fn space(&self) -> &S {
        &self.space
    }
    fn with_space(mut self, space: S) -> Self {
        self.space = space;
        self
    }

    fn index_bounds(&self) -> IndexBounds {
        IndexBounds::Range {
            begin: self.begin,
            end: self.end,
        }
    }

    #[inline(always)]
    fn validate(&self, label: &str) -> Result<()> {
        // The common case stays inline and branch-cheap; building the error is out of line.
        if self.begin <= self.end && !self.zero_chunk && occupancy_is_valid(self.occupancy) {
            return Ok(());
        }
        self.invalid(label)
    }
}

impl<S: ExecutionSpace> RangePolicy<S> {
    #[cold]
    #[inline(never)]
    fn invalid(&self, label: &str) -> Result<()> {
        if self.begin > self.end {
            return Err(Error::InvalidRange {
                label: label.to_owned(),
                dim: None,
                begin: self.begin,
                end: self.end,
            });
        }
        check_chunk(label, self.chunk_size())?;
        check_occupancy(label, self.occupancy)
    }
}
