//! Streams: a stream of a device, destroyed when dropped, with the scratch and staging memory
//! it keeps for reductions and scans, and the copies queued on it.

use std::sync::Arc;

use parking_lot::Mutex;

use super::api::RawStream;
use super::{Device, DeviceBuffer, Event, PinnedBuffer};
use crate::CudaError;

/// A stream of a device, destroyed when dropped.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) device: Arc<Device>,
    raw: RawStream,
    /// The device memory a [`StreamBuffer`] lends, for one operation at a time (a reduction's
    /// partials, a scan's chunk sums), kept and grown rather than allocated per operation (a
    /// memory pool gives its memory back at every synchronization, so each reduction mapped
    /// its partials anew).
    scratch: Mutex<Option<DeviceBuffer>>,
    /// Where [`StreamBuffer::read_back`] copies results to: page-locked host memory that a
    /// stream copies small results back through (a reduction's partials, a scan's chunk
    /// sums), kept and grown rather than allocated per reduction, and copied into directly
    /// rather than through the driver's staging of pageable memory.
    staging: Mutex<Option<PinnedBuffer>>,
}

impl Stream {
    /// A new stream on `device`.
    pub(crate) fn new(device: Arc<Device>) -> Result<Stream, CudaError> {
        let raw = device.api().stream_create(device.context())?;
        // The queued-work protocol (`crate::pending`) relies on the legacy default stream
        // ordering the synchronous host copies (`to_vec`, `copy_to_host`) after this stream's
        // work, which only a blocking stream does: refuse any other.
        match device.api().stream_is_blocking(device.context(), raw) {
            Ok(true) => {}
            other => {
                // SAFETY: `raw` was just created and is not used again.
                unsafe { device.api().stream_destroy(device.context(), raw) };
                other?;
                return Err(CudaError::Driver {
                    call: "cuStreamCreate",
                    code: 1,
                    name: "CUDA_ERROR_INVALID_VALUE".into(),
                    description: "the stream was created non-blocking, so the legacy default stream's copies would not wait for its work".into(),
                });
            }
        }
        Ok(Stream {
            device,
            raw,
            scratch: Mutex::new(None),
            staging: Mutex::new(None),
        })
    }

    /// Waits for every launch on the stream; reports an asynchronous failure.
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device
            .api()
            .stream_synchronize(self.device.context(), self.raw)
    }

    pub(crate) fn raw(&self) -> RawStream {
        self.raw
    }

    /// Makes the work queued on the stream after this wait for `event` on the device
    /// (`cuStreamWaitEvent`); the host does not wait. An event never recorded orders nothing.
    pub(crate) fn wait_event(&self, event: &Event) -> Result<(), CudaError> {
        self.device
            .api()
            .stream_wait_event(self.device.context(), self.raw, event.raw())
    }

    /// Whether all work queued on the stream has finished (`cuStreamQuery`). An error means
    /// the work failed and nothing is left to wait for, so it counts as idle.
    #[cfg(feature = "dag")]
    pub(crate) fn is_idle(&self) -> bool {
        self.device
            .api()
            .stream_query(self.device.context(), self.raw)
            .unwrap_or(true)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Without a context nothing can be freed: the buffers' own drops find none either and
        // leave their memory to the process's end.
        if self.device.bind().is_ok() {
            if let Some(scratch) = self.scratch.get_mut().take() {
                // SAFETY: the stream's own scratch, used only by work on it.
                unsafe { scratch.free_after(self) };
            }
            // SAFETY: `raw` is a live stream created by `new` and not used after this; work
            // still queued completes before the driver frees it.
            unsafe { self.device.api().stream_destroy(self.device.context(), self.raw) };
        }
    }
}

/// Queues a copy of `bytes` bytes from host memory at `src` to the device address `dst` on
/// `stream`, after the work queued on it.
///
/// # Safety
///
/// `dst` is a device (or managed) allocation of the stream's context with at least `bytes`
/// bytes from `dst` on; `src` is readable for `bytes` bytes and is neither written nor freed
/// until the copy completed (the stream was synchronized past it). For page-locked `src` the
/// copy engine reads it after this returns; for pageable memory the driver stages it first.
pub(crate) unsafe fn copy_to_device_async(
    stream: &Stream,
    dst: u64,
    src: *const u8,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = &stream.device;
    // SAFETY: the caller's promise for both addresses and their lifetime; the stream is
    // live and of the device's context.
    unsafe {
        device
            .api()
            .memcpy_htod(device.context(), dst, src, bytes, Some(stream.raw))
    }
}

/// Queues a copy of `bytes` bytes from the device address `src` into host memory at `dst`
/// on `stream`, after the work queued on it.
///
/// # Safety
///
/// `src` is a device (or managed) allocation of the stream's context with at least `bytes`
/// bytes from `src` on; `dst` is writable for `bytes` bytes and is neither read, written nor
/// freed by anything else until the copy completed (the stream was synchronized past it).
pub(crate) unsafe fn copy_to_host_async(
    stream: &Stream,
    dst: *mut u8,
    src: u64,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = &stream.device;
    // SAFETY: the caller's promise for both addresses and their lifetime; the stream is
    // live and of the device's context.
    unsafe {
        device
            .api()
            .memcpy_dtoh(device.context(), dst, src, bytes, Some(stream.raw))
    }
}

/// Queues a copy of `bytes` bytes from the device address `src` to the device address `dst`,
/// both of the stream's device, on `stream`, after the work queued on it.
///
/// # Safety
///
/// `dst` and `src` are device (or managed) allocations of the stream's context with at least
/// `bytes` bytes from them on; neither is freed, and nothing else writes them (or reads `dst`),
/// until the copy completed (the stream was synchronized past it).
#[cfg(feature = "dag")]
pub(crate) unsafe fn copy_device_async(
    stream: &Stream,
    dst: u64,
    src: u64,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = &stream.device;
    // SAFETY: the caller's promise for both addresses and their lifetime; the stream is live
    // and of the device's context.
    unsafe {
        device
            .api()
            .memcpy_dtod_async(device.context(), dst, src, bytes, stream.raw)
    }
}

/// Queues a copy of `bytes` bytes from `src`, memory of device `src_device`, to `dst`,
/// memory of device `dst_device`, on `stream`, after the work queued on it
/// (`cuMemcpyPeerAsync`). It needs no peer access: without it the driver stages the copy.
///
/// # Safety
///
/// `dst` and `src` are device (or managed) allocations of their devices with at least
/// `bytes` bytes from them on; neither is freed, and nothing else writes them (or reads
/// `dst`), until the copy completed (the stream was synchronized past it).
pub(crate) unsafe fn copy_peer_async(
    stream: &Stream,
    dst: u64,
    dst_device: &Device,
    src: u64,
    src_device: &Device,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = &stream.device;
    // SAFETY: the caller's promise for both addresses and their lifetime; both contexts are
    // retained primary contexts of the devices that own the memory; the stream is live and of
    // the device's context.
    unsafe {
        device.api().memcpy_peer_async(
            device.context(),
            dst,
            dst_device.context(),
            src,
            src_device.context(),
            bytes,
            stream.raw,
        )
    }
}

/// The size a stream's kept buffer (scratch or staging) grows to for `bytes`: a power of two,
/// at least 64 KiB, so that a few growths serve every later reduction.
fn kept_size(bytes: usize) -> usize {
    bytes.next_power_of_two().max(64 << 10)
}

/// The stream's scratch memory, held for one operation: from the launch that fills it to the
/// read that empties it, so that two threads reducing on one instance do not interleave there.
pub(crate) struct StreamBuffer<'s> {
    stream: &'s Stream,
    /// Held while the buffer is lent: the scratch is this operation's.
    _scratch: parking_lot::MutexGuard<'s, Option<DeviceBuffer>>,
    address: u64,
    bytes: usize,
}

impl<'s> StreamBuffer<'s> {
    /// At least `bytes` bytes (at least one, so the address is a real allocation).
    pub(crate) fn new(stream: &'s Stream, bytes: usize) -> Result<StreamBuffer<'s>, CudaError> {
        let bytes = bytes.max(1);
        stream.device.bind()?;
        let mut scratch = stream.scratch.lock();
        let address = match &mut *scratch {
            Some(kept) if kept.len() >= bytes => kept.address(),
            slot => {
                let grown = DeviceBuffer::new_on(stream, kept_size(bytes))?;
                let address = grown.address();
                if let Some(old) = slot.replace(grown) {
                    // SAFETY: `old` is this stream's scratch and was only used by work on this
                    // stream, which the free is ordered after (or which is drained first).
                    unsafe { old.free_after(stream) };
                }
                address
            }
        };
        Ok(StreamBuffer {
            stream,
            _scratch: scratch,
            address,
            bytes,
        })
    }

    /// The device address.
    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// Queues a copy of `src` to the start of the buffer on the stream. The driver stages
    /// pageable memory before it returns, so `src` may go away afterwards.
    pub(crate) fn upload(&self, src: &[u8]) -> Result<(), CudaError> {
        if src.len() > self.bytes {
            return Err(CudaError::Transfer {
                label: "partials".into(),
                reason: format!("{} bytes do not fit a buffer of {}", src.len(), self.bytes),
            });
        }
        // SAFETY: the scratch is a live allocation of at least `bytes >= src.len()` bytes on
        // this stream's device, held by this buffer; `src` is readable for its length and,
        // being pageable, is copied to staging memory before the call returns.
        unsafe { copy_to_device_async(self.stream, self.address, src.as_ptr(), src.len()) }
    }

    /// Copies the first `len` bytes of the buffer, after the work queued on the stream, into
    /// the stream's page-locked staging memory, waits for the copy and returns what `read`
    /// makes of them.
    pub(crate) fn read_back<T>(&self, len: usize, read: impl FnOnce(&[u8]) -> T) -> Result<T, CudaError> {
        if len > self.bytes {
            return Err(CudaError::Transfer {
                label: "partials".into(),
                reason: format!("{len} bytes asked of a buffer of {}", self.bytes),
            });
        }
        let stream = self.stream;
        stream.device.bind()?;
        // Held until `read` is done: the staging memory has one user at a time.
        let mut staging = stream.staging.lock();
        let host = match &mut *staging {
            Some(kept) if kept.len() >= len => kept.as_ptr(),
            // The old memory is freed here (its drop): no copy into it is in flight, each was
            // waited for under the lock.
            slot => slot
                .insert(PinnedBuffer::new(stream.device.clone(), kept_size(len))?)
                .as_ptr(),
        };
        // SAFETY: the scratch is a live allocation of at least `len` bytes on this device; the
        // staging memory holds at least `len` bytes, is page-locked in this context and is
        // not touched by anyone else while the lock is held, and the synchronization below
        // completes the copy before it is read.
        unsafe { copy_to_host_async(stream, host, self.address, len) }?;
        stream.synchronize()?;
        // SAFETY: the copy above completed and wrote `len` bytes at `host`, which stays
        // allocated and unwritten while the lock is held.
        let bytes = unsafe { std::slice::from_raw_parts(host, len) };
        Ok(read(bytes))
    }
}
