//! The generic policy: [`Policy`] holds a backend and a selection [`Logic`]; a [`Selection`]
//! is one choice of resource.

use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::backend::{
    Backend, BackendFor, DefaultBackend, FromResources, Submission, SubmissionGroup, WaitAll,
};
use crate::error::SelectError;
use crate::info::{InfoSet, Report};
use crate::queue::{AsyncSubmission, ResourceQueues};
use crate::selection::Selection;

/// How a policy chooses: the part that differs between round robin, fixed resource, dynamic
/// load and auto-tune. [`Policy`] supplies the rest (resources, construction, submission).
///
/// A logic value holds the policy's configuration; its [`State`](Self::State) is built when the
/// policy gets its resources. Implement it (and [`KeyFor`]) to write a new policy.
///
/// ```
/// use hoplite_select::{submit, KeyFor, Logic, Policy, SelectError};
/// use hoplite_serial::Serial;
/// /// Always the last resource.
/// #[derive(Default)]
/// struct Last;
/// impl Logic for Last {
///     const NAME: &'static str = "last";
///     type Infos = ();
///     type State = ();
///     type Ticket = ();
///     type Key = ();
///     fn new_state(&self, _resources: usize) {}
///     fn try_select(&self, _: &(), resources: usize, _: ()) -> Result<Option<(usize, ())>, SelectError> {
///         Ok(Some((resources - 1, ())))
///     }
/// }
/// impl<F, A> KeyFor<F, A> for Last {
///     fn key(_: &F, _: &A) {}
/// }
/// let p: Policy<Last, Serial> = Policy::new(vec![Serial::new(), Serial::new()]);
/// assert_eq!(submit(&p, |_, ()| (), ())?.index(), 1);
/// # Ok::<(), SelectError>(())
/// ```
pub trait Logic: Send + Sync {
    /// The policy's name, for messages.
    const NAME: &'static str;
    /// The execution infos the policy needs backends to report (a tuple of markers).
    type Infos: InfoSet;
    /// Shared state built for a number of resources.
    type State: Send + Sync;
    /// What the policy remembers about one selection until the reports for it arrive.
    type Ticket: Send;
    /// The key a selection is made for (from the submitted function and its arguments).
    type Key;

    /// The state for `resources` resources.
    fn new_state(&self, resources: usize) -> Self::State;

    /// Chooses one of `resources` (at least one) resources, or `None` if none is available
    /// now.
    ///
    /// # Errors
    ///
    /// A configuration that cannot select (a fixed offset past the resources).
    fn try_select(
        &self,
        state: &Self::State,
        resources: usize,
        key: Self::Key,
    ) -> Result<Option<(usize, Self::Ticket)>, SelectError>;

    /// How many unfinished submissions make a resource unavailable, if the logic has such a
    /// limit, for the message of [`SelectError::NoResourceAvailable`]; the default is `None`.
    fn busy_limit(&self) -> Option<usize> {
        None
    }

    /// Receives a report about the selection of resource `index` that produced `ticket`. Only
    /// reports in [`Infos`](Self::Infos) arrive. The default ignores them.
    fn report(&self, state: &Self::State, index: usize, ticket: &Self::Ticket, report: Report) {
        let _ = (state, index, ticket, report);
    }

    /// What [`submit`](crate::submit) does with a policy of this logic (oneDPL lets a policy
    /// define its own `submit`). The default is [`Policy::default_submit`]: select, then
    /// submit through the backend.
    ///
    /// # Errors
    ///
    /// As [`Policy::default_submit`].
    #[inline]
    fn submit<'p, R, B, F, A, W>(
        policy: &'p Policy<Self, R, B>,
        f: F,
        args: A,
    ) -> Result<Submission<'p, Self, B, W>, SelectError>
    where
        Self: KeyFor<F, A> + Sized,
        B: Backend<Resource = R>,
        F: FnOnce(&R, A) -> W,
    {
        policy.default_submit(f, args)
    }

    /// What [`try_submit`](crate::try_submit) does with a policy of this logic. The default
    /// is [`Policy::default_try_submit`].
    ///
    /// # Errors
    ///
    /// As [`Policy::default_try_submit`].
    #[inline]
    fn try_submit<'p, R, B, F, A, W>(
        policy: &'p Policy<Self, R, B>,
        f: F,
        args: A,
    ) -> Result<Option<Submission<'p, Self, B, W>>, SelectError>
    where
        Self: KeyFor<F, A> + Sized,
        B: Backend<Resource = R>,
        F: FnOnce(&R, A) -> W,
    {
        policy.default_try_submit(f, args)
    }

    /// What [`submit_and_wait`](crate::submit_and_wait) does with a policy of this logic: a
    /// logic that knows a cheaper way to wait for one submission than submitting and waiting
    /// on it overrides this. The default is [`Policy::default_submit_and_wait`].
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use hoplite_select::{submit_and_wait, KeyFor, Logic, Policy, SelectError, Backend};
    /// use hoplite_serial::Serial;
    /// /// Always the first resource; counts the submissions it waited on.
    /// #[derive(Default)]
    /// struct First(AtomicUsize);
    /// impl Logic for First {
    ///     const NAME: &'static str = "first";
    ///     type Infos = ();
    ///     type State = ();
    ///     type Ticket = ();
    ///     type Key = ();
    ///     fn new_state(&self, _resources: usize) {}
    ///     fn try_select(&self, _: &(), _: usize, _: ()) -> Result<Option<(usize, ())>, SelectError> {
    ///         Ok(Some((0, ())))
    ///     }
    ///     fn submit_and_wait<R, B, F, A, W>(policy: &Policy<Self, R, B>, f: F, args: A) -> Result<W, SelectError>
    ///     where
    ///         B: Backend<Resource = R>,
    ///         F: FnOnce(&R, A) -> W,
    ///     {
    ///         policy.logic().0.fetch_add(1, Ordering::Relaxed);
    ///         policy.default_submit_and_wait(f, args)
    ///     }
    /// }
    /// impl<F, A> KeyFor<F, A> for First {
    ///     fn key(_: &F, _: &A) {}
    /// }
    /// let p: Policy<First, Serial> = Policy::new(vec![Serial::new()]);
    /// assert_eq!(submit_and_wait(&p, |_, x: u8| x * 2, 21)?, 42);
    /// assert_eq!(p.logic().0.load(Ordering::Relaxed), 1);
    /// # Ok::<(), SelectError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Policy::default_submit_and_wait`].
    #[inline]
    fn submit_and_wait<R, B, F, A, W>(policy: &Policy<Self, R, B>, f: F, args: A) -> Result<W, SelectError>
    where
        Self: KeyFor<F, A> + Sized,
        B: Backend<Resource = R>,
        F: FnOnce(&R, A) -> W,
    {
        policy.default_submit_and_wait(f, args)
    }
}

/// The key a logic derives from the submitted function (type `F`) and its arguments (`A`).
/// Policies that ignore keys implement it for all `F` and `A`; auto-tune needs `F: 'static`
/// and arguments that match its key type.
pub trait KeyFor<F, A>: Logic {
    /// The key of a submission of `f` with `args`.
    fn key(f: &F, args: &A) -> Self::Key;
}

/// The resources a policy got: its backend and the logic's state for them.
struct Ready<L: Logic, B> {
    backend: B,
    state: L::State,
    /// One queue per resource for asynchronous submissions, each started at first use.
    queues: ResourceQueues,
}

impl<L: Logic, B: Backend> Ready<L, B> {
    fn new(logic: &L, backend: B) -> Self {
        let resources = backend.resources().len();
        Ready {
            state: logic.new_state(resources),
            queues: ResourceQueues::new(resources),
            backend,
        }
    }
}

/// A selection policy over resources of type `R` held by backend `B` (by default the one
/// [`BackendFor`] names for `R`), choosing by [`Logic`] `L`.
///
/// Use it through the aliases [`RoundRobin`](crate::RoundRobin),
/// [`FixedResource`](crate::FixedResource), [`DynamicLoad`](crate::DynamicLoad) and
/// [`AutoTune`](crate::AutoTune). A policy is built with resources ([`new`](Self::new),
/// [`with_resources`](Self::with_resources), [`with_backend`](Self::with_backend)), by default
/// (`Default`: the backend's default resources) or deferred ([`deferred`](Self::deferred), then
/// [`initialize`](Self::initialize) once; using it before that is
/// [`SelectError::NotInitialized`]). It is `Sync`: many threads may select and submit at once.
///
/// ```
/// use hoplite_select::{RoundRobin, SelectError};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::<Serial>::deferred();
/// assert_eq!(p.submit(|_, ()| (), ()).err(), Some(SelectError::NotInitialized { policy: "round-robin" }));
/// p.initialize(vec![Serial::new()])?;
/// assert_eq!(p.submit(|_, x: i32| x + 1, 1)?.unwrap(), 2);
/// # Ok::<(), SelectError>(())
/// ```
pub struct Policy<L: Logic, R, B = <R as BackendFor>::Backend> {
    logic: L,
    ready: OnceLock<Ready<L, B>>,
    /// How long `select` and `submit` wait for an available resource; `None`: until one is.
    wait_limit: Option<Duration>,
    resource: PhantomData<fn() -> R>,
}

impl<L: Logic, R, B: Backend> fmt::Debug for Policy<L, R, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("logic", &L::NAME)
            .field(
                "resources",
                &self.ready.get().map(|r| r.backend.resources().len()),
            )
            .finish()
    }
}

impl<L, R, B> Default for Policy<L, R, B>
where
    L: Logic + Default,
    B: FromResources<Resource = R>,
{
    /// A policy over the backend's default resources ([`FromResources::by_default`]).
    fn default() -> Self {
        Self::with_backend(B::by_default())
    }
}

impl<L: Logic, R, B: Backend<Resource = R>> Policy<L, R, B> {
    /// A policy over `resources`, with the backend [`BackendFor`] names for `R`.
    ///
    /// ```
    /// use hoplite_select::RoundRobin;
    /// use hoplite_serial::Serial;
    /// let p = RoundRobin::new(vec![Serial::new(), Serial::new()]);
    /// assert_eq!(p.get_resources()?.len(), 2);
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    pub fn new(resources: Vec<R>) -> Self
    where
        R: BackendFor<Backend = B>,
        B: FromResources,
        L: Default,
    {
        Self::with_resources(resources)
    }

    /// A policy over `resources` with the backend named in its type.
    pub fn with_resources(resources: Vec<R>) -> Self
    where
        B: FromResources,
        L: Default,
    {
        Self::with_backend(B::from_resources(resources))
    }

    /// A policy over a ready-made backend.
    pub fn with_backend(backend: B) -> Self
    where
        L: Default,
    {
        Self::with_logic(L::default(), backend)
    }

    /// A policy with a configured logic over a ready-made backend.
    pub fn with_logic(logic: L, backend: B) -> Self {
        let policy = Self::deferred_with_logic(logic);
        // A fresh lock is empty, so `set` cannot fail here.
        let _ = policy.ready.set(Ready::new(&policy.logic, backend));
        policy
    }

    /// A policy without resources yet: call [`initialize`](Self::initialize) before using it.
    pub fn deferred() -> Self
    where
        L: Default,
    {
        Self::deferred_with_logic(L::default())
    }

    /// A deferred policy with a configured logic.
    pub fn deferred_with_logic(logic: L) -> Self {
        Policy {
            logic,
            ready: OnceLock::new(),
            wait_limit: None,
            resource: PhantomData,
        }
    }

    /// Gives a deferred policy its resources.
    ///
    /// # Errors
    ///
    /// [`SelectError::AlreadyInitialized`] if the policy has its resources already.
    pub fn initialize(&self, resources: Vec<R>) -> Result<(), SelectError>
    where
        B: FromResources,
    {
        self.initialize_with_backend(B::from_resources(resources))
    }

    /// Gives a deferred policy its backend.
    ///
    /// # Errors
    ///
    /// [`SelectError::AlreadyInitialized`] if the policy has its resources already.
    pub fn initialize_with_backend(&self, backend: B) -> Result<(), SelectError> {
        self.ready
            .set(Ready::new(&self.logic, backend))
            .map_err(|_| SelectError::AlreadyInitialized { policy: L::NAME })
    }

    /// Whether the policy has its resources.
    pub fn is_initialized(&self) -> bool {
        self.ready.get().is_some()
    }

    /// The policy's logic (its configuration).
    pub fn logic(&self) -> &L {
        &self.logic
    }

    /// Changes the logic's configuration (before the policy is shared).
    pub(crate) fn logic_mut(&mut self) -> &mut L {
        &mut self.logic
    }

    /// Makes [`select`](Self::select) and [`submit`](Self::submit) give up with
    /// [`SelectError::NoResourceAvailable`] after waiting `limit` for an available resource,
    /// instead of waiting until one is.
    ///
    /// Waiting is what oneDPL's `submit` does; a limit turns a wait that cannot end — the
    /// waiting thread itself holds every unfinished submission — into an error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hoplite_select::{DefaultBackend, DynamicLoad, SelectError};
    /// let p = DynamicLoad::<char, DefaultBackend<char>>::with_resources(vec!['a'])
    ///     .with_limit(1)
    ///     .with_wait_limit(Duration::from_millis(10));
    /// let held = p.submit(|_, ()| (), ())?; // unfinished until waited on
    /// let err = p.submit(|_, ()| (), ()).unwrap_err();
    /// assert!(matches!(err, SelectError::NoResourceAvailable { limit: Some(1), .. }));
    /// held.wait()?;
    /// assert!(p.submit(|_, ()| (), ()).is_ok());
    /// # Ok::<(), SelectError>(())
    /// ```
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait_limit = Some(limit);
        self
    }

    #[inline(always)]
    fn ready(&self) -> Result<&Ready<L, B>, SelectError> {
        self.ready
            .get()
            .ok_or(SelectError::NotInitialized { policy: L::NAME })
    }

    /// The logic's state.
    pub(crate) fn state(&self) -> Result<&L::State, SelectError> {
        Ok(&self.ready()?.state)
    }

    /// The backend.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`] before [`initialize`](Self::initialize).
    pub fn backend(&self) -> Result<&B, SelectError> {
        Ok(&self.ready()?.backend)
    }

    /// The resources, by reference.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`] before [`initialize`](Self::initialize).
    pub fn resources(&self) -> Result<&[R], SelectError> {
        Ok(self.ready()?.backend.resources())
    }

    /// The resources (the backend's [`get_resources`](Backend::get_resources)).
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`] before [`initialize`](Self::initialize).
    pub fn get_resources(&self) -> Result<Vec<R>, SelectError>
    where
        R: Clone,
    {
        Ok(self.ready()?.backend.get_resources())
    }

    /// The group of all submissions, to wait on (the backend's
    /// [`get_submission_group`](Backend::get_submission_group)); compiles only for backends
    /// that can wait ([`WaitAll`]).
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`] before [`initialize`](Self::initialize).
    pub fn get_submission_group(&self) -> Result<SubmissionGroup<'_, B>, SelectError>
    where
        B: WaitAll,
    {
        let ready = self.ready()?;
        Ok(SubmissionGroup::with_queues(&ready.backend, &ready.queues))
    }

    /// Chooses a resource for submitting `f` with `args`, or `None` if none is available now.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`], or what the logic reports.
    #[inline]
    pub fn try_select<F, A>(&self, f: &F, args: &A) -> Result<Option<Selection<'_, L, B>>, SelectError>
    where
        L: KeyFor<F, A>,
    {
        self.try_select_by_key(L::key(f, args))
    }

    /// [`try_select`](Self::try_select) for a key the caller computed.
    #[inline]
    pub(crate) fn try_select_by_key(&self, key: L::Key) -> Result<Option<Selection<'_, L, B>>, SelectError> {
        let ready = self.ready()?;
        let count = ready.backend.resources().len();
        if count == 0 {
            return Ok(None);
        }
        if B::LAZY_REPORT {
            ready.backend.lazy_report();
        }
        let choice = self.logic.try_select(&ready.state, count, key)?;
        Ok(choice
            .map(|(index, ticket)| Selection::new(&self.logic, &ready.backend, &ready.state, index, ticket)))
    }

    /// Chooses a resource for submitting `f` with `args`, waiting while none is available
    /// (every resource of a [`DynamicLoad`](crate::DynamicLoad) policy at its limit) — until
    /// one is, or for the policy's [wait limit](Self::with_wait_limit).
    ///
    /// Do not wait on a policy whose unfinished submissions only the waiting thread can finish
    /// (it holds them and has not waited on them): set a wait limit, or use
    /// [`try_select`](Self::try_select).
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`], [`SelectError::NoResources`],
    /// [`SelectError::NoResourceAvailable`] (past the wait limit), or what the logic reports.
    #[inline]
    pub fn select<F, A>(&self, f: &F, args: &A) -> Result<Selection<'_, L, B>, SelectError>
    where
        L: KeyFor<F, A>,
    {
        self.select_by_key(|| L::key(f, args))
    }

    /// [`select`](Self::select) for keys the caller computes (one per try).
    #[inline]
    pub(crate) fn select_by_key(
        &self,
        mut key: impl FnMut() -> L::Key,
    ) -> Result<Selection<'_, L, B>, SelectError> {
        match self.try_select_by_key(key())? {
            Some(selection) => Ok(selection),
            None => self.wait_for_resource(key),
        }
    }

    /// Tries again with back-off until a resource is available or the wait limit is reached:
    /// a few spins (a submission that is about to finish), then yields, then sleeps that
    /// double from 10 µs to 1 ms, so a long wait costs the finishing work no core.
    #[cold]
    fn wait_for_resource(&self, mut key: impl FnMut() -> L::Key) -> Result<Selection<'_, L, B>, SelectError> {
        if self.ready.get().is_none_or(|r| r.backend.resources().is_empty()) {
            return Err(self.unavailable(Duration::ZERO));
        }
        let start = Instant::now();
        let mut sleep = Duration::from_micros(10);
        let mut attempt = 0u32;
        loop {
            if let Some(selection) = self.try_select_by_key(key())? {
                return Ok(selection);
            }
            let waited = start.elapsed();
            if self.wait_limit.is_some_and(|limit| waited >= limit) {
                return Err(self.unavailable(waited));
            }
            match attempt {
                0..16 => std::hint::spin_loop(),
                16..32 => std::thread::yield_now(),
                _ => {
                    let remaining = self
                        .wait_limit
                        .map_or(sleep, |limit| limit.saturating_sub(waited));
                    std::thread::sleep(sleep.min(remaining));
                    sleep = (sleep * 2).min(Duration::from_millis(1));
                }
            }
            attempt = attempt.saturating_add(1);
        }
    }

    #[cold]
    fn unavailable(&self, waited: Duration) -> SelectError {
        match self.ready.get().map(|r| r.backend.resources().len()) {
            None => SelectError::NotInitialized { policy: L::NAME },
            Some(0) => SelectError::NoResources { policy: L::NAME },
            Some(resources) => SelectError::NoResourceAvailable {
                policy: L::NAME,
                resources,
                limit: self.logic.busy_limit(),
                waited,
            },
        }
    }

    /// Selects a resource and submits `f(resource, args)` to it; waits while no resource is
    /// available, as [`select`](Self::select) does. What the logic's
    /// [`Logic::submit`] does: [`default_submit`](Self::default_submit) unless the logic
    /// customizes it.
    ///
    /// ```
    /// use hoplite_select::RoundRobin;
    /// use hoplite_serial::Serial;
    /// let p = RoundRobin::new(vec![Serial::new(), Serial::new()]);
    /// let a = p.submit(|_, x: u32| x * 2, 21)?;
    /// let b = p.submit(|_, x: u32| x + 1, 1)?;
    /// assert_eq!((a.index(), b.index()), (0, 1), "round robin over the two");
    /// assert_eq!((a.unwrap(), b.unwrap()), (42, 2));
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`select`](Self::select).
    #[inline]
    pub fn submit<F, A, W>(&self, f: F, args: A) -> Result<Submission<'_, L, B, W>, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        L::submit(self, f, args)
    }

    /// The generic `submit`: [`select`](Self::select), then the backend's submission. A
    /// logic that customizes [`Logic::submit`] may call it.
    ///
    /// # Errors
    ///
    /// As [`select`](Self::select).
    #[inline]
    pub fn default_submit<F, A, W>(&self, f: F, args: A) -> Result<Submission<'_, L, B, W>, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        let selection = self.select(&f, &args)?;
        Ok(selection.submit(f, args))
    }

    /// Like [`submit`](Self::submit), but `Ok(None)` when no resource is available now (the
    /// logic's [`Logic::try_submit`]).
    ///
    /// ```
    /// use hoplite_select::RoundRobin;
    /// use hoplite_serial::Serial;
    /// let p = RoundRobin::new(vec![Serial::new()]);
    /// let done = p.try_submit(|_, ()| 7, ())?.expect("round robin always has a resource");
    /// assert_eq!(done.unwrap(), 7);
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`], or what the logic reports.
    #[inline]
    pub fn try_submit<F, A, W>(&self, f: F, args: A) -> Result<Option<Submission<'_, L, B, W>>, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        L::try_submit(self, f, args)
    }

    /// The generic `try_submit`: [`try_select`](Self::try_select), then the backend's
    /// submission.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`], or what the logic reports.
    #[inline]
    pub fn default_try_submit<F, A, W>(
        &self,
        f: F,
        args: A,
    ) -> Result<Option<Submission<'_, L, B, W>>, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        Ok(self
            .try_select(&f, &args)?
            .map(|selection| selection.submit(f, args)))
    }

    /// Submits, waits for the submission and returns what `f` returned (the logic's
    /// [`Logic::submit_and_wait`]).
    ///
    /// ```
    /// use hoplite_select::DynamicLoad;
    /// use hoplite_serial::Serial;
    /// let least_loaded = DynamicLoad::new(vec![Serial::new(), Serial::new()]);
    /// assert_eq!(least_loaded.submit_and_wait(|_, n: u64| (1..=n).sum::<u64>(), 10)?, 55);
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit), and what waiting reports.
    #[inline]
    pub fn submit_and_wait<F, A, W>(&self, f: F, args: A) -> Result<W, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        L::submit_and_wait(self, f, args)
    }

    /// The generic `submit_and_wait`: [`submit`](Self::submit), wait, unwrap.
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit), and what waiting reports.
    #[inline]
    pub fn default_submit_and_wait<F, A, W>(&self, f: F, args: A) -> Result<W, SelectError>
    where
        L: KeyFor<F, A>,
        F: FnOnce(&R, A) -> W,
    {
        let submission = self.submit(f, args)?;
        submission.wait()?;
        Ok(submission.unwrap())
    }

    /// Selects a resource as [`submit`](Self::submit) does, then queues `f(resource, args)`
    /// on the resource's own queue and returns at once: the function runs on the queue's
    /// thread (with a clone of the resource), after the functions queued on that resource
    /// before it, and beside those of other resources — as a CPU queue runs what is
    /// submitted to it. Round robin over two partitions of a pool thus runs two functions at
    /// a time.
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, RangePolicy, Sum};
    /// use hoplite_rayon::RayonSpace;
    /// use hoplite_select::RoundRobin;
    /// let halves = RayonSpace::with_threads(2)?.partition_space(2)?;
    /// let policy = RoundRobin::new(halves);
    /// let sums: Vec<_> = (1..=4usize)
    ///     .map(|k| policy.submit_async(move |half, ()| {
    ///         parallel_reduce("sum", RangePolicy::new(half.clone(), 0..k * 100), |i, a| *a += *i, Sum::<usize>::new())
    ///     }, ()))
    ///     .collect::<Result<_, _>>()?;
    /// let totals: Vec<usize> = sums.into_iter().map(|s| s.unwrap()?.map_err(Into::into))
    ///     .collect::<Result<_, hoplite_select::SelectError>>()?;
    /// assert_eq!(totals, [4950, 19900, 44850, 79800]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit); [`SelectError::QueueUnavailable`] if the resource's
    /// queue cannot start a thread.
    pub fn submit_async<F, A, W>(&self, f: F, args: A) -> Result<AsyncSubmission<'_, L, B, W>, SelectError>
    where
        L: KeyFor<F, A>,
        R: Clone + Send + 'static,
        F: FnOnce(&R, A) -> W + Send + 'static,
        A: Send + 'static,
        W: Send + 'static,
    {
        let selection = self.select(&f, &args)?;
        AsyncSubmission::queue(selection, &self.ready()?.queues, f, args)
    }

    /// Like [`submit_async`](Self::submit_async), but `Ok(None)` when no resource is
    /// available now.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`], what the logic reports, or
    /// [`SelectError::QueueUnavailable`].
    pub fn try_submit_async<F, A, W>(
        &self,
        f: F,
        args: A,
    ) -> Result<Option<AsyncSubmission<'_, L, B, W>>, SelectError>
    where
        L: KeyFor<F, A>,
        R: Clone + Send + 'static,
        F: FnOnce(&R, A) -> W + Send + 'static,
        A: Send + 'static,
        W: Send + 'static,
    {
        match self.try_select(&f, &args)? {
            Some(selection) => AsyncSubmission::queue(selection, &self.ready()?.queues, f, args).map(Some),
            None => Ok(None),
        }
    }
}

impl<L: Logic + Default, R: Send + Sync> Policy<L, R, DefaultBackend<R>> {
    /// A policy over plain values (integers, names, any type) with the [`DefaultBackend`] —
    /// no backend to name and no [`BackendFor`] impl needed. Plain values of the standard
    /// types implement [`Wait`](crate::Wait), so the submission group can be waited on.
    ///
    /// ```
    /// use hoplite_select::{submit, wait, RoundRobin};
    /// let p = RoundRobin::from_values(vec![10, 20, 30]);
    /// let picks: Vec<i32> = (0..4).map(|_| submit(&p, |r, ()| *r, ()).map(|s| s.unwrap()))
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(picks, [10, 20, 30, 10]);
    /// wait(&p.get_submission_group()?)?;
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    pub fn from_values(values: Vec<R>) -> Self {
        Self::with_backend(DefaultBackend::from_resources(values))
    }
}
