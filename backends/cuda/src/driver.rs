//! The CUDA driver, behind the check that it is present: small safe functions over
//! `cudarc::driver::sys`, each arguing its call.
//!
//! cudarc loads `libcuda` at the first driver call and panics when it is missing, so nothing
//! here calls the driver before [`driver`] has found the library with
//! `is_culib_present`; without it every entry point returns [`CudaError::NoDriver`].

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use parking_lot::Mutex;

use crate::CudaError;
use crate::geometry::DeviceLimits;

/// The library names cudarc tries for the driver.
fn driver_names() -> String {
    cudarc::get_lib_name_candidates("cuda")
        .into_iter()
        .take(3)
        .chain(std::iter::once("libcuda.so.1".to_owned()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns a `CUresult` into `Ok` or a [`CudaError::Driver`] naming `call`.
pub(crate) fn check(call: &'static str, result: sys::CUresult) -> Result<(), CudaError> {
    if result == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let text = |f: unsafe fn(sys::CUresult, *mut *const c_char) -> sys::CUresult| {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: the driver is loaded (a result came from it); `p` is a live out pointer,
        // set to a static string of the driver or left null.
        let ok = unsafe { f(result, &mut p) } == sys::CUresult::CUDA_SUCCESS;
        if ok && !p.is_null() {
            // SAFETY: the driver returns a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            "unknown".to_owned()
        }
    };
    Err(CudaError::Driver {
        call,
        code: result as u32,
        name: text(sys::cuGetErrorName),
        description: text(sys::cuGetErrorString),
    })
}

/// The initialized driver: the device count.
#[derive(Debug)]
pub(crate) struct Driver {
    pub(crate) device_count: usize,
    pub(crate) version: i32,
}

/// The driver, initialized once; the typed error when there is none, no device, or an
/// older one than CUDA 12.0.
pub(crate) fn driver() -> Result<&'static Driver, CudaError> {
    static DRIVER: OnceLock<Result<Driver, CudaError>> = OnceLock::new();
    DRIVER.get_or_init(init).as_ref().map_err(Clone::clone)
}

fn init() -> Result<Driver, CudaError> {
    // SAFETY: `is_culib_present` only tries to open the driver library by its usual names
    // (running its initializers, which set up the library itself) and closes it again.
    if !unsafe { sys::is_culib_present() } {
        return Err(CudaError::NoDriver {
            looked_for: driver_names(),
        });
    }
    // SAFETY: the library is present, so cudarc's loader finds it and `cuInit`, which every
    // driver since CUDA 2.0 exports; flags must be 0.
    check("cuInit", unsafe { sys::cuInit(0) }).map_err(|e| match e {
        CudaError::Driver { code: 100, .. } => CudaError::NoDevice,
        other => other,
    })?;
    let mut version: c_int = 0;
    // SAFETY: initialized driver; `version` is a live out pointer.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut version)
    })?;
    if version < 12000 {
        // The 12.0 API is checked before any newer symbol is loaded (cudarc panics on a
        // missing symbol).
        return Err(CudaError::DriverTooOld {
            found_major: version / 1000,
            found_minor: (version % 1000) / 10,
        });
    }
    let mut count: c_int = 0;
    // SAFETY: initialized driver; `count` is a live out pointer.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
    if count <= 0 {
        return Err(CudaError::NoDevice);
    }
    Ok(Driver {
        device_count: count as usize,
        version,
    })
}

/// One device: its primary context (retained for the life of the process) and properties.
#[derive(Debug)]
pub(crate) struct Device {
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    pub(crate) total_memory: usize,
    pub(crate) limits: DeviceLimits,
    /// Whether the device has stream-ordered allocation (`cuMemAllocAsync`), from
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`.
    pub(crate) memory_pools: bool,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context handle may be used from any thread (the driver API is thread-safe
// and `bind` makes it current on the calling thread before each use); the other fields are
// plain data.
unsafe impl Send for Device {}
// SAFETY: as for `Send`: shared use only passes the handle to thread-safe driver calls.
unsafe impl Sync for Device {}

impl Device {
    /// Device `ordinal`, opened once per process.
    pub(crate) fn get(ordinal: usize) -> Result<Arc<Device>, CudaError> {
        static DEVICES: Mutex<Vec<Option<Arc<Device>>>> = Mutex::new(Vec::new());
        let driver = driver()?;
        if ordinal >= driver.device_count {
            return Err(CudaError::InvalidDevice {
                ordinal,
                count: driver.device_count,
            });
        }
        let mut devices = DEVICES.lock();
        if devices.len() < driver.device_count {
            devices.resize(driver.device_count, None);
        }
        if let Some(d) = &devices[ordinal] {
            return Ok(d.clone());
        }
        let d = Arc::new(Device::open(ordinal)?);
        devices[ordinal] = Some(d.clone());
        Ok(d)
    }

    fn open(ordinal: usize) -> Result<Device, CudaError> {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: initialized driver (`get` called `driver()`); `ordinal` is below the
        // device count, so it fits `c_int`; `dev` is a live out pointer.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut dev, ordinal as c_int)
        })?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `dev` is a valid device; `ctx` is a live out pointer. The primary context
        // is retained once per device and never released, so it outlives every use.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: `name` holds 256 bytes, the length passed; the driver NUL-terminates.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev)
        })?;
        // SAFETY: NUL-terminated by the driver within the buffer.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut total_memory = 0usize;
        // SAFETY: valid device; live out pointer.
        check("cuDeviceTotalMem_v2", unsafe {
            sys::cuDeviceTotalMem_v2(&mut total_memory, dev)
        })?;
        use sys::CUdevice_attribute as A;
        let attr = |a: A| -> Result<u32, CudaError> {
            let mut v: c_int = 0;
            // SAFETY: valid device; a known attribute; live out pointer.
            check("cuDeviceGetAttribute", unsafe {
                sys::cuDeviceGetAttribute(&mut v, a, dev)
            })?;
            Ok(v.max(0) as u32)
        };
        let limits = DeviceLimits {
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dims: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dims: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            registers_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize,
            shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize,
            shared_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as usize,
            reserved_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?
                as usize,
        };
        let memory_pools = attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0;
        Ok(Device {
            ordinal,
            name,
            total_memory,
            limits,
            memory_pools,
            ctx,
        })
    }

    /// The device's primary context, for driver calls that name a peer's context.
    pub(crate) fn context(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Makes this device's context current on the calling thread, as every driver call below
    /// needs.
    pub(crate) fn bind(&self) -> Result<(), CudaError> {
        // SAFETY: `ctx` is a retained primary context, valid for the life of the process.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }
}

/// The driver's handle of device `ordinal`.
fn device_handle(ordinal: usize) -> Result<sys::CUdevice, CudaError> {
    let count = driver()?.device_count;
    if ordinal >= count {
        return Err(CudaError::InvalidDevice { ordinal, count });
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: initialized driver (`driver()` above); `ordinal` is below the device count, so
    // it fits `c_int`; `dev` is a live out pointer.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut dev, ordinal as c_int)
    })?;
    Ok(dev)
}

/// Whether kernels of device `device` can read and write device `peer`'s memory once peer
/// access is enabled (`cuDeviceCanAccessPeer`); a device can always access its own memory.
pub(crate) fn can_access_peer(device: usize, peer: usize) -> Result<bool, CudaError> {
    let from = device_handle(device)?;
    let to = device_handle(peer)?;
    if device == peer {
        return Ok(true);
    }
    let mut can: c_int = 0;
    // SAFETY: initialized driver (`device_handle` checked it); both handles come from
    // `cuDeviceGet`; `can` is a live out pointer.
    check("cuDeviceCanAccessPeer", unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, from, to)
    })?;
    Ok(can != 0)
}

/// The pairs `(device, peer)` whose peer access this process enabled: `device`'s primary
/// context may use `peer`'s memory; the flag says whether atomic operations on it are native
/// (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`). Access lasts as long as the contexts,
/// which are retained for the life of the process, so pairs are only ever added.
static PEERS: parking_lot::RwLock<Vec<(usize, usize, bool)>> = parking_lot::RwLock::new(Vec::new());

/// Whether kernels in device `device`'s context may touch device `peer`'s memory: the same
/// device, or a pair whose access [`enable_peer_access`] enabled.
pub(crate) fn peer_access_enabled(device: usize, peer: usize) -> bool {
    device == peer || PEERS.read().iter().any(|&(d, p, _)| (d, p) == (device, peer))
}

/// Whether kernels in device `device`'s context may update device `peer`'s memory atomically
/// (atomic handles, unique tokens): the same device, or an enabled pair whose link carries
/// atomics natively. Over other links (PCIe without native peer atomics) an atomic operation
/// on a peer's memory is not atomic with the peer's own, so launches refuse it.
pub(crate) fn peer_atomics_enabled(device: usize, peer: usize) -> bool {
    device == peer
        || PEERS
            .read()
            .iter()
            .any(|&(d, p, native)| native && (d, p) == (device, peer))
}

/// Whether atomic operations from `device` on `peer`'s memory are native
/// (`cuDeviceGetP2PAttribute`).
fn native_peer_atomics(device: usize, peer: usize) -> Result<bool, CudaError> {
    let from = device_handle(device)?;
    let to = device_handle(peer)?;
    let mut value: c_int = 0;
    // SAFETY: initialized driver (`device_handle` checked it); both handles come from
    // `cuDeviceGet`; `value` is a live out pointer.
    check("cuDeviceGetP2PAttribute", unsafe {
        sys::cuDeviceGetP2PAttribute(
            &mut value,
            sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
            from,
            to,
        )
    })?;
    Ok(value != 0)
}

/// Enables access from `device`'s primary context to `peer`'s memory
/// (`cuCtxEnablePeerAccess`) and records the pair. Access enabled before (by this process or
/// through the same primary context elsewhere) is success; a pair the hardware cannot connect
/// is [`CudaError::PeerAccessUnsupported`].
pub(crate) fn enable_peer_access(device: &Device, peer: &Device) -> Result<(), CudaError> {
    if peer_access_enabled(device.ordinal, peer.ordinal) {
        return Ok(());
    }
    let unsupported = CudaError::PeerAccessUnsupported {
        device: device.ordinal,
        peer: peer.ordinal,
    };
    if !can_access_peer(device.ordinal, peer.ordinal)? {
        return Err(unsupported);
    }
    device.bind()?;
    // SAFETY: `device`'s context is current and `peer`'s is a live primary context (both
    // retained for the life of the process); flags must be 0.
    let result = unsafe { sys::cuCtxEnablePeerAccess(peer.context(), 0) };
    match result {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        sys::CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => return Err(unsupported),
        other => check("cuCtxEnablePeerAccess", other)?,
    }
    let native = native_peer_atomics(device.ordinal, peer.ordinal)?;
    let mut peers = PEERS.write();
    if !peers
        .iter()
        .any(|&(d, p, _)| (d, p) == (device.ordinal, peer.ordinal))
    {
        peers.push((device.ordinal, peer.ordinal, native));
    }
    Ok(())
}

/// A stream of a device, destroyed when dropped.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) device: Arc<Device>,
    raw: sys::CUstream,
    /// The device memory a [`StreamBuffer`] lends.
    scratch: Mutex<Scratch>,
    /// Where [`StreamBuffer::read_back`] copies results to.
    staging: Mutex<Staging>,
}

/// Page-locked host memory that a stream copies small results back through (a reduction's
/// partials, a scan's chunk sums): kept and grown rather than allocated per reduction, and
/// copied into directly rather than through the driver's staging of pageable memory.
#[derive(Debug)]
struct Staging {
    ptr: *mut u8,
    bytes: usize,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: `ptr` came from `cuMemHostAlloc` in the stream's context, which the
            // owner binds before dropping it, and every copy into it was waited for while the
            // stream's lock was held.
            let _ = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
        }
    }
}

// SAFETY: a stream handle may be used from any thread; the driver serializes work on it.
unsafe impl Send for Stream {}
// SAFETY: as for `Send`.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream on `device`.
    pub(crate) fn new(device: Arc<Device>) -> Result<Stream, CudaError> {
        device.bind()?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: the device's context is current; `raw` is a live out pointer; flags 0 is
        // CU_STREAM_DEFAULT.
        check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut raw, 0) })?;
        Ok(Stream {
            device,
            raw,
            scratch: Mutex::new(Scratch { ptr: 0, bytes: 0 }),
            staging: Mutex::new(Staging {
                ptr: std::ptr::null_mut(),
                bytes: 0,
            }),
        })
    }

    /// Waits for every launch on the stream; reports an asynchronous failure.
    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        self.device.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.raw)
        })
    }

    pub(crate) fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Whether all work queued on the stream has finished (`cuStreamQuery`). An error means
    /// the work failed and nothing is left to wait for, so it counts as idle.
    pub(crate) fn is_idle(&self) -> bool {
        if self.device.bind().is_err() {
            return true;
        }
        // SAFETY: the stream is live and its device's context current.
        let status = unsafe { sys::cuStreamQuery(self.raw) };
        status != sys::CUresult::CUDA_ERROR_NOT_READY
    }
}

impl Stream {
    /// Frees the scratch memory `old` (nothing when it is empty) after the work queued on
    /// this stream.
    ///
    /// # Safety
    ///
    /// `old` was this stream's scratch, and only work on this stream used it.
    unsafe fn free_scratch(&self, old: Scratch) {
        if old.bytes == 0 {
            return;
        }
        // SAFETY: `old.ptr` was allocated as the device's `memory_pools` says and is freed
        // once. A pooled free is ordered after the stream's work; otherwise the stream is
        // drained first, so no queued kernel or copy still uses the memory.
        let _ = unsafe {
            if self.device.memory_pools {
                sys::cuMemFreeAsync(old.ptr, self.raw)
            } else {
                sys::cuStreamSynchronize(self.raw);
                sys::cuMemFree_v2(old.ptr)
            }
        };
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            let scratch = std::mem::replace(self.scratch.get_mut(), Scratch { ptr: 0, bytes: 0 });
            // SAFETY: the stream's own scratch, used only by work on it.
            unsafe { self.free_scratch(scratch) };
            // SAFETY: `raw` is a live stream created by `new` and not used after this; work
            // still queued completes before the driver frees it.
            let _ = unsafe { sys::cuStreamDestroy_v2(self.raw) };
        } else {
            // No context to free the staging memory in: leave it to the process's end.
            std::mem::forget(std::mem::replace(
                self.staging.get_mut(),
                Staging {
                    ptr: std::ptr::null_mut(),
                    bytes: 0,
                },
            ));
        }
    }
}

/// A CUDA event with timing enabled, recorded on a stream when made: two of them on one
/// stream bound the device time of the work queued between them.
pub(crate) struct TimingEvent {
    raw: sys::CUevent,
    device: Arc<Device>,
}

// SAFETY: an event handle may be used from any thread; every use binds its device's context.
unsafe impl Send for TimingEvent {}
// SAFETY: as for `Send`; the driver synchronizes concurrent calls on one event.
unsafe impl Sync for TimingEvent {}

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
            sys::cuEventRecord(event.raw, stream.raw)
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
pub(crate) fn milliseconds(ms: f32) -> std::time::Duration {
    if ms.is_finite() && ms > 0.0 {
        std::time::Duration::from_secs_f64(f64::from(ms) / 1000.0)
    } else {
        std::time::Duration::ZERO
    }
}

/// Which kind of memory an allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryKind {
    Device,
    Managed,
    HostPinned,
}

/// Allocates `bytes` (non-zero) of `kind` on device `ordinal`'s primary context; page-locked
/// host memory is allocated portable, so every device's context sees it page-locked.
pub(crate) fn allocate(kind: MemoryKind, ordinal: usize, bytes: usize) -> Result<*mut u8, CudaError> {
    let device = Device::get(ordinal)?;
    device.bind()?;
    match kind {
        MemoryKind::Device => {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: bound context; live out pointer.
            check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
            Ok(p as usize as *mut u8)
        }
        MemoryKind::Managed => {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: bound context; live out pointer; CU_MEM_ATTACH_GLOBAL (1) makes the
            // memory accessible from every stream and the host.
            check("cuMemAllocManaged", unsafe {
                sys::cuMemAllocManaged(&mut p, bytes, 1)
            })?;
            Ok(p as usize as *mut u8)
        }
        MemoryKind::HostPinned => {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: bound context; live out pointer; CU_MEMHOSTALLOC_PORTABLE makes the
            // memory page-locked for every context, not only the allocating one.
            check("cuMemHostAlloc", unsafe {
                sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
            })?;
            Ok(p.cast())
        }
    }
}

/// Sets `bytes` bytes at `ptr` (from [`allocate`] with `Device` or `Managed`) to zero.
/// The memset runs in device `ordinal`'s context, the allocation's.
pub(crate) fn zero(ordinal: usize, ptr: *mut u8, bytes: usize) -> Result<(), CudaError> {
    Device::get(ordinal)?.bind()?;
    // SAFETY: `ptr` is a device address from `allocate` valid for `bytes` bytes (the caller's
    // promise, kept by the memory spaces, which pass their own fresh allocations).
    check("cuMemsetD8_v2", unsafe {
        sys::cuMemsetD8_v2(ptr as usize as u64, 0, bytes)
    })
}

/// Frees memory from [`allocate`].
///
/// # Safety
///
/// `ptr` came from `allocate(kind, ordinal, _)` and is not used afterwards.
pub(crate) unsafe fn free(kind: MemoryKind, ordinal: usize, ptr: *mut u8) {
    let Ok(device) = Device::get(ordinal) else { return };
    if device.bind().is_err() {
        return;
    }
    // SAFETY: by the caller's promise `ptr` is a live allocation of this kind.
    let _ = unsafe {
        match kind {
            MemoryKind::Device | MemoryKind::Managed => sys::cuMemFree_v2(ptr as usize as u64),
            MemoryKind::HostPinned => sys::cuMemFreeHost(ptr.cast()),
        }
    };
}

/// Copies `src` (host memory) to the device address `dst`.
///
/// # Safety
///
/// `dst` is a device (or managed) allocation with at least `src.len()` bytes from `dst` on,
/// of device `ordinal`, and no kernel uses those bytes during the copy.
pub(crate) unsafe fn copy_to_device(ordinal: usize, dst: *mut u8, src: &[u8]) -> Result<(), CudaError> {
    Device::get(ordinal)?.bind()?;
    // SAFETY: `src` is valid for its length; `dst` by the caller's promise. The copy is
    // synchronous, so `src` outlives it.
    check("cuMemcpyHtoD_v2", unsafe {
        sys::cuMemcpyHtoD_v2(dst as usize as u64, src.as_ptr().cast(), src.len())
    })
}

/// Copies from the device address `src` into `dst` (host memory).
///
/// # Safety
///
/// `src` is a device (or managed) allocation with at least `dst.len()` bytes from `src` on,
/// of device `ordinal`, and no kernel writes those bytes during the copy.
pub(crate) unsafe fn copy_to_host(ordinal: usize, dst: &mut [u8], src: *const u8) -> Result<(), CudaError> {
    Device::get(ordinal)?.bind()?;
    // SAFETY: `dst` is valid for writes of its length; `src` by the caller's promise. The
    // copy is synchronous.
    check("cuMemcpyDtoH_v2", unsafe {
        sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src as usize as u64, dst.len())
    })
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
    stream.device.bind()?;
    // SAFETY: the caller's promise for both addresses and their lifetime; the stream is
    // live and of the bound context.
    check("cuMemcpyHtoDAsync_v2", unsafe {
        sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.raw)
    })
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
    stream.device.bind()?;
    // SAFETY: the caller's promise for both addresses and their lifetime; the stream is
    // live and of the bound context.
    check("cuMemcpyDtoHAsync_v2", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.raw)
    })
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
    stream.device.bind()?;
    // SAFETY: the caller's promise for both addresses and their lifetime; both contexts are
    // retained primary contexts of the devices that own the memory; the stream is live and of
    // the bound context.
    check("cuMemcpyPeerAsync", unsafe {
        sys::cuMemcpyPeerAsync(
            dst,
            dst_device.context(),
            src,
            src_device.context(),
            bytes,
            stream.raw,
        )
    })
}

/// Device memory of a stream for one operation at a time (a reduction's partials, a scan's
/// chunk sums), kept and grown rather than allocated per operation (a memory pool gives its
/// memory back at every synchronization, so each reduction mapped its partials anew).
#[derive(Debug)]
struct Scratch {
    ptr: sys::CUdeviceptr,
    bytes: usize,
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
    scratch: parking_lot::MutexGuard<'s, Scratch>,
    bytes: usize,
}

impl<'s> StreamBuffer<'s> {
    /// At least `bytes` bytes (at least one, so the address is a real allocation).
    pub(crate) fn new(stream: &'s Stream, bytes: usize) -> Result<StreamBuffer<'s>, CudaError> {
        let bytes = bytes.max(1);
        stream.device.bind()?;
        let mut scratch = stream.scratch.lock();
        if scratch.bytes < bytes {
            let grown = kept_size(bytes);
            let mut ptr: sys::CUdeviceptr = 0;
            if stream.device.memory_pools {
                // SAFETY: the stream's device context is current; `ptr` is a live out
                // pointer; the device reported memory pool support, so stream-ordered
                // allocation is valid on its streams.
                check("cuMemAllocAsync", unsafe {
                    sys::cuMemAllocAsync(&mut ptr, grown, stream.raw)
                })?;
            } else {
                // SAFETY: the device's context is current; live out pointer.
                check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut ptr, grown) })?;
            }
            let old = std::mem::replace(&mut *scratch, Scratch { ptr, bytes: grown });
            // SAFETY: `old` is this stream's scratch and was only used by work on this
            // stream, which the free is ordered after (or which is drained first).
            unsafe { stream.free_scratch(old) };
        }
        Ok(StreamBuffer {
            stream,
            scratch,
            bytes,
        })
    }

    /// The device address.
    pub(crate) fn address(&self) -> u64 {
        self.scratch.ptr
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
        self.stream.device.bind()?;
        // SAFETY: the scratch is a live allocation of at least `bytes >= src.len()` bytes on
        // this device; `src` is readable for its length and, being pageable, is copied to
        // staging memory before the call returns.
        check("cuMemcpyHtoDAsync_v2", unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.scratch.ptr, src.as_ptr().cast(), src.len(), self.stream.raw)
        })
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
        if staging.bytes < len {
            let bytes = kept_size(len);
            let mut ptr: *mut c_void = std::ptr::null_mut();
            // SAFETY: the stream's context is current; live out pointer; flags 0 makes
            // page-locked memory of this context.
            check("cuMemHostAlloc", unsafe {
                sys::cuMemHostAlloc(&mut ptr, bytes, 0)
            })?;
            // The old memory is freed here (its drop): no copy into it is in flight, each
            // was waited for under the lock.
            *staging = Staging {
                ptr: ptr.cast(),
                bytes,
            };
        }
        // SAFETY: the scratch is a live allocation of at least `len` bytes on this device; the
        // staging memory holds at least `len` bytes, is page-locked in this context and is
        // not touched by anyone else while the lock is held, and the synchronization below
        // completes the copy before it is read.
        check("cuMemcpyDtoHAsync_v2", unsafe {
            sys::cuMemcpyDtoHAsync_v2(staging.ptr.cast(), self.scratch.ptr, len, stream.raw)
        })?;
        stream.synchronize()?;
        // SAFETY: the copy above completed and wrote `len` bytes at `staging.ptr`, which
        // stays allocated and unwritten while the lock is held.
        let bytes = unsafe { std::slice::from_raw_parts(staging.ptr, len) };
        Ok(read(bytes))
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
