//! # hoplite-select
//!
//! Dynamic selection in the style of oneDPL: a *policy* picks a *resource* — a pool instance,
//! a NUMA node, a stream — for each submission, and a *backend* runs the submitted function on
//! it and reports execution info back to the policy.
//!
//! | oneDPL | hoplite-select |
//! |--------|----------------|
//! | `backend_base` with overridable `_impl` hooks | [`Backend`] with provided methods |
//! | `default_backend<R>` | [`DefaultBackend<R>`] (no code for a new resource type) |
//! | `backend_for_resource<R>` | [`BackendFor`] |
//! | `round_robin_policy`, `fixed_resource_policy`, `dynamic_load_policy`, `auto_tune_policy` | [`RoundRobin`], [`FixedResource`], [`DynamicLoad`], [`AutoTune`] |
//! | `execution_info::task_time`, `task_submission`, `task_completion` | [`TaskTime`], [`TaskSubmission`], [`TaskCompletion`] |
//! | `scratch_t<Info...>` | [`Backend::Scratch`], sized by the policy's [`InfoSet`] |
//! | `select`, `submit`, `submit_and_wait`, `wait`, `get_resources`, `get_submission_group` | the free functions of the same names, plus [`try_submit`] |
//! | `logic_error` when waiting on a group of resources without `wait` | a compile error ([`WaitAll`]) |
//! | `deferred_initialization` | [`Policy::deferred`] + [`Policy::initialize`]; use before it is [`SelectError::NotInitialized`] |
//!
//! Every [`ExecutionSpace`](hoplite_core::ExecutionSpace) instance is a resource with a
//! reporting backend ([`SpaceBackend`]): rayon pool instances from `partition_space`, serial
//! instances, and any future space, with no backend-specific code.
//!
//! ```
//! use hoplite_core::{parallel_reduce, RangePolicy, Sum};
//! use hoplite_rayon::RayonSpace;
//! use hoplite_select::{get_submission_group, submit, submit_and_wait, wait, DynamicLoad, RoundRobin};
//!
//! let pools = RayonSpace::with_threads(2)?.partition_space(2)?;
//! let sum = |pool: &RayonSpace, n: usize| {
//!     parallel_reduce("sum", RangePolicy::new(pool.clone(), 0..n), |i, a| *a += *i, Sum::new())
//! };
//!
//! let rr = RoundRobin::new(pools.clone());
//! let a = submit(&rr, sum, 10)?;
//! let b = submit(&rr, sum, 100)?;
//! assert_eq!((a.index(), b.index()), (0, 1));
//! wait(&get_submission_group(&rr)?)?;
//! assert_eq!((a.unwrap()?, b.unwrap()?), (45, 4950));
//!
//! let least_loaded = DynamicLoad::new(pools);
//! assert_eq!(submit_and_wait(&least_loaded, sum, 4)??, 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Writing a backend
//!
//! A backend needs its resource type, its scratch type and `resources()`; the rest has
//! defaults. To report, override [`Backend::instrument_before`] and
//! [`Backend::instrument_after`] and check the policy's [`InfoSet`] constants there. See
//! `examples/numa_custom_backend.rs` for a backend in under 25 lines.

mod backend;
mod builtin_policies;
mod error;
mod generic_policy;
mod info;
mod queue;
mod selection;

pub use backend::{
    Adapted, Backend, BackendFor, DefaultBackend, FromResources, SpaceBackend, Submission, SubmissionGroup,
    Wait, WaitAll, wait_each,
};
pub use builtin_policies::{
    AutoTune, DynamicLoad, ExplicitKey, FixedLogic, FixedResource, KeyArgs, KeyHistory, KeyedAutoTune,
    LoadLogic, NoKey, RoundRobin, RoundRobinLogic, TuneKey, TuneKeyOf, TuneLogic, TuneState,
};
pub use error::SelectError;
pub use generic_policy::{KeyFor, Logic, Policy};
pub use info::{InfoSet, Report, StartSlot, Started, TaskCompletion, TaskSubmission, TaskTime};
pub use queue::AsyncSubmission;
pub use selection::Selection;

/// Chooses a resource for submitting `f` with `args` (the function and arguments are the key
/// an auto-tune policy chooses by). Submit to it with [`Selection::submit`].
///
/// # Errors
///
/// [`SelectError::NotInitialized`], [`SelectError::NoResources`],
/// [`SelectError::NoResourceAvailable`], or what the policy reports.
///
/// ```
/// use hoplite_select::{select, FixedResource};
/// use hoplite_serial::Serial;
/// let p = FixedResource::new(vec![Serial::new(), Serial::new()]).with_offset(1);
/// assert_eq!(select(&p, &|_: &Serial, ()| (), &())?.index(), 1);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn select<'p, L, R, B, F, A>(
    policy: &'p Policy<L, R, B>,
    f: &F,
    args: &A,
) -> Result<Selection<'p, L, B>, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
{
    policy.select(f, args)
}

/// Selects a resource and submits `f(resource, args)` to it; does not wait.
///
/// # Errors
///
/// As [`select`].
///
/// ```
/// use hoplite_select::{submit, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new()]);
/// let s = submit(&p, |_, (a, b): (i32, i32)| a * b, (6, 7))?;
/// s.wait()?;
/// assert_eq!(s.unwrap(), 42);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn submit<'p, L, R, B, F, A, W>(
    policy: &'p Policy<L, R, B>,
    f: F,
    args: A,
) -> Result<Submission<'p, L, B, W>, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
    F: FnOnce(&R, A) -> W,
{
    policy.submit(f, args)
}

/// Like [`submit`], but `Ok(None)` when no resource is available now (a policy without
/// resources, or a [`DynamicLoad`] policy whose resources are all at their limit).
///
/// # Errors
///
/// [`SelectError::NotInitialized`], or what the policy reports.
///
/// ```
/// use hoplite_select::{try_submit, DefaultBackend, DynamicLoad};
/// // The default backend counts a submission as unfinished until it is waited on.
/// let p = DynamicLoad::<char, DefaultBackend<char>>::with_resources(vec!['a']).with_limit(1);
/// let first = try_submit(&p, |_, ()| (), ())?.expect("resource 0 is idle");
/// assert!(try_submit(&p, |_, ()| (), ())?.is_none());
/// first.wait()?;
/// assert!(try_submit(&p, |_, ()| (), ())?.is_some());
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn try_submit<'p, L, R, B, F, A, W>(
    policy: &'p Policy<L, R, B>,
    f: F,
    args: A,
) -> Result<Option<Submission<'p, L, B, W>>, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
    F: FnOnce(&R, A) -> W,
{
    policy.try_submit(f, args)
}

/// Submits, waits for the submission and returns what `f` returned.
///
/// # Errors
///
/// As [`submit`], and what waiting reports.
///
/// ```
/// use hoplite_select::{submit_and_wait, AutoTune};
/// use hoplite_serial::Serial;
/// let p = AutoTune::new(vec![Serial::new(), Serial::new()]);
/// assert_eq!(submit_and_wait(&p, |_, x: u8| x + 1, 1)?, 2);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn submit_and_wait<L, R, B, F, A, W>(policy: &Policy<L, R, B>, f: F, args: A) -> Result<W, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
    F: FnOnce(&R, A) -> W,
{
    policy.submit_and_wait(f, args)
}

/// Queues `f(resource, args)` on the selected resource's own queue and returns at once; see
/// [`Policy::submit_async`]. Submissions to different resources run at the same time, those
/// to one resource in order.
///
/// # Errors
///
/// As [`Policy::submit_async`].
///
/// ```
/// use hoplite_select::{submit_async, wait, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new(), Serial::new()]);
/// let a = submit_async(&p, |_, x: u64| x * 2, 21)?;
/// let b = submit_async(&p, |_, s: String| s.len(), "four".to_string())?;
/// assert_eq!((a.index(), b.index()), (0, 1));
/// wait(&p.get_submission_group()?)?;
/// assert!(a.is_done() && b.is_done());
/// assert_eq!((a.unwrap()?, b.unwrap()?), (42, 4));
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn submit_async<'p, L, R, B, F, A, W>(
    policy: &'p Policy<L, R, B>,
    f: F,
    args: A,
) -> Result<AsyncSubmission<'p, L, B, W>, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
    R: Clone + Send + 'static,
    F: FnOnce(&R, A) -> W + Send + 'static,
    A: Send + 'static,
    W: Send + 'static,
{
    policy.submit_async(f, args)
}

/// Like [`submit_async`], but `Ok(None)` when no resource is available now.
///
/// # Errors
///
/// As [`Policy::try_submit_async`].
#[inline]
pub fn try_submit_async<'p, L, R, B, F, A, W>(
    policy: &'p Policy<L, R, B>,
    f: F,
    args: A,
) -> Result<Option<AsyncSubmission<'p, L, B, W>>, SelectError>
where
    L: KeyFor<F, A>,
    B: Backend<Resource = R>,
    R: Clone + Send + 'static,
    F: FnOnce(&R, A) -> W + Send + 'static,
    A: Send + 'static,
    W: Send + 'static,
{
    policy.try_submit_async(f, args)
}

/// Waits on a submission, a submission group, a resource or a value that can wait.
///
/// # Errors
///
/// What waiting reports.
///
/// ```
/// use hoplite_select::{submit, wait, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new()]);
/// wait(&submit(&p, |_, ()| (), ())?)?;
/// wait(&p.get_submission_group()?)?;
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[inline]
pub fn wait<W: Wait + ?Sized>(waitable: &W) -> Result<(), SelectError> {
    waitable.wait()
}

/// The policy's resources.
///
/// # Errors
///
/// [`SelectError::NotInitialized`] before `initialize`.
///
/// ```
/// use hoplite_select::{get_resources, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::<Serial>::default();
/// assert_eq!(get_resources(&p)?, [Serial::default()]);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub fn get_resources<L, R, B>(policy: &Policy<L, R, B>) -> Result<Vec<R>, SelectError>
where
    L: Logic,
    R: Clone,
    B: Backend<Resource = R>,
{
    policy.get_resources()
}

/// The group of all submissions to the policy's backend, to [`wait`] on. Compiles only where
/// the backend can wait ([`WaitAll`]).
///
/// # Errors
///
/// [`SelectError::NotInitialized`] before `initialize`.
///
/// ```
/// use hoplite_select::{get_submission_group, submit, wait, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new(), Serial::new()]);
/// let _ = submit(&p, |_, ()| (), ())?;
/// wait(&get_submission_group(&p)?)?;
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub fn get_submission_group<L, R, B>(policy: &Policy<L, R, B>) -> Result<SubmissionGroup<'_, B>, SelectError>
where
    L: Logic,
    B: WaitAll<Resource = R>,
{
    policy.get_submission_group()
}
