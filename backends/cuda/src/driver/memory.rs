//! Memory: allocations of device, managed and page-locked host memory for the memory spaces,
//! and the synchronous copies between host and device.

use std::sync::Arc;

use super::api::MemoryKind;
use super::{Device, Stream};
use crate::CudaError;

/// Allocates `bytes` (non-zero) of `kind` on device `ordinal`'s primary context; page-locked
/// host memory is allocated portable, so every device's context sees it page-locked.
pub(crate) fn allocate(kind: MemoryKind, ordinal: usize, bytes: usize) -> Result<*mut u8, CudaError> {
    let device = Device::get(ordinal)?;
    let address = device.api().mem_alloc(device.context(), kind, bytes, true)?;
    Ok(address as usize as *mut u8)
}

/// Sets `bytes` bytes at `ptr` (from [`allocate`] with `Device` or `Managed`) to zero.
/// The memset runs in device `ordinal`'s context, the allocation's.
pub(crate) fn zero(ordinal: usize, ptr: *mut u8, bytes: usize) -> Result<(), CudaError> {
    let device = Device::get(ordinal)?;
    // SAFETY: `ptr` is a device address from `allocate` valid for `bytes` bytes (the caller's
    // promise, kept by the memory spaces, which pass their own fresh allocations).
    unsafe {
        device
            .api()
            .memset_d8(device.context(), ptr as usize as u64, 0, bytes)
    }
}

/// Frees memory from [`allocate`].
///
/// # Safety
///
/// `ptr` came from `allocate(kind, ordinal, _)` and is not used afterwards.
pub(crate) unsafe fn free(kind: MemoryKind, ordinal: usize, ptr: *mut u8) {
    let Ok(device) = Device::get(ordinal) else { return };
    // SAFETY: by the caller's promise `ptr` is a live allocation of this kind, not used
    // afterwards.
    let _ = unsafe { device.api().mem_free(device.context(), kind, ptr as usize as u64) };
}

/// Copies `bytes` bytes of host memory at `src` to the device address `dst`.
///
/// # Safety
///
/// `src` is valid for reads of `bytes` bytes (they may include padding: the driver copies raw
/// memory); `dst` is a device (or managed) allocation with at least `bytes` bytes from `dst`
/// on, of device `ordinal`, and no kernel uses those bytes during the copy.
pub(crate) unsafe fn copy_to_device(
    ordinal: usize,
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = Device::get(ordinal)?;
    // SAFETY: `src` and `dst` by the caller's promise. The copy is synchronous, so `src`
    // outlives it.
    unsafe {
        device
            .api()
            .memcpy_htod(device.context(), dst as usize as u64, src, bytes, None)
    }
}

/// Copies `bytes` bytes from the device address `src` into host memory at `dst`.
///
/// # Safety
///
/// `dst` is valid for writes of `bytes` bytes; `src` is a device (or managed) allocation with
/// at least `bytes` bytes from `src` on, of device `ordinal`, and no kernel writes those bytes
/// during the copy.
pub(crate) unsafe fn copy_to_host(
    ordinal: usize,
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
) -> Result<(), CudaError> {
    let device = Device::get(ordinal)?;
    // SAFETY: `dst` and `src` by the caller's promise. The copy is synchronous.
    unsafe {
        device
            .api()
            .memcpy_dtoh(device.context(), dst, src as usize as u64, bytes, None)
    }
}

/// Device memory of one device, freed when dropped: the owner of every device allocation the
/// crate makes for itself (a reduction's partials, a stream's scratch, the bandwidth
/// measurement's buffers). Views' memory is not one: hoplite-core's allocation records own it,
/// through the memory spaces' [`allocate`] and [`free`].
///
/// The owner keeps the buffer alive until the work that uses it completed (a synchronized
/// stream, a waited-for graph launch), or hands it to [`free_after`](Self::free_after), which
/// orders the free after a stream's work.
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    device: Arc<Device>,
    ptr: u64,
    bytes: usize,
    /// Allocated stream-ordered from the device's default memory pool (`cuMemAllocAsync`).
    pooled: bool,
}

impl DeviceBuffer {
    /// `bytes` bytes (non-zero) of `device`'s memory (`cuMemAlloc`).
    pub(crate) fn new(device: Arc<Device>, bytes: usize) -> Result<DeviceBuffer, CudaError> {
        let ptr = device
            .api()
            .mem_alloc(device.context(), MemoryKind::Device, bytes, false)?;
        Ok(DeviceBuffer {
            device,
            ptr,
            bytes,
            pooled: false,
        })
    }

    /// `bytes` bytes (non-zero) of the memory of `stream`'s device, ordered after the work
    /// queued on `stream` where the device has memory pools (`cuMemAllocAsync`), from
    /// `cuMemAlloc` otherwise.
    pub(crate) fn new_on(stream: &Stream, bytes: usize) -> Result<DeviceBuffer, CudaError> {
        let device = &stream.device;
        if !device.memory_pools {
            return DeviceBuffer::new(device.clone(), bytes);
        }
        // The device reported memory pool support, so stream-ordered allocation is valid on
        // its streams.
        let ptr = device
            .api()
            .mem_alloc_async(device.context(), bytes, stream.raw())?;
        Ok(DeviceBuffer {
            device: device.clone(),
            ptr,
            bytes,
            pooled: true,
        })
    }

    /// The device address.
    pub(crate) fn address(&self) -> u64 {
        self.ptr
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// Frees the buffer after the work queued on `stream`: a pooled buffer with
    /// `cuMemFreeAsync`, ordered after it; otherwise the stream is drained first, so that no
    /// queued kernel or copy still uses the memory.
    ///
    /// # Safety
    ///
    /// Only work queued on `stream` (of the buffer's device) uses the buffer.
    pub(crate) unsafe fn free_after(mut self, stream: &Stream) {
        if self.device.bind().is_err() {
            return; // no context to free in: the drop finds none either
        }
        let (api, ctx) = (self.device.api(), self.device.context());
        // SAFETY: `ptr` was allocated as `pooled` says and is freed once (it is cleared below,
        // so the drop frees nothing). A pooled free is ordered after the stream's work;
        // otherwise the stream is drained first; by the caller's promise no other work uses
        // the memory.
        let _ = unsafe {
            if self.pooled {
                api.mem_free_async(ctx, self.ptr, stream.raw())
            } else {
                let _ = api.stream_synchronize(ctx, stream.raw());
                api.mem_free(ctx, MemoryKind::Device, self.ptr)
            }
        };
        self.ptr = 0;
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 {
            // SAFETY: `ptr` was allocated in this device's context and is freed once (a buffer
            // freed by `free_after` has a null address); the owner keeps the buffer until the
            // work using it completed (see the type).
            let _ = unsafe {
                self.device
                    .api()
                    .mem_free(self.device.context(), MemoryKind::Device, self.ptr)
            };
        }
    }
}

/// Page-locked host memory, freed when dropped: what the device copies results into directly
/// (a stream's staging memory, a reduction node's partials) and the measurement copies from.
#[derive(Debug)]
pub(crate) struct PinnedBuffer {
    device: Arc<Device>,
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: the buffer owns its memory (the pointer is unique to it); reads and writes go through
// the owner, which the borrow rules order, and the driver's copies, which the owner orders.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared access only reads the address and size.
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// `bytes` bytes (non-zero) page-locked for `device`'s context (`cuMemHostAlloc` with
    /// flags 0, as `cuMemAllocHost`).
    pub(crate) fn new(device: Arc<Device>, bytes: usize) -> Result<PinnedBuffer, CudaError> {
        PinnedBuffer::with_flags(device, bytes, false)
    }

    /// `bytes` bytes (non-zero) page-locked for every context (`CU_MEMHOSTALLOC_PORTABLE`).
    #[cfg(feature = "dag")]
    pub(crate) fn portable(device: Arc<Device>, bytes: usize) -> Result<PinnedBuffer, CudaError> {
        PinnedBuffer::with_flags(device, bytes, true)
    }

    fn with_flags(device: Arc<Device>, bytes: usize, portable: bool) -> Result<PinnedBuffer, CudaError> {
        let ptr = device
            .api()
            .mem_alloc(device.context(), MemoryKind::HostPinned, bytes, portable)?;
        Ok(PinnedBuffer {
            device,
            ptr: ptr as usize as *mut u8,
            bytes,
        })
    }

    /// The host address.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `cuMemHostAlloc` in this device's context and is freed once;
        // the owner keeps the buffer until every copy using it completed.
        let _ = unsafe {
            self.device.api().mem_free(
                self.device.context(),
                MemoryKind::HostPinned,
                self.ptr as usize as u64,
            )
        };
    }
}
