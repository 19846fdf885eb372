//! Layer 2: devices and their streams behind traits, and the host implementation.
//!
//! A [`Stream`] is an in-order queue of work on one execution-space instance; an
//! [`Event`](Stream::Event) marks a point in it. A stream waits for another stream's event
//! *in the stream* ([`Stream::wait_event`]), never by blocking the host, which waits only in
//! [`Event::wait`] / [`Stream::synchronize`]. Nothing here assumes host memory: a CUDA stream
//! enqueues a launch and records a CUDA event; a NUMA node's stream runs on that node's pool.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use hoplite_core::ExecutionSpace;

use crate::DagError;
use crate::sync_prims::{self, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering, fence, thread};

/// Work a stream runs, on the stream's execution-space instance.
pub type Work<S> = Box<dyn FnOnce(&S) + Send + 'static>;

/// Work a stream runs once, shared with whoever enqueued it (see
/// [`Stream::enqueue_recorded_job`]): `run` is called once, on the stream's thread.
///
/// ```
/// use hoplite_dag::device::{Job, OnceJob};
/// let job = OnceJob::new(|x: &i32| assert_eq!(*x, 7));
/// job.run(&7);
/// job.run(&8); // the second call finds nothing left to run
/// ```
pub trait Job<S>: Send + Sync + 'static {
    /// Runs the work (a no-op after the first call).
    fn run(&self, space: &S);
}

/// A [`Job`] from a closure, which the first `run` takes and calls, so that what the closure
/// captured is dropped when it returns.
pub struct OnceJob<F>(Mutex<Option<F>>);

impl<F> OnceJob<F> {
    /// The job that calls `work` once.
    pub fn new(work: F) -> Self {
        OnceJob(Mutex::new(Some(work)))
    }
}

impl<S, F: FnOnce(&S) + Send + 'static> Job<S> for OnceJob<F> {
    fn run(&self, space: &S) {
        let work = self.0.lock().take();
        if let Some(work) = work {
            work(space);
        }
    }
}

/// A point in a stream's queue; complete once everything enqueued before it has run.
pub trait Event: Clone + Send + Sync + 'static {
    /// Whether the work before the event has run.
    fn is_complete(&self) -> bool;
    /// Blocks the calling (host) thread until the event is complete.
    fn wait(&self);
}

/// An in-order queue of work on one execution-space instance.
///
/// Axioms (checked for any implementation by [`crate::conformance`]):
/// work runs in the order it was enqueued, each item once; an event recorded after some work
/// completes only after that work has run; work enqueued after `wait_event(e)` starts only
/// after `e` is complete, while the host goes on; `synchronize` returns once everything
/// enqueued before it has run; `is_idle` is true exactly when nothing enqueued is left to run.
/// A panic in work must not stop the stream (the context catches panics in kernels, but a
/// stream must survive one anyway).
pub trait Stream: Send + Sync + 'static {
    /// The instance kernels of this stream run on.
    type Space: ExecutionSpace;
    /// The stream's events.
    type Event: Event;
    /// The instance work runs on (policies move to it).
    fn space(&self) -> &Self::Space;
    /// Appends work to the queue; returns at once.
    fn enqueue(&self, work: Work<Self::Space>);
    /// An event that completes when everything enqueued so far has run.
    fn record_event(&self) -> Self::Event;
    /// Appends work and records an event right after it: as [`enqueue`](Self::enqueue)
    /// then [`record_event`](Self::record_event), which is what the default does. A stream
    /// may do both in one step (the host stream queues one item instead of two).
    fn enqueue_recorded(&self, work: Work<Self::Space>) -> Self::Event {
        self.enqueue(work);
        self.record_event()
    }
    /// [`enqueue_recorded`](Self::enqueue_recorded) of a job the caller keeps a reference
    /// to, so that the caller, not the stream's thread, can end up freeing it (memory freed on
    /// another thread than the one that allocated it goes back through the allocator's shared
    /// arena, under its lock). The default wraps the job in a box; the host stream queues it
    /// as it is.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hoplite_dag::device::{Event, HostStream, Job, OnceJob, Stream};
    /// use hoplite_serial::Serial;
    /// let stream = HostStream::new(Serial::default(), "jobs")?;
    /// let job: Arc<dyn Job<Serial>> = Arc::new(OnceJob::new(|_: &Serial| {}));
    /// stream.enqueue_recorded_job(job.clone()).wait();
    /// assert_eq!(Arc::strong_count(&job), 1, "the stream let it go before the event");
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    fn enqueue_recorded_job(&self, job: Arc<dyn Job<Self::Space>>) -> Self::Event {
        self.enqueue_recorded(Box::new(move |space: &Self::Space| job.run(space)))
    }
    /// Work enqueued from now on waits for `event` (of any stream of the same kind).
    fn wait_event(&self, event: &Self::Event);
    /// Blocks the host until everything enqueued so far has run.
    fn synchronize(&self) {
        self.record_event().wait();
    }
    /// Whether nothing enqueued is left to run.
    fn is_idle(&self) -> bool;
}

/// A device: a source of streams.
pub trait Device: Send + Sync + 'static {
    /// Its streams.
    type Stream: Stream;
    /// A name for messages, DOT and traces.
    fn name(&self) -> String;
    /// A new stream.
    ///
    /// # Errors
    ///
    /// The device cannot make another stream (a thread or driver resource refused).
    fn new_stream(&self) -> Result<Self::Stream, DagError>;
    /// How many streams can run work at the same time, if that is limited: a context makes
    /// no more streams than this on the device and queues launches behind the least busy one
    /// instead (more streams would only wait for each other, and cost threads).
    fn max_streams(&self) -> Option<usize> {
        None
    }
    /// Whether this device's kernels run where the memory of accelerator `location` is (a
    /// [`MemorySpace::location`](hoplite_core::MemorySpace::location)): a context runs a launch
    /// whose views are there on this device. Host devices hold no accelerator's memory.
    fn holds_memory_of(&self, location: usize) -> bool {
        let _ = location;
        false
    }
}

/// The progress of a host stream's thread: the number of the last point (event) it passed,
/// and the hosts waiting for a later one.
/// Events are numbers in this count rather than objects of their own, so recording one
/// allocates nothing and completing one is a store to a line the thread writes anyway.
#[derive(Debug, Default)]
struct StreamProgress {
    /// The last point passed (points are numbered from 1 in queue order).
    passed: AtomicU64,
    /// Hosts blocked in [`Event::wait`]: the thread takes the lock and wakes them only then.
    waiters: AtomicUsize,
    lock: Mutex<()>,
    passed_changed: Condvar,
}

impl StreamProgress {
    /// Marks point `point` passed, and wakes whoever waits.
    fn pass(&self, point: u64) {
        self.passed.store(point, Ordering::Release);
        // Store, fence, load here; count, fence, load in `wait`: of the two SeqCst fences one
        // comes first, so either the waiter sees the point passed, or this sees the waiter
        // (and its lock keeps the wake-up from coming before its wait). Fences rather than
        // SeqCst accesses, because loom checks fences (it treats a SeqCst load or store as
        // acquire or release only, and finds a lost wake-up with those).
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) > 0 {
            let _guard = self.lock.lock();
            self.passed_changed.notify_all();
        }
    }

    fn has_passed(&self, point: u64) -> bool {
        self.passed.load(Ordering::Acquire) >= point
    }

    fn wait(&self, point: u64) {
        if self.has_passed(point) {
            return;
        }
        let mut guard = self.lock.lock();
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // See `pass`.
        fence(Ordering::SeqCst);
        while self.passed.load(Ordering::Acquire) < point {
            self.passed_changed.wait(&mut guard);
        }
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The host implementation of [`Event`]: a numbered point in one host stream's queue.
///
/// ```
/// use hoplite_dag::device::{Event, HostEvent};
/// // An event recorded by no stream never completes.
/// assert!(!HostEvent::default().is_complete());
/// ```
#[derive(Clone, Debug)]
pub struct HostEvent {
    progress: sync_prims::Arc<StreamProgress>,
    point: u64,
}

impl Default for HostEvent {
    /// An event no stream will ever pass.
    fn default() -> Self {
        HostEvent {
            progress: sync_prims::Arc::default(),
            point: u64::MAX,
        }
    }
}

impl Event for HostEvent {
    fn is_complete(&self) -> bool {
        self.progress.has_passed(self.point)
    }
    fn wait(&self) {
        self.progress.wait(self.point);
    }
}

enum Item<S> {
    Work(Work<S>),
    /// Work, then the point recorded right after it.
    Recorded(Work<S>, u64),
    /// A shared job, then the point recorded right after it.
    RecordedJob(Arc<dyn Job<S>>, u64),
    Wait(HostEvent),
    Signal(u64),
}

struct Queue<S> {
    /// The items, whether the stream is closing, and the number of the last point recorded.
    items: Mutex<(VecDeque<Item<S>>, bool, u64)>,
    ready: Condvar,
    /// Items enqueued and not yet finished (the one running included).
    pending: AtomicUsize,
    progress: sync_prims::Arc<StreamProgress>,
}

/// A host stream: an in-order queue served by a thread of its own, running kernels on an
/// instance of `S`. Dropping it runs what is queued, then ends the thread.
pub struct HostStream<S: ExecutionSpace> {
    space: S,
    queue: sync_prims::Arc<Queue<S>>,
    worker: Option<thread::JoinHandle<()>>,
}

impl<S: ExecutionSpace> HostStream<S> {
    /// A stream on `space`, served by a new thread named `name`.
    ///
    /// # Errors
    ///
    /// [`DagError::StreamUnavailable`] when the operating system refuses the thread.
    pub fn new(space: S, name: &str) -> Result<Self, DagError> {
        let queue = sync_prims::Arc::new(Queue {
            items: Mutex::new((VecDeque::new(), false, 0)),
            ready: Condvar::new(),
            pending: AtomicUsize::new(0),
            progress: sync_prims::Arc::default(),
        });
        let worker = {
            let queue = queue.clone();
            let space = space.clone();
            thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || serve(&queue, &space))
                .map_err(|e| DagError::StreamUnavailable(format!("cannot start the thread of {name}: {e}")))?
        };
        Ok(HostStream {
            space,
            queue,
            worker: Some(worker),
        })
    }

    fn push(&self, item: Item<S>) {
        self.queue.pending.fetch_add(1, Ordering::AcqRel);
        let mut items = self.queue.items.lock();
        items.0.push_back(item);
        self.queue.ready.notify_one();
    }

    /// Pushes the item `make` builds around a new point; returns the point's event.
    fn push_point(&self, make: impl FnOnce(u64) -> Item<S>) -> HostEvent {
        self.queue.pending.fetch_add(1, Ordering::AcqRel);
        let mut items = self.queue.items.lock();
        items.2 += 1;
        let point = items.2;
        items.0.push_back(make(point));
        self.queue.ready.notify_one();
        drop(items);
        HostEvent {
            progress: self.queue.progress.clone(),
            point,
        }
    }
}

fn serve<S: ExecutionSpace>(queue: &Queue<S>, space: &S) {
    // Everything queued is taken at once: one lock per batch rather than per item, and the
    // queue's buffer swaps with this one, so neither side allocates in the steady state.
    let mut batch: VecDeque<Item<S>> = VecDeque::new();
    loop {
        {
            let mut items = queue.items.lock();
            if items.0.is_empty() {
                if items.1 {
                    return;
                }
                drop(items);
                // A host thread that is launching usually enqueues the next item within
                // microseconds, and parking costs a futex round trip on both sides.
                if !work_arrives_soon(queue) {
                    let mut items = queue.items.lock();
                    while items.0.is_empty() && !items.1 {
                        queue.ready.wait(&mut items);
                    }
                } else {
                    gather(queue);
                }
                continue;
            }
            std::mem::swap(&mut items.0, &mut batch);
        }
        while let Some(item) = batch.pop_front() {
            // The point the item passes, if it records one.
            let point = match item {
                Item::Work(work) => {
                    caught(|| work(space));
                    None
                }
                Item::Recorded(work, point) => {
                    caught(|| work(space));
                    Some(point)
                }
                Item::RecordedJob(job, point) => {
                    caught(|| job.run(space));
                    // This thread's reference goes before the point passes, so that the one
                    // who enqueued the job holds the last.
                    drop(job);
                    Some(point)
                }
                Item::Wait(event) => {
                    event.wait();
                    None
                }
                Item::Signal(point) => Some(point),
            };
            // Counted out before the point passes: whoever it wakes sees the stream idle if
            // nothing came after it.
            queue.pending.fetch_sub(1, Ordering::AcqRel);
            if let Some(point) = point {
                queue.progress.pass(point);
            }
        }
    }
}

/// Runs one item's work. The context catches kernel panics itself; this keeps the stream
/// alive whatever the work does, so every later event still completes.
fn caught(work: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(work)) {
        hoplite_core::drop_panic_payload(payload);
    }
}

/// Once work arrives at an idle stream, lets a launching host queue a few more items before
/// the stream takes them, for at most a couple of microseconds. Taken one by one, each item
/// moves the queue's lines, its vertex's work and its status between the two threads while
/// both are at them: with the stream's thread on a core of its own, that doubled the
/// per-vertex cost of a loop of launches; in batches the host launches on while the stream
/// catches up.
#[cfg(not(loom))]
fn gather<S>(queue: &Queue<S>) {
    const BATCH: usize = 8;
    let start = std::time::Instant::now();
    while queue.pending.load(Ordering::Acquire) < BATCH
        && start.elapsed() < std::time::Duration::from_micros(2)
    {
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
}

/// Spins, then yields, for a short while (tens of microseconds) waiting for work.
#[cfg(not(loom))]
fn work_arrives_soon<S>(queue: &Queue<S>) -> bool {
    const SPINS: usize = 32;
    const YIELDS: usize = 64;
    for k in 0..SPINS + YIELDS {
        if queue.pending.load(Ordering::Acquire) > 0 {
            return true;
        }
        if k < SPINS {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    false
}

/// Under loom time does not pass, and how many items a take finds is explored anyway: no
/// gathering.
#[cfg(loom)]
fn gather<S>(_queue: &Queue<S>) {}

/// Under loom: one look, then a yield if work is arriving (so that the model runs the
/// enqueuing thread on), else parking, which is the path where lost wake-ups hide.
#[cfg(loom)]
fn work_arrives_soon<S>(queue: &Queue<S>) -> bool {
    let arriving = queue.pending.load(Ordering::Acquire) > 0;
    if arriving {
        thread::yield_now();
    }
    arriving
}

impl<S: ExecutionSpace> Stream for HostStream<S> {
    type Space = S;
    type Event = HostEvent;
    fn space(&self) -> &S {
        &self.space
    }
    fn enqueue(&self, work: Work<S>) {
        self.push(Item::Work(work));
    }
    fn record_event(&self) -> HostEvent {
        self.push_point(Item::Signal)
    }
    fn enqueue_recorded(&self, work: Work<S>) -> HostEvent {
        self.push_point(|point| Item::Recorded(work, point))
    }
    fn enqueue_recorded_job(&self, job: Arc<dyn Job<S>>) -> HostEvent {
        self.push_point(|point| Item::RecordedJob(job, point))
    }
    fn wait_event(&self, event: &HostEvent) {
        if !event.is_complete() {
            self.push(Item::Wait(event.clone()));
        }
    }
    fn is_idle(&self) -> bool {
        self.queue.pending.load(Ordering::Acquire) == 0
    }
}

impl<S: ExecutionSpace> Drop for HostStream<S> {
    fn drop(&mut self) {
        {
            let mut items = self.queue.items.lock();
            items.1 = true;
            self.queue.ready.notify_one();
        }
        if let Some(worker) = self.worker.take() {
            // The worker catches every panic of the work it runs; a join error would mean the
            // thread died outside it, and there is nothing left to clean up then.
            let _ = worker.join();
        }
    }
}

/// A host device: streams served by threads of their own, stream `k` on the device's
/// instance `k` (modulo their number), and by default at most one stream per instance
/// ([`streams_per_instance`](Self::streams_per_instance) allows more). Give a device as many
/// instances as it should run kernels at once — for the rayon backend,
/// `space.partition_space(n)` — so that kernels of different streams run on different pools.
///
/// ```
/// use hoplite_dag::device::{Device, HostDevice, Stream, Event};
/// use hoplite_serial::Serial;
/// let device = HostDevice::new("cpu", vec![Serial::default()])?;
/// let stream = device.new_stream()?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// stream.enqueue(Box::new(move |_space| tx.send(42).expect("receiver alive")));
/// stream.synchronize();
/// assert_eq!(rx.recv().ok(), Some(42));
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
pub struct HostDevice<S: ExecutionSpace> {
    name: String,
    instances: Vec<S>,
    /// Streams per instance ([`HostDevice::streams_per_instance`]), 1 by default.
    per_instance: usize,
    made: AtomicUsize,
}

impl<S: ExecutionSpace> HostDevice<S> {
    /// A device named `name` whose streams run on `instances`.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] when `instances` is empty.
    pub fn new(name: &str, instances: Vec<S>) -> Result<Self, DagError> {
        if instances.is_empty() {
            return Err(DagError::InvalidOptions(format!(
                "device `{name}` has no instance to run kernels on"
            )));
        }
        Ok(HostDevice {
            name: name.to_owned(),
            instances,
            per_instance: 1,
            made: AtomicUsize::new(0),
        })
    }

    /// Lets the device make `streams` streams per instance instead of one: the streams of one
    /// instance share its threads and take turns on its launch lock, so they give GrCUDA's
    /// streams — each its own order, events between them, "always a new stream" making a
    /// new one — but no more parallelism than the instance has. Streams go to the instances
    /// in turn.
    ///
    /// ```
    /// use hoplite_dag::device::{Device, HostDevice};
    /// use hoplite_serial::Serial;
    /// let device = HostDevice::new("cpu", vec![Serial::default()])?.streams_per_instance(4)?;
    /// assert_eq!(device.max_streams(), Some(4));
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] for zero streams, or more streams in all than a `usize`
    /// counts.
    pub fn streams_per_instance(mut self, streams: usize) -> Result<Self, DagError> {
        if streams == 0 || self.instances.len().checked_mul(streams).is_none() {
            return Err(DagError::InvalidOptions(format!(
                "device `{}`: {streams} streams per instance; give at least one (and fewer than {} in all)",
                self.name,
                usize::MAX
            )));
        }
        self.per_instance = streams;
        Ok(self)
    }

    /// A device named `name` with `streams` streams, each on its own part of `space`
    /// ([`ExecutionSpace::partition_space`]: for rayon, a pool of its own).
    ///
    /// ```
    /// use hoplite_dag::device::{Device, HostDevice};
    /// use hoplite_serial::Serial;
    /// let device = HostDevice::partitioned("cpu", &Serial::default(), 4)?;
    /// assert_eq!(device.max_streams(), Some(4));
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// What partitioning reports ([`hoplite_core::Error::ThreadsUnavailable`]), or
    /// [`DagError::InvalidOptions`] for zero streams.
    pub fn partitioned(name: &str, space: &S, streams: usize) -> Result<Self, DagError> {
        Self::new(name, space.partition_space(streams)?)
    }

    /// The instances its streams run on.
    pub fn instances(&self) -> &[S] {
        &self.instances
    }
}

impl<S: ExecutionSpace> Device for HostDevice<S> {
    type Stream = HostStream<S>;
    fn name(&self) -> String {
        self.name.clone()
    }
    /// One per instance, unless [`HostDevice::streams_per_instance`] allowed more (two
    /// streams on one instance take turns on its launch lock). A context reports the launches
    /// the cap queued behind busy streams ([`Context::capped_launches`](crate::Context::capped_launches)).
    fn max_streams(&self) -> Option<usize> {
        Some(self.instances.len() * self.per_instance)
    }
    fn new_stream(&self) -> Result<HostStream<S>, DagError> {
        let k = self.made.fetch_add(1, Ordering::Relaxed);
        let space = self.instances[k % self.instances.len()].clone();
        HostStream::new(space, &format!("{} stream {k}", self.name))
    }
}

/// Loom models of the host stream (`RUSTFLAGS="--cfg loom" cargo test --release -p
/// hoplite-dag --lib loom`): the marks its thread passes and the hosts and streams that wait
/// for them, and a stream dropped with work still queued. Data one thread writes and another
/// reads after a wait sits in a loom `UnsafeCell`, so loom reports a wait that returns before
/// the write happened-before it; a lost wake-up is a loom deadlock; a loom `Arc` left
/// unfreed at the end of an execution is a leak loom reports.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::sync_prims::model_support::{Cell, Deliberate, check, quiet_deliberate_panics};
    use hoplite_serial::Serial;

    fn stream(name: &str) -> HostStream<Serial> {
        HostStream::new(Serial::default(), name).expect("a loom thread")
    }

    /// Two hosts wait for the mark after a job while the stream runs the job and passes the
    /// mark: both return (no lost wake-up: the waiter count and the mark), both see what the
    /// job wrote, the stream is idle, and the stream let the job go before the mark passed.
    #[test]
    fn loom_hosts_wait_for_a_mark_the_stream_passes() {
        check("loom_hosts_wait_for_a_mark_the_stream_passes", Some(3), || {
            let stream = stream("s");
            let cell = Cell::new();
            let written = cell.clone();
            let job: Arc<dyn Job<Serial>> = Arc::new(OnceJob::new(move |_: &Serial| written.set(1)));
            let event = stream.enqueue_recorded_job(job.clone());
            let waiter = {
                let (event, cell) = (event.clone(), cell.clone());
                thread::spawn(move || {
                    event.wait();
                    cell.get()
                })
            };
            event.wait();
            assert!(event.is_complete());
            assert_eq!(cell.get(), 1);
            assert!(stream.is_idle(), "counted out before the mark passed");
            assert_eq!(
                Arc::strong_count(&job),
                1,
                "the stream let the job go before the mark"
            );
            assert_eq!(waiter.join().expect("the waiter"), 1);
        });
    }

    /// Stream `b` waits in its queue for a mark of stream `a` while `a`'s thread runs the work
    /// before it and passes it: `b`'s next work sees what `a`'s wrote, and the host's wait on
    /// `b` returns.
    #[test]
    fn loom_a_stream_waits_for_another_streams_mark() {
        check("loom_a_stream_waits_for_another_streams_mark", Some(3), || {
            let (a, b) = (stream("a"), stream("b"));
            let cell = Cell::new();
            let written = cell.clone();
            let event = a.enqueue_recorded(Box::new(move |_: &Serial| written.set(7)));
            b.wait_event(&event);
            let seen = Cell::new();
            let (read, out) = (cell.clone(), seen.clone());
            b.enqueue_recorded(Box::new(move |_: &Serial| out.set(read.get())))
                .wait();
            assert_eq!(seen.get(), 7);
            drop(b);
            drop(a);
        });
    }

    /// A stream dropped with work still queued (some of which panics) runs all of it before
    /// its thread ends: the mark after it completes, the work after the panic ran, and
    /// everything the work held is freed. Two threads: every interleaving, without a bound.
    #[test]
    fn loom_dropping_a_stream_runs_what_is_queued() {
        quiet_deliberate_panics();
        check("loom_dropping_a_stream_runs_what_is_queued", None, || {
            let stream = stream("s");
            let cell = Cell::new();
            let written = cell.clone();
            stream.enqueue(Box::new(|_: &Serial| std::panic::panic_any(Deliberate)));
            stream.enqueue(Box::new(move |_: &Serial| written.set(3)));
            let event = stream.record_event();
            drop(stream);
            assert!(event.is_complete());
            assert_eq!(cell.get(), 3);
        });
    }
}
