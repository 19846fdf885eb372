//! Events: [`Event`], the cheapest event, which orders streams and tells the host when work
//! is done, and [`TimingEvent`], two of which bound the device time of the work between them.

use std::sync::Arc;

use super::api::RawEvent;
use super::{Device, Stream};
use crate::CudaError;

/// A CUDA event without timing (`CU_EVENT_DISABLE_TIMING`, the cheapest kind), destroyed when
/// dropped: recorded on a stream, it completes when the work queued before it has; another
/// stream can wait for it on the device ([`Stream::wait_event`]).
pub(crate) struct Event {
    raw: RawEvent,
    device: Arc<Device>,
}

impl Event {
    /// A new event of `device`, not yet recorded.
    pub(crate) fn new(device: Arc<Device>) -> Result<Event, CudaError> {
        let raw = device.api().event_create(device.context(), false)?;
        Ok(Event { raw, device })
    }

    /// Records the event on `stream` (of the event's device), after the work queued on it so
    /// far (`cuEventRecord`).
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), CudaError> {
        let device = &stream.device;
        device
            .api()
            .event_record(device.context(), self.raw, stream.raw())
    }

    /// Whether work before the event is still pending (`cuEventQuery` answers `NOT_READY`).
    /// Any other answer — done, an error, no context to ask in — means nothing will complete
    /// later, so waiting would never end: it counts as not pending.
    pub(crate) fn is_pending(&self) -> bool {
        matches!(
            self.device.api().event_query(self.device.context(), self.raw),
            Ok(false)
        )
    }

    /// Waits until the device reached the event (`cuEventSynchronize`); an event never
    /// recorded is reached at once.
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device
            .api()
            .event_synchronize(self.device.context(), self.raw)
    }

    /// The driver's handle, for a stream's wait.
    pub(super) fn raw(&self) -> RawEvent {
        self.raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live event, destroyed once; the driver defers the release of an
        // event a stream still waits for.
        unsafe { self.device.api().event_destroy(self.device.context(), self.raw) };
    }
}

#[cfg(any(feature = "dag", feature = "select"))]
/// A CUDA event with timing enabled, recorded on a stream when made: two of them on one
/// stream bound the device time of the work queued between them.
pub(crate) struct TimingEvent {
    raw: RawEvent,
    device: Arc<Device>,
}

#[cfg(any(feature = "dag", feature = "select"))]
impl TimingEvent {
    /// A timing event recorded on `stream` after the work queued on it so far.
    pub(crate) fn record(stream: &Stream) -> Result<TimingEvent, CudaError> {
        let device = &stream.device;
        // With timing (cuEventElapsedTime refuses events made without).
        let raw = device.api().event_create(device.context(), true)?;
        let event = TimingEvent {
            raw,
            device: device.clone(),
        };
        device
            .api()
            .event_record(device.context(), event.raw, stream.raw())?;
        Ok(event)
    }

    /// Waits until the device reached the event (the work queued before it is done).
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device
            .api()
            .event_synchronize(self.device.context(), self.raw)
    }

    /// The device time from `start` to this event. Both must have been recorded and this one
    /// reached ([`synchronize`](Self::synchronize)); otherwise the driver answers
    /// `CUDA_ERROR_NOT_READY`, which is returned.
    pub(crate) fn elapsed_since(&self, start: &TimingEvent) -> Result<std::time::Duration, CudaError> {
        let ms = self
            .device
            .api()
            .event_elapsed(self.device.context(), start.raw, self.raw)?;
        Ok(milliseconds(ms))
    }
}

#[cfg(any(feature = "dag", feature = "select"))]
impl Drop for TimingEvent {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live event destroyed once; the driver defers the release of an
        // event that is recorded but not yet reached.
        unsafe { self.device.api().event_destroy(self.device.context(), self.raw) };
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
