//! Backends: the [`Backend`] trait with the defaults of the seed's `backend_base`, the
//! [`Submission`] and [`SubmissionGroup`] types, and the built-in backends.

use std::fmt;
use std::ops::Deref;

use hoplite_core::ExecutionSpace;

use crate::error::SelectError;
use crate::generic_policy::Logic;
use crate::info::{InfoSet, Report, StartSlot};
use crate::queue::ResourceQueues;
use crate::selection::Selection;

/// Something that can block until its work is done: a resource whose submission group can be
/// waited on, a value returned by a submitted function, a [`Submission`], a [`SubmissionGroup`].
///
/// The seed's default backend throws a `logic_error` at run time when a group of resources
/// without `wait` is waited on; here the missing `Wait` is a compile error instead. (Execution
/// spaces need no `Wait` impl: their backend, [`SpaceBackend`], waits by fencing.)
///
/// ```
/// use hoplite_select::{wait, Wait, SelectError};
/// struct Flag;
/// impl Wait for Flag {
///     fn wait(&self) -> Result<(), SelectError> { Ok(()) }
/// }
/// wait(&Flag)?;
/// # Ok::<(), SelectError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot wait",
    label = "this type does not implement `hoplite_select::Wait`",
    note = "implement `hoplite_select::Wait` for your resource or return type, or give the backend a `WaitAll` impl that knows how to wait (execution spaces have one: `SpaceBackend` fences)"
)]
pub trait Wait {
    /// Blocks until the work behind `self` has completed.
    ///
    /// # Errors
    ///
    /// Whatever waiting reports: a failed fence, a failed task.
    fn wait(&self) -> Result<(), SelectError>;
}

/// Plain values as resources (device numbers, names, tags): a value has no work of its own to
/// wait for — what a function submitted to it started is done when the function returns, or
/// is waited on through its return value — so waiting on it returns at once. This is what lets
/// the submission group of a [`DefaultBackend`] over plain values be waited on.
macro_rules! plain_values_wait {
    ($($t:ty),*) => {$(
        impl Wait for $t {
            #[inline(always)]
            fn wait(&self) -> Result<(), SelectError> {
                Ok(())
            }
        }
    )*};
}
plain_values_wait!(
    (),
    bool,
    char,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    String,
    &str
);

impl<T: Wait + ?Sized> Wait for std::sync::Arc<T> {
    fn wait(&self) -> Result<(), SelectError> {
        (**self).wait()
    }
}

impl<T: Wait + ?Sized> Wait for Box<T> {
    fn wait(&self) -> Result<(), SelectError> {
        (**self).wait()
    }
}

/// A backend whose submission group can be waited on: it knows how to wait for all previous
/// submissions to all its resources.
///
/// Implemented by [`DefaultBackend<R>`] when `R: Wait` (it waits on every resource), by
/// [`SpaceBackend`] and [`Adapted`] (they fence every space). A custom backend whose resources
/// wait implements it in one line with [`wait_each`].
#[diagnostic::on_unimplemented(
    message = "the submission group of `{Self}` cannot be waited on",
    label = "this backend does not implement `WaitAll`",
    note = "a group waits on every resource: use resources that implement `hoplite_select::Wait` (execution spaces do), or implement `WaitAll` for the backend"
)]
pub trait WaitAll: Backend {
    /// Blocks until every submission made so far to every resource has completed.
    ///
    /// # Errors
    ///
    /// The first error a resource reports.
    fn wait_all(&self) -> Result<(), SelectError>;
}

/// Waits on every resource in turn: the seed's default submission group, for resources that
/// can wait.
///
/// # Errors
///
/// The first error a resource reports.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use hoplite_select::{wait_each, SelectError, Wait};
/// struct Counted<'a>(&'a AtomicUsize);
/// impl Wait for Counted<'_> {
///     fn wait(&self) -> Result<(), SelectError> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         Ok(())
///     }
/// }
/// let waits = AtomicUsize::new(0);
/// wait_each(&[Counted(&waits), Counted(&waits)])?;
/// assert_eq!(waits.load(Ordering::Relaxed), 2);
/// # Ok::<(), SelectError>(())
/// ```
pub fn wait_each<R: Wait>(resources: &[R]) -> Result<(), SelectError> {
    resources.iter().try_for_each(Wait::wait)
}

/// A backend: owns the resources of a policy, runs a submitted function on the selected one and
/// reports execution info back to the policy.
///
/// Only [`Resource`](Self::Resource), [`Scratch`](Self::Scratch) and
/// [`resources`](Self::resources) are required; every other item has the default of the seed's
/// `backend_base`:
///
/// * [`submit`](Self::submit) runs four steps: [`instrument_before`](Self::instrument_before),
///   call `f(resource, args)`, [`instrument_after`](Self::instrument_after), which wraps the
///   returned value in a [`Submission`] (with `wait()` and `unwrap()`). Override the two hooks
///   to report, not `submit`.
/// * [`get_resources`](Self::get_resources) returns the resources the backend was built with.
/// * [`get_submission_group`](Self::get_submission_group) compiles only for backends that
///   implement [`WaitAll`] (for the default backend: resources that implement [`Wait`]).
/// * [`LAZY_REPORT`](Self::LAZY_REPORT) is `false`; [`lazy_report`](Self::lazy_report) is
///   called before each selection when it is `true`.
/// * [`wait_submission`](Self::wait_submission) (what `Submission::wait` does) does nothing.
///
/// A backend that reports execution info checks the policy's [`InfoSet`] constants (known at
/// compile time) and keeps what it needs between the two hooks in the selection's scratch space
/// ([`Scratch`](Self::Scratch), sized by the set).
///
/// ```
/// use hoplite_select::{submit, Backend, FromResources, InfoSet, RoundRobin};
/// struct Tags(Vec<&'static str>);
/// impl Backend for Tags {
///     type Resource = &'static str;
///     type Scratch<I: InfoSet> = ();
///     fn resources(&self) -> &[&'static str] { &self.0 }
/// }
/// impl FromResources for Tags {
///     fn from_resources(r: Vec<&'static str>) -> Self { Tags(r) }
/// }
/// let p: RoundRobin<&'static str, Tags> = RoundRobin::with_resources(vec!["a", "b"]);
/// let s = submit(&p, |tag, n: u32| format!("{tag}{n}"), 7)?;
/// assert_eq!(s.unwrap(), "a7");
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub trait Backend: Send + Sync + Sized {
    /// The resource type (the seed's `resource_t`).
    type Resource;

    /// Per-selection space the backend needs for the infos in `I` (the seed's `scratch_t`).
    /// `()` for a backend that does not report.
    type Scratch<I: InfoSet>: Default + Send;

    /// Whether the policy must call [`lazy_report`](Self::lazy_report) before each selection.
    const LAZY_REPORT: bool = false;

    /// The resources, in the order policies index them.
    fn resources(&self) -> &[Self::Resource];

    /// Step 1 of [`submit`](Self::submit): instrumentation before the function is called. The
    /// default does nothing.
    #[inline(always)]
    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        let _ = selection;
    }

    /// Steps 3 and 4 of [`submit`](Self::submit): instrumentation after the function returned
    /// `value`, and the [`Submission`] that wraps it. The default wraps it and reports nothing.
    #[inline(always)]
    fn instrument_after<'p, L: Logic, W>(
        &self,
        selection: Selection<'p, L, Self>,
        value: W,
    ) -> Submission<'p, L, Self, W> {
        Submission::new(selection, value)
    }

    /// Runs `f(resource, args)` on the selected resource between the two instrumentation hooks
    /// and returns the submission. It does not wait for what `f` started.
    #[inline(always)]
    fn submit<'p, L: Logic, A, W>(
        &self,
        mut selection: Selection<'p, L, Self>,
        f: impl FnOnce(&Self::Resource, A) -> W,
        args: A,
    ) -> Submission<'p, L, Self, W> {
        self.instrument_before(&mut selection);
        let value = f(selection.resource(), args);
        self.instrument_after(selection, value)
    }

    /// What [`Submission::wait`] does before it reports completion: waits for the work `value`
    /// stands for on `resource`. The default does nothing (a default backend cannot know how to
    /// wait on an arbitrary value; wait on [`Submission::unwrap`]'s value instead).
    ///
    /// # Errors
    ///
    /// Whatever waiting reports.
    fn wait_submission<W>(&self, resource: &Self::Resource, value: &W) -> Result<(), SelectError> {
        let _ = (resource, value);
        Ok(())
    }

    /// The resources (a copy of what the backend was built with).
    fn get_resources(&self) -> Vec<Self::Resource>
    where
        Self::Resource: Clone,
    {
        self.resources().to_vec()
    }

    /// An object whose `wait` blocks until all previous submissions to this backend completed.
    /// Compiles only where the backend can wait ([`WaitAll`]).
    fn get_submission_group(&self) -> SubmissionGroup<'_, Self>
    where
        Self: WaitAll,
    {
        SubmissionGroup {
            backend: self,
            queues: None,
        }
    }

    /// Flushes deferred reports; called before each selection when
    /// [`LAZY_REPORT`](Self::LAZY_REPORT) is `true`. The default does nothing.
    fn lazy_report(&self) {}
}

/// How a backend is made from resources, or by default.
///
/// ```
/// use hoplite_select::{FromResources, SpaceBackend, Backend};
/// use hoplite_serial::Serial;
/// assert_eq!(SpaceBackend::<Serial>::by_default().resources(), [Serial::default()]);
/// ```
pub trait FromResources: Backend {
    /// A backend over `resources` (the seed's `backend_base(const std::vector<resource_type>&)`).
    fn from_resources(resources: Vec<Self::Resource>) -> Self;

    /// A backend with the resources that make sense by default. The default has none (the
    /// seed's default-constructed `default_backend`).
    fn by_default() -> Self {
        Self::from_resources(Vec::new())
    }
}

/// Maps a resource type to its backend (the seed's `backend_for_resource`): the backend a
/// policy uses when it is built with [`Policy::new`](crate::Policy::new) or named by its
/// resource type alone (`RoundRobin<R>`).
///
/// Every execution space maps to [`SpaceBackend`]. For your own resource type, implement it —
/// pointing at [`DefaultBackend`] costs no backend code at all. The three ways of the seed:
///
/// 1. implement `BackendFor` for the resource (`RoundRobin<MyResource>`);
/// 2. point `BackendFor` at `DefaultBackend<MyResource>` (Rust has no specialization to
///    customize `DefaultBackend` itself, so a customized backend is its own type: way 1);
/// 3. name the backend in the policy type: `RoundRobin<MyResource, MyBackend>`.
///
/// ```
/// use hoplite_select::{submit, BackendFor, DefaultBackend, RoundRobin};
/// #[derive(Clone, Debug, PartialEq)]
/// struct Gpu(u32);
/// impl BackendFor for Gpu { type Backend = DefaultBackend<Gpu>; }
/// let p: RoundRobin<Gpu> = RoundRobin::new(vec![Gpu(0), Gpu(1)]);
/// assert_eq!(submit(&p, |g, ()| g.0, ())?.unwrap(), 0);
/// assert_eq!(submit(&p, |g, ()| g.0, ())?.unwrap(), 1);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub trait BackendFor: Sized {
    /// The backend for this resource type.
    type Backend: Backend<Resource = Self>;
}

impl<S: ExecutionSpace> BackendFor for S {
    type Backend = SpaceBackend<S>;
}

/// The backend for any resource type. It reports the submission, and the time the submitted
/// function took (so an auto-tuning policy learns which resource is fastest for work that is
/// done when the function returns); completion is reported when the submission is waited on,
/// unwrapped or dropped, since the backend cannot know whether the function started work that
/// goes on. `Submission::wait` does nothing more, and its submission group waits on every
/// resource — which compiles only when the resource implements [`Wait`].
///
/// ```
/// use hoplite_select::{submit, DefaultBackend, RoundRobin};
/// let p: RoundRobin<char, DefaultBackend<char>> = RoundRobin::with_resources(vec!['x', 'y']);
/// let picks: Vec<char> = (0..3).map(|_| submit(&p, |c, ()| *c, ()).map(|s| s.unwrap()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(picks, ['x', 'y', 'x']);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub struct DefaultBackend<R> {
    resources: Vec<R>,
}

impl<R: fmt::Debug> fmt::Debug for DefaultBackend<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultBackend")
            .field("resources", &self.resources)
            .finish()
    }
}

impl<R: Send + Sync> Backend for DefaultBackend<R> {
    type Resource = R;
    type Scratch<I: InfoSet> = I::StartTime;

    #[inline(always)]
    fn resources(&self) -> &[R] {
        &self.resources
    }

    #[inline(always)]
    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        space_before(selection);
    }

    #[inline(always)]
    fn instrument_after<'p, L: Logic, W>(
        &self,
        selection: Selection<'p, L, Self>,
        value: W,
    ) -> Submission<'p, L, Self, W> {
        report_task_time(&selection);
        Submission::new(selection, value)
    }
}

impl<R: Send + Sync> FromResources for DefaultBackend<R> {
    fn from_resources(resources: Vec<R>) -> Self {
        DefaultBackend { resources }
    }
}

impl<R: Wait + Send + Sync> WaitAll for DefaultBackend<R> {
    fn wait_all(&self) -> Result<(), SelectError> {
        wait_each(&self.resources)
    }
}

/// The reporting backend for execution-space instances — serial spaces, rayon pool instances
/// from `partition_space`, and every future space — with no space-specific code.
///
/// * Task submission is reported before `f` is called.
/// * Task time, when the policy asks for it, is the time from just before the call until the
///   space's fence returns after it (so asynchronous launches are counted in full).
/// * Task completion is reported as soon as `f` returns on a space whose launches are
///   synchronous ([`ExecutionSpace::synchronous_launches`]: serial, rayon); on an asynchronous
///   space, when the submission is waited on (a fence), unwrapped or dropped. Also when the
///   function panicked.
/// * The submission group fences every instance. By default the backend has one resource,
///   the space's default instance.
///
/// ```
/// use hoplite_core::{parallel_reduce, RangePolicy, Sum};
/// use hoplite_rayon::RayonSpace;
/// use hoplite_select::{submit, wait, RoundRobin};
/// let pools = RayonSpace::with_threads(2)?.partition_space(2)?;
/// let policy = RoundRobin::new(pools);
/// let s = submit(&policy, |pool, n: usize| {
///     parallel_reduce("sum", RangePolicy::new(pool.clone(), 0..n), |i, a| *a += *i, Sum::<usize>::new())
/// }, 100)?;
/// wait(&s)?;
/// assert_eq!(s.unwrap()?, 4950);
/// wait(&policy.get_submission_group()?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SpaceBackend<S> {
    spaces: Vec<S>,
}

/// Step 1 for a space: report the submission, start the clock if task time is asked for.
#[inline(always)]
fn space_before<L: Logic, B: Backend<Scratch<L::Infos> = <L::Infos as InfoSet>::StartTime>>(
    selection: &mut Selection<'_, L, B>,
) {
    if <L::Infos as InfoSet>::TASK_SUBMISSION || <L::Infos as InfoSet>::TASK_COMPLETION {
        selection.report(Report::TaskSubmission);
    }
    if <L::Infos as InfoSet>::TASK_TIME {
        *selection.scratch_mut() = StartSlot::start();
    }
}

/// Reports the time since [`space_before`] started the clock, if the policy asks for it.
#[inline(always)]
fn report_task_time<L: Logic, B>(selection: &Selection<'_, L, B>)
where
    B: Backend<Scratch<L::Infos> = <L::Infos as InfoSet>::StartTime>,
{
    if <L::Infos as InfoSet>::TASK_TIME
        && let Some(time) = selection.scratch().elapsed()
    {
        selection.report(Report::TaskTime(time));
    }
}

/// Steps 3 and 4 for a space: fence and report the task time if asked for, then wrap.
#[inline(always)]
fn space_after<'p, L: Logic, B, S: ExecutionSpace, W>(
    selection: Selection<'p, L, B>,
    space: &S,
    value: W,
) -> Submission<'p, L, B, W>
where
    B: Backend<Scratch<L::Infos> = <L::Infos as InfoSet>::StartTime>,
{
    if <L::Infos as InfoSet>::TASK_TIME {
        // A failed fence shows again when the submission is waited on; the time is still
        // reported so that a tuning policy makes progress.
        let _ = space.fence();
        report_task_time(&selection);
    }
    // On a space whose launches are done when they return, the work `f` launched is done
    // now: a load-balancing policy must not count it as busy until someone waits on it.
    if <L::Infos as InfoSet>::TASK_COMPLETION && space.synchronous_launches() {
        selection.report(Report::TaskCompletion);
    }
    Submission::new(selection, value)
}

impl<S: ExecutionSpace> Backend for SpaceBackend<S> {
    type Resource = S;
    type Scratch<I: InfoSet> = I::StartTime;

    #[inline(always)]
    fn resources(&self) -> &[S] {
        &self.spaces
    }

    #[inline(always)]
    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        space_before(selection);
    }

    #[inline(always)]
    fn instrument_after<'p, L: Logic, W>(
        &self,
        selection: Selection<'p, L, Self>,
        value: W,
    ) -> Submission<'p, L, Self, W> {
        let space = selection.resource();
        space_after(selection, space, value)
    }

    #[inline(always)]
    fn wait_submission<W>(&self, resource: &S, _value: &W) -> Result<(), SelectError> {
        Ok(resource.fence()?)
    }
}

impl<S: ExecutionSpace> FromResources for SpaceBackend<S> {
    fn from_resources(spaces: Vec<S>) -> Self {
        SpaceBackend { spaces }
    }

    /// One resource: the space's default instance.
    fn by_default() -> Self {
        SpaceBackend {
            spaces: vec![S::default()],
        }
    }
}

impl<S: ExecutionSpace> WaitAll for SpaceBackend<S> {
    fn wait_all(&self) -> Result<(), SelectError> {
        self.spaces.iter().try_for_each(|space| Ok(space.fence()?))
    }
}

/// A resource adapter: the policy selects *handles* (`Arc<RayonSpace>`, an index into a table,
/// a struct holding a space and more), and the backend instruments, waits on and fences the
/// execution space each handle points to, exactly as [`SpaceBackend`] does.
///
/// The submitted function receives the handle; the space is `adapt(handle)` (for `Deref`
/// handles, `&**handle`).
///
/// ```
/// use std::sync::Arc;
/// use hoplite_select::{submit, Adapted, DynamicLoad};
/// use hoplite_serial::Serial;
/// let handles = vec![Arc::new(Serial::new()), Arc::new(Serial::new())];
/// // `with_resources` adapts through `Deref`; `Adapted::new` takes any `fn(&H) -> &S`.
/// let p: DynamicLoad<Arc<Serial>, Adapted<Arc<Serial>, Serial>> =
///     DynamicLoad::with_resources(handles.clone());
/// let s = submit(&p, |h, ()| h.instance_id(), ())?;
/// assert_eq!(s.unwrap(), handles[0].instance_id());
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub struct Adapted<H, S> {
    handles: Vec<H>,
    adapt: fn(&H) -> &S,
}

impl<H: fmt::Debug, S> fmt::Debug for Adapted<H, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Adapted")
            .field("handles", &self.handles)
            .finish_non_exhaustive()
    }
}

impl<H, S> Adapted<H, S> {
    /// A backend over `handles`, reaching each one's space through `adapt`.
    ///
    /// ```
    /// use hoplite_select::{submit, Adapted, RoundRobin};
    /// use hoplite_serial::Serial;
    /// let table = vec![("left", Serial::new()), ("right", Serial::new())];
    /// let backend = Adapted::new(table, |h: &(&'static str, Serial)| &h.1);
    /// let p = RoundRobin::with_backend(backend);
    /// assert_eq!(submit(&p, |h, ()| h.0, ())?.unwrap(), "left");
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    pub fn new(handles: Vec<H>, adapt: fn(&H) -> &S) -> Self {
        Adapted { handles, adapt }
    }
}

fn deref_adapt<H: Deref<Target = S>, S>(handle: &H) -> &S {
    handle
}

impl<H: Send + Sync, S: ExecutionSpace> Backend for Adapted<H, S> {
    type Resource = H;
    type Scratch<I: InfoSet> = I::StartTime;

    #[inline(always)]
    fn resources(&self) -> &[H] {
        &self.handles
    }

    #[inline(always)]
    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        space_before(selection);
    }

    #[inline(always)]
    fn instrument_after<'p, L: Logic, W>(
        &self,
        selection: Selection<'p, L, Self>,
        value: W,
    ) -> Submission<'p, L, Self, W> {
        let space = (self.adapt)(selection.resource());
        space_after(selection, space, value)
    }

    fn wait_submission<W>(&self, resource: &H, _value: &W) -> Result<(), SelectError> {
        Ok((self.adapt)(resource).fence()?)
    }
}

impl<H: Deref<Target = S> + Send + Sync, S: ExecutionSpace> FromResources for Adapted<H, S> {
    fn from_resources(handles: Vec<H>) -> Self {
        Adapted::new(handles, deref_adapt::<H, S>)
    }
}

impl<H: Send + Sync, S: ExecutionSpace> WaitAll for Adapted<H, S> {
    fn wait_all(&self) -> Result<(), SelectError> {
        self.handles.iter().try_for_each(|h| Ok((self.adapt)(h).fence()?))
    }
}

/// What [`Backend::submit`] returns: the value the submitted function returned, plus the
/// selection the backend needs to wait for it and to report its completion.
///
/// [`wait`](Self::wait) waits through the backend ([`Backend::wait_submission`]);
/// [`unwrap`](Self::unwrap) gives back the function's value. A submission that the backend
/// reported as submitted ([`Report::TaskSubmission`]) is reported complete exactly once: when
/// it is waited on, unwrapped or dropped (see [`Selection::report`]).
#[must_use = "a submission reports its completion when it is waited on or dropped"]
pub struct Submission<'p, L: Logic, B: Backend, W> {
    value: W,
    selection: Selection<'p, L, B>,
}

impl<'p, L: Logic, B: Backend, W> Submission<'p, L, B, W> {
    /// Wraps `value` (the seed's `default_submission`).
    #[inline(always)]
    pub fn new(selection: Selection<'p, L, B>, value: W) -> Self {
        Submission { value, selection }
    }

    /// Blocks until the submitted work has completed (as far as the backend can tell, see
    /// [`Backend::wait_submission`]), then reports its completion.
    ///
    /// # Errors
    ///
    /// What the backend's wait reports (a failed fence).
    pub fn wait(&self) -> Result<(), SelectError> {
        let selection = &self.selection;
        selection
            .backend()
            .wait_submission(selection.resource(), &self.value)?;
        selection.report(Report::TaskCompletion);
        Ok(())
    }

    /// The value the submitted function returned (reports completion if still pending).
    #[inline(always)]
    pub fn unwrap(self) -> W {
        let Submission { value, selection } = self;
        drop(selection);
        value
    }

    /// The value the submitted function returned, by reference.
    pub fn value(&self) -> &W {
        &self.value
    }

    /// Index of the resource the submission went to.
    pub fn index(&self) -> usize {
        self.selection.index()
    }

    /// The resource the submission went to.
    pub fn resource(&self) -> &'p B::Resource {
        self.selection.resource()
    }
}

impl<L: Logic, B: Backend, W> Wait for Submission<'_, L, B, W> {
    fn wait(&self) -> Result<(), SelectError> {
        Submission::wait(self)
    }
}

impl<L: Logic, B: Backend, W: fmt::Debug> fmt::Debug for Submission<'_, L, B, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submission")
            .field("index", &self.index())
            .field("value", &self.value)
            .finish()
    }
}

/// All submissions to a backend, as one thing to wait on (the seed's `submission_group`).
/// Exists only for backends that implement [`WaitAll`].
pub struct SubmissionGroup<'b, B: WaitAll> {
    backend: &'b B,
    /// The policy's queues of asynchronous submissions, drained before the backend waits.
    queues: Option<&'b ResourceQueues>,
}

impl<'b, B: WaitAll> SubmissionGroup<'b, B> {
    /// The group of a policy's backend and its asynchronous queues.
    pub(crate) fn with_queues(backend: &'b B, queues: &'b ResourceQueues) -> Self {
        SubmissionGroup {
            backend,
            queues: Some(queues),
        }
    }

    /// Blocks until every submission made so far to the backend has completed, those queued
    /// asynchronously ([`Policy::submit_async`](crate::Policy::submit_async)) included.
    ///
    /// # Errors
    ///
    /// The first error a resource reports.
    pub fn wait(&self) -> Result<(), SelectError> {
        if let Some(queues) = self.queues {
            queues.drain()?;
        }
        self.backend.wait_all()
    }
}

impl<B: WaitAll> Wait for SubmissionGroup<'_, B> {
    fn wait(&self) -> Result<(), SelectError> {
        SubmissionGroup::wait(self)
    }
}

impl<B: WaitAll> fmt::Debug for SubmissionGroup<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmissionGroup")
            .field("resources", &self.backend.resources().len())
            .finish()
    }
}
