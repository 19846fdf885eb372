//! Queued device work: which device accesses of work queued on `Cuda` instances may still be
//! running, so that work on another instance that conflicts with one of them waits for it
//! first.
//!
//! With `HOPLITE_CUDA_LAUNCHES=async` in the environment, a `parallel_for` on a `Cuda`
//! instance returns once its kernel is queued on the instance's stream, as in Kokkos. Stream
//! work other than the core's launches is queued in either mode: [`Cuda::fill`](crate::Cuda::fill),
//! [`Cuda::copy`](crate::Cuda::copy), raw kernels and the mirrors' copies from or into
//! page-locked memory (`Cuda::queue_work`). What keeps that safe under the core's borrow
//! model, where a launch's borrows end when it returns:
//!
//! - *Lifetimes.* Queued work keeps its views' allocations (`DeviceHandle::owner`) in the
//!   instance until its next fence, so a view dropped meanwhile stays allocated.
//! - *Memory.* Views dropped while queued work uses them are freed at the instance's next
//!   fence; an allocation that fails while instances keep such views fences them all and
//!   tries once more ([`release_kept`]), as a CUDA free would have waited for the device.
//! - *The host.* The core's host copies of device memory (`to_vec`, `copy_from_slice`,
//!   `copy_to_host`, ...) are the driver's synchronous copies on the legacy default stream of
//!   the memory's GPU, which wait for the work queued on every (blocking) stream of that GPU:
//!   the host sees every queued launch's stores and never writes under a running kernel.
//!   Work that reaches another GPU's memory (peer access) is not on that GPU's streams, so it
//!   waits for itself before it returns.
//! - *Other instances.* Work on one instance runs in stream order. Work on another instance
//!   that touches bytes queued work writes (or writes bytes it reads) first waits for that
//!   instance ([`Pending::conflicts`], then a fence of it). Queued work records its accesses
//!   after it is queued but before it returns, so before its borrows end: a conflicting
//!   launch, which needs those borrows ended, always finds the record.
//! - *Events.* Work on an instance that waited for another instance's event
//!   ([`Cuda::wait_event`](crate::Cuda::wait_event)) is ordered after the work queued there
//!   before the event was recorded: the table skips those records for it
//!   ([`Pending::order_after`]), so hand-placed events order streams without a fence.
//!
//! Launches that keep waiting before they return: every launch in the default mode,
//! reductions and scans (their value), and launches with managed-memory views (the host
//! reaches those without a copy), unique tokens or views of another GPU. All of them, a CUDA
//! graph's stages (which wait for all queued work of other instances) and DAG streams'
//! launches (ordered among themselves by the DAG's events, and not recorded: the DAG holds
//! their views until they have run) wait for the conflicting queued work first. Only a DAG
//! vertex's launches on its own stream's instance are such: its events cover nothing else, so
//! its launches on any other instance are recorded like any others ([`in_dag_stream`]).

// loom's locks under `cfg(loom)`, for the model of `synchronize` below.
use hoplite_core::loom_locks::{Condvar, Mutex};

/// Whether `Cuda` launches return before their kernel has run (`HOPLITE_CUDA_LAUNCHES=async`),
/// read once per process. Any other value than `async` or `sync` is reported once on
/// standard error and taken as `sync`, so that a misspelt setting does not pass unnoticed.
pub(crate) fn asynchronous() -> bool {
    static ASYNC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASYNC.get_or_init(|| launch_mode(std::env::var("HOPLITE_CUDA_LAUNCHES").ok().as_deref()))
}

/// The launch mode a `HOPLITE_CUDA_LAUNCHES` value asks for (see [`asynchronous`]).
fn launch_mode(value: Option<&str>) -> bool {
    crate::switch_setting(
        "HOPLITE_CUDA_LAUNCHES",
        value,
        ["async", "sync"],
        "launches wait for their kernels",
    )
}

/// An instance whose queued work may keep views alive: what [`release_kept`] fences.
pub(crate) trait Keeper: Send + Sync {
    /// Waits for the instance's queued work and drops what it kept alive; whether it kept
    /// anything.
    fn release(&self) -> bool;
}

/// The instances that may keep views alive, each once (`register_keeper`).
fn keepers() -> &'static Mutex<Vec<std::sync::Weak<dyn Keeper>>> {
    static KEEPERS: std::sync::OnceLock<Mutex<Vec<std::sync::Weak<dyn Keeper>>>> = std::sync::OnceLock::new();
    KEEPERS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Registers an instance for [`release_kept`], forgetting the instances that are gone.
pub(crate) fn register_keeper(keeper: std::sync::Weak<dyn Keeper>) {
    let mut all = keepers().lock();
    all.retain(|k| k.strong_count() > 0);
    all.push(keeper);
}

/// Fences every live instance that keeps views alive for its queued work, so that the views
/// dropped meanwhile are freed: what an allocation that failed does before it tries again.
/// Whether anything was released.
pub(crate) fn release_kept() -> bool {
    // The list is copied out so that no lock is held while streams are waited for.
    let live: Vec<std::sync::Arc<dyn Keeper>> = keepers()
        .lock()
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .collect();
    let mut released = false;
    for keeper in live {
        released |= keeper.release();
    }
    released
}

thread_local! {
    /// The instance (by its number) whose launches from this thread are a DAG stream's work,
    /// ordered by that stream's CUDA events, which also hold their views borrowed until they
    /// have run. Per thread *and* instance: the events cover that stream only, so the same
    /// vertex's launches on any other instance (and another thread's on this one) are queued
    /// work like any other.
    static DAG_ORDERED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `work` as the work of a DAG stream on instance `instance` (by its number): its
/// asynchronous launches *on that instance* wait for the conflicting queued launches of other
/// instances but are not recorded in the table, since the DAG orders conflicting vertices by
/// events on that stream and holds their views borrowed (a conflicting eager launch elsewhere
/// is refused) until they have run. Its launches on other instances are recorded as usual.
#[cfg(feature = "dag")]
pub(crate) fn ordered_by_dag<T>(instance: u64, work: impl FnOnce() -> T) -> T {
    struct Reset(Option<u64>);
    impl Drop for Reset {
        fn drop(&mut self) {
            DAG_ORDERED.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DAG_ORDERED.with(|d| d.replace(Some(instance))));
    work()
}

/// Whether the calling thread runs a DAG stream's work on instance `instance`
/// (`ordered_by_dag`): only then do that instance's launches skip the table.
pub(crate) fn in_dag_stream(instance: u64) -> bool {
    DAG_ORDERED.with(std::cell::Cell::get) == Some(instance)
}

/// One device access of a launch: bytes `lo..hi` of device memory, written (atomic updates
/// included) or only read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) writes: bool,
}

impl Access {
    /// The `len` bytes from device address `lo`.
    pub(crate) fn bytes(lo: u64, len: u64, writes: bool) -> Access {
        Access {
            lo,
            hi: lo.saturating_add(len),
            writes,
        }
    }

    fn conflicts_with(&self, other: &Access) -> bool {
        (self.writes || other.writes) && self.lo < other.hi && other.lo < self.hi
    }
}

/// The accesses of queued launches, per instance (by the instance's number, with `W`, what
/// fences it), until the instance is fenced.
#[derive(Debug)]
pub(crate) struct Pending<W> {
    inner: Mutex<Queued<W>>,
    /// Notified when an instance is forgotten (`forget_instance`).
    forgotten: Condvar,
}

#[derive(Debug)]
struct Queued<W> {
    /// (instance, what fences it, the access, the record's sequence number).
    entries: Vec<(u64, W, Access, u64)>,
    /// The next record's sequence number.
    next: u64,
    /// (waiter, instance, mark): launches queued on `waiter` from now on come after the
    /// records of `instance` older than `mark` (the waiter's stream waited for an event
    /// recorded there then). At most one per pair, with the latest mark.
    ordered: Vec<(u64, u64, u64)>,
}

impl<W> Default for Pending<W> {
    fn default() -> Self {
        Pending {
            inner: Mutex::new(Queued {
                entries: Vec::new(),
                next: 0,
                ordered: Vec::new(),
            }),
            forgotten: Condvar::new(),
        }
    }
}

/// Past this many accesses queued on one instance, a launch fences it first, which keeps the
/// table (and the views the instance keeps alive) bounded for a program that never fences.
pub(crate) const MAX_QUEUED: usize = 4096;

impl<W: Clone> Pending<W> {
    /// What fences each instance other than `instance` with a queued access that conflicts
    /// with one of `accesses`, each once, in the order first seen.
    pub(crate) fn conflicts(&self, instance: u64, accesses: &[Access]) -> Vec<(u64, W)> {
        let queued = self.inner.lock();
        let mut found: Vec<(u64, W)> = Vec::new();
        for (other, fence, access, seq) in &queued.entries {
            let after_event = queued
                .ordered
                .iter()
                .any(|&(w, i, mark)| w == instance && i == *other && *seq < mark);
            if *other != instance
                && !after_event
                && !found.iter().any(|(i, _)| i == other)
                && accesses.iter().any(|a| a.conflicts_with(access))
            {
                found.push((*other, fence.clone()));
            }
        }
        found
    }

    /// Records `accesses` of a launch just queued on `instance` (fenced through `fence`),
    /// merging an access already recorded for the same bytes (a written range stays written).
    /// Returns how many accesses the instance now has queued.
    pub(crate) fn record(&self, instance: u64, fence: &W, accesses: &[Access]) -> usize {
        let mut queued = self.inner.lock();
        let seq = queued.next;
        queued.next += 1;
        for access in accesses {
            let same = queued
                .entries
                .iter_mut()
                .find(|(i, _, a, _)| *i == instance && a.lo == access.lo && a.hi == access.hi);
            match same {
                Some((_, _, a, s)) => {
                    a.writes |= access.writes;
                    *s = seq;
                }
                None => queued.entries.push((instance, fence.clone(), *access, seq)),
            }
        }
        queued.entries.iter().filter(|(i, ..)| *i == instance).count()
    }

    /// Orders the launches queued on `waiter` from now on after `instance`'s records older
    /// than `mark`: `waiter`'s stream waits for an event recorded on `instance` after `mark`
    /// was taken.
    pub(crate) fn order_after(&self, waiter: u64, instance: u64, mark: u64) {
        if waiter == instance {
            return;
        }
        let mut queued = self.inner.lock();
        // Only records older than the mark are skipped, and every later record is newer:
        // without such a record now, the order would never matter (and would stay forever
        // for an instance already gone).
        if !queued
            .entries
            .iter()
            .any(|(i, _, _, seq)| *i == instance && *seq < mark)
        {
            return;
        }
        match queued
            .ordered
            .iter_mut()
            .find(|(w, i, _)| *w == waiter && *i == instance)
        {
            Some((_, _, m)) => *m = (*m).max(mark),
            None => queued.ordered.push((waiter, instance, mark)),
        }
    }

    /// Forgets everything of `instance`, which is gone: its records and the orders it is in.
    pub(crate) fn forget_instance(&self, instance: u64) {
        let mut queued = self.inner.lock();
        queued.entries.retain(|(i, ..)| *i != instance);
        queued
            .ordered
            .retain(|(w, i, _)| *w != instance && *i != instance);
        self.forgotten.notify_all();
    }

    /// Blocks until `instance` has nothing recorded: an instance that is being dropped (no
    /// longer reachable to fence) waits for its stream, then forgets its records.
    pub(crate) fn wait_until_forgotten(&self, instance: u64) {
        let mut queued = self.inner.lock();
        while queued.entries.iter().any(|(i, ..)| *i == instance) {
            self.forgotten.wait(&mut queued);
        }
    }

    /// The mark a fence takes before it waits: the records made before it are of launches
    /// queued before the wait.
    pub(crate) fn mark(&self) -> u64 {
        self.inner.lock().next
    }

    /// Forgets `instance`'s accesses recorded before `mark`: the instance was fenced after
    /// the mark was taken, so those launches have run.
    pub(crate) fn forget(&self, instance: u64, mark: u64) {
        let mut queued = self.inner.lock();
        queued
            .entries
            .retain(|(i, _, _, seq)| *i != instance || *seq >= mark);
        // An order is about records older than its mark: once none is left, it is done.
        let Queued { entries, ordered, .. } = &mut *queued;
        ordered.retain(|&(_, i, m)| entries.iter().any(|(e, _, _, seq)| *e == i && *seq < m));
    }
}

/// A value a queued launch reads through raw addresses (a view's clone), kept alive until the
/// instance is synchronized past the launch.
pub(crate) type KeptValue = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// The values an instance's queued work reads through raw addresses, kept alive until a
/// synchronization that covers that work: the other half of the protocol beside the table.
/// Private to this module but for [`Kept::keep`], which work calls once it is queued, and
/// [`synchronize`], the one place values leave.
#[derive(Debug, Default)]
pub(crate) struct Kept(Mutex<Vec<KeptValue>>);

impl Kept {
    /// Keeps `values` for work just queued on the instance. Called after the work was queued
    /// on the stream, never before: a synchronization that takes the values then covers the
    /// work (see [`synchronize`]).
    pub(crate) fn keep(&self, values: impl IntoIterator<Item = KeptValue>) {
        self.0.lock().extend(values);
    }

    /// How many values are kept.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Drops every value: for an instance being dropped, whose stream was drained first.
    pub(crate) fn clear_drained(&mut self) {
        self.0.get_mut().clear();
    }
}

/// Synchronizes `instance` (number) with `wait` (its stream's synchronization), then drops
/// the values `kept` for work queued before and forgets that work's records in `table`.
///
/// The order is the protocol: the table's mark, then the values taken, then the wait, then
/// the records older than the mark forgotten and the values dropped. Work queues on the stream
/// before it records (in the table) and keeps (its values), so a launch whose values were
/// taken, or whose record is older than the mark, was queued before the wait began and has
/// run when it returns; a launch that lands in between keeps its values and its records until
/// the next synchronization. When the wait fails nothing is known to have finished: the values
/// go back, the records stay.
pub(crate) fn synchronize<W: Clone, E>(
    table: &Pending<W>,
    instance: u64,
    kept: &Kept,
    wait: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let mark = table.mark();
    let finished = std::mem::take(&mut *kept.0.lock());
    if let Err(e) = wait() {
        kept.0.lock().extend(finished);
        return Err(e);
    }
    table.forget(instance, mark);
    drop(finished);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Access, Pending};

    fn read(lo: u64, hi: u64) -> Access {
        Access {
            lo,
            hi,
            writes: false,
        }
    }
    fn write(lo: u64, hi: u64) -> Access {
        Access { lo, hi, writes: true }
    }
    fn ids(found: Vec<(u64, &'static str)>) -> Vec<u64> {
        found.into_iter().map(|(i, _)| i).collect()
    }

    #[test]
    fn only_other_instances_with_overlapping_writes_conflict() {
        let pending = Pending::default();
        pending.record(1, &"one", &[write(0, 100), read(200, 300)]);
        pending.record(2, &"two", &[read(100, 200)]);
        // The same instance never waits for itself: its stream orders its launches.
        assert!(pending.conflicts(1, &[write(0, 100), write(200, 300)]).is_empty());
        assert_eq!(pending.conflicts(1, &[write(0, 300)]), [(2, "two")]);
        // Reads beside reads, and bytes next to each other, do not conflict.
        assert!(pending.conflicts(3, &[read(200, 300), read(100, 200)]).is_empty());
        assert!(pending.conflicts(3, &[write(300, 400)]).is_empty());
        // A read of written bytes, a write of read bytes; each instance once, with its fence.
        assert_eq!(pending.conflicts(3, &[read(50, 60), read(70, 80)]), [(1, "one")]);
        assert_eq!(ids(pending.conflicts(3, &[write(150, 250)])), [1, 2]);
        assert_eq!(ids(pending.conflicts(2, &[write(150, 250)])), [1]);
    }

    #[test]
    fn records_merge_per_range_and_a_fence_forgets_what_came_before_its_mark() {
        let pending = Pending::default();
        assert_eq!(pending.record(1, &"one", &[read(0, 8)]), 1);
        assert_eq!(pending.record(1, &"one", &[read(0, 8), read(8, 16)]), 2);
        assert_eq!(ids(pending.conflicts(2, &[write(0, 4)])), [1]);
        // A later write of a range read before keeps it written.
        assert_eq!(pending.record(1, &"one", &[write(8, 16)]), 2);
        assert_eq!(ids(pending.conflicts(2, &[read(8, 9)])), [1]);
        assert_eq!(pending.record(2, &"two", &[read(100, 108)]), 1);
        let mark = pending.mark();
        // A launch queued on instance 1 after the fence's mark stays recorded.
        pending.record(1, &"one", &[write(40, 48)]);
        pending.forget(1, mark);
        assert!(pending.conflicts(3, &[write(0, 16)]).is_empty());
        assert_eq!(ids(pending.conflicts(3, &[read(40, 41)])), [1]);
        assert_eq!(ids(pending.conflicts(3, &[write(100, 101)])), [2]);
        pending.forget(1, pending.mark());
        assert!(pending.conflicts(3, &[read(40, 41)]).is_empty());
    }

    #[cfg(feature = "dag")]
    #[test]
    fn only_the_dag_streams_own_instance_is_ordered_by_the_dag() {
        use super::{in_dag_stream, ordered_by_dag};
        assert!(!in_dag_stream(3));
        ordered_by_dag(3, || {
            assert!(in_dag_stream(3));
            // Another instance's launches from the same vertex are queued work as any.
            assert!(!in_dag_stream(4));
            // Nor is the mark another thread's.
            std::thread::spawn(|| assert!(!in_dag_stream(3)))
                .join()
                .expect("the thread's checks pass");
            ordered_by_dag(4, || assert!(in_dag_stream(4) && !in_dag_stream(3)));
            assert!(in_dag_stream(3), "the outer mark is back");
        });
        assert!(!in_dag_stream(3));
    }

    #[test]
    fn the_launch_mode_is_async_only_when_asked_for() {
        assert!(super::launch_mode(Some("async")));
        assert!(!super::launch_mode(Some("sync")));
        assert!(!super::launch_mode(None));
        // A misspelt value is reported and launches wait.
        assert!(!super::launch_mode(Some("ASYNC")));
    }

    #[test]
    fn an_order_is_kept_only_while_records_before_its_mark_are() {
        let pending: Pending<&str> = Pending::default();
        // Nothing recorded on 1 before the mark: the order would never matter.
        pending.order_after(2, 1, pending.mark());
        assert!(pending.inner.lock().ordered.is_empty());
        pending.record(1, &"one", &[write(0, 8)]);
        pending.order_after(2, 1, pending.mark());
        assert_eq!(pending.inner.lock().ordered.len(), 1);
        // The fence that forgets the records before the mark ends the order too.
        pending.forget(1, pending.mark());
        assert!(pending.inner.lock().ordered.is_empty());
    }

    #[test]
    fn a_wait_for_an_instance_being_dropped_returns_once_it_is_forgotten() {
        let pending: std::sync::Arc<Pending<&str>> = std::sync::Arc::default();
        pending.record(1, &"one", &[write(0, 8)]);
        let waiter = {
            let pending = pending.clone();
            std::thread::spawn(move || pending.wait_until_forgotten(1))
        };
        // The waiter blocks until the instance is forgotten, whenever it got there.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "the instance still has its record");
        pending.forget_instance(1);
        waiter.join().expect("the waiter returns");
        // An instance with nothing recorded does not block.
        pending.wait_until_forgotten(7);
    }

    #[test]
    fn release_kept_asks_every_live_keeper_and_forgets_the_gone() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counting(AtomicUsize);
        impl super::Keeper for Counting {
            fn release(&self) -> bool {
                self.0.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
        let live = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let gone = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let (live_weak, gone_weak) = (std::sync::Arc::downgrade(&live), std::sync::Arc::downgrade(&gone));
        super::register_keeper(live_weak);
        super::register_keeper(gone_weak);
        drop(gone);
        assert!(super::release_kept());
        assert_eq!(live.0.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_wait_for_an_event_orders_only_the_waiter_after_the_launches_before_the_event() {
        let pending = Pending::default();
        pending.record(1, &"one", &[write(0, 8)]);
        // Instance 2 waits for an event of instance 1 recorded now.
        let mark = pending.mark();
        pending.order_after(2, 1, mark);
        // A launch queued on 1 after the event is not covered by it.
        pending.record(1, &"one", &[write(16, 24)]);
        assert!(pending.conflicts(2, &[read(0, 8)]).is_empty());
        assert_eq!(ids(pending.conflicts(2, &[read(16, 24)])), [1]);
        // Nobody else is ordered by 2's wait.
        assert_eq!(ids(pending.conflicts(3, &[read(0, 8)])), [1]);
        // A later launch on 1 over the same bytes moves the record past the event.
        pending.record(1, &"one", &[write(0, 8)]);
        assert_eq!(ids(pending.conflicts(2, &[read(0, 8)])), [1]);
        // A later event covers it; an older mark does not undo that.
        pending.order_after(2, 1, pending.mark());
        pending.order_after(2, 1, mark);
        assert!(pending.conflicts(2, &[read(0, 24)]).is_empty());
        // Waiting for one's own event orders nothing new; a gone instance is forgotten.
        pending.order_after(1, 1, pending.mark());
        pending.forget_instance(1);
        assert!(pending.conflicts(3, &[write(0, 24)]).is_empty());
    }
}

/// A loom model of the protocol's order (`RUSTFLAGS="--cfg loom" cargo test -p hoplite-cuda
/// --lib loom`, which `cargo xtask test` runs): one thread queues a launch (on a model stream
/// that a worker thread completes), records it and keeps its view, while another synchronizes
/// the instance. In every interleaving the view is dropped only after its launch completed.
#[cfg(all(test, loom))]
mod loom_model {
    use std::sync::Arc;

    use hoplite_core::loom_locks::{Condvar, Mutex};

    use super::{Access, Kept, Pending, synchronize};

    /// A stream: the items queued and the items completed, in order.
    #[derive(Default)]
    struct ModelStream {
        counts: Mutex<(u64, u64)>,
        changed: Condvar,
    }

    impl ModelStream {
        /// Queues an item; its position.
        fn enqueue(&self) -> u64 {
            let mut c = self.counts.lock();
            c.0 += 1;
            self.changed.notify_all();
            c.0
        }

        /// The worker: completes `items` items, each once queued.
        fn work(&self, items: u64) {
            for _ in 0..items {
                let mut c = self.counts.lock();
                while c.1 == c.0 {
                    self.changed.wait(&mut c);
                }
                c.1 += 1;
                self.changed.notify_all();
            }
        }

        /// `cuStreamSynchronize`: waits for the items queued before the call.
        fn synchronize(&self) {
            let mut c = self.counts.lock();
            let target = c.0;
            while c.1 < target {
                self.changed.wait(&mut c);
            }
        }

        fn completed(&self) -> u64 {
            self.counts.lock().1
        }
    }

    /// A view a queued launch reads: dropping it frees its memory, which must not happen
    /// before the launch at `position` completed.
    struct View {
        stream: Arc<ModelStream>,
        position: u64,
    }

    impl Drop for View {
        fn drop(&mut self) {
            assert!(
                self.stream.completed() >= self.position,
                "a view was freed while its queued launch had not run"
            );
        }
    }

    #[test]
    fn loom_a_view_outlives_its_launch_whatever_a_concurrent_synchronization_does() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            let stream = Arc::new(ModelStream::default());
            let table = Arc::new(Pending::<()>::default());
            let kept = Arc::new(Kept::default());
            let worker = {
                let stream = stream.clone();
                loom::thread::spawn(move || stream.work(1))
            };
            let launch = {
                let (stream, table, kept) = (stream.clone(), table.clone(), kept.clone());
                loom::thread::spawn(move || {
                    // As `Cuda::queue_launch` and the launches do: queue, record, keep.
                    let position = stream.enqueue();
                    table.record(7, &(), &[Access::bytes(0, 8, true)]);
                    kept.keep([Arc::new(View {
                        stream: stream.clone(),
                        position,
                    }) as super::KeptValue]);
                })
            };
            let synchronization = {
                let (stream, table, kept) = (stream.clone(), table.clone(), kept.clone());
                loom::thread::spawn(move || {
                    synchronize(&table, 7, &kept, || {
                        stream.synchronize();
                        Ok::<(), ()>(())
                    })
                    .expect("the model's wait does not fail");
                })
            };
            launch.join().expect("the launch");
            synchronization.join().expect("the synchronization");
            worker.join().expect("the worker");
            // What the synchronization left (a launch that landed after its mark) is still
            // recorded and kept; its view goes with `kept`, after the worker ran it.
        });
    }
}
