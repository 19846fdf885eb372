//! The four policies of oneDPL's dynamic selection: round robin, fixed resource, dynamic load
//! and auto-tune.

use std::any::TypeId;
use std::collections::HashMap;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::backend::{Backend, BackendFor, Submission};
use crate::error::SelectError;
use crate::generic_policy::{KeyFor, Logic, Policy};
use crate::info::{Report, TaskCompletion, TaskSubmission, TaskTime};
use crate::selection::Selection;

/// Round robin: resources in order, cyclically, one shared counter for all threads. Asks for
/// no execution info, so backends do no instrumentation for it.
///
/// ```
/// use hoplite_select::{submit, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new(), Serial::new(), Serial::new()]);
/// let picks: Vec<usize> = (0..5).map(|_| submit(&p, |_, ()| (), ()).map(|s| s.index()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(picks, [0, 1, 2, 0, 1]);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub type RoundRobin<R, B = <R as BackendFor>::Backend> = Policy<RoundRobinLogic, R, B>;

/// Fixed resource: always the resource at an offset (0 unless set with
/// [`with_offset`](Policy::with_offset)).
///
/// ```
/// use hoplite_select::{submit, FixedResource};
/// use hoplite_serial::Serial;
/// let p = FixedResource::new(vec![Serial::new(), Serial::new()]).with_offset(1);
/// assert_eq!(submit(&p, |_, ()| (), ())?.index(), 1);
/// assert_eq!(submit(&p, |_, ()| (), ())?.index(), 1);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub type FixedResource<R, B = <R as BackendFor>::Backend> = Policy<FixedLogic, R, B>;

/// Dynamic load: the resource with the fewest unfinished submissions (ties go to the lowest
/// index). Asks for [`TaskSubmission`] and [`TaskCompletion`]; with a backend that reports
/// neither, every resource looks idle and the first is chosen. An optional limit
/// ([`with_limit`](Policy::with_limit)) makes resources with that many unfinished submissions
/// unavailable (`try_submit` gives `None`).
///
/// ```
/// use hoplite_select::{submit, DefaultBackend, DynamicLoad};
/// use hoplite_serial::Serial;
/// // The default backend cannot tell when a submitted function's work ends: a submission is
/// // unfinished until it is waited on (or dropped).
/// let p = DynamicLoad::<char, DefaultBackend<char>>::with_resources(vec!['a', 'b']);
/// let held = submit(&p, |_, ()| (), ())?;
/// assert_eq!(held.index(), 0);
/// assert_eq!(submit(&p, |_, ()| (), ())?.index(), 1);
/// held.wait()?;
/// assert_eq!(submit(&p, |_, ()| (), ())?.index(), 0);
/// // Launches on serial and rayon instances are done when they return: never busy after.
/// let spaces = DynamicLoad::new(vec![Serial::new(), Serial::new()]);
/// let first = submit(&spaces, |_, ()| (), ())?;
/// assert_eq!(submit(&spaces, |_, ()| (), ())?.index(), first.index());
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub type DynamicLoad<R, B = <R as BackendFor>::Backend> = Policy<LoadLogic, R, B>;

/// Auto-tune: for each submitted function type (and each key argument, with
/// [`KeyedAutoTune`]) it runs trial rounds — every resource in round-robin order, 2 rounds by default —
/// then keeps the resource with the least mean [`TaskTime`]; after an optional resample
/// interval it runs the trials again. With no timing reports it keeps the first resource.
///
/// The function key is the type of the submitted function, so it must be `'static`: pass
/// borrowed data as the arguments rather than capturing it — or name the work with an explicit
/// key ([`submit_with_key`](Policy::submit_with_key)), which takes any function.
///
/// ```
/// use hoplite_select::{submit, AutoTune};
/// use hoplite_serial::Serial;
/// let p = AutoTune::new(vec![Serial::new(), Serial::new()]);
/// let work = |_: &Serial, n: u64| (0..n).sum::<u64>();
/// let trial: Vec<usize> = (0..4).map(|_| submit(&p, work, 10).map(|s| s.index()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(trial, [0, 1, 0, 1]); // two trial rounds, then the fastest is kept
/// let best = submit(&p, work, 10)?.index();
/// assert_eq!(submit(&p, work, 10)?.index(), best);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub type AutoTune<R, B = <R as BackendFor>::Backend> = Policy<TuneLogic<NoKey>, R, B>;

/// Auto-tune with a history per function type *and* key argument of type `K`: the submitted
/// arguments are the key (`submit(&p, |space, n: usize| ..., n)` tunes separately per `n`).
///
/// ```
/// use hoplite_select::{submit, KeyedAutoTune};
/// use hoplite_serial::Serial;
/// let p: KeyedAutoTune<Serial, usize> = KeyedAutoTune::new(vec![Serial::new(), Serial::new()]);
/// let work = |_: &Serial, n: usize| n * 2;
/// // Keys 10 and 20 run their own trial rounds.
/// let order: Vec<usize> = [10, 20, 10, 20].into_iter()
///     .map(|n| submit(&p, work, n).map(|s| s.index()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(order, [0, 0, 1, 1]);
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub type KeyedAutoTune<R, K, B = <R as BackendFor>::Backend> = Policy<TuneLogic<K>, R, B>;

/// The logic of [`RoundRobin`].
#[derive(Debug, Default)]
pub struct RoundRobinLogic;

impl Logic for RoundRobinLogic {
    const NAME: &'static str = "round-robin";
    type Infos = ();
    type State = CachePadded<AtomicUsize>;
    type Ticket = ();
    type Key = ();

    fn new_state(&self, _resources: usize) -> Self::State {
        CachePadded::new(AtomicUsize::new(0))
    }

    #[inline(always)]
    fn try_select(
        &self,
        next: &Self::State,
        resources: usize,
        _key: (),
    ) -> Result<Option<(usize, ())>, SelectError> {
        Ok(Some((next.fetch_add(1, Ordering::Relaxed) % resources, ())))
    }
}

impl<F, A> KeyFor<F, A> for RoundRobinLogic {
    #[inline(always)]
    fn key(_: &F, _: &A) {}
}

/// The logic of [`FixedResource`]: the offset.
#[derive(Debug, Default)]
pub struct FixedLogic {
    offset: usize,
}

impl Logic for FixedLogic {
    const NAME: &'static str = "fixed-resource";
    type Infos = ();
    type State = ();
    type Ticket = ();
    type Key = ();

    fn new_state(&self, _resources: usize) {}

    #[inline(always)]
    fn try_select(&self, _: &(), resources: usize, _key: ()) -> Result<Option<(usize, ())>, SelectError> {
        if self.offset < resources {
            Ok(Some((self.offset, ())))
        } else {
            Err(SelectError::OffsetOutOfRange {
                offset: self.offset,
                resources,
            })
        }
    }
}

impl<F, A> KeyFor<F, A> for FixedLogic {
    #[inline(always)]
    fn key(_: &F, _: &A) {}
}

impl<R, B: Backend<Resource = R>> Policy<FixedLogic, R, B> {
    /// Selects the resource at `offset` (an offset past the resources is reported when
    /// selecting: [`SelectError::OffsetOutOfRange`]).
    pub fn with_offset(mut self, offset: usize) -> Self {
        self.logic_mut().offset = offset;
        self
    }
}

/// The logic of [`DynamicLoad`]: an optional limit of unfinished submissions per resource.
#[derive(Debug, Default)]
pub struct LoadLogic {
    limit: Option<usize>,
}

impl Logic for LoadLogic {
    const NAME: &'static str = "dynamic-load";
    type Infos = (TaskSubmission, TaskCompletion);
    type State = Vec<CachePadded<AtomicUsize>>;
    type Ticket = ();
    type Key = ();

    fn new_state(&self, resources: usize) -> Self::State {
        (0..resources)
            .map(|_| CachePadded::new(AtomicUsize::new(0)))
            .collect()
    }

    #[inline]
    fn try_select(
        &self,
        loads: &Self::State,
        _resources: usize,
        _key: (),
    ) -> Result<Option<(usize, ())>, SelectError> {
        let mut best = (usize::MAX, 0);
        for (i, load) in loads.iter().enumerate() {
            let load = load.load(Ordering::Acquire);
            if load < best.0 {
                best = (load, i);
                if load == 0 {
                    break;
                }
            }
        }
        Ok((best.0 < self.limit.unwrap_or(usize::MAX)).then_some((best.1, ())))
    }

    fn busy_limit(&self) -> Option<usize> {
        self.limit
    }

    #[inline]
    fn report(&self, loads: &Self::State, index: usize, _: &(), report: Report) {
        match report {
            Report::TaskSubmission => {
                loads[index].fetch_add(1, Ordering::AcqRel);
            }
            Report::TaskCompletion => {
                // Never below zero, even if a backend reports a completion twice.
                let _ = loads[index].fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| l.checked_sub(1));
            }
            Report::TaskTime(_) => {}
        }
    }
}

impl<F, A> KeyFor<F, A> for LoadLogic {
    #[inline(always)]
    fn key(_: &F, _: &A) {}
}

impl<R, B: Backend<Resource = R>> Policy<LoadLogic, R, B> {
    /// Makes a resource unavailable while it has `limit` unfinished submissions: when every
    /// resource is, `try_submit` returns `None` and `submit` waits until one is available
    /// (or for the [wait limit](Policy::with_wait_limit)).
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.logic_mut().limit = Some(limit);
        self
    }

    /// Unfinished submissions per resource, as the policy counts them.
    ///
    /// # Errors
    ///
    /// [`SelectError::NotInitialized`] before `initialize`.
    pub fn loads(&self) -> Result<Vec<usize>, SelectError> {
        Ok(self.state()?.iter().map(|l| l.load(Ordering::Acquire)).collect())
    }
}

/// The key type of an [`AutoTune`] policy that tunes per function only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoKey;

/// A value an [`AutoTune`] policy can keep separate histories for: integers, `bool`, `char`,
/// strings and tuples of them. Implement it for your own key types.
pub trait TuneKey: Clone + Hash + Eq + Send + Sync + 'static {}

macro_rules! tune_key {
    ($($t:ty),*) => { $(impl TuneKey for $t {})* };
}
tune_key!(
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
    &'static str
);
impl<A: TuneKey, B: TuneKey> TuneKey for (A, B) {}
impl<A: TuneKey, B: TuneKey, C: TuneKey> TuneKey for (A, B, C) {}

/// The key arguments of a submission to an auto-tune policy with key type `K`: with
/// [`NoKey`] any arguments (tuning per function); with a [`TuneKey`] the arguments are the key.
pub trait KeyArgs<K> {
    /// The key of these arguments.
    fn key_args(&self) -> K;
}

impl<A> KeyArgs<NoKey> for A {
    #[inline(always)]
    fn key_args(&self) -> NoKey {
        NoKey
    }
}

impl<K: TuneKey> KeyArgs<K> for K {
    #[inline(always)]
    fn key_args(&self) -> K {
        self.clone()
    }
}

/// The logic of [`AutoTune`]: trial rounds, resample interval and key type.
pub struct TuneLogic<K = NoKey> {
    trial_rounds: usize,
    resample: Option<Duration>,
    key: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for TuneLogic<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuneLogic")
            .field("trial_rounds", &self.trial_rounds)
            .field("resample", &self.resample)
            .finish()
    }
}

impl<K> Default for TuneLogic<K> {
    /// Two trial rounds (as oneDPL), no resampling.
    fn default() -> Self {
        TuneLogic {
            trial_rounds: 2,
            resample: None,
            key: PhantomData,
        }
    }
}

/// The history of one key: trial timings and the choice.
#[derive(Debug)]
pub struct KeyHistory {
    inner: Mutex<History>,
}

#[derive(Debug)]
struct History {
    /// Bumped at each resample, so that late reports of older trials are dropped.
    epoch: u64,
    /// Trial selections made in this epoch.
    trials: usize,
    /// Sum and count of the reported task times, per resource.
    times: Vec<(Duration, u32)>,
    /// The chosen resource and when it was chosen.
    chosen: Option<(usize, Instant)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data stays consistent at every step, so a panic elsewhere does not spoil it.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl History {
    /// The resource with the least mean reported time (lowest index on ties), or 0.
    fn fastest(&self) -> usize {
        let mut best: Option<(Duration, usize)> = None;
        for (i, &(total, count)) in self.times.iter().enumerate() {
            if count > 0 {
                let mean = total / count;
                if best.is_none_or(|(b, _)| mean < b) {
                    best = Some((mean, i));
                }
            }
        }
        best.map_or(0, |(_, i)| i)
    }
}

/// Per-key histories of an auto-tune policy.
pub struct TuneState<K> {
    histories: Mutex<HashMap<TuneKeyOf<K>, Arc<KeyHistory>>>,
}

impl<K> std::fmt::Debug for TuneState<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuneState")
            .field("keys", &lock(&self.histories).len())
            .finish()
    }
}

impl<K: Hash + Eq + Send + Sync + 'static> Logic for TuneLogic<K> {
    const NAME: &'static str = "auto-tune";
    type Infos = (TaskTime,);
    type State = TuneState<K>;
    /// The history and epoch of a trial selection; `None` once the choice is made.
    type Ticket = Option<(Arc<KeyHistory>, u64)>;
    type Key = TuneKeyOf<K>;

    fn new_state(&self, _resources: usize) -> Self::State {
        TuneState {
            histories: Mutex::new(HashMap::new()),
        }
    }

    fn try_select(
        &self,
        state: &Self::State,
        resources: usize,
        key: Self::Key,
    ) -> Result<Option<(usize, Self::Ticket)>, SelectError> {
        let history = Arc::clone(lock(&state.histories).entry(key).or_insert_with(|| {
            Arc::new(KeyHistory {
                inner: Mutex::new(History {
                    epoch: 0,
                    trials: 0,
                    times: vec![(Duration::ZERO, 0); resources],
                    chosen: None,
                }),
            })
        }));
        let mut h = lock(&history.inner);
        if let (Some((_, at)), Some(interval)) = (h.chosen, self.resample)
            && at.elapsed() >= interval
        {
            h.epoch += 1;
            h.trials = 0;
            h.times.iter_mut().for_each(|t| *t = (Duration::ZERO, 0));
            h.chosen = None;
        }
        if h.trials < self.trial_rounds * resources {
            let index = h.trials % resources;
            h.trials += 1;
            let epoch = h.epoch;
            drop(h);
            return Ok(Some((index, Some((history, epoch)))));
        }
        let index = match h.chosen {
            Some((index, _)) => index,
            None => {
                let index = h.fastest();
                h.chosen = Some((index, Instant::now()));
                index
            }
        };
        Ok(Some((index, None)))
    }

    fn report(&self, _state: &Self::State, index: usize, ticket: &Self::Ticket, report: Report) {
        if let (Report::TaskTime(time), Some((history, epoch))) = (report, ticket) {
            let mut h = lock(&history.inner);
            if h.epoch == *epoch
                && let Some(slot) = h.times.get_mut(index)
            {
                slot.0 += time;
                slot.1 += 1;
            }
        }
    }
}

impl<F: 'static, A: KeyArgs<K>, K: Hash + Eq + Send + Sync + 'static> KeyFor<F, A> for TuneLogic<K> {
    #[inline]
    fn key(_: &F, args: &A) -> TuneKeyOf<K> {
        TuneKeyOf::Function(TypeId::of::<F>(), args.key_args())
    }
}

/// What an auto-tune policy keeps a history for: a submitted function's type with its key
/// arguments, or a key the caller named ([`submit_with_key`](Policy::submit_with_key)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TuneKeyOf<K> {
    /// The submitted function's type and the key of its arguments.
    Function(TypeId, K),
    /// An explicit key.
    Explicit(ExplicitKey),
}

/// An explicit auto-tune key of any [`TuneKey`] type; keys of different types never match.
#[derive(Clone)]
pub struct ExplicitKey(Arc<dyn ErasedKey>);

/// A [`TuneKey`] behind a type-erased pointer: equality compares types, then values.
trait ErasedKey: Send + Sync + std::fmt::Debug {
    fn as_any(&self) -> &dyn std::any::Any;
    fn eq_erased(&self, other: &dyn ErasedKey) -> bool;
    fn hash_erased(&self, state: &mut dyn std::hash::Hasher);
}

impl<K: TuneKey + std::fmt::Debug> ErasedKey for K {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn eq_erased(&self, other: &dyn ErasedKey) -> bool {
        other.as_any().downcast_ref::<K>() == Some(self)
    }

    fn hash_erased(&self, mut state: &mut dyn std::hash::Hasher) {
        TypeId::of::<K>().hash(&mut state);
        self.hash(&mut state);
    }
}

impl ExplicitKey {
    /// Wraps `key`.
    pub fn new<K: TuneKey + std::fmt::Debug>(key: K) -> Self {
        ExplicitKey(Arc::new(key))
    }
}

impl std::fmt::Debug for ExplicitKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for ExplicitKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_erased(&*other.0)
    }
}

impl Eq for ExplicitKey {}

impl Hash for ExplicitKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash_erased(state);
    }
}

impl<R, K: Hash + Eq + Send + Sync + 'static, B: Backend<Resource = R>> Policy<TuneLogic<K>, R, B> {
    /// Runs `rounds` trial rounds over all resources before choosing (at least 1; default 2).
    pub fn with_trial_rounds(mut self, rounds: usize) -> Self {
        self.logic_mut().trial_rounds = rounds.max(1);
        self
    }

    /// Runs the trials again once the choice for a key is `interval` old.
    pub fn with_resample_interval(mut self, interval: Duration) -> Self {
        self.logic_mut().resample = Some(interval);
        self
    }

    /// Chooses a resource for work named by `key` rather than by the submitted function's
    /// type: the history is kept per key, so the function may borrow (it need not be
    /// `'static`), and different closures may share one history. Waits while no resource is
    /// available, as [`select`](Policy::select).
    ///
    /// # Errors
    ///
    /// As [`select`](Policy::select).
    pub fn select_with_key<Q: TuneKey + std::fmt::Debug>(
        &self,
        key: Q,
    ) -> Result<Selection<'_, TuneLogic<K>, B>, SelectError> {
        let key = ExplicitKey::new(key);
        self.select_by_key(|| TuneKeyOf::Explicit(key.clone()))
    }

    /// Submits `f(resource, args)` to the resource chosen for `key` (see
    /// [`select_with_key`](Self::select_with_key)).
    ///
    /// # Errors
    ///
    /// As [`select`](Policy::select).
    ///
    /// ```
    /// use hoplite_select::AutoTune;
    /// use hoplite_serial::Serial;
    /// let p = AutoTune::new(vec![Serial::new(), Serial::new()]);
    /// let data = vec![1u64, 2, 3]; // borrowed by the work: no `'static` function needed
    /// let picks: Vec<usize> = (0..4)
    ///     .map(|_| p.submit_with_key("sum", |_, ()| data.iter().sum::<u64>(), ()).map(|s| s.index()))
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(picks, [0, 1, 0, 1]); // the trial rounds of key "sum"
    /// # Ok::<(), hoplite_select::SelectError>(())
    /// ```
    pub fn submit_with_key<Q, F, A, W>(
        &self,
        key: Q,
        f: F,
        args: A,
    ) -> Result<Submission<'_, TuneLogic<K>, B, W>, SelectError>
    where
        Q: TuneKey + std::fmt::Debug,
        F: FnOnce(&R, A) -> W,
    {
        Ok(self.select_with_key(key)?.submit(f, args))
    }
}
