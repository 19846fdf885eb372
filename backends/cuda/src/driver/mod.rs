//! The CUDA driver behind a seam: [`api::Api`] is every driver call the backend makes, and
//! two drivers implement it: the CUDA driver through cudarc (`cudarc_api.rs`, the only file
//! that calls `cudarc::driver::sys`) and the emulated driver (`emulated/`), which follows
//! CUDA's documented semantics on the CPU so that the whole backend runs without a GPU when
//! `HOPLITE_CUDA_DRIVER=emulated` asks for it ([`DRIVER_ENV`]).
//!
//! Above the seam, this module owns the handles: this file picks and initializes the driver
//! and opens devices and peer access; `stream` owns streams and their kept buffers and queues
//! copies on them; `event` owns events; `memory` allocates, frees and copies memory; `module`
//! loads kernels and launches them; `graph` owns CUDA graphs and their executables. Code
//! outside the module calls these wrappers, never the seam.

// The seam is the whole driver interface, implemented whole on both sides; the front ends'
// adapters (the `dag`, `graph` and `select` features) each use a part of it.
#[cfg_attr(
    not(all(feature = "dag", feature = "graph", feature = "select")),
    allow(dead_code)
)]
mod api;
#[cfg_attr(
    not(all(feature = "dag", feature = "graph", feature = "select")),
    allow(dead_code)
)]
mod cudarc_api;
#[cfg_attr(
    not(all(feature = "dag", feature = "graph", feature = "select")),
    allow(dead_code)
)]
mod emulated;
mod event;
#[cfg(feature = "graph")]
mod graph;
mod memory;
mod module;
mod stream;

use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

#[cfg(feature = "graph")]
pub(crate) use self::api::CopyDirection;
pub(crate) use self::api::MemoryKind;
use self::api::{Api, DriverInfo, RawContext};
pub use self::emulated::{
    BUILD_DIR_ENV as EMULATED_BUILD_DIR_ENV, DEVICES_ENV, SANITIZER_ENV, SCHEDULE_SEED_ENV,
};
pub(crate) use self::event::Event;
#[cfg(any(feature = "dag", feature = "select"))]
pub(crate) use self::event::TimingEvent;
#[cfg(feature = "graph")]
pub(crate) use self::graph::{Graph, GraphExec, GraphNode};
pub(crate) use self::memory::{
    DeviceBuffer, PinnedBuffer, allocate, copy_to_device, copy_to_host, free, zero,
};
pub(crate) use self::module::{Function, load_function};
#[cfg(feature = "dag")]
pub(crate) use self::stream::copy_device_async;
pub(crate) use self::stream::{
    Stream, StreamBuffer, copy_peer_async, copy_to_device_async, copy_to_host_async,
};
use crate::CudaError;
use crate::geometry::DeviceLimits;

/// The environment setting that picks the driver: `cuda` (or unset), the CUDA driver;
/// `emulated`, the emulated driver, which runs the backend on the CPU (for tests and CI on
/// machines without a GPU; never chosen without being asked for).
pub const DRIVER_ENV: &str = "HOPLITE_CUDA_DRIVER";

/// The initialized driver: which side of the seam, and what it reported.
pub(crate) struct Driver {
    pub(crate) api: &'static dyn Api,
    pub(crate) device_count: usize,
    pub(crate) version: i32,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("device_count", &self.device_count)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// What the driver is, such as "CUDA 12.9" or "emulated CUDA 12.9 (...)".
    pub(crate) fn describe(&self) -> String {
        self.api.describe(&DriverInfo {
            device_count: self.device_count,
            version: self.version,
        })
    }

    /// Whether this is the emulated driver.
    pub(crate) fn is_emulated(&self) -> bool {
        emulated::is_emulated(self.api)
    }
}

/// Whether `HOPLITE_CUDA_DRIVER` asks for the emulated driver (`value` is its value).
fn wants_emulated(value: Option<&str>) -> bool {
    crate::switch_setting(DRIVER_ENV, value, ["emulated", "cuda"], "using the CUDA driver")
}

/// The process's driver, chosen and initialized once.
static DRIVER: OnceLock<Result<Driver, CudaError>> = OnceLock::new();

/// Initializes `api` as the process's driver.
fn initialize(api: &'static dyn Api) -> Result<Driver, CudaError> {
    let info = api.init()?;
    Ok(Driver {
        api,
        device_count: info.device_count,
        version: info.version,
    })
}

/// The driver, initialized once (the one `HOPLITE_CUDA_DRIVER` names, else the CUDA driver);
/// the typed error when there is none, no device, or an older one than CUDA 12.0.
pub(crate) fn driver() -> Result<&'static Driver, CudaError> {
    DRIVER
        .get_or_init(|| {
            initialize(if wants_emulated(std::env::var(DRIVER_ENV).ok().as_deref()) {
                emulated::api()
            } else {
                &cudarc_api::Cudarc
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Makes the emulated driver the process's driver, as `HOPLITE_CUDA_DRIVER=emulated` does;
/// an error once another driver is in use.
pub(crate) fn use_emulated() -> Result<(), CudaError> {
    match DRIVER.get_or_init(|| initialize(emulated::api())) {
        Ok(d) if d.is_emulated() => Ok(()),
        Ok(d) => Err(CudaError::DriverChosen { driver: d.describe() }),
        Err(e) => Err(CudaError::DriverChosen {
            driver: format!("none: {e}"),
        }),
    }
}

/// One device: its primary context (retained for the life of the process) and properties.
pub(crate) struct Device {
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    pub(crate) total_memory: usize,
    pub(crate) limits: DeviceLimits,
    /// Whether the device has stream-ordered allocation (`cuMemAllocAsync`), from
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`.
    pub(crate) memory_pools: bool,
    ctx: RawContext,
    api: &'static dyn Api,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("total_memory", &self.total_memory)
            .field("limits", &self.limits)
            .field("memory_pools", &self.memory_pools)
            .finish_non_exhaustive()
    }
}

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
        let info = driver.api.open_device(ordinal)?;
        let d = Arc::new(Device {
            ordinal,
            name: info.name,
            total_memory: info.total_memory,
            limits: info.limits,
            memory_pools: info.memory_pools,
            ctx: info.context,
            api: driver.api,
        });
        devices[ordinal] = Some(d.clone());
        Ok(d)
    }

    /// The driver this device was opened through.
    pub(crate) fn api(&self) -> &'static dyn Api {
        self.api
    }

    /// The device's primary context, which every driver call on it names.
    pub(crate) fn context(&self) -> RawContext {
        self.ctx
    }

    /// Whether the device's context is usable (`cuCtxSetCurrent` succeeds): the check the
    /// drops make before they free anything.
    pub(crate) fn bind(&self) -> Result<(), CudaError> {
        self.api.bind(self.ctx)
    }
}

/// Checks that `ordinal` names a device of the driver.
fn check_ordinal(ordinal: usize) -> Result<&'static Driver, CudaError> {
    let driver = driver()?;
    if ordinal >= driver.device_count {
        return Err(CudaError::InvalidDevice {
            ordinal,
            count: driver.device_count,
        });
    }
    Ok(driver)
}

/// Whether kernels of device `device` can read and write device `peer`'s memory once peer
/// access is enabled (`cuDeviceCanAccessPeer`); a device can always access its own memory.
pub(crate) fn can_access_peer(device: usize, peer: usize) -> Result<bool, CudaError> {
    check_ordinal(device)?;
    let driver = check_ordinal(peer)?;
    if device == peer {
        return Ok(true);
    }
    driver.api.can_access_peer(device, peer)
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
    if !device.api.enable_peer_access(device.ctx, peer.ctx)? {
        return Err(unsupported);
    }
    let native = device.api.native_peer_atomics(device.ordinal, peer.ordinal)?;
    let mut peers = PEERS.write();
    if !peers
        .iter()
        .any(|&(d, p, _)| (d, p) == (device.ordinal, peer.ordinal))
    {
        peers.push((device.ordinal, peer.ordinal, native));
    }
    Ok(())
}
