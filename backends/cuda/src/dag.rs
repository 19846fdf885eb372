//! CUDA streams and events for hoplite-dag's implicit DAG runtime: [`CudaDevice`] implements
//! its [`Device`] trait with a pool of `Cuda` instances (CUDA streams) of one GPU.
//!
//! A DAG [`Work`] item is a host closure that issues launches on the stream's `Cuda`
//! instance. The protocol, per [`CudaStream`]:
//!
//! 1. A host thread of the stream (hoplite-dag's `HostStream`) runs the closures in the order
//!    they were enqueued, so their launches queue on the CUDA stream in that order, and the
//!    caller of `enqueue` is never blocked.
//! 2. `record_event` creates a CUDA event (`CU_EVENT_DISABLE_TIMING`) on the caller's thread,
//!    enqueues a step that records it on the CUDA stream (`cuEventRecord`), then a host point
//!    that completes once the thread is past that step.
//! 3. An event is complete when its host point is (every closure before it ran, so every
//!    launch before it is queued) and `cuEventQuery` no longer answers `NOT_READY` (the
//!    device finished them). `wait` waits for the host point, then `cuEventSynchronize`.
//! 4. `wait_event(e)` on another stream enqueues a wait for `e`'s host point on that stream's
//!    thread (so `e` is recorded: waiting on an unrecorded event is a no-op), then a step
//!    that queues `cuStreamWaitEvent`: the device orders the work, the host only waits for
//!    launches to be issued.
//!
//! Invariants: a stream's thread only ever waits for another stream's host point, which
//! depends on nothing but that stream's closures, so every wait ends; when the driver refuses
//! to create, record or wait for an event, the step synchronizes instead (the stream in
//! step 2, the event on the host in step 4), which keeps the axioms at the cost of a blocked
//! stream thread.
//!
//! Dependencies point one way (DESIGN.md): hoplite-cuda implements hoplite-dag's traits;
//! hoplite-dag never names a backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hoplite_dag::DagError;
use hoplite_dag::device::{Device, Event, HostEvent, HostStream, Stream, Work};

use crate::Cuda;
use crate::driver;

/// A point in a [`CudaStream`]: complete once the closures before it have run on the host
/// and the launches they issued have finished on the device.
#[derive(Clone)]
pub struct CudaEvent {
    /// The stream's thread reached the record (and recorded, or synchronized the stream).
    reached: HostEvent,
    /// The CUDA event, if one could be made.
    raw: Option<Arc<driver::Event>>,
    /// Set when the record synchronized the stream instead of recording `raw`: reaching the
    /// point then means the device work is done.
    synchronized: Arc<AtomicBool>,
}

impl std::fmt::Debug for CudaEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaEvent")
            .field("reached", &self.reached.is_complete())
            .field("has_cuda_event", &self.raw.is_some())
            .finish()
    }
}

impl CudaEvent {
    /// The recorded CUDA event, unless the record fell back to a synchronization.
    fn device_event(&self) -> Option<&driver::Event> {
        if self.synchronized.load(Ordering::Acquire) {
            None
        } else {
            self.raw.as_deref()
        }
    }
}

impl Event for CudaEvent {
    fn is_complete(&self) -> bool {
        if !self.reached.is_complete() {
            return false;
        }
        // Only NOT_READY means work is still pending; an error means the work failed and will
        // not complete later (or the context is gone), so waiting would never end.
        self.device_event().is_none_or(|event| !event.is_pending())
    }

    fn wait(&self) {
        self.reached.wait();
        if let Some(event) = self.device_event() {
            // The event is recorded (the host point was reached). A failure is the failed
            // work's error, reported by the launch or the fence.
            let _ = event.synchronize();
        }
    }
}

/// A DAG stream on a `Cuda` instance: closures run in order on a host thread of the stream,
/// their launches in the same order on the CUDA stream.
pub struct CudaStream {
    host: HostStream<Cuda>,
}

impl Stream for CudaStream {
    type Space = Cuda;
    type Event = CudaEvent;

    fn space(&self) -> &Cuda {
        self.host.space()
    }

    fn enqueue(&self, work: Work<Cuda>) {
        // The stream's events order its launches against other streams', so its asynchronous
        // launches on its own instance are not recorded in the table of queued launches (see
        // `crate::pending`); those the work issues on other instances, which the events do not
        // cover, are.
        self.host
            .enqueue(Box::new(move |cuda: &Cuda| cuda.run_as_dag_stream(|| work(cuda))));
    }

    fn record_event(&self) -> CudaEvent {
        let raw = self
            .space()
            .stream()
            .ok()
            .and_then(|s| driver::Event::new(s.device.clone()).ok())
            .map(Arc::new);
        let synchronized = Arc::new(AtomicBool::new(false));
        {
            let raw = raw.clone();
            let synchronized = synchronized.clone();
            self.host.enqueue(Box::new(move |cuda: &Cuda| {
                let Ok(stream) = cuda.stream() else {
                    synchronized.store(true, Ordering::Release);
                    return;
                };
                // The event is of this stream's device; the stream is live (the instance holds it).
                let recorded = raw.as_ref().is_some_and(|event| event.record(stream).is_ok());
                if !recorded {
                    // Without an event, reaching this point must mean the work is done.
                    let _ = stream.synchronize();
                    synchronized.store(true, Ordering::Release);
                }
            }));
        }
        CudaEvent {
            reached: self.host.record_event(),
            raw,
            synchronized,
        }
    }

    fn wait_event(&self, event: &CudaEvent) {
        // The thread waits for the other stream's host point, so the CUDA event is recorded
        // (waiting on an unrecorded event would be a no-op) ...
        self.host.wait_event(&event.reached);
        let event = event.clone();
        // ... and the device waits for the work before it.
        self.host.enqueue(Box::new(move |cuda: &Cuda| {
            let Some(raw) = event.device_event() else {
                return; // reached after a synchronization: nothing is pending
            };
            let ordered = cuda.stream().is_ok_and(|stream| stream.wait_event(raw).is_ok());
            if !ordered {
                event.wait(); // the thread waits instead: slower, still ordered
            }
        }));
    }

    fn synchronize(&self) {
        self.host.synchronize();
        // Waits for the device, and releases the views finished launches kept alive. An error
        // here is a failed launch's, which the launch's vertex reports.
        let _ = self.space().synchronize();
    }

    fn is_idle(&self) -> bool {
        self.host.is_idle() && self.space().stream().is_ok_and(|s| s.is_idle())
    }
}

/// A GPU as a hoplite-dag device: a pool of `Cuda` instances (CUDA streams) of one device,
/// handed out in turn, one DAG stream each at most at a time
/// ([`max_streams`](Device::max_streams)).
///
/// ```
/// use hoplite_cuda::dag::CudaDevice;
/// use hoplite_dag::device::{Device, Stream};
/// match CudaDevice::new(0, 4) {
///     Ok(gpu) => {
///         let stream = gpu.new_stream()?;
///         stream.enqueue(Box::new(|cuda| { let _ = cuda.limits(); }));
///         stream.synchronize();
///     }
///     Err(e) => println!("{e}"), // no device here
/// }
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
pub struct CudaDevice {
    ordinal: usize,
    name: String,
    instances: Vec<Cuda>,
    made: AtomicUsize,
}

impl CudaDevice {
    /// A device of `streams` new CUDA streams on GPU `ordinal`.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] for zero streams; [`DagError::Core`] with the CUDA error
    /// (no driver, no device, no such ordinal) otherwise.
    pub fn new(ordinal: usize, streams: usize) -> Result<CudaDevice, DagError> {
        if streams == 0 {
            return Err(DagError::InvalidOptions(format!(
                "CUDA device {ordinal} with no stream: give it at least one"
            )));
        }
        let instances = (0..streams)
            .map(|_| Cuda::on_device(ordinal))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| DagError::Core(e.into()))?;
        Ok(CudaDevice {
            ordinal,
            name: format!("cuda:{ordinal}"),
            instances,
            made: AtomicUsize::new(0),
        })
    }

    /// One device of `streams` streams per GPU, by ordinal: the devices of a multi-GPU DAG
    /// context (whose transfer-aware policies read the links from `cargo xtask
    /// cuda-bandwidth`'s file).
    ///
    /// ```
    /// use hoplite_cuda::dag::CudaDevice;
    /// match CudaDevice::all_devices(2) {
    ///     Ok(devices) => assert_eq!(devices.len(), hoplite_cuda::device_count()?),
    ///     Err(e) => println!("{e}"), // no driver or no device
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), and [`DagError::Core`] when the driver reports no device.
    pub fn all_devices(streams: usize) -> Result<Vec<CudaDevice>, DagError> {
        let count = crate::device_count().map_err(|e| DagError::Core(e.into()))?;
        (0..count)
            .map(|ordinal| CudaDevice::new(ordinal, streams))
            .collect()
    }

    /// The GPU's ordinal.
    ///
    /// ```
    /// use hoplite_cuda::dag::CudaDevice;
    /// match CudaDevice::new(0, 1) {
    ///     Ok(device) => assert_eq!(device.ordinal(), 0),
    ///     Err(e) => println!("{e}"), // no device here
    /// }
    /// ```
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The instances its streams run on.
    pub fn instances(&self) -> &[Cuda] {
        &self.instances
    }
}

impl Device for CudaDevice {
    type Stream = CudaStream;

    fn name(&self) -> String {
        self.name.clone()
    }

    fn new_stream(&self) -> Result<CudaStream, DagError> {
        let k = self.made.fetch_add(1, Ordering::Relaxed);
        let cuda = self.instances[k % self.instances.len()].clone();
        Ok(CudaStream {
            host: HostStream::new(cuda, &format!("{} stream {k}", self.name))?,
        })
    }

    /// One DAG stream per CUDA stream of the pool.
    fn max_streams(&self) -> Option<usize> {
        Some(self.instances.len())
    }

    /// Launches on views of this GPU's memory run on its streams.
    fn holds_memory_of(&self, location: usize) -> bool {
        location == self.ordinal
    }
}
