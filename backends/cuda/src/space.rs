//! [`Cuda`]: the execution space whose instances are streams of a device.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use hoplite_core::{ExecutionSpace, LayoutLeft, Result, check_partition_count};
use parking_lot::Mutex;

use crate::driver::{self, Device, Stream};
use crate::geometry::DeviceLimits;
use crate::pending::{Access, Kept, MAX_QUEUED, Pending};
use crate::{CudaError, CudaSpace};

/// An instance: a stream (or why there is none), and what its queued launches use.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) stream: std::result::Result<Stream, CudaError>,
    /// Values (view clones) that queued launches read through raw addresses: kept alive until
    /// the next fence (`crate::pending::synchronize`).
    pub(crate) keep_alive: Kept,
    /// The instance's number in the process, from 0: its Kokkos Tools instance id is one more.
    number: u64,
    /// The kernel (or library work) queued last, named in the error of a wait that finds
    /// queued work failed ([`CudaError::QueuedWork`]).
    last_queued: Mutex<Option<&'static str>>,
}

/// The CUDA execution space: each instance is a stream of a device, and work submitted to it
/// runs in order on that stream (Kokkos `Cuda`).
///
/// Without a driver or a device, [`Cuda::new`] returns the typed error; the default instance
/// (which `Default` must produce without failing) then carries the error, and every call that
/// needs the device returns it.
///
/// ```
/// use hoplite_core::ExecutionSpace;
/// use hoplite_cuda::Cuda;
/// match Cuda::new() {
///     Ok(cuda) => {
///         cuda.fence()?;
///         println!("{} with {} threads resident", cuda.name(), cuda.concurrency());
///     }
///     Err(e) => println!("{e}"),
/// }
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cuda {
    pub(crate) inner: Arc<Instance>,
}

impl Cuda {
    /// A new instance: a new stream on device 0.
    ///
    /// # Errors
    ///
    /// [`CudaError::NoDriver`], [`CudaError::NoDevice`] or the driver's error.
    pub fn new() -> std::result::Result<Cuda, CudaError> {
        Cuda::on_device(0)
    }

    /// A new instance: a new stream on device `ordinal`.
    ///
    /// ```
    /// match hoplite_cuda::Cuda::on_device(0) {
    ///     Ok(cuda) => println!("{:?}", cuda.limits()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), and [`CudaError::InvalidDevice`] past the last device.
    pub fn on_device(ordinal: usize) -> std::result::Result<Cuda, CudaError> {
        let stream = Stream::new(Device::get(ordinal)?)?;
        Ok(Cuda::from_stream(Ok(stream)))
    }

    fn from_stream(stream: std::result::Result<Stream, CudaError>) -> Cuda {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let has_stream = stream.is_ok();
        let inner = Arc::new(Instance {
            stream,
            keep_alive: Kept::default(),
            number: INSTANCES.fetch_add(1, Ordering::Relaxed),
            last_queued: Mutex::new(None),
        });
        if has_stream {
            // Only an instance with a stream queues work that keeps views alive.
            let weak: Weak<Instance> = Arc::downgrade(&inner);
            crate::pending::register_keeper(weak);
        }
        Cuda { inner }
    }

    /// The stream, or why this instance has none.
    pub(crate) fn stream(&self) -> std::result::Result<&Stream, CudaError> {
        self.inner.stream.as_ref().map_err(Clone::clone)
    }

    /// Whether this instance has a device (false without a driver or device).
    pub fn is_available(&self) -> bool {
        self.inner.stream.is_ok()
    }

    /// The ordinal of this instance's GPU.
    ///
    /// ```
    /// use hoplite_cuda::Cuda;
    /// match Cuda::default().device() {
    ///     Ok(ordinal) => assert_eq!(ordinal, 0),
    ///     Err(e) => println!("{e}"), // no device here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// Why this instance has no device.
    pub fn device(&self) -> std::result::Result<usize, CudaError> {
        Ok(self.stream()?.device.ordinal)
    }

    /// The device memory of this instance's GPU: views allocated in it
    /// (`View::new_in(cuda.memory_space()?, ..)`) are the ones this instance's launches and
    /// copies take.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{Cuda, CudaSpace};
    /// let run = || -> Result<(), Box<dyn std::error::Error>> {
    ///     let cuda = Cuda::new()?;
    ///     let x = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing_in(cuda.memory_space()?, "x", [8])?;
    ///     assert_eq!(x.space().device(), cuda.device()?);
    ///     Ok(())
    /// };
    /// if let Err(e) = run() {
    ///     println!("{e}"); // no device here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// Why this instance has no device.
    pub fn memory_space(&self) -> std::result::Result<crate::CudaSpace, CudaError> {
        Ok(crate::CudaSpace::on_device(self.device()?))
    }

    /// The device's limits, which launch geometry follows.
    ///
    /// # Errors
    ///
    /// Why this instance has no device.
    pub fn limits(&self) -> std::result::Result<DeviceLimits, CudaError> {
        Ok(self.stream()?.device.limits)
    }

    /// The limits policies are validated against: the device's, or without one sm_70's (the
    /// oldest architecture hoplite compiles for), so that validation passes what any GPU
    /// would and the launch reports the missing driver or device.
    fn policy_limits(&self) -> DeviceLimits {
        self.limits().unwrap_or(DeviceLimits::SM_70)
    }

    /// Waits for the stream, then drops what finished launches kept alive.
    ///
    /// # Errors
    ///
    /// Why this instance has no device, or the asynchronous failure of a launch.
    pub fn synchronize(&self) -> std::result::Result<(), CudaError> {
        self.inner.synchronize()
    }

    /// Records an event on this instance's stream, after everything queued on it so far
    /// (`cuEventRecord`): another instance can wait for it ([`wait_event`](Self::wait_event)),
    /// the host too ([`StreamEvent::synchronize`]). What CUDA programs order streams by, and
    /// what a hand-written multi-stream pipeline uses where the implicit DAG would infer the
    /// same order.
    ///
    /// ```
    /// use hoplite_cuda::Cuda;
    /// let run = || -> Result<(), hoplite_cuda::CudaError> {
    ///     let (a, b) = (Cuda::new()?, Cuda::new()?);
    ///     // ... launches on `a` ...
    ///     let done = a.record_event()?;
    ///     b.wait_event(&done)?; // launches on `b` from now on run after those on `a`
    ///     done.synchronize()
    /// };
    /// if let Err(e) = run() {
    ///     println!("{e}"); // no device here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// Why this instance has no device, or the driver's error.
    pub fn record_event(&self) -> std::result::Result<StreamEvent, CudaError> {
        let stream = self.stream()?;
        let event = driver::Event::new(stream.device.clone())?;
        // Taken before the record: every launch recorded in the table before it was queued
        // before the event (see `Pending::order_after`).
        let mark = queued_launches().mark();
        event.record(stream)?;
        Ok(StreamEvent {
            event: Arc::new(event),
            instance: self.inner.number,
            mark,
        })
    }

    /// Makes the work queued on this instance from now on wait, on the device, for `event`
    /// (`cuStreamWaitEvent`); the host does not wait. An asynchronous launch here then no
    /// longer fences the event's instance for the launches queued there before the event
    /// (see [`record_event`](Self::record_event)).
    ///
    /// # Errors
    ///
    /// Why this instance has no device, or the driver's error.
    pub fn wait_event(&self, event: &StreamEvent) -> std::result::Result<(), CudaError> {
        self.stream()?.wait_event(&event.event)?;
        queued_launches().order_after(self.inner.number, event.instance, event.mark);
        Ok(())
    }

    /// Queues stream work that is not one of the core's launches (the library's fill and copy,
    /// raw kernels, the mirrors' stream copies), touching `accesses` in the memory of the GPUs
    /// `devices`, in either launch mode (`what` names it in errors): ordered like an asynchronous launch (see
    /// `crate::pending`, [`queue_launch`](Self::queue_launch)), so that another instance's
    /// work on the same bytes waits for it; work that reaches another GPU's memory waits for
    /// itself (that GPU's host copies are not ordered after this stream).
    pub(crate) fn queue_work(
        &self,
        what: &'static str,
        accesses: &[Access],
        devices: &[usize],
        work: impl FnOnce() -> std::result::Result<(), CudaError>,
    ) -> std::result::Result<(), CudaError> {
        let work = || {
            work()?;
            self.note_queued(what);
            Ok(())
        };
        let here = self.device().ok();
        if devices.iter().any(|&d| Some(d) != here) {
            self.wait_for_queued(accesses)?;
            work()?;
            return self.synchronize();
        }
        if self.in_dag_stream() {
            // A DAG vertex on its own stream: ordered by the DAG's events, which hold its
            // views (see `crate::pending::ordered_by_dag`).
            self.wait_for_queued(accesses)?;
            work()?;
            return self.bound_kept();
        }
        self.queue_launch(accesses, work)
    }

    /// Runs `work` as a DAG stream's work on this instance: the launches it issues here are
    /// ordered by the DAG's events rather than the table (see `crate::pending::ordered_by_dag`).
    #[cfg(feature = "dag")]
    pub(crate) fn run_as_dag_stream<T>(&self, work: impl FnOnce() -> T) -> T {
        crate::pending::ordered_by_dag(self.inner.number, work)
    }

    /// Whether the calling thread runs a DAG stream's work on this very instance: the only
    /// launches the DAG's events order (work on another instance is queued work as any).
    pub(crate) fn in_dag_stream(&self) -> bool {
        crate::pending::in_dag_stream(self.inner.number)
    }

    /// Notes `what` (a kernel's name, or the library work's) as the last work queued here, for
    /// the error of a wait that finds queued work failed ([`CudaError::QueuedWork`]).
    pub(crate) fn note_queued(&self, what: &'static str) {
        *self.inner.last_queued.lock() = Some(what);
    }

    /// Queues a launch asynchronously (see `crate::pending`): first waits for the instances
    /// whose queued launches conflict with `accesses`, then `launch` queues it, then its
    /// accesses are recorded. Fences this instance once it has too many queued.
    pub(crate) fn queue_launch(
        &self,
        accesses: &[Access],
        launch: impl FnOnce() -> std::result::Result<(), CudaError>,
    ) -> std::result::Result<(), CudaError> {
        self.wait_for_queued(accesses)?;
        launch()?;
        let queued = queued_launches().record(self.inner.number, &Arc::downgrade(&self.inner), accesses);
        if queued > MAX_QUEUED {
            self.synchronize()?;
        }
        self.bound_kept()
    }

    /// Fences the instance if its queued launches keep too many views alive (see `MAX_KEPT`).
    pub(crate) fn bound_kept(&self) -> std::result::Result<(), CudaError> {
        if self.inner.keep_alive.len() > MAX_KEPT {
            self.synchronize()?;
        }
        Ok(())
    }

    /// Fences every other instance with a queued asynchronous launch that conflicts with
    /// `accesses` (see `crate::pending`): what a launch that touches them waits for first.
    pub(crate) fn wait_for_queued(&self, accesses: &[Access]) -> std::result::Result<(), CudaError> {
        for (number, other) in queued_launches().conflicts(self.inner.number, accesses) {
            match other.upgrade() {
                Some(inner) => {
                    // Reported to profiling tools as a fence of the other instance, as Kokkos
                    // names its internal fences: a timeline then shows where the table made
                    // one stream wait for another (and an event, where it did not).
                    let _profiled = hoplite_core::profiling::FenceScope::begin(CONFLICT_FENCE, || {
                        inner.profiling_device_id()
                    });
                    inner.synchronize()?;
                }
                // Being dropped: its `Drop` waits for its stream, then forgets its records.
                None => queued_launches().wait_until_forgotten(number),
            }
        }
        Ok(())
    }
}

/// The name under which profiling tools (a Kokkos Tools connector, the built-in trace) see
/// a launch, fill or copy wait for another instance's conflicting queued work: a fence of that
/// instance, on its row. Streams ordered by hand (`record_event` / `wait_event`) show none.
///
/// ```
/// assert!(hoplite_cuda::CONFLICT_FENCE.starts_with("hoplite::Cuda"));
/// ```
pub const CONFLICT_FENCE: &str = "hoplite::Cuda: fence of an instance whose queued work conflicts";

impl Instance {
    /// Kokkos' encoding for a CUDA stream: device type `Cuda`, the GPU's ordinal, and the
    /// instance's number in the process (from 1, as Kokkos numbers its instances).
    fn profiling_device_id(&self) -> hoplite_core::profiling::DeviceId {
        let ordinal = self.stream.as_ref().map_or(0, |s| s.device.ordinal);
        hoplite_core::profiling::DeviceId::numbered(
            hoplite_core::profiling::DeviceType::CUDA,
            u32::try_from(ordinal).unwrap_or(u32::MAX),
            self.number,
        )
    }

    /// Waits for the stream, then drops what finished launches kept alive and forgets their
    /// records ([`Cuda::synchronize`]).
    fn synchronize(&self) -> std::result::Result<(), CudaError> {
        let stream = self.stream.as_ref().map_err(Clone::clone)?;
        crate::pending::synchronize(queued_launches(), self.number, &self.keep_alive, || {
            stream.synchronize().map_err(|e| match *self.last_queued.lock() {
                Some(last) => CudaError::QueuedWork {
                    instance: self.number,
                    last,
                    error: Box::new(e),
                },
                None => e,
            })
        })?;
        *self.last_queued.lock() = None;
        Ok(())
    }
}

impl crate::pending::Keeper for Instance {
    fn release(&self) -> bool {
        if self.keep_alive.len() == 0 {
            return false;
        }
        // An error leaves the values kept; the allocation that asked reports its own error.
        self.synchronize().is_ok()
    }
}

/// Past this many values kept alive by an instance's queued launches, a launch fences it:
/// a program that never fences keeps a bounded number of views alive.
const MAX_KEPT: usize = 1 << 16;

/// The process's table of accesses of queued asynchronous launches, by instance.
fn queued_launches() -> &'static Pending<Weak<Instance>> {
    static TABLE: OnceLock<Pending<Weak<Instance>>> = OnceLock::new();
    TABLE.get_or_init(Pending::default)
}

impl Drop for Instance {
    fn drop(&mut self) {
        // The views queued launches use must outlive them: wait for the stream before the
        // kept values (and so possibly their memory) are dropped. An error here was already
        // reported by the launch or would be by a fence; nothing is left to tell.
        if let Ok(stream) = &self.stream {
            let _ = stream.synchronize();
        }
        queued_launches().forget_instance(self.number);
        self.keep_alive.clear_drained();
    }
}

/// A point in a [`Cuda`] instance's stream ([`Cuda::record_event`]): complete once the work
/// queued there before it has run on the device.
#[derive(Clone)]
pub struct StreamEvent {
    event: Arc<driver::Event>,
    /// The number of the instance it was recorded on.
    instance: u64,
    /// The table's mark when it was recorded (see `Pending::order_after`).
    mark: u64,
}

impl std::fmt::Debug for StreamEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEvent")
            .field("instance", &self.instance)
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl StreamEvent {
    /// Whether the work before the event has finished (an error, such as a failed launch,
    /// counts as finished: nothing will complete later).
    pub fn is_complete(&self) -> bool {
        !self.event.is_pending()
    }

    /// Blocks the host until the work before the event has finished
    /// (`cuEventSynchronize`).
    ///
    /// # Errors
    ///
    /// The driver's error, such as a failed launch's.
    pub fn synchronize(&self) -> std::result::Result<(), CudaError> {
        self.event.synchronize()?;
        // Those launches have run: nobody needs to wait for them any more.
        queued_launches().forget(self.instance, self.mark);
        Ok(())
    }
}

impl Default for Cuda {
    /// The default instance: one stream on device 0 for the whole process (so
    /// `Cuda::default() == Cuda::default()`), or an instance carrying the error when there is
    /// no device.
    fn default() -> Self {
        static DEFAULT: OnceLock<Cuda> = OnceLock::new();
        DEFAULT
            .get_or_init(|| Cuda::from_stream(Device::get(0).and_then(Stream::new)))
            .clone()
    }
}

impl PartialEq for Cuda {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl ExecutionSpace for Cuda {
    type MemorySpace = CudaSpace;
    type ScratchMemorySpace = CudaSpace;
    /// Column-major, as Kokkos' device default: a range over rows makes neighbouring threads
    /// touch neighbouring elements.
    type ArrayLayout = LayoutLeft;
    type TeamMember<'t> = hoplite_core::device_kernel::DeviceTeamMember;

    fn name(&self) -> &'static str {
        "Cuda"
    }

    fn fence(&self) -> Result<()> {
        let _profiled = hoplite_core::profiling::FenceScope::begin(
            "hoplite::Cuda::fence: Unnamed Instance Fence",
            || self.profiling_device_id(),
        );
        Ok(self.synchronize()?)
    }

    /// Kokkos' encoding for a CUDA stream: device type `Cuda`, the GPU's ordinal, and the
    /// instance's number in the process (from 1, as Kokkos numbers its instances).
    fn profiling_device_id(&self) -> hoplite_core::profiling::DeviceId {
        self.inner.profiling_device_id()
    }

    fn in_parallel(&self) -> bool {
        // Host threads never run this space's kernels.
        false
    }

    fn concurrency(&self) -> usize {
        self.limits()
            .map(|l| l.sm_count as usize * l.max_threads_per_sm as usize)
            .unwrap_or(1)
            .max(1)
    }

    /// The GPU's block limit; without a device, sm_70's (every GPU hoplite runs on allows
    /// it), so that a team policy is validated as on any GPU and its launch then reports the
    /// missing driver or device, rather than a team size above 0.
    fn max_team_size(&self) -> usize {
        self.policy_limits().max_threads_per_block as usize
    }

    /// `TeamSize::Auto` on a GPU: the size that keeps the most threads resident with the
    /// policy's scratch, up to the size any kernel's registers fit
    /// ([`auto_team_size`](crate::geometry::auto_team_size); 64 without scratch on sm_70 to
    /// sm_90), not the block limit: a block of 1024 threads holds a multiprocessor alone and
    /// does not fit a kernel of more than 64 registers. Without a device, sm_70's, as
    /// `max_team_size`.
    fn recommended_team_size(&self, scratch: &[(usize, usize)]) -> usize {
        let scratch = crate::geometry::team_scratch(scratch);
        crate::geometry::auto_team_size(&self.policy_limits(), scratch) as usize
    }

    fn max_vector_length(&self) -> usize {
        (self.policy_limits().warp_size as usize).max(1)
    }

    fn max_scratch_size(&self, level: usize) -> usize {
        match level {
            // Both levels live in the block's dynamic shared memory (their sum is checked
            // against it when the launch's geometry is computed).
            0 | 1 => self.policy_limits().shared_per_block_optin,
            _ => 0,
        }
    }

    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        writeln!(out, "Cuda:")?;
        let stream = match self.stream() {
            Ok(s) => s,
            Err(e) => return writeln!(out, "  unavailable: {e}"),
        };
        if let Ok(d) = driver::driver() {
            writeln!(out, "  driver: {}", d.describe())?;
        }
        let dev = &stream.device;
        let l = &dev.limits;
        writeln!(
            out,
            "  device {}: {} (sm_{}{}), {} multiprocessors, {} MiB",
            dev.ordinal,
            dev.name,
            l.compute_capability.0,
            l.compute_capability.1,
            l.sm_count,
            dev.total_memory >> 20
        )?;
        if detail {
            writeln!(
                out,
                "  threads: {} per block ({:?} block, {:?} grid), {} per multiprocessor, warp {}",
                l.max_threads_per_block, l.max_block_dims, l.max_grid_dims, l.max_threads_per_sm, l.warp_size
            )?;
            writeln!(
                out,
                "  shared memory: {} B per block ({} B opt-in), {} B per multiprocessor",
                l.shared_per_block, l.shared_per_block_optin, l.shared_per_sm
            )?;
            writeln!(
                out,
                "  registers: {} per block, {} per multiprocessor",
                l.registers_per_block, l.registers_per_sm
            )?;
            match crate::nvrtc::Nvrtc::get() {
                Ok(n) => writeln!(out, "  NVRTC {}.{}", n.version().0, n.version().1)?,
                Err(e) => writeln!(out, "  {e}")?,
            }
        }
        Ok(())
    }

    fn synchronous_launches(&self) -> bool {
        false
    }

    /// New streams on the same device, one per weight. The device schedules blocks of all
    /// streams together, so the weights do not divide it; they only set the number of parts.
    fn partition_space_weighted(&self, weights: &[f64]) -> Result<Vec<Self>> {
        check_partition_count(self.name(), weights.len())?;
        let device = self.stream()?.device.clone();
        weights
            .iter()
            .map(|_| Ok(Cuda::from_stream(Ok(Stream::new(device.clone())?))))
            .collect()
    }
}
