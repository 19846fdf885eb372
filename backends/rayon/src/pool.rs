//! The hot team of an instance: `n - 1` dedicated worker threads plus the calling thread.
//!
//! # Protocol
//!
//! A launch is a [`Job`]: a `Sync` value whose `run(rank)` does participant `rank`'s share.
//! The caller holds the instance's launch lock (one job at a time), then
//!
//! 1. stores a pointer to the job in `Shared::job` and `n - 1` in `Shared::pending`,
//! 2. increments `Shared::epoch` (release) and unparks workers that went to sleep,
//! 3. runs rank 0 itself, inside `catch_unwind`,
//! 4. waits until `pending` is 0 (acquire), spinning, then yielding, then parking (it parks
//!    at once when a worker was last seen on its own CPU, see `barrier::CpuHints`),
//! 5. re-raises the first panic of any participant with `resume_unwind`.
//!
//! A worker waits for the epoch to change (spinning, yielding, then parking; parking at once
//! when the caller was last seen on its CPU), runs its rank
//! inside `catch_unwind`, records a panic, and decrements `pending` (release). Back-to-back
//! launches find the workers still spinning, so a launch costs one cache-line round trip
//! instead of a thread wake-up.
//!
//! # Why handing a borrowed job to other threads is sound
//!
//! The job lives on the caller's stack and may borrow anything the caller can (it is not
//! `'static`). Workers dereference the job pointer only between observing the new epoch and
//! decrementing `pending`, and the caller does not leave [`HotTeam::execute`] — neither by
//! returning nor by unwinding — before `pending` is 0: rank 0 runs inside `catch_unwind`, and
//! nothing between publishing the job and the end of the wait can panic (atomics, `park`,
//! `Instant`, and a poison-tolerant mutex). A worker cannot start a *later* job with a stale
//! pointer either: the next job is published only after every worker decremented `pending`
//! for this one, and each worker runs each epoch exactly once.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr;
use std::sync::TryLockError;
use std::time::Duration;

use crossbeam_utils::CachePadded;
use hoplite_core::drop_panic_payload;

use crate::barrier::{CpuHints, SpinWait, is_poison_echo, lock};
use crate::context::{self, InKernel};
use crate::sync_prims::thread::{self, JoinHandle, Thread};
use crate::sync_prims::{
    Arc, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering, fence,
};
use crate::{StartHook, WorkerThread, run_start_hook};

/// A caught panic.
pub(crate) type Payload = Box<dyn Any + Send>;

/// One launch, split among a fixed number of participants (ranks).
pub(crate) trait Job: Sync {
    /// Runs participant `rank`'s share.
    fn run(&self, rank: usize);

    /// Called right after participant `rank` panicked, before anybody waits for it (team
    /// launches poison the team's barrier here so its other threads do not wait forever).
    /// Must not panic.
    fn abort(&self, _rank: usize) {}
}

/// Runs `rank` of `job`'s `ranks`, returning its panic if it panicked (after calling `abort`).
pub(crate) fn run_participant<J: Job + ?Sized>(job: &J, rank: usize, ranks: usize) -> Option<Payload> {
    // Unique tokens look first at the id of the thread's rank: the threads of one launch
    // then take and give back ids on cache lines of their own, and an id the thread gives
    // back stays parked for its next acquire until the share ends.
    let _preferred = hoplite_core::lease_rank_id(rank, ranks);
    match catch_unwind(AssertUnwindSafe(|| job.run(rank))) {
        Ok(()) => None,
        Err(payload) => {
            job.abort(rank);
            Some(payload)
        }
    }
}

/// Of several panics of one launch, the one to report: the first that is not only the echo of
/// another thread's panic. The others are dropped with [`drop_panic_payload`], so a payload
/// whose `Drop` panics cannot unwind out of the launch.
pub(crate) fn pick_panic(payloads: impl IntoIterator<Item = Payload>) -> Option<Payload> {
    let mut chosen: Option<Payload> = None;
    for p in payloads {
        let better = match &chosen {
            None => true,
            Some(old) => is_poison_echo(&**old) && !is_poison_echo(&*p),
        };
        let dropped = if better { chosen.replace(p) } else { Some(p) };
        if let Some(dropped) = dropped {
            drop_panic_payload(dropped);
        }
    }
    chosen
}

/// The type-erased head of a published job.
struct JobHeader {
    /// Runs (rank, ranks) of the job.
    run: unsafe fn(*const JobHeader, usize, usize) -> Option<Payload>,
}

/// A job together with its erased entry point; `header` is the first field, so a pointer to
/// the cell is a pointer to its header.
#[repr(C)]
struct JobCell<'a, J> {
    header: JobHeader,
    job: &'a J,
}

/// The monomorphized entry point of `JobCell<J>`: one indirect call per participant.
///
/// # Safety
///
/// `header` points to the header of a live `JobCell<'_, J>` with this very `J`.
unsafe fn run_erased<J: Job>(header: *const JobHeader, rank: usize, ranks: usize) -> Option<Payload> {
    // SAFETY: the caller guarantees `header` is the first field of a live `JobCell<J>`
    // (`repr(C)`, so the cell starts at its header, and the pointer was made from a reference
    // to the whole cell, so it may read all of it).
    let job = unsafe { (*header.cast::<JobCell<'_, J>>()).job };
    run_participant(job, rank, ranks)
}

/// State shared by the caller and the workers of one hot team.
struct Shared {
    /// Incremented once per job (and once for shutdown).
    epoch: CachePadded<AtomicU64>,
    /// The current job; valid while `pending > 0` for the current epoch.
    job: AtomicPtr<JobHeader>,
    /// Workers that have not finished the current job.
    pending: CachePadded<AtomicUsize>,
    /// The thread waiting for `pending` to reach 0, when it parks.
    caller: Mutex<Option<Thread>>,
    caller_parked: AtomicBool,
    /// Per worker (rank - 1): whether it is parked or about to park.
    sleeping: Box<[CachePadded<AtomicBool>]>,
    sleepers: AtomicUsize,
    /// Where each rank was last seen (rank 0: the launching thread).
    cpus: CpuHints,
    shutdown: AtomicBool,
    /// The first panic of a worker in the current job.
    panic: Mutex<Option<Payload>>,
    /// The instance id (for `in_parallel`).
    instance: u64,
}

impl Shared {
    /// Keeps the more telling of `payload` and the recorded panic. Never panics: the other
    /// one is dropped outside the lock with [`drop_panic_payload`].
    fn record_panic(&self, payload: Payload) {
        let dropped = {
            let mut slot = lock(&self.panic);
            let replace = match &*slot {
                None => true,
                Some(old) => is_poison_echo(&**old) && !is_poison_echo(&*payload),
            };
            if replace {
                slot.replace(payload)
            } else {
                Some(payload)
            }
        };
        if let Some(dropped) = dropped {
            drop_panic_payload(dropped);
        }
    }

    /// Waits until the epoch differs from `seen` and returns it. Worker `rank` only.
    fn wait_epoch(&self, rank: usize, seen: u64) -> u64 {
        let peer_here = self.cpus.arrive(rank);
        let mut spin = SpinWait::new(WORKER_SPIN, WORKER_BUSY).beside(peer_here);
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            if epoch != seen {
                return epoch;
            }
            if !spin.wait() {
                break;
            }
        }
        // Announce the sleep and fence before the final check; the caller bumps the epoch,
        // fences and then reads `sleepers`/`sleeping`, so one of us sees the other. The
        // release increment makes the flag visible to a caller that reads it.
        let flag = &self.sleeping[rank - 1];
        flag.store(true, Ordering::Relaxed);
        self.sleepers.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        let epoch = loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            if epoch != seen {
                break epoch;
            }
            thread::park();
        };
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        flag.store(false, Ordering::Relaxed);
        epoch
    }
}

/// How long an idle worker spins on the epoch before yielding.
const WORKER_SPIN: Duration = Duration::from_micros(50);
/// How long an idle worker busy-waits (spinning, then yielding) before it parks.
const WORKER_BUSY: Duration = Duration::from_micros(300);
/// How long the caller spins for the workers to finish before yielding.
const CALLER_SPIN: Duration = Duration::from_micros(50);
/// How long the caller busy-waits before it parks.
const CALLER_BUSY: Duration = Duration::from_micros(500);

fn worker_main(
    shared: Arc<Shared>,
    rank: usize,
    preferred_global: Option<usize>,
    on_start: Option<StartHook>,
) {
    context::set_preferred_global(preferred_global);
    if let Some(hook) = on_start {
        run_start_hook(&hook, WorkerThread::Hot(rank));
    }
    let mut seen = 0;
    loop {
        seen = shared.wait_epoch(rank, seen);
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        let header = shared.job.load(Ordering::Relaxed);
        let payload = {
            let _in = InKernel::enter(shared.instance, None);
            // SAFETY: the epoch was read with acquire ordering after the caller stored the
            // pointer and released the epoch, so `header` is the current job's header. That
            // job stays alive until this worker decrements `pending` below (see the module
            // docs), and `run` is the entry point made for exactly that job's type.
            unsafe { ((*header).run)(header, rank, shared.sleeping.len() + 1) }
        };
        if let Some(payload) = payload {
            shared.record_panic(payload);
        }
        // Last access to the job happened above; from here on only `shared` is touched.
        // The last worker fences between its decrement and its check of `caller_parked`; the
        // caller stores `caller_parked`, fences and re-reads `pending` before it parks.
        if shared.pending.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::SeqCst);
            if shared.caller_parked.load(Ordering::Acquire) {
                let caller = lock(&shared.caller).clone();
                if let Some(caller) = caller {
                    caller.unpark();
                }
            }
        }
    }
}

/// Proof that the instance's launch lock is held.
pub(crate) struct LaunchGuard<'a> {
    _guard: MutexGuard<'a, ()>,
}

/// The worker threads of one instance and its launch lock.
pub(crate) struct HotTeam {
    shared: Arc<Shared>,
    threads: Vec<Thread>,
    handles: Vec<JoinHandle<()>>,
    launch: Mutex<()>,
    /// The ticket clock when the launch lock was last taken (see `context::arrived_after`).
    locked_at: AtomicU64,
}

impl HotTeam {
    /// Starts up to `threads - 1` workers for instance `instance`. If the OS refuses a thread,
    /// the team has the workers it got (at least the caller remains) and the error comes back
    /// beside it, for the caller to keep the smaller team or drop it. `preferred_global` gives
    /// each worker rank its preferred global-token id; `on_start` runs first on every worker.
    pub(crate) fn start(
        instance: u64,
        threads: usize,
        preferred_global: impl Fn(usize) -> Option<usize>,
        on_start: Option<&StartHook>,
    ) -> (Self, Option<std::io::Error>) {
        let wanted = threads.max(1) - 1;
        let shared = Arc::new(Shared {
            epoch: CachePadded::new(AtomicU64::new(0)),
            job: AtomicPtr::new(ptr::null_mut()),
            pending: CachePadded::new(AtomicUsize::new(0)),
            caller: Mutex::new(None),
            caller_parked: AtomicBool::new(false),
            sleeping: (0..wanted)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            sleepers: AtomicUsize::new(0),
            cpus: CpuHints::new(wanted + 1),
            shutdown: AtomicBool::new(false),
            panic: Mutex::new(None),
            instance,
        });
        let mut handles = Vec::with_capacity(wanted);
        let mut refused = None;
        for rank in 1..=wanted {
            let worker_shared = Arc::clone(&shared);
            let preferred = preferred_global(rank);
            let hook = on_start.cloned();
            let spawned = thread::Builder::new()
                .name(format!("hoplite-rayon-{instance}-w{rank}"))
                .spawn(move || worker_main(worker_shared, rank, preferred, hook));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let team = HotTeam {
            threads: handles.iter().map(|h| h.thread().clone()).collect(),
            shared,
            handles,
            launch: Mutex::new(()),
            locked_at: AtomicU64::new(0),
        };
        (team, refused)
    }

    /// Number of participants: the workers plus the calling thread.
    pub(crate) fn size(&self) -> usize {
        self.handles.len() + 1
    }

    /// Takes the launch lock, waiting for a launch of another thread to finish.
    pub(crate) fn lock(&self) -> LaunchGuard<'_> {
        // The running launch's threads may wait for the token id this thread parked.
        hoplite_core::return_parked_id();
        self.locked(lock(&self.launch))
    }

    /// Takes the launch lock if no other launch is running.
    pub(crate) fn try_lock(&self) -> Option<LaunchGuard<'_>> {
        match self.launch.try_lock() {
            Ok(guard) => Some(self.locked(guard)),
            Err(TryLockError::Poisoned(p)) => Some(self.locked(p.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    fn locked<'a>(&'a self, guard: MutexGuard<'a, ()>) -> LaunchGuard<'a> {
        self.locked_at.store(context::ticket_clock(), Ordering::Relaxed);
        LaunchGuard { _guard: guard }
    }

    /// Whether the calling thread, finding the launch lock taken, must not wait for it: it is
    /// a rayon worker, or it first launched after the running launch started (a thread that
    /// launch's kernel may have started and may be waiting for).
    pub(crate) fn must_not_wait(&self) -> bool {
        context::on_rayon_worker() || context::arrived_after(self.locked_at.load(Ordering::Relaxed))
    }

    /// Runs `job` with ranks `0..self.size()`: rank 0 on the calling thread, the others on
    /// the workers. Returns when every rank has finished; re-raises the first panic.
    pub(crate) fn execute<J: Job>(&self, _held: &LaunchGuard<'_>, job: &J, preferred_global: Option<usize>) {
        let shared = &*self.shared;
        let workers = self.handles.len();
        if workers == 0 {
            let _in = InKernel::enter(shared.instance, preferred_global);
            if let Some(payload) = run_participant(job, 0, 1) {
                resume_unwind(payload);
            }
            return;
        }
        // Taken before publishing: nothing after the publication may panic.
        let me = thread::current();
        let peer_here = shared.cpus.arrive(0);
        let cell = JobCell {
            header: JobHeader { run: run_erased::<J> },
            job,
        };
        shared.job.store(
            ptr::from_ref(&cell).cast::<JobHeader>().cast_mut(),
            Ordering::Relaxed,
        );
        shared.pending.store(workers, Ordering::Relaxed);
        shared.epoch.fetch_add(1, Ordering::Release);
        // See `Shared::wait_epoch`: a worker going to sleep is seen here, or sees the epoch.
        fence(Ordering::SeqCst);
        if shared.sleepers.load(Ordering::Acquire) > 0 {
            for (flag, thread) in shared.sleeping.iter().zip(&self.threads) {
                if flag.load(Ordering::Relaxed) {
                    thread.unpark();
                }
            }
        }
        let own = {
            let _in = InKernel::enter(shared.instance, preferred_global);
            run_participant(job, 0, workers + 1)
        };
        self.wait_workers(me, peer_here);
        // Every worker is done with `cell`; it may now go out of scope.
        let theirs = lock(&shared.panic).take();
        if let Some(payload) = pick_panic(own.into_iter().chain(theirs)) {
            resume_unwind(payload);
        }
    }

    /// Waits until every worker finished the current job. Never panics.
    /// `peer_here`: a worker was last seen on this thread's CPU, so spinning would only keep
    /// it from running: park at once.
    fn wait_workers(&self, me: Thread, peer_here: bool) {
        let shared = &*self.shared;
        let mut spin = SpinWait::new(CALLER_SPIN, CALLER_BUSY).beside(peer_here);
        while shared.pending.load(Ordering::Acquire) != 0 {
            if !spin.wait() {
                *lock(&shared.caller) = Some(me);
                shared.caller_parked.store(true, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                while shared.pending.load(Ordering::Acquire) != 0 {
                    thread::park();
                }
                shared.caller_parked.store(false, Ordering::Relaxed);
                return;
            }
        }
    }
}

impl Drop for HotTeam {
    fn drop(&mut self) {
        // No launch is running: the team is dropped with its last instance handle, and a
        // launch borrows a handle for its whole duration.
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for thread in &self.threads {
            thread.unpark();
        }
        let me = thread::current().id();
        for handle in self.handles.drain(..) {
            // A worker that drops the last handle of its own instance cannot join itself; it
            // exits on its own once its current job returns.
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

impl std::fmt::Debug for HotTeam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotTeam")
            .field("threads", &self.size())
            .field("sleeping", &self.shared.sleepers.load(Ordering::Relaxed))
            .finish()
    }
}

/// Loom models of the launch hand-off (`RUSTFLAGS="--cfg loom" cargo test --release -p
/// hoplite-rayon --lib loom`): a hot team runs launches back to back, a participant panics,
/// and the team shuts down. Each rank writes its own loom `UnsafeCell`, which the caller reads
/// after `execute` returns, so loom reports a launch that returns before a worker finished (or
/// without the worker's writes visible); a lost wake-up is a loom deadlock.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::cell::UnsafeCell;

    /// The panic payload of the model's deliberate panics.
    struct Deliberate;

    struct CountJob {
        cells: Vec<UnsafeCell<u64>>,
        panics_on: Option<usize>,
    }

    // SAFETY: loom checks the accesses: each rank writes only its own cell during the launch,
    // and the caller reads them only after `execute` returned.
    unsafe impl Sync for CountJob {}

    impl Job for CountJob {
        fn run(&self, rank: usize) {
            // SAFETY: see the `Sync` impl.
            self.cells[rank].with_mut(|p| unsafe { *p += 1 });
            if self.panics_on == Some(rank) {
                std::panic::panic_any(Deliberate);
            }
        }
    }

    fn quiet_deliberate_panics() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Deliberate>() {
                previous(info);
            }
        }));
    }

    fn launches(threads: usize, panics_on: Option<usize>, rounds: u64) {
        quiet_deliberate_panics();
        let mut builder = loom::model::Builder::new();
        if threads > 2 {
            builder.preemption_bound = Some(2);
        }
        builder.check(move || {
            let (team, refused) = HotTeam::start(1, threads, |_| None, None);
            assert!(refused.is_none());
            let job = CountJob {
                cells: (0..threads).map(|_| UnsafeCell::new(0)).collect(),
                panics_on,
            };
            for round in 1..=rounds {
                let guard = team.lock();
                let result = catch_unwind(AssertUnwindSafe(|| team.execute(&guard, &job, None)));
                match (panics_on, result) {
                    (None, Ok(())) => {}
                    (Some(_), Err(payload)) => assert!(payload.is::<Deliberate>()),
                    (expected, got) => panic!("panic expected on {expected:?}, got {:?}", got.is_err()),
                }
                for cell in &job.cells {
                    // SAFETY: see the `Sync` impl of `CountJob`.
                    assert_eq!(cell.with(|p| unsafe { *p }), round);
                }
            }
            drop(team);
        });
    }

    #[test]
    fn loom_two_ranks_two_launches() {
        launches(2, None, 2);
    }

    #[test]
    fn loom_a_worker_panics() {
        launches(2, Some(1), 1);
    }

    #[test]
    fn loom_the_caller_panics() {
        launches(2, Some(0), 1);
    }

    #[test]
    fn loom_three_ranks() {
        launches(3, None, 1);
    }
}
