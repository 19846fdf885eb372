//! Events: [`Event`], the cheapest event, which orders streams and tells the host when work
//! is done, and [`TimingEvent`], two of which bound the device time of the work between them.

use std::sync::Arc;

use cudarc::driver::sys;

use super::{Device, Stream, check};
use crate::CudaError;

/// A CUDA event without timing (`CU_EVENT_DISABLE_TIMING`, the cheapest kind), destroyed when
/// dropped: recorded on a stream, it completes when the work queued before it has; another
/// stream can wait for it on the device ([`Stream::wait_event`]).
pub(crate) struct Event {
    raw: sys::CUevent,
    device: Arc<Device>,
}

// SAFETY: an event handle may be used from any thread; every use binds its device's context.
unsafe impl Send for Event {}
// SAFETY: as for `Send`; the driver synchronizes concurrent calls on one event.
unsafe impl Sync for Event {}

impl Event {
    /// A new event of `device`, not yet recorded.
    pub(crate) fn new(device: Arc<Device>) -> Result<Event, CudaError> {
        device.bind()?;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        // SAFETY: the device's context is current; `raw` is a live out pointer; the flag is a
        // valid `CUevent_flags` value (no timing: the cheapest event).
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
        })?;
        Ok(Event { raw, device })
    }

    /// Records the event on `stream` (of the event's device), after the work queued on it so
    /// far (`cuEventRecord`).
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), CudaError> {
        stream.device.bind()?;
        // SAFETY: `raw` is a live event and `stream` a live stream; the caller records an
        // event on a stream of its own device, whose context is now current.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.raw, stream.raw())
        })
    }

    /// Whether work before the event is still pending (`cuEventQuery` answers `NOT_READY`).
    /// Any other answer — done, an error, no context to ask in — means nothing will complete
    /// later, so waiting would never end: it counts as not pending.
    pub(crate) fn is_pending(&self) -> bool {
        if self.device.bind().is_err() {
            return false;
        }
        // SAFETY: `raw` is a live event of the bound context.
        let status = unsafe { sys::cuEventQuery(self.raw) };
        status == sys::CUresult::CUDA_ERROR_NOT_READY
    }

    /// Waits until the device reached the event (`cuEventSynchronize`); an event never
    /// recorded is reached at once.
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device.bind()?;
        // SAFETY: `raw` is a live event of the bound context.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.raw) })
    }

    /// The driver's handle, for a stream's wait.
    pub(super) fn raw(&self) -> sys::CUevent {
        self.raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: `raw` is a live event, destroyed once; the driver defers the release of
            // an event a stream still waits for.
            let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
        }
    }
}

#[cfg(any(feature = "dag", feature = "select"))]
/// A CUDA event with timing enabled, recorded on a stream when made: two of them on one
/// stream bound the device time of the work queued between them.
pub(crate) struct TimingEvent {
    raw: sys::CUevent,
    device: Arc<Device>,
}

#[cfg(any(feature = "dag", feature = "select"))]
// SAFETY: an event handle may be used from any thread; every use binds its device's context.
unsafe impl Send for TimingEvent {}
#[cfg(any(feature = "dag", feature = "select"))]
// SAFETY: as for `Send`; the driver synchronizes concurrent calls on one event.
unsafe impl Sync for TimingEvent {}

#[cfg(any(feature = "dag", feature = "select"))]
impl TimingEvent {
    /// A timing event recorded on `stream` after the work queued on it so far.
    pub(crate) fn record(stream: &Stream) -> Result<TimingEvent, CudaError> {
        stream.device.bind()?;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        // SAFETY: the stream's context is current; `raw` is a live out pointer; flags 0 is
        // CU_EVENT_DEFAULT, which keeps timing (cuEventElapsedTime refuses events made with
        // CU_EVENT_DISABLE_TIMING).
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut raw, 0) })?;
        let event = TimingEvent {
            raw,
            device: stream.device.clone(),
        };
        // SAFETY: `raw` is a live event and `stream` a live stream of the same (current)
        // context, as cuEventRecord requires.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(event.raw, stream.raw())
        })?;
        Ok(event)
    }

    /// Waits until the device reached the event (the work queued before it is done).
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device.bind()?;
        // SAFETY: `raw` is a live, recorded event of the bound context.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.raw) })
    }

    /// The device time from `start` to this event. Both must have been recorded and this one
    /// reached ([`synchronize`](Self::synchronize)); otherwise the driver answers
    /// `CUDA_ERROR_NOT_READY`, which is returned.
    pub(crate) fn elapsed_since(&self, start: &TimingEvent) -> Result<std::time::Duration, CudaError> {
        self.device.bind()?;
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live timing events (created with flags 0) of one context
        // (the caller records them on one stream); `ms` is a live out pointer. The CUDA 2.0
        // entry point is used, not `_v2` (CUDA 12.8), so any 12.x driver has it.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, start.raw, self.raw)
        })?;
        Ok(milliseconds(ms))
    }
}

#[cfg(any(feature = "dag", feature = "select"))]
impl Drop for TimingEvent {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: `raw` is a live event destroyed once; the driver defers the release of
            // an event that is recorded but not yet reached.
            let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
        }
    }
}

/// The driver's milliseconds (a float with about half a microsecond of resolution) as a
/// `Duration`; a negative or non-finite value, which the driver never gives for events
/// recorded in order, becomes zero.
#[cfg(any(test, feature = "dag", feature = "select"))]
pub(crate) fn milliseconds(ms: f32) -> std::time::Duration {
    if ms.is_finite() && ms > 0.0 {
        std::time::Duration::from_secs_f64(f64::from(ms) / 1000.0)
    } else {
        std::time::Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::milliseconds;
    use std::time::Duration;

    #[test]
    fn event_milliseconds_become_durations() {
        assert_eq!(milliseconds(1.5), Duration::from_micros(1500));
        assert_eq!(milliseconds(0.0), Duration::ZERO);
        assert_eq!(milliseconds(-2.0), Duration::ZERO);
        assert_eq!(milliseconds(f32::NAN), Duration::ZERO);
        assert_eq!(milliseconds(f32::INFINITY), Duration::ZERO);
    }
}
