// Over 800 lines: the crate's guide, `RayonSpace` and its concept impls; the machinery is in the modules.
//! # hoplite-rayon
//!
//! The multi-threaded host backend of hoplite. A [`RayonSpace`] is an *instance*: a hot team of
//! threads (plus a lazily built rayon work-stealing pool of the same size) that runs every
//! pattern of the core — range, multi-dimensional range and team policies, all reducers,
//! parallel scans and unique tokens.
//!
//! ```
//! use hoplite_core::{parallel_for, parallel_reduce, parallel_scan, RangePolicy, Sum};
//! use hoplite_rayon::RayonSpace;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! let space = RayonSpace::with_threads(2)?;
//! let x: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
//! let sum = parallel_reduce("sum", RangePolicy::new(space.clone(), 0..x.len()),
//!     |i, acc| *acc += x[*i], Sum::<f64>::new())?;
//! assert_eq!(sum, 49_995_000.0);
//!
//! let y: Vec<AtomicU64> = (0..x.len()).map(|_| AtomicU64::new(0)).collect();
//! parallel_for("fill", RangePolicy::new(space.clone(), 0..y.len()), |i| {
//!     y[*i].store(2 * *i as u64, Ordering::Relaxed);
//! })?;
//! let total: u64 = parallel_scan("prefix", RangePolicy::new(space, 0..y.len()), |i, partial, _is_final| {
//!     *partial += y[*i].load(Ordering::Relaxed);
//! })?;
//! assert_eq!(total, 99_990_000);
//! # Ok::<(), hoplite_core::Error>(())
//! ```
//!
//! # Threads and dispatch
//!
//! An instance of `n` threads owns `n - 1` dedicated worker threads; the thread that launches
//! a kernel is participant 0 and runs its own share. A launch publishes the job with one
//! atomic epoch increment; idle workers spin on that epoch for about 50 µs, then yield for a
//! few hundred microseconds, and only then park. Back-to-back launches therefore find the
//! workers hot: dispatching an empty kernel costs about one cache-line round trip instead of a
//! thread wake-up (a plain `pool.install` blocks and wakes the caller, which costs tens of
//! microseconds). The caller waits for the workers the same way: spin, yield, park. A thread
//! that waits for a peer last seen on its own CPU skips spinning and yielding and parks at
//! once (the peer wakes it): on a busy machine the scheduler often puts the launching thread
//! and its worker on one CPU, and spinning there only keeps the peer from running (it made
//! every launch wait out both spin budgets, about 100 µs). Team barriers wait the same way.
//!
//! Kernels are monomorphized: each participant makes one indirect call into a loop that is
//! specialized for the kernel, the policy and the reducer, and calls the kernel directly per
//! index.
//!
//! | pattern | static schedule (default) | dynamic schedule |
//! |---------|---------------------------|------------------|
//! | `RangePolicy` for/reduce | one contiguous share of whole chunks per thread | rayon work stealing over chunks |
//! | `MDRangePolicy` for/reduce | one contiguous share of tiles per thread | rayon work stealing over tiles (deterministic reductions: one partial per tile, in tile order) |
//! | `TeamPolicy` | groups of `team_size` threads, contiguous shares of the league | groups claim chunks of the league from a shared counter |
//! | `parallel_scan` | two passes over `n + 1` blocks (see the `ParallelScan` impl of [`RayonSpace`]) | the same |
//!
//! Dynamic range and MDRange schedules use the instance's own rayon pool (built on first
//! use), so uneven iterations are balanced by work stealing; such a launch costs a rayon
//! `install` (tens of microseconds). Team threads must run at the same time (they meet in barriers), so teams
//! always run on the hot team, also with a dynamic schedule.
//!
//! # Launch rules
//!
//! * *In order.* Launches on one instance from several application threads are serialized
//!   by a per-instance lock; every launch is synchronous (it returns when the kernel has
//!   finished), so [`fence`](ExecutionSpace::fence) only waits for launches that other threads
//!   have in flight.
//! * *Nested launches* — a launch made from inside a kernel of the same instance, or from
//!   inside any kernel of this backend while the target instance is busy — run inline on the
//!   calling thread (sequentially; a nested team launch of `t > 1` threads gets `t - 1`
//!   short-lived helper threads so that its barriers work). They never deadlock.
//! * *Threads working for a kernel.* A kernel may start threads (`std::thread::scope`) or run
//!   rayon parallel iterators (`space.install(|| ...)`) whose work launches on, or fences, the
//!   instance the kernel runs on. Waiting for the running launch there would wait for itself,
//!   so a thread that finds the instance busy does not wait when it is a rayon worker (of any
//!   pool) or when it first launched or fenced after the running launch started (every thread
//!   a kernel starts is such a thread): its launch runs inline and its fence returns at once.
//!   Only threads that already used the backend before the running launch started wait for
//!   it. The one case this cannot see is a thread that used the backend before the launch and
//!   then works for its kernel (a long-lived pool other than rayon's): do not launch on a
//!   busy instance from such a thread.
//! * *Panics.* A panic in a kernel on any thread is caught, every other participant is
//!   allowed to finish, and the first panic is re-raised on the calling thread, which the
//!   core turns into [`Error::KernelPanicked`](hoplite_core::Error::KernelPanicked). The
//!   instance is usable right after. A panicking team thread *poisons* its team: threads
//!   waiting in a barrier or collective of that team leave it instead of waiting forever.
//!
//! # Teams
//!
//! [`max_team_size`](ExecutionSpace::max_team_size) is the instance's thread count. A team
//! policy with team size `t` on `n` threads runs `n / t` teams at a time, each on `t` threads
//! that run concurrently, so `team_barrier`, `team_broadcast`, `team_reduce`, `team_scan` and
//! the nested `TeamThreadRange` / `TeamVectorRange` patterns are real cross-thread operations;
//! `ThreadVectorRange` runs sequentially on the calling thread (vector length 1). Scratch
//! memory is one region per team, shared by its threads, plus one private region per thread.
//!
//! # Deterministic reductions
//!
//! With `with_deterministic_reduction(true)` a range reduction is cut into blocks whose size
//! depends only on the range length and chunk size (see [`DETERMINISTIC_MIN_BLOCK`]), each
//! block is folded sequentially, and the block results are joined in a fixed pairwise tree.
//! Floating-point results are then bit-identical for any thread count and any run. MDRange
//! reductions do the same with one partial result per tile. The cost: one partial result is
//! kept per block (at most [`DETERMINISTIC_MAX_BLOCKS`] without a chunk size, so a few
//! kilobytes) and the calling thread joins them after the parallel part, which adds a few
//! microseconds; ranges shorter than a few blocks use fewer threads than the instance has
//! (a block is never split), so small deterministic reductions are slower than ordinary ones.

mod barrier;
mod context;
mod mdrange;
mod member;
mod pool;
mod range;
mod split;
mod steal;
mod sync_prims;
mod team;
mod token;

use std::fmt;
use std::io;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use hoplite_core::{
    ExecutionPolicy, ExecutionSpace, ForKernel, HostSpace, LayoutRight, ParallelFor, ParallelReduce,
    ReduceKernel, Reducer, Result, TokenPool, UniqueTokenSpace,
};

use crate::context::InKernel;
use crate::pool::{HotTeam, Job, LaunchGuard};
use crate::sealed::Internal;

pub use member::RayonTeamMember;
pub use split::{DETERMINISTIC_MAX_BLOCKS, DETERMINISTIC_MIN_BLOCK};
pub use token::RayonGlobalToken;

/// Largest level-0 scratch per team: 1 MiB (host scratch is ordinary memory).
pub const MAX_SCRATCH_LEVEL0: usize = 1 << 20;
/// Largest level-1 scratch per team: 256 MiB.
pub const MAX_SCRATCH_LEVEL1: usize = 1 << 28;

/// The space's name, as [`ExecutionSpace::name`] returns it.
const NAME: &str = "Rayon";

/// The multi-threaded execution space: a pool instance.
///
/// A value is an *instance*. Clones are the same instance and compare equal; instances made
/// separately compare unequal. [`RayonSpace::default()`] is the process-wide default instance
/// with one thread per available core, created on first use.
///
/// ```
/// use hoplite_core::ExecutionSpace;
/// use hoplite_rayon::RayonSpace;
/// let pool = RayonSpace::with_threads(3)?;
/// assert_eq!(pool.concurrency(), 3);
/// assert_eq!(pool, pool.clone());
/// assert_ne!(pool, RayonSpace::with_threads(3)?);
/// assert_eq!(RayonSpace::default(), RayonSpace::default());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct RayonSpace {
    inner: Arc<Instance>,
}

struct Instance {
    id: u64,
    team: HotTeam,
    is_default: bool,
    parent: Option<u64>,
    pool: OnceLock<Option<rayon::ThreadPool>>,
    /// Runs first on every thread the instance starts (see [`RayonSpace::with_thread_start`]).
    on_start: Option<StartHook>,
}

/// A thread an instance starts, as its start hook sees it (see
/// [`RayonSpace::with_thread_start`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkerThread {
    /// The hot-team worker of this rank, `1..threads` (rank 0 is the thread that launches, which
    /// the instance does not start).
    Hot(usize),
    /// Thread `i` of the work-stealing pool that dynamic schedules use, `0..threads`.
    Stealing(usize),
}

/// A start hook, shared by every thread of an instance.
pub(crate) type StartHook = Arc<dyn Fn(WorkerThread) + Send + Sync>;

/// Runs a start hook on the thread it is for. A panicking hook must not take the worker down
/// (its launches would wait for it forever): the panic is dropped, and the thread runs as if
/// the hook had returned.
pub(crate) fn run_start_hook(hook: &StartHook, thread: WorkerThread) {
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(thread)));
    if let Err(payload) = ran {
        hoplite_core::drop_panic_payload(payload);
    }
}

/// How a launch runs: on the hot team (holding the launch lock) or inline on this thread.
pub(crate) enum Mode<'a> {
    /// On the hot team; the launch lock is held.
    Team(LaunchGuard<'a>),
    /// Nested: sequentially on the calling thread.
    Inline,
}

fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// The most threads one instance may have: 16 per available core, and at least 1024. More is
/// almost surely a mistake (a count in the wrong unit), and asking the operating system for
/// it would start threads until it refuses.
///
/// ```
/// assert!(hoplite_rayon::max_threads() >= 1024);
/// ```
pub fn max_threads() -> usize {
    (16 * available_threads()).max(1024)
}

impl RayonSpace {
    /// A new instance with its own `threads` threads (the launching thread counts as one, so
    /// `threads - 1` workers are started).
    ///
    /// `threads == 0` means "one per available core", as in rayon's
    /// `ThreadPoolBuilder::num_threads`. At most [`max_threads`] threads per instance.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_rayon::RayonSpace;
    /// let two = RayonSpace::with_threads(2)?;
    /// assert_eq!((two.concurrency(), two.max_team_size()), (2, 2));
    /// assert!(RayonSpace::with_threads(0)?.concurrency() >= 1);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// ```
    /// use hoplite_core::Error;
    /// use hoplite_rayon::{RayonSpace, max_threads};
    /// let err = RayonSpace::with_threads(max_threads() + 1).expect_err("too many");
    /// assert!(matches!(err, Error::ThreadsUnavailable { started: 0, .. }), "{err}");
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ThreadsUnavailable`](hoplite_core::Error::ThreadsUnavailable) for more than
    /// [`max_threads`] threads, or when the operating system refuses to start one (the
    /// threads already started are stopped again).
    pub fn with_threads(threads: usize) -> Result<Self> {
        let threads = if threads == 0 {
            available_threads()
        } else {
            threads
        };
        Self::build(threads, None, None)
    }

    /// A new instance of `threads` threads (as [`with_threads`](Self::with_threads)) that runs
    /// `on_start` first on every thread it starts: each hot-team worker and, when a dynamic
    /// schedule first needs it, each thread of its work-stealing pool. Backends built on this
    /// one use it to pin threads (the NUMA backend binds each worker to its node's cores) or
    /// to name them for a profiler. The launching thread (rank 0) is the caller's own and is
    /// not started by the instance, so the hook does not run on it.
    ///
    /// A panic in the hook is dropped; the thread then runs as if the hook had returned.
    /// Partitions made with [`partition_space`](Self::partition_space) start their own threads
    /// without it (a backend that needs its threads set up partitions its own way).
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_rayon::{RayonSpace, WorkerThread};
    /// use std::sync::{Arc, Mutex};
    /// let started = Arc::new(Mutex::new(Vec::new()));
    /// let seen = Arc::clone(&started);
    /// let pool = RayonSpace::with_thread_start(3, move |t| seen.lock().expect("lock").push(t))?;
    /// assert_eq!(pool.concurrency(), 3);
    /// // Workers start asynchronously: a launch is finished only once every worker ran it.
    /// hoplite_core::parallel_for("touch", hoplite_core::RangePolicy::new(pool.clone(), 0..3), |_| {})?;
    /// let mut hot = started.lock().expect("lock").clone();
    /// hot.sort_by_key(|t| match t { WorkerThread::Hot(r) => *r, WorkerThread::Stealing(i) => 100 + i });
    /// assert_eq!(hot, [WorkerThread::Hot(1), WorkerThread::Hot(2)]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`with_threads`](Self::with_threads).
    pub fn with_thread_start(
        threads: usize,
        on_start: impl Fn(WorkerThread) + Send + Sync + 'static,
    ) -> Result<Self> {
        let threads = if threads == 0 {
            available_threads()
        } else {
            threads
        };
        Self::build(threads, None, Some(Arc::new(on_start)))
    }

    fn build(threads: usize, parent: Option<u64>, on_start: Option<StartHook>) -> Result<Self> {
        let limit = max_threads();
        if threads > limit {
            return Err(hoplite_core::Error::ThreadsUnavailable {
                space: NAME,
                requested: threads,
                started: 0,
                reason: format!(
                    "more than {limit} threads per instance (16 per available core, at least 1024)"
                ),
            });
        }
        let (space, refused) = Self::start(threads, false, parent, on_start);
        match refused {
            None => Ok(space),
            Some(e) => Err(hoplite_core::Error::ThreadsUnavailable {
                space: NAME,
                requested: threads,
                // Dropping the instance (its only handle) stops these threads.
                started: space.concurrency(),
                reason: format!(
                    "the operating system refused to start a thread ({e}); the {} started are stopped again",
                    space.concurrency()
                ),
            }),
        }
    }

    /// Starts an instance of up to `threads` threads. If the operating system refuses one,
    /// the instance has the threads it got, and the error comes back beside it.
    fn start(
        threads: usize,
        is_default: bool,
        parent: Option<u64>,
        on_start: Option<StartHook>,
    ) -> (Self, Option<io::Error>) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        context::thread_ticket();
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        // Workers of the default instance prefer the global-token id of their rank.
        let (team, refused) =
            HotTeam::start(id, threads, |rank| is_default.then_some(rank), on_start.as_ref());
        let space = RayonSpace {
            inner: Arc::new(Instance {
                id,
                team,
                is_default,
                parent,
                pool: OnceLock::new(),
                on_start,
            }),
        };
        (space, refused)
    }

    /// Splits this instance into `n` independent instances whose thread counts add up to this
    /// one's (each gets at least one thread, so more partitions than threads oversubscribe).
    ///
    /// Each partition has its own threads and launch lock, so partitions run concurrently
    /// when launched from different application threads; while they run, this instance's
    /// own threads sleep. `n == 0` gives an empty vector.
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, ExecutionSpace, RangePolicy, Sum};
    /// use hoplite_rayon::RayonSpace;
    /// let parts = RayonSpace::with_threads(3)?.partition_space(2)?;
    /// assert_eq!(parts.iter().map(|p| p.concurrency()).collect::<Vec<_>>(), [2, 1]);
    /// let sums: Vec<usize> = std::thread::scope(|s| {
    ///     let handles: Vec<_> = parts.iter().map(|p| s.spawn(move || {
    ///         parallel_reduce("part", RangePolicy::new(p.clone(), 0..1000), |i, a| *a += *i, Sum::new())
    ///     })).collect();
    ///     handles.into_iter().map(|h| h.join().expect("no panic")).collect::<Result<_, _>>()
    /// })?;
    /// assert_eq!(sums, [499_500, 499_500]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`with_threads`](Self::with_threads): the operating system refused a thread,
    /// or `n` is above [`max_threads`] (every part has at least one thread).
    pub fn partition_space(&self, n: usize) -> Result<Vec<RayonSpace>> {
        check_parts(n)?;
        self.partition_space_weighted(&vec![1.0; n])
    }

    /// Splits this instance into `weights.len()` independent instances whose thread counts
    /// are proportional to `weights` (largest-remainder rounding, each at least one thread).
    ///
    /// Weights that are negative, NaN or infinite count as zero; if no weight is positive the
    /// threads are split evenly.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_rayon::RayonSpace;
    /// let parts = RayonSpace::with_threads(4)?.partition_space_weighted(&[3.0, 1.0])?;
    /// assert_eq!(parts.iter().map(|p| p.concurrency()).collect::<Vec<_>>(), [3, 1]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`partition_space`](Self::partition_space).
    pub fn partition_space_weighted(&self, weights: &[f64]) -> Result<Vec<RayonSpace>> {
        check_parts(weights.len())?;
        partition_counts(self.concurrency(), weights)
            .into_iter()
            .map(|threads| Self::build(threads, Some(self.inner.id), None))
            .collect()
    }

    /// A number identifying this instance (unique in the process; stable across clones).
    pub fn instance_id(&self) -> u64 {
        self.inner.id
    }

    /// Whether this is the process-wide default instance.
    pub fn is_default_instance(&self) -> bool {
        self.inner.is_default
    }

    /// Runs `op` inside this instance's rayon pool, so that rayon parallel iterators and
    /// `rayon::join` inside it are balanced by work stealing over this instance's threads.
    /// Use it for nested rayon parallelism inside a kernel or on its own; the pool is built on
    /// first use (if it cannot be built, `op` runs on the calling thread).
    ///
    /// ```
    /// use rayon::prelude::*;
    /// use hoplite_rayon::RayonSpace;
    /// let space = RayonSpace::with_threads(2)?;
    /// let sum: u64 = space.install(|| (0..1000u64).into_par_iter().sum());
    /// assert_eq!(sum, 499_500);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn install<T: Send>(&self, op: impl FnOnce() -> T + Send) -> T {
        match self.rayon_pool() {
            Some(pool) => pool.install(op),
            None => op(),
        }
    }

    /// Runs `f` asynchronously on this instance's work-stealing pool (rayon's
    /// `ThreadPool::spawn`) and returns at once: fire and forget, for task groups built on an
    /// instance (the NUMA backend's node task groups). If the pool cannot be built, `f` runs on
    /// a thread of its own.
    ///
    /// A panic in `f` is caught and dropped (rayon would abort the process): catch it inside
    /// `f` to report it.
    ///
    /// # Errors
    ///
    /// Only without a pool: the operating system refused the thread (`f` did not run).
    ///
    /// ```
    /// use hoplite_rayon::RayonSpace;
    /// let space = RayonSpace::with_threads(2)?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// space.spawn(move || tx.send(7).expect("receiver alive"))?;
    /// assert_eq!(rx.recv().ok(), Some(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let guarded = move || {
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
                hoplite_core::drop_panic_payload(payload);
            }
        };
        match self.rayon_pool() {
            Some(pool) => {
                pool.spawn(guarded);
                Ok(())
            }
            None => std::thread::Builder::new()
                .name(format!("hoplite-rayon-{}-task", self.inner.id))
                .spawn(guarded)
                .map(drop),
        }
    }

    /// The instance's rayon pool, built on first use; `None` if it could not be built.
    pub(crate) fn rayon_pool(&self) -> Option<&rayon::ThreadPool> {
        let inner = &*self.inner;
        inner
            .pool
            .get_or_init(|| {
                let id = inner.id;
                let threads = inner.team.size();
                let mut builder = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(move |i| format!("hoplite-rayon-{id}-s{i}"));
                let is_default = inner.is_default;
                let on_start = inner.on_start.clone();
                if is_default || on_start.is_some() {
                    builder = builder.start_handler(move |i| {
                        // The default instance's stealing threads prefer global-token ids
                        // after those of its hot team.
                        if is_default {
                            context::set_preferred_global(Some(threads + i));
                        }
                        if let Some(hook) = &on_start {
                            run_start_hook(hook, WorkerThread::Stealing(i));
                        }
                    });
                }
                builder.build().ok()
            })
            .as_ref()
    }

    /// Number of threads (hot team, including the launching thread).
    pub(crate) fn threads(&self) -> usize {
        self.inner.team.size()
    }

    /// Decides how a launch runs and takes the launch lock if it runs on the team.
    pub(crate) fn mode(&self) -> Mode<'_> {
        let inner = &*self.inner;
        if context::is_active(inner.id) {
            return Mode::Inline;
        }
        if let Some(guard) = inner.team.try_lock() {
            return Mode::Team(guard);
        }
        // Busy. Inside a kernel of another instance, waiting for this one could close a
        // cycle of instances waiting for each other; a thread working for the running launch
        // (see `HotTeam::must_not_wait`) would wait for itself. Both run inline.
        if context::any_active() || inner.team.must_not_wait() {
            Mode::Inline
        } else {
            Mode::Team(inner.team.lock())
        }
    }

    /// Runs `job` on the hot team (ranks `0..threads()`).
    pub(crate) fn execute<J: Job>(&self, held: &LaunchGuard<'_>, job: &J) {
        let preferred = self.inner.is_default.then_some(0);
        self.inner.team.execute(held, job, preferred);
    }

    /// Runs `f` on the calling thread alone, as a launch of this instance (for launches too
    /// small to share).
    pub(crate) fn execute_here<T>(&self, _held: &LaunchGuard<'_>, f: impl FnOnce() -> T) -> T {
        let _in = InKernel::enter(self.inner.id, self.inner.is_default.then_some(0));
        f()
    }

    /// Marks the calling thread as running a kernel of this instance (inline launches).
    pub(crate) fn enter_inline(&self) -> InKernel {
        InKernel::enter(self.inner.id, None)
    }
}

/// Refuses partitions into more parts than an instance may have threads (each part has one
/// thread at least), before anything is allocated for them.
fn check_parts(parts: usize) -> Result<()> {
    let limit = max_threads();
    if parts > limit {
        return Err(hoplite_core::Error::ThreadsUnavailable {
            space: NAME,
            requested: parts,
            started: 0,
            reason: format!("a partition into {parts} instances: at most {limit} instances, one thread each"),
        });
    }
    Ok(())
}

/// Thread counts of a weighted partition of `total` threads, as
/// [`RayonSpace::partition_space_weighted`] makes it: one count per weight, each at least one,
/// the rest shared in proportion to the weights by largest remainders (non-finite and negative
/// weights count as zero; all zero shares evenly). Backends that partition their own pools
/// use it to split the same way.
///
/// ```
/// assert_eq!(hoplite_rayon::partition_counts(8, &[3.0, 1.0]), [6, 2]);
/// assert_eq!(hoplite_rayon::partition_counts(2, &[1.0, 1.0, 1.0]), [1, 1, 1]);
/// ```
pub fn partition_counts(total: usize, weights: &[f64]) -> Vec<usize> {
    let parts = weights.len();
    if parts == 0 {
        return Vec::new();
    }
    if parts >= total {
        return vec![1; parts];
    }
    let clean: Vec<f64> = weights
        .iter()
        .map(|&w| if w.is_finite() && w > 0.0 { w } else { 0.0 })
        .collect();
    let sum: f64 = clean.iter().sum();
    let weights: Vec<f64> = if sum > 0.0 { clean } else { vec![1.0; parts] };
    let sum: f64 = weights.iter().sum();
    // Every part gets one thread; the rest is shared by weight, largest remainders first.
    let spare = total - parts;
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * spare as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|e| 1 + e.floor() as usize).collect();
    let mut left = total.saturating_sub(counts.iter().sum());
    let mut order: Vec<usize> = (0..parts).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take(parts * 2) {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
}

impl Default for RayonSpace {
    /// The process-wide default instance: one thread per available core, created on first use.
    fn default() -> Self {
        static DEFAULT: OnceLock<RayonSpace> = OnceLock::new();
        DEFAULT
            // The default instance cannot report an error: if the operating system refuses a
            // thread, it keeps the threads it got (`concurrency` tells how many).
            .get_or_init(|| RayonSpace::start(available_threads(), true, None, None).0)
            .clone()
    }
}

impl Clone for RayonSpace {
    fn clone(&self) -> Self {
        // The thread that hands an instance on has used it (see `HotTeam::must_not_wait`).
        context::thread_ticket();
        RayonSpace {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl PartialEq for RayonSpace {
    /// Identity: clones of one instance are equal, distinct instances are not.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for RayonSpace {}

impl std::hash::Hash for RayonSpace {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

impl fmt::Debug for RayonSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RayonSpace")
            .field("instance", &self.inner.id)
            .field("threads", &self.threads())
            .field("default", &self.inner.is_default)
            .finish()
    }
}

impl ExecutionSpace for RayonSpace {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = RayonTeamMember<'t>;

    fn name(&self) -> &'static str {
        NAME
    }

    /// Waits for launches that other threads have in flight on this instance (launches are
    /// synchronous, so the caller's own launches are already complete). It returns at once
    /// where waiting could wait for the caller itself: inside a kernel of this instance, inside
    /// a kernel of another instance while this one is busy, and on a thread that may be working
    /// for the running launch (see the crate docs, "Threads working for a kernel").
    fn fence(&self) -> Result<()> {
        let _profiled = hoplite_core::profiling::FenceScope::begin(
            "hoplite::Rayon::fence: Unnamed Instance Fence",
            || self.profiling_device_id(),
        );
        let team = &self.inner.team;
        if context::is_active(self.inner.id) || team.try_lock().is_some() {
            return Ok(());
        }
        // A thread that may be working for the running launch must not wait for it (it has
        // no launch of its own in flight: its launches are synchronous).
        if !(context::any_active() || team.must_not_wait()) {
            drop(team.lock());
        }
        Ok(())
    }

    fn in_parallel(&self) -> bool {
        context::is_active(self.inner.id)
    }

    /// A pool of host threads (Kokkos' `Threads` device type); the instance is the pool's
    /// number, so partitions and pools made apart are told apart.
    fn profiling_device_id(&self) -> hoplite_core::profiling::DeviceId {
        hoplite_core::profiling::DeviceId::numbered(
            hoplite_core::profiling::DeviceType::THREADS,
            0,
            self.inner.id.saturating_sub(1),
        )
    }

    fn concurrency(&self) -> usize {
        self.threads()
    }

    fn max_team_size(&self) -> usize {
        self.threads()
    }

    fn max_vector_length(&self) -> usize {
        1
    }

    fn max_scratch_size(&self, level: usize) -> usize {
        match level {
            0 => MAX_SCRATCH_LEVEL0,
            1 => MAX_SCRATCH_LEVEL1,
            _ => 0,
        }
    }

    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        let inner = &*self.inner;
        let kind = if inner.is_default {
            "default instance"
        } else {
            "instance"
        };
        writeln!(
            out,
            "Rayon execution space ({kind} {}): {} threads ({} hot workers + the launching thread)",
            inner.id,
            self.threads(),
            self.threads() - 1
        )?;
        if detail {
            if let Some(parent) = inner.parent {
                writeln!(out, "  partition of instance {parent}")?;
            }
            let pool = match inner.pool.get() {
                None => "not built yet (built by the first dynamic-schedule launch)".to_owned(),
                Some(None) => "could not be built (dynamic schedules run statically)".to_owned(),
                Some(Some(p)) => format!("{} threads", p.current_num_threads()),
            };
            writeln!(out, "  work-stealing pool: {pool}")?;
            writeln!(out, "  available parallelism: {}", available_threads())?;
            writeln!(out, "  memory space: HostSpace, layout: LayoutRight")?;
            writeln!(out, "  teams: up to {} threads, vector length 1", self.threads())?;
            writeln!(
                out,
                "  scratch per team: level 0 up to {MAX_SCRATCH_LEVEL0} bytes, level 1 up to {MAX_SCRATCH_LEVEL1} bytes"
            )?;
            writeln!(out, "  hoplite-rayon {}", env!("CARGO_PKG_VERSION"))?;
        }
        Ok(())
    }

    /// Pools of their own, with thread counts in proportion to the weights (see the inherent
    /// [`RayonSpace::partition_space_weighted`]).
    fn partition_space_weighted(&self, weights: &[f64]) -> Result<Vec<Self>> {
        RayonSpace::partition_space_weighted(self, weights)
    }

    fn partition_space(&self, n: usize) -> Result<Vec<Self>> {
        RayonSpace::partition_space(self, n)
    }
}

mod sealed {
    /// The proof that a call comes from this crate: outside it the type cannot be named, so
    /// nothing outside can call the [`RayonPolicy`](super::RayonPolicy) methods, which mint
    /// the tokens and team members that writers trust and skip the launch's validation.
    #[derive(Clone, Copy, Debug)]
    pub struct Internal;

    pub trait Sealed {}
    impl Sealed for hoplite_core::RangePolicy<crate::RayonSpace> {}
    impl<const R: usize> Sealed for hoplite_core::MDRangePolicy<crate::RayonSpace, R> {}
    impl Sealed for hoplite_core::TeamPolicy<crate::RayonSpace> {}
}

/// The policies the rayon backend runs: [`RangePolicy`](hoplite_core::RangePolicy),
/// [`MDRangePolicy`](hoplite_core::MDRangePolicy) and [`TeamPolicy`](hoplite_core::TeamPolicy)
/// on a [`RayonSpace`]. Sealed; the methods are the backend's internals, launch through
/// `hoplite_core::parallel_for` / `parallel_reduce`. The methods cannot be called from outside
/// this crate (they take a value of a type only this crate can name): they make tokens and
/// team members, and assume the policy was validated.
pub trait RayonPolicy: ExecutionPolicy<Space = RayonSpace> + sealed::Sealed {
    /// Calls `kernel` once per point of the (validated) policy of launch `label`. Fails only
    /// before any kernel runs (scratch memory that cannot be allocated).
    #[doc(hidden)]
    fn rayon_for<K: ForKernel<Self>>(&self, internal: Internal, label: &str, kernel: &K) -> Result<()>;

    /// Reduces `kernel`'s contributions with `reducer` and finalizes the total. Fails as
    /// `rayon_for` does.
    #[doc(hidden)]
    fn rayon_reduce<R: Reducer, K: ReduceKernel<Self, R::Value>>(
        &self,
        internal: Internal,
        label: &str,
        kernel: &K,
        reducer: &R,
    ) -> Result<R::Value>;
}

// SAFETY: each `rayon_for` (range, MDRange, team: see their modules) hands every point of
// the validated policy to exactly one participant, which makes its token and calls the kernel
// on its own thread; the launch joins every participant before it returns.
unsafe impl<P: RayonPolicy> ParallelFor<P> for RayonSpace {
    #[inline]
    fn parallel_for<K: ForKernel<P>>(&self, label: &str, policy: &P, kernel: K) -> Result<()> {
        policy.rayon_for(Internal, label, &kernel)
    }
}

// SAFETY: as for `ParallelFor`, with `rayon_reduce`.
unsafe impl<P: RayonPolicy> ParallelReduce<P> for RayonSpace {
    #[inline]
    fn parallel_reduce<R: Reducer, K: ReduceKernel<P, R::Value>>(
        &self,
        label: &str,
        policy: &P,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        policy.rayon_reduce(Internal, label, &kernel, reducer)
    }
}

impl UniqueTokenSpace for RayonSpace {
    type InstanceToken = TokenPool;
    type GlobalToken = RayonGlobalToken;

    /// A lock-free pool of [`concurrency`](ExecutionSpace::concurrency) ids.
    fn unique_token(&self) -> TokenPool {
        match TokenPool::new(self.concurrency(), NAME) {
            Ok(pool) => pool,
            Err(e) => unreachable!("concurrency is at least 1: {e}"),
        }
    }

    fn unique_token_with_size(&self, size: usize) -> Result<TokenPool> {
        TokenPool::new(size, NAME)
    }

    /// The process-wide token described on [`RayonGlobalToken`].
    fn global_unique_token() -> RayonGlobalToken {
        token::global()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_counts_add_up() {
        assert_eq!(partition_counts(4, &[1.0, 1.0]), [2, 2]);
        assert_eq!(partition_counts(3, &[1.0, 1.0]), [2, 1]);
        assert_eq!(partition_counts(8, &[3.0, 1.0]), [6, 2]);
        assert_eq!(partition_counts(2, &[1.0, 1.0, 1.0]), [1, 1, 1]);
        assert_eq!(partition_counts(5, &[f64::NAN, -1.0]), [3, 2]);
        assert_eq!(partition_counts(5, &[0.0, 2.0]), [1, 4]);
        assert_eq!(partition_counts(7, &[1.0, 1.0, 1.0]), [3, 2, 2]);
        assert!(partition_counts(4, &[]).is_empty());
        for total in 1..12 {
            for parts in 1..=total {
                let c = partition_counts(total, &vec![1.0; parts]);
                assert_eq!(c.iter().sum::<usize>(), total);
                assert!(c.iter().all(|&k| k >= 1));
            }
        }
    }

    #[test]
    fn print_configuration_names_threads() {
        let space = RayonSpace::with_threads(2).expect("pool");
        let mut out = Vec::new();
        space.print_configuration(&mut out, true).expect("print");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.contains("2 threads") && text.contains("not built yet"),
            "{text}"
        );
        assert_eq!(space.install(|| 7), 7);
        let mut out = Vec::new();
        space.print_configuration(&mut out, true).expect("print");
        assert!(String::from_utf8(out).expect("utf8").contains("pool: 2 threads"));
    }
}
