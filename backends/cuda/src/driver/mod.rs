//! The CUDA driver, behind the check that it is present: small safe functions over
//! `cudarc::driver::sys`, each arguing its call.
//!
//! cudarc loads `libcuda` at the first driver call and panics when it is missing, so nothing
//! here calls the driver before [`driver`] has found the library with
//! `is_culib_present`; without it every entry point returns [`CudaError::NoDriver`].
//!
//! The module is layered as cudarc layers `sys` -> `result` -> `safe`: this file loads and
//! initializes the driver and opens devices and peer access; `stream` owns streams and their
//! kept buffers and queues copies on them; `event` owns events; `memory` allocates, frees and
//! copies memory; `module` loads kernels and launches them; `graph` owns CUDA graphs and their
//! executables. Code outside the module calls these wrappers, not `sys`.

mod event;
#[cfg(feature = "graph")]
mod graph;
mod memory;
mod module;
mod stream;

use std::ffi::{CStr, c_char, c_int};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use parking_lot::Mutex;

pub(crate) use self::event::Event;
#[cfg(any(feature = "dag", feature = "select"))]
pub(crate) use self::event::TimingEvent;
#[cfg(feature = "graph")]
pub(crate) use self::graph::{CopyDirection, Graph, GraphExec, GraphNode};
pub(crate) use self::memory::{
    DeviceBuffer, MemoryKind, PinnedBuffer, allocate, copy_to_device, copy_to_host, free, zero,
};
pub(crate) use self::module::{Function, load_function};
#[cfg(feature = "dag")]
pub(crate) use self::stream::copy_device_async;
pub(crate) use self::stream::{
    Stream, StreamBuffer, copy_peer_async, copy_to_device_async, copy_to_host_async,
};
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
