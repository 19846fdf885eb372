//! Execution information that backends report to policies, and the type-level sets of it that
//! policies ask for.
//!
//! A policy names the infos it needs as a tuple of the marker types [`TaskTime`],
//! [`TaskSubmission`] and [`TaskCompletion`] (its [`Logic::Infos`](crate::Logic::Infos)); the
//! tuple is an [`InfoSet`]. Backends read the set's constants — known at compile time — and
//! instrument only what is asked, and size the per-selection scratch space from it: a policy
//! that asks for nothing (round robin) gets a zero-sized scratch and no clock reads.
//!
//! ```
//! use hoplite_select::{InfoSet, TaskCompletion, TaskSubmission, TaskTime};
//! assert!(<(TaskTime,) as InfoSet>::TASK_TIME);
//! assert!(!<() as InfoSet>::TASK_TIME);
//! assert_eq!(size_of::<<() as InfoSet>::StartTime>(), 0);
//! assert!(<(TaskSubmission, TaskCompletion) as InfoSet>::TASK_COMPLETION);
//! ```

use std::time::{Duration, Instant};

/// Execution info: how long a task took, from just before its function was called until the
/// backend knew it had finished. Reported as [`Report::TaskTime`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskTime;

/// Execution info: a task was submitted to the selected resource. Reported as
/// [`Report::TaskSubmission`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskSubmission;

/// Execution info: a submitted task completed. Reported as [`Report::TaskCompletion`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskCompletion;

/// One report from a backend to the policy that made a selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The task ran for this long ([`TaskTime`]).
    TaskTime(Duration),
    /// The task was submitted ([`TaskSubmission`]).
    TaskSubmission,
    /// The task completed ([`TaskCompletion`]).
    TaskCompletion,
}

/// A type-level set of execution infos: a tuple of [`TaskTime`], [`TaskSubmission`] and
/// [`TaskCompletion`], in that order, each at most once (`()` is the empty set).
///
/// The constants say which infos the set holds; [`StartTime`](Self::StartTime) is the scratch
/// space a timing backend needs for it: an [`Instant`] when [`TaskTime`] is in the set, nothing
/// otherwise.
pub trait InfoSet: Send + Sync + 'static {
    /// Whether [`TaskTime`] is in the set.
    const TASK_TIME: bool;
    /// Whether [`TaskSubmission`] is in the set.
    const TASK_SUBMISSION: bool;
    /// Whether [`TaskCompletion`] is in the set.
    const TASK_COMPLETION: bool;
    /// Scratch space for a start time: [`Started`] with [`TaskTime`], `()` without.
    type StartTime: StartSlot;

    /// Whether `report` is one of the infos in the set.
    #[inline(always)]
    fn wants(report: &Report) -> bool {
        match report {
            Report::TaskTime(_) => Self::TASK_TIME,
            Report::TaskSubmission => Self::TASK_SUBMISSION,
            Report::TaskCompletion => Self::TASK_COMPLETION,
        }
    }
}

macro_rules! info_set {
    ($($set:ty => $time:literal, $submission:literal, $completion:literal, $slot:ty;)*) => {$(
        impl InfoSet for $set {
            const TASK_TIME: bool = $time;
            const TASK_SUBMISSION: bool = $submission;
            const TASK_COMPLETION: bool = $completion;
            type StartTime = $slot;
        }
    )*};
}

info_set! {
    () => false, false, false, ();
    (TaskTime,) => true, false, false, Started;
    (TaskSubmission,) => false, true, false, ();
    (TaskCompletion,) => false, false, true, ();
    (TaskTime, TaskSubmission) => true, true, false, Started;
    (TaskTime, TaskCompletion) => true, false, true, Started;
    (TaskSubmission, TaskCompletion) => false, true, true, ();
    (TaskTime, TaskSubmission, TaskCompletion) => true, true, true, Started;
}

/// Room for the time a task started, or nothing ([`InfoSet::StartTime`]).
pub trait StartSlot: Default + Send + Sync + 'static {
    /// The slot filled with the current time (a no-op for `()`).
    fn start() -> Self;
    /// Time since [`start`](Self::start), or `None` if the slot keeps no time.
    fn elapsed(&self) -> Option<Duration>;
}

impl StartSlot for () {
    #[inline(always)]
    fn start() -> Self {}

    #[inline(always)]
    fn elapsed(&self) -> Option<Duration> {
        None
    }
}

/// A start time, kept when a policy asks for [`TaskTime`].
///
/// ```
/// use hoplite_select::{StartSlot, Started};
/// assert!(Started::default().elapsed().is_none());
/// assert!(Started::start().elapsed().is_some());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Started(Option<Instant>);

impl StartSlot for Started {
    #[inline]
    fn start() -> Self {
        Started(Some(Instant::now()))
    }

    #[inline]
    fn elapsed(&self) -> Option<Duration> {
        self.0.map(|t| t.elapsed())
    }
}
