//! Dynamic selection over CUDA streams: [`CudaBackend`] is hoplite-select's [`Backend`] for
//! [`Cuda`] instances, timing each submission with CUDA events.
//!
//! Every execution space already has hoplite-select's `SpaceBackend`, which times a task with
//! the host clock from before the submitted function until a fence after it. On a stream that
//! still runs earlier work, that counts the earlier work too, and a fence drains the whole
//! stream. [`CudaBackend`] instead records a timing event on the selected stream before the
//! function is called and another after it returns, waits for the second one only, and
//! reports `cuEventElapsedTime` between them: the device time of the work the function
//! queued on that stream (GrCUDA's and oneDPL's CUDA backends measure the same way).

use std::time::{Duration, Instant};

use hoplite_core::ExecutionSpace;
use hoplite_select::{
    Backend, FromResources, InfoSet, Logic, Report, SelectError, Selection, Submission, WaitAll,
};

use crate::driver::TimingEvent;
use crate::{Cuda, CudaError};

/// hoplite-select's backend for CUDA streams: the resources are [`Cuda`] instances (each a
/// stream), and a policy that asks for task time gets the device time between two CUDA events
/// recorded around the submission on the selected stream.
///
/// * Task submission is reported before the function is called; completion when the
///   submission is waited on (a fence of the stream), unwrapped or dropped, since launches
///   are asynchronous.
/// * Task time: a timing event is recorded on the stream before the function is called and
///   another after it returns; the backend waits for the second (`cuEventSynchronize`, not
///   the whole stream) and reports `cuEventElapsedTime`. Work queued earlier on the stream is
///   not counted (the first event completes after it). When the driver refuses an event, or
///   the instance has no device, the time falls back to the host clock up to a fence, as
///   hoplite-select's `SpaceBackend` measures it, so a tuning policy still makes progress.
/// * The submission group fences every stream.
///
/// The submitted function should queue its work on the stream it is given: work it puts on
/// other streams is neither timed nor waited for.
///
/// ```
/// use hoplite_core::ExecutionSpace;
/// use hoplite_cuda::Cuda;
/// use hoplite_cuda::select::CudaBackend;
/// use hoplite_select::{submit, wait, AutoTune, FromResources};
///
/// // Two streams of device 0 where there is one; the default instance (which carries the
/// // reason) where there is none.
/// let backend = CudaBackend::on_device(0, 2).unwrap_or_else(|_| CudaBackend::by_default());
/// let policy: AutoTune<Cuda, CudaBackend> = AutoTune::with_backend(backend);
/// let s = submit(&policy, |cuda: &Cuda, ()| cuda.name(), ())?;
/// match wait(&s) {
///     Ok(()) => assert_eq!(s.unwrap(), "Cuda"),
///     Err(e) => println!("{e}"), // no device: the fence's typed error
/// }
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
#[derive(Debug)]
pub struct CudaBackend {
    streams: Vec<Cuda>,
}

impl CudaBackend {
    /// A backend over `streams` (instances of any devices).
    ///
    /// ```
    /// use hoplite_cuda::Cuda;
    /// use hoplite_cuda::select::CudaBackend;
    /// use hoplite_select::Backend;
    /// assert_eq!(CudaBackend::new(vec![Cuda::default()]).resources().len(), 1);
    /// ```
    pub fn new(streams: Vec<Cuda>) -> CudaBackend {
        CudaBackend { streams }
    }

    /// A backend over `streams` new streams of device `ordinal`: the policy spreads work over
    /// streams that the device runs concurrently.
    ///
    /// ```
    /// use hoplite_cuda::select::CudaBackend;
    /// match CudaBackend::on_device(0, 4) {
    ///     Ok(b) => println!("{b:?}"),
    ///     Err(e) => println!("{e}"), // no driver or no device
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::NoDriver`], [`CudaError::NoDevice`], [`CudaError::InvalidDevice`] or the
    /// driver's error creating a stream.
    pub fn on_device(ordinal: usize, streams: usize) -> Result<CudaBackend, CudaError> {
        let streams = (0..streams)
            .map(|_| Cuda::on_device(ordinal))
            .collect::<Result<_, _>>()?;
        Ok(CudaBackend { streams })
    }

    /// A backend with `streams_per_device` new streams on every device, device by device: with
    /// one stream per device the resources are the GPUs themselves, and a dynamic-load or
    /// auto-tune policy balances or tunes across GPUs.
    ///
    /// ```
    /// use hoplite_cuda::select::CudaBackend;
    /// use hoplite_select::Backend;
    /// if let Ok(b) = CudaBackend::all_devices(1) {
    ///     assert_eq!(b.resources().len(), hoplite_cuda::device_count()?);
    /// }
    /// # Ok::<(), hoplite_cuda::CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::NoDriver`], [`CudaError::NoDevice`] or the driver's error creating a
    /// stream.
    pub fn all_devices(streams_per_device: usize) -> Result<CudaBackend, CudaError> {
        let devices = crate::device_count()?;
        let mut streams = Vec::with_capacity(devices * streams_per_device);
        for ordinal in 0..devices {
            streams.extend(CudaBackend::on_device(ordinal, streams_per_device)?.streams);
        }
        Ok(CudaBackend { streams })
    }
}

/// Where a timed submission started: a timing event recorded on the selected stream, and the
/// host time as the fallback ([`CudaBackend`]'s per-selection scratch space). Empty when the
/// policy does not ask for task time.
#[derive(Default)]
pub struct CudaTaskStart {
    host: Option<Instant>,
    device: Option<TimingEvent>,
}

impl std::fmt::Debug for CudaTaskStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaTaskStart")
            .field("host", &self.host)
            .field("device_event", &self.device.is_some())
            .finish()
    }
}

impl CudaTaskStart {
    /// Records the start on `cuda`'s stream (or only the host time when it has none or the
    /// driver refuses the event).
    fn start(cuda: &Cuda) -> CudaTaskStart {
        let device = cuda.stream().ok().and_then(|s| TimingEvent::record(s).ok());
        CudaTaskStart {
            host: Some(Instant::now()),
            device,
        }
    }

    /// The task's time: device time from the start event to an end event recorded now, or
    /// the host time up to a fence of the stream when there is no start event or the end
    /// event fails. `None` when nothing was started.
    fn finish(&self, cuda: &Cuda) -> Option<Duration> {
        let host = self.host?;
        if let Some(start) = &self.device
            && let Ok(time) = device_time(cuda, start)
        {
            return Some(time);
        }
        // A failed fence shows again when the submission is waited on.
        let _ = cuda.fence();
        Some(host.elapsed())
    }
}

/// Records the end event on `cuda`'s stream, waits for it and measures from `start`.
fn device_time(cuda: &Cuda, start: &TimingEvent) -> Result<Duration, CudaError> {
    let end = TimingEvent::record(cuda.stream()?)?;
    end.synchronize()?;
    end.elapsed_since(start)
}

impl Backend for CudaBackend {
    type Resource = Cuda;
    type Scratch<I: InfoSet> = CudaTaskStart;

    fn resources(&self) -> &[Cuda] {
        &self.streams
    }

    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        if <L::Infos as InfoSet>::TASK_SUBMISSION || <L::Infos as InfoSet>::TASK_COMPLETION {
            selection.report(Report::TaskSubmission);
        }
        if <L::Infos as InfoSet>::TASK_TIME {
            let cuda = selection.resource();
            *selection.scratch_mut() = CudaTaskStart::start(cuda);
        }
    }

    fn instrument_after<'p, L: Logic, W>(
        &self,
        selection: Selection<'p, L, Self>,
        value: W,
    ) -> Submission<'p, L, Self, W> {
        if <L::Infos as InfoSet>::TASK_TIME
            && let Some(time) = selection.scratch().finish(selection.resource())
        {
            selection.report(Report::TaskTime(time));
        }
        Submission::new(selection, value)
    }

    fn wait_submission<W>(&self, resource: &Cuda, _value: &W) -> Result<(), SelectError> {
        Ok(resource.fence()?)
    }
}

impl FromResources for CudaBackend {
    fn from_resources(streams: Vec<Cuda>) -> Self {
        CudaBackend { streams }
    }

    /// One resource: the default instance of device 0 (which carries the reason when there is
    /// no device, so that waiting on it reports it).
    fn by_default() -> Self {
        CudaBackend {
            streams: vec![Cuda::default()],
        }
    }
}

impl WaitAll for CudaBackend {
    fn wait_all(&self) -> Result<(), SelectError> {
        self.streams.iter().try_for_each(|s| Ok(s.fence()?))
    }
}
