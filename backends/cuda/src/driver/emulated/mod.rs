// Over 800 lines: the emulated side of the seam is one `impl Api`, each method a driver call
// beside its checks; graphs (`graph.rs`), kernels, streams and the sanitizer are modules.
//! The emulated CUDA driver: [`Emulated`], the other side of the driver seam, which follows
//! CUDA's documented semantics on the CPU so that the whole backend above the seam (instances,
//! launches, reductions, asynchronous launches, graphs, the DAG) runs in CI without a GPU.
//! Chosen only when asked for, with `HOPLITE_CUDA_DRIVER=emulated`.
//!
//! What it does, as the CUDA driver documents it:
//! - **Devices** are declared: an H100's limits (`DeviceLimits::SM_90`), one device unless
//!   `HOPLITE_CUDA_EMULATED_DEVICES` asks for more (up to 8; peers can access each other).
//! - **Memory** is host memory handed out as device addresses, filled with a pattern rather
//!   than zeros (as `cuMemAlloc` does not clear it); copies check that the device range lies
//!   in one live allocation (`CUDA_ERROR_INVALID_VALUE` otherwise).
//! - **Streams** run their queued work in order on a thread of their own; **events** record a
//!   point of a stream; `cuStreamWaitEvent` makes a stream wait for the last record.
//!   Synchronous copies and memsets run on the legacy default stream: they wait for the work
//!   queued on every (blocking) stream of the context first. `cuMemFree` waits for the
//!   context's streams, as `cudaFree` does. Asynchronous copies from pageable memory are staged
//!   before the call returns; to pageable memory they return once the copy is done.
//! - **Kernels** are their CUDA C compiled by the host C++ compiler (`kernel.rs`) and run
//!   block by block, the threads of a block as fibers that meet at real barriers.
//! - **A failure is sticky**, as on a GPU: a trapped kernel leaves its context failed, and every
//!   later call in it reports `CUDA_ERROR_LAUNCH_FAILED`.
//! - **Graphs** hold empty, kernel, host and memcpy nodes; an executable runs its nodes in the
//!   order they were added (a topological order) on the stream it is launched on.

mod graph;
mod kernel;
mod sanitizer;
mod stream;
#[cfg(test)]
mod tests;

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use self::graph::{EmuGraph, Executable, NodeWork, node_pointers, run_node};
pub use self::kernel::BUILD_DIR_ENV;
use self::kernel::{EmuFunction, ParamBlock};
use self::sanitizer::{Access, Arena, Sanitizer, Touch};
pub use self::sanitizer::{SANITIZER_ENV, SCHEDULE_SEED_ENV};
use self::stream::{EmuEvent, EmuStream, Fault, Schedule, Work};
use super::api::{
    Api, CopyDirection, DeviceInfo, DriverInfo, HostFunction, MemoryKind, RawContext, RawEvent, RawFunction,
    RawGraph, RawGraphExec, RawGraphNode, RawStream,
};
use crate::CudaError;
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry};

/// The environment setting with the number of emulated devices (1 to 8; default 1).
pub const DEVICES_ENV: &str = "HOPLITE_CUDA_EMULATED_DEVICES";

/// The driver version the emulated driver reports (CUDA 12.9, what the backend is built for).
const VERSION: i32 = 12090;

/// The alignment of device allocations, as `cuMemAlloc`'s.
const ALIGNMENT: usize = 256;

/// The byte a new device allocation is filled with.
const FRESH: u8 = 0xA5;

/// One live allocation.
struct Allocation {
    bytes: usize,
    kind: MemoryKind,
    /// From the global allocator with this layout, or (`None`) from the sanitizer's arena.
    layout: Option<Layout>,
}

/// One device's state.
struct EmuDevice {
    /// The sticky failure of the device's context.
    fault: Mutex<Option<Fault>>,
}

/// The emulated driver.
pub(crate) struct Emulated {
    devices: Vec<&'static EmuDevice>,
    next_handle: AtomicUsize,
    streams: Mutex<HashMap<usize, Arc<EmuStream>>>,
    events: Mutex<HashMap<usize, Arc<EmuEvent>>>,
    functions: Mutex<HashMap<usize, Arc<EmuFunction>>>,
    /// Loaded functions by (source hash, entry), so a kernel is loaded once.
    loaded: Mutex<HashMap<(u64, String), usize>>,
    graphs: Mutex<HashMap<usize, EmuGraph>>,
    execs: Mutex<HashMap<usize, Executable>>,
    memory: Arc<Mutex<BTreeMap<u64, Allocation>>>,
    sanitizer: Sanitizer,
    /// Where device memory comes from while the sanitizer is on.
    arena: Option<&'static Arena>,
}

/// The emulated driver, made at its first use.
pub(super) fn api() -> &'static dyn Api {
    emulated()
}

fn emulated() -> &'static Emulated {
    static EMULATED: OnceLock<Emulated> = OnceLock::new();
    EMULATED.get_or_init(|| {
        let count = std::env::var(DEVICES_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(1)
            .clamp(1, 8);
        Emulated::new(count, Sanitizer::from_env())
    })
}

impl Emulated {
    /// A driver of `count` devices.
    fn new(count: usize, sanitizer: Sanitizer) -> Emulated {
        Emulated {
            devices: (0..count)
                .map(|_| {
                    &*Box::leak(Box::new(EmuDevice {
                        fault: Mutex::new(None),
                    }))
                })
                .collect(),
            next_handle: AtomicUsize::new(1),
            streams: Mutex::new(HashMap::new()),
            events: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            loaded: Mutex::new(HashMap::new()),
            graphs: Mutex::new(HashMap::new()),
            execs: Mutex::new(HashMap::new()),
            memory: Arc::new(Mutex::new(BTreeMap::new())),
            arena: sanitizer.enabled().then(Arena::get).flatten(),
            sanitizer,
        }
    }
}

/// Whether `api` is the emulated driver.
pub(super) fn is_emulated(api: &dyn Api) -> bool {
    std::ptr::addr_eq(api as *const dyn Api, emulated() as *const Emulated)
}

/// The driver's error for `call`.
fn error(call: &'static str, code: u32, name: &str, description: &str) -> CudaError {
    CudaError::Driver {
        call,
        code,
        name: name.to_owned(),
        description: description.to_owned(),
    }
}

fn invalid_value(call: &'static str, why: &str) -> CudaError {
    error(
        call,
        1,
        "CUDA_ERROR_INVALID_VALUE",
        &format!("invalid argument (emulated driver: {why})"),
    )
}

fn invalid_handle(call: &'static str) -> CudaError {
    error(call, 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle")
}

fn fault_error(call: &'static str, f: Fault) -> CudaError {
    error(call, f.code, f.name, f.description)
}

/// An address as a `Send` value, for work that runs on a stream's thread.
fn address(p: *const u8) -> usize {
    p as usize
}

impl Emulated {
    fn handle(&self) -> usize {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// The device of `ctx`, if its context has not failed.
    fn device(&self, call: &'static str, ctx: RawContext) -> Result<usize, CudaError> {
        self.sanitizer.unreported()?;
        let d = ctx.0.wrapping_sub(1);
        let Some(device) = self.devices.get(d) else {
            return Err(error(
                call,
                201,
                "CUDA_ERROR_INVALID_CONTEXT",
                "invalid device context",
            ));
        };
        match *device.fault.lock() {
            Some(f) => Err(fault_error(call, f)),
            None => Ok(d),
        }
    }

    fn stream(&self, call: &'static str, stream: RawStream) -> Result<Arc<EmuStream>, CudaError> {
        self.streams
            .lock()
            .get(&stream.0)
            .cloned()
            .ok_or_else(|| invalid_handle(call))
    }

    fn event(&self, call: &'static str, event: RawEvent) -> Result<Arc<EmuEvent>, CudaError> {
        self.events
            .lock()
            .get(&event.0)
            .cloned()
            .ok_or_else(|| invalid_handle(call))
    }

    fn function(&self, call: &'static str, function: RawFunction) -> Result<Arc<EmuFunction>, CudaError> {
        self.functions
            .lock()
            .get(&function.0)
            .cloned()
            .ok_or_else(|| invalid_handle(call))
    }

    /// Waits for the work queued so far on every stream of `device`: what work on the legacy
    /// default stream waits for (all streams here are blocking streams).
    fn legacy_sync(&self, device: usize) {
        let streams: Vec<(usize, Arc<EmuStream>)> = self
            .streams
            .lock()
            .iter()
            .filter(|(_, s)| s.device == device)
            .map(|(&id, s)| (id, s.clone()))
            .collect();
        let ids: Vec<usize> = streams.iter().map(|&(id, _)| id).collect();
        let (point, targets) = self.sanitizer.point(&ids, &[], || {
            streams.iter().map(|(_, s)| s.submitted()).collect::<Vec<_>>()
        });
        for ((_, s), target) in streams.iter().zip(targets) {
            s.wait_for(target);
        }
        self.sanitizer.reached(point);
    }

    /// The allocation `address` lies in, as the sanitizer names what work touches.
    fn touch(&self, address: u64, access: Access) -> Option<Touch> {
        let memory = self.memory.lock();
        let (&start, a) = memory.range(..=address).next_back()?;
        (address < start + a.bytes as u64).then_some(Touch {
            start,
            bytes: a.bytes,
            access,
        })
    }

    /// The allocations the addresses `pointers` point into (each once, with both accesses),
    /// for the sanitizer; none without it, so that a launch looks nothing up then.
    fn touches(&self, pointers: impl IntoIterator<Item = (u64, Access)>) -> Vec<Touch> {
        let mut touches: Vec<Touch> = Vec::new();
        if !self.sanitizer.enabled() {
            return touches;
        }
        for (address, access) in pointers {
            let Some(t) = self.touch(address, access) else {
                continue;
            };
            match touches.iter_mut().find(|u| u.start == t.start) {
                Some(u) => u.access = u.access.and(t.access),
                None => touches.push(t),
            }
        }
        touches
    }

    /// Runs `access` of device memory from the host side of the driver (its own copies and
    /// fills), with the sanitizer's arena opened.
    fn device_access<T>(&self, access: impl FnOnce() -> T) -> T {
        match self.arena {
            Some(arena) => arena.with_device_access(access),
            None => access(),
        }
    }

    /// Checks that `bytes` bytes from `address` lie in one live allocation of `kinds`.
    fn check_range(
        &self,
        call: &'static str,
        address: u64,
        bytes: usize,
        kinds: &[MemoryKind],
    ) -> Result<(), CudaError> {
        let memory = self.memory.lock();
        let inside = memory.range(..=address).next_back().is_some_and(|(&start, a)| {
            kinds.contains(&a.kind)
                && address
                    .checked_add(bytes as u64)
                    .is_some_and(|end| end <= start + a.bytes as u64)
        });
        if inside {
            Ok(())
        } else {
            Err(invalid_value(
                call,
                &format!("{bytes} bytes at {address:#x} are not inside one allocation of the device"),
            ))
        }
    }

    /// Whether `bytes` bytes from host address `p` are page-locked memory of this driver.
    fn is_pinned(&self, p: usize, bytes: usize) -> bool {
        let memory = self.memory.lock();
        memory.range(..=p as u64).next_back().is_some_and(|(&start, a)| {
            a.kind == MemoryKind::HostPinned && p as u64 + bytes as u64 <= start + a.bytes as u64
        })
    }

    /// Queues `work` (`what`, touching `touches`) on `stream` and returns once it is queued;
    /// the sanitizer checks it first.
    fn enqueue(
        &self,
        call: &'static str,
        stream: RawStream,
        touches: &[Touch],
        what: &str,
        work: Work,
    ) -> Result<Arc<EmuStream>, CudaError> {
        let s = self.stream(call, stream)?;
        self.sanitizer.queue(stream.0, touches, what, || {
            s.enqueue(work);
        })?;
        Ok(s)
    }

    /// The size of the live allocation at `address` of one of `kinds`.
    fn allocation(&self, call: &'static str, address: u64, kinds: &[MemoryKind]) -> Result<usize, CudaError> {
        match self.memory.lock().get(&address) {
            Some(a) if kinds.contains(&a.kind) => Ok(a.bytes),
            _ => Err(invalid_value(
                call,
                &format!("{address:#x} is not a live allocation"),
            )),
        }
    }

    fn free_now(&self, call: &'static str, address: u64, kinds: &[MemoryKind]) -> Result<(), CudaError> {
        self.allocation(call, address, kinds)?;
        release(&self.memory, self.arena, call, address)
    }

    fn allocate(&self, call: &'static str, kind: MemoryKind, bytes: usize) -> Result<u64, CudaError> {
        if bytes == 0 {
            return Err(invalid_value(call, "an allocation of 0 bytes"));
        }
        let out_of_memory = || error(call, 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory");
        // Device memory comes from the sanitizer's arena when it is on, so that host reads of
        // it fault; managed and page-locked memory are the host's too.
        let (p, layout) = match self.arena {
            Some(arena) if kind == MemoryKind::Device => (
                arena.allocate(bytes).ok_or_else(out_of_memory)? as usize as *mut u8,
                None,
            ),
            _ => {
                let layout = Layout::from_size_align(bytes, ALIGNMENT).map_err(|_| out_of_memory())?;
                // SAFETY: the layout has a non-zero size.
                let p = unsafe { std::alloc::alloc(layout) };
                if p.is_null() {
                    return Err(out_of_memory());
                }
                (p, Some(layout))
            }
        };
        // SAFETY: `p` holds `bytes` bytes, just allocated (readable: the arena is opened).
        self.device_access(|| unsafe { std::ptr::write_bytes(p, FRESH, bytes) });
        let address = p as usize as u64;
        self.memory
            .lock()
            .insert(address, Allocation { bytes, kind, layout });
        Ok(address)
    }

    /// Copies the values of a launch's parameters.
    ///
    /// # Safety
    ///
    /// Each pointer is readable for its parameter's size.
    unsafe fn params(
        &self,
        call: &'static str,
        function: &EmuFunction,
        g: &LaunchGeometry,
        params: &[*mut c_void],
    ) -> Result<ParamBlock, CudaError> {
        check_geometry(call, function, g)?;
        // SAFETY: the caller's promise.
        unsafe { function.copy_params(params) }.ok_or_else(|| {
            invalid_value(
                call,
                &format!(
                    "kernel `{}` takes a different number of parameters than the {} given",
                    function.kernel,
                    params.len()
                ),
            )
        })
    }
}

/// Frees the allocation at `address` (taken out of `memory`), to the global allocator or the
/// sanitizer's arena.
fn release(
    memory: &Mutex<BTreeMap<u64, Allocation>>,
    arena: Option<&Arena>,
    call: &'static str,
    address: u64,
) -> Result<(), CudaError> {
    let Some(a) = memory.lock().remove(&address) else {
        return Err(invalid_value(
            call,
            &format!("{address:#x} is not a live allocation"),
        ));
    };
    match (a.layout, arena) {
        // SAFETY: the allocation was made with this layout by `allocate` and is freed once (it
        // left the table).
        (Some(layout), _) => unsafe { std::alloc::dealloc(address as usize as *mut u8, layout) },
        (None, Some(arena)) => arena.release(address, a.bytes),
        (None, None) => {}
    }
    Ok(())
}

/// Refuses a geometry the declared device cannot run, as `cuLaunchKernel` does.
fn check_geometry(call: &'static str, function: &EmuFunction, g: &LaunchGeometry) -> Result<(), CudaError> {
    let limits = DeviceLimits::SM_90;
    let threads: u64 = g.block.iter().map(|&b| u64::from(b)).product();
    let dims_fit = (0..3).all(|k| {
        g.block[k] >= 1
            && g.block[k] <= limits.max_block_dims[k]
            && g.grid[k] >= 1
            && g.grid[k] <= limits.max_grid_dims[k]
    });
    let shared_limit =
        (limits.shared_per_block as u32).max(function.max_dynamic_shared.load(Ordering::Relaxed));
    if !dims_fit || threads > u64::from(limits.max_threads_per_block) || g.shared_bytes > shared_limit {
        return Err(invalid_value(
            call,
            &format!(
                "kernel `{}`: grid {:?} of blocks {:?} with {} bytes of dynamic shared memory does not fit the device",
                function.kernel, g.grid, g.block, g.shared_bytes
            ),
        ));
    }
    Ok(())
}

// SAFETY: handles stay valid until destroyed (tables own them); allocations come from the
// global allocator, so none overlaps another; copies and kernels touch only what their caller
// named; a stream's thread runs its work in order, after the events it waits for; every
// synchronization waits for the queue positions it covers.
unsafe impl Api for Emulated {
    fn describe(&self, info: &DriverInfo) -> String {
        format!(
            "emulated CUDA {}.{} on the CPU ({} device(s); {DEVICES_ENV})",
            info.version / 1000,
            (info.version % 1000) / 10,
            info.device_count
        )
    }

    fn init(&self) -> Result<DriverInfo, CudaError> {
        Ok(DriverInfo {
            device_count: self.devices.len(),
            version: VERSION,
        })
    }

    fn open_device(&self, ordinal: usize) -> Result<DeviceInfo, CudaError> {
        if ordinal >= self.devices.len() {
            return Err(error(
                "cuDeviceGet",
                101,
                "CUDA_ERROR_INVALID_DEVICE",
                "invalid device ordinal",
            ));
        }
        Ok(DeviceInfo {
            name: "emulated NVIDIA H100 (sm_90, on the CPU)".into(),
            total_memory: 80 << 30,
            limits: DeviceLimits::SM_90,
            memory_pools: true,
            context: RawContext(ordinal + 1),
        })
    }

    fn bind(&self, ctx: RawContext) -> Result<(), CudaError> {
        self.device("cuCtxSetCurrent", ctx).map(|_| ())
    }

    fn can_access_peer(&self, device: usize, peer: usize) -> Result<bool, CudaError> {
        Ok(device < self.devices.len() && peer < self.devices.len())
    }

    fn native_peer_atomics(&self, device: usize, peer: usize) -> Result<bool, CudaError> {
        self.can_access_peer(device, peer)
    }

    fn enable_peer_access(&self, ctx: RawContext, peer: RawContext) -> Result<bool, CudaError> {
        self.device("cuCtxEnablePeerAccess", ctx)?;
        self.device("cuCtxEnablePeerAccess", peer)?;
        Ok(true)
    }

    fn stream_create(&self, ctx: RawContext) -> Result<RawStream, CudaError> {
        let device = self.device("cuStreamCreate", ctx)?;
        let state: &'static EmuDevice = self.devices[device];
        let handle = self.handle();
        let schedule = Schedule {
            seed: self.sanitizer.seed(),
            stream: handle,
            arena: self.arena,
        };
        let stream = EmuStream::spawn(device, &state.fault, schedule).map_err(|_| {
            error(
                "cuStreamCreate",
                2,
                "CUDA_ERROR_OUT_OF_MEMORY",
                "no thread for the stream",
            )
        })?;
        self.sanitizer.stream_created(handle);
        self.streams.lock().insert(handle, stream);
        Ok(RawStream(handle))
    }

    fn stream_is_blocking(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError> {
        self.device("cuStreamGetFlags", ctx)?;
        // Every stream here is made blocking (`cuStreamCreate` with flags 0).
        self.stream("cuStreamGetFlags", stream).map(|_| true)
    }

    unsafe fn stream_destroy(&self, _ctx: RawContext, stream: RawStream) {
        if let Some(s) = self.streams.lock().remove(&stream.0) {
            s.close();
        }
    }

    fn stream_synchronize(&self, ctx: RawContext, stream: RawStream) -> Result<(), CudaError> {
        let s = self.stream("cuStreamSynchronize", stream)?;
        let (point, target) = self.sanitizer.point(&[stream.0], &[], || s.submitted());
        s.wait_for(target);
        self.sanitizer.reached(point);
        self.device("cuStreamSynchronize", ctx).map(|_| ())
    }

    fn stream_wait_event(
        &self,
        ctx: RawContext,
        stream: RawStream,
        event: RawEvent,
    ) -> Result<(), CudaError> {
        self.device("cuStreamWaitEvent", ctx)?;
        let e = self.event("cuStreamWaitEvent", event)?;
        let s = self.stream("cuStreamWaitEvent", stream)?;
        // The record waited for is the last one now, read in one step with its clock.
        self.sanitizer.wait_event(stream.0, event.0, || {
            let record = e.last_record();
            if record > 0 {
                s.enqueue(Box::new(move || {
                    e.wait_for(record);
                    Ok(())
                }));
            }
        });
        Ok(())
    }

    fn stream_query(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError> {
        let s = self.stream("cuStreamQuery", stream)?;
        let (point, idle) = self.sanitizer.point(&[stream.0], &[], || s.is_idle());
        self.device("cuStreamQuery", ctx)?;
        if idle {
            self.sanitizer.reached(point);
        }
        Ok(idle)
    }

    fn event_create(&self, ctx: RawContext, timing: bool) -> Result<RawEvent, CudaError> {
        let device = self.device("cuEventCreate", ctx)?;
        let handle = self.handle();
        self.events
            .lock()
            .insert(handle, Arc::new(EmuEvent::new(device, timing)));
        Ok(RawEvent(handle))
    }

    fn event_record(&self, ctx: RawContext, event: RawEvent, stream: RawStream) -> Result<(), CudaError> {
        let device = self.device("cuEventRecord", ctx)?;
        let e = self.event("cuEventRecord", event)?;
        let s = self.stream("cuEventRecord", stream)?;
        if e.device != device || s.device != device {
            return Err(invalid_handle("cuEventRecord"));
        }
        self.sanitizer.record_event(event.0, stream.0, || e.record(&s));
        Ok(())
    }

    fn event_query(&self, ctx: RawContext, event: RawEvent) -> Result<bool, CudaError> {
        let e = self.event("cuEventQuery", event)?;
        let (point, done) = self
            .sanitizer
            .point(&[], &[event.0], || e.reached(e.last_record()));
        self.device("cuEventQuery", ctx)?;
        if done {
            self.sanitizer.reached(point);
        }
        Ok(done)
    }

    fn event_synchronize(&self, ctx: RawContext, event: RawEvent) -> Result<(), CudaError> {
        let e = self.event("cuEventSynchronize", event)?;
        let (point, record) = self.sanitizer.point(&[], &[event.0], || e.last_record());
        e.wait_for(record);
        self.sanitizer.reached(point);
        self.device("cuEventSynchronize", ctx).map(|_| ())
    }

    fn event_elapsed(&self, ctx: RawContext, start: RawEvent, end: RawEvent) -> Result<f32, CudaError> {
        self.device("cuEventElapsedTime", ctx)?;
        let (a, b) = (
            self.event("cuEventElapsedTime", start)?,
            self.event("cuEventElapsedTime", end)?,
        );
        if !a.timing || !b.timing {
            return Err(invalid_handle("cuEventElapsedTime"));
        }
        match (a.reached_at(), b.reached_at()) {
            (Some(t0), Some(t1)) => Ok(if t1 >= t0 {
                (t1 - t0).as_secs_f32() * 1000.0
            } else {
                -((t0 - t1).as_secs_f32() * 1000.0)
            }),
            _ => Err(error(
                "cuEventElapsedTime",
                600,
                "CUDA_ERROR_NOT_READY",
                "device not ready",
            )),
        }
    }

    unsafe fn event_destroy(&self, _ctx: RawContext, event: RawEvent) {
        // A stream still waiting holds its own reference, so the release is deferred.
        self.events.lock().remove(&event.0);
    }

    fn mem_alloc(
        &self,
        ctx: RawContext,
        kind: MemoryKind,
        bytes: usize,
        _portable: bool,
    ) -> Result<u64, CudaError> {
        self.device("cuMemAlloc", ctx)?;
        self.allocate("cuMemAlloc", kind, bytes)
    }

    fn mem_alloc_async(&self, ctx: RawContext, bytes: usize, stream: RawStream) -> Result<u64, CudaError> {
        self.device("cuMemAllocAsync", ctx)?;
        self.stream("cuMemAllocAsync", stream)?;
        self.allocate("cuMemAllocAsync", MemoryKind::Device, bytes)
    }

    unsafe fn mem_free(&self, ctx: RawContext, kind: MemoryKind, address: u64) -> Result<(), CudaError> {
        let call = if kind == MemoryKind::HostPinned {
            "cuMemFreeHost"
        } else {
            "cuMemFree"
        };
        let device = self.device(call, ctx)?;
        let kinds: &[MemoryKind] = if kind == MemoryKind::HostPinned {
            &[MemoryKind::HostPinned]
        } else {
            &[MemoryKind::Device, MemoryKind::Managed]
        };
        let bytes = self.allocation(call, address, kinds)?;
        // Before the free's own wait, which would hide queued work the program never waited
        // for.
        self.sanitizer.free(address, bytes, None)?;
        // As cudaFree, the free waits for the work queued in the context.
        self.legacy_sync(device);
        self.free_now(call, address, kinds)
    }

    unsafe fn mem_free_async(
        &self,
        ctx: RawContext,
        address: u64,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        self.device("cuMemFreeAsync", ctx)?;
        let bytes = self.allocation("cuMemFreeAsync", address, &[MemoryKind::Device])?;
        self.stream("cuMemFreeAsync", stream)?;
        self.sanitizer.free(address, bytes, Some(stream.0))?;
        let (memory, arena) = (self.memory.clone(), self.arena);
        self.enqueue(
            "cuMemFreeAsync",
            stream,
            &[],
            "cuMemFreeAsync",
            Box::new(move || {
                let _ = release(&memory, arena, "cuMemFreeAsync", address);
                Ok(())
            }),
        )
        .map(|_| ())
    }

    unsafe fn memset_d8(
        &self,
        ctx: RawContext,
        address: u64,
        value: u8,
        bytes: usize,
    ) -> Result<(), CudaError> {
        let device = self.device("cuMemsetD8", ctx)?;
        self.check_range(
            "cuMemsetD8",
            address,
            bytes,
            &[MemoryKind::Device, MemoryKind::Managed],
        )?;
        self.legacy_sync(device);
        self.sanitizer
            .host_work(&self.touches([(address, Access::Write)]), "cuMemsetD8")?;
        // SAFETY: the range lies in a live allocation (checked), and the legacy stream's
        // ordering leaves no queued work of the context on it.
        self.device_access(|| unsafe { std::ptr::write_bytes(address as usize as *mut u8, value, bytes) });
        Ok(())
    }

    unsafe fn memcpy_htod(
        &self,
        ctx: RawContext,
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError> {
        let call = if stream.is_some() {
            "cuMemcpyHtoDAsync"
        } else {
            "cuMemcpyHtoD"
        };
        let device = self.device(call, ctx)?;
        self.check_range(call, dst, bytes, &[MemoryKind::Device, MemoryKind::Managed])?;
        let Some(stream) = stream else {
            self.legacy_sync(device);
            self.sanitizer
                .host_work(&self.touches([(dst, Access::Write)]), call)?;
            // SAFETY: the caller's promise for `src`; `dst` lies in a live allocation.
            self.device_access(|| unsafe { std::ptr::copy(src, dst as usize as *mut u8, bytes) });
            return Ok(());
        };
        let touches = self.touches([(dst, Access::Write), (address(src) as u64, Access::Read)]);
        let work: Work = if self.is_pinned(address(src), bytes) {
            let src = address(src);
            Box::new(move || {
                // SAFETY: the caller keeps page-locked `src` readable until the copy completed,
                // and `dst` lies in a live allocation.
                unsafe { std::ptr::copy(src as *const u8, dst as usize as *mut u8, bytes) };
                Ok(())
            })
        } else {
            // Pageable memory is staged before the call returns.
            // SAFETY: the caller's promise: `src` is readable for `bytes` bytes.
            let staged = unsafe { std::slice::from_raw_parts(src, bytes) }.to_vec();
            Box::new(move || {
                // SAFETY: `dst` lies in a live allocation the caller keeps until the copy
                // completed.
                unsafe { std::ptr::copy(staged.as_ptr(), dst as usize as *mut u8, bytes) };
                Ok(())
            })
        };
        self.enqueue(call, stream, &touches, call, work).map(|_| ())
    }

    unsafe fn memcpy_dtoh(
        &self,
        ctx: RawContext,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError> {
        let call = if stream.is_some() {
            "cuMemcpyDtoHAsync"
        } else {
            "cuMemcpyDtoH"
        };
        let device = self.device(call, ctx)?;
        self.check_range(call, src, bytes, &[MemoryKind::Device, MemoryKind::Managed])?;
        let Some(stream) = stream else {
            self.legacy_sync(device);
            self.sanitizer
                .host_work(&self.touches([(src, Access::Read)]), call)?;
            // SAFETY: the caller's promise for `dst`; `src` lies in a live allocation.
            self.device_access(|| unsafe { std::ptr::copy(src as usize as *const u8, dst, bytes) });
            return self.device(call, ctx).map(|_| ());
        };
        let pinned = self.is_pinned(address(dst), bytes);
        let dst = address(dst);
        let touches = self.touches([(src, Access::Read), (dst as u64, Access::Write)]);
        let s = self.enqueue(
            call,
            stream,
            &touches,
            call,
            Box::new(move || {
                // SAFETY: the caller keeps `dst` writable and `src` allocated until the copy
                // completed.
                unsafe { std::ptr::copy(src as usize as *const u8, dst as *mut u8, bytes) };
                Ok(())
            }),
        )?;
        if !pinned {
            // A copy to pageable memory returns once it is done.
            let (point, target) = self.sanitizer.point(&[stream.0], &[], || s.submitted());
            s.wait_for(target);
            self.sanitizer.reached(point);
            self.device(call, ctx)?;
        }
        Ok(())
    }

    unsafe fn memcpy_dtod_async(
        &self,
        ctx: RawContext,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        let call = "cuMemcpyDtoDAsync";
        self.device(call, ctx)?;
        let kinds = [MemoryKind::Device, MemoryKind::Managed];
        self.check_range(call, dst, bytes, &kinds)?;
        self.check_range(call, src, bytes, &kinds)?;
        let touches = self.touches([(src, Access::Read), (dst, Access::Write)]);
        self.enqueue(
            call,
            stream,
            &touches,
            call,
            Box::new(move || {
                // SAFETY: both lie in live allocations the caller keeps until the copy
                // completed.
                unsafe { std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes) };
                Ok(())
            }),
        )
        .map(|_| ())
    }

    unsafe fn memcpy_peer_async(
        &self,
        ctx: RawContext,
        dst: u64,
        dst_ctx: RawContext,
        src: u64,
        src_ctx: RawContext,
        bytes: usize,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        self.device("cuMemcpyPeerAsync", dst_ctx)?;
        self.device("cuMemcpyPeerAsync", src_ctx)?;
        // SAFETY: the caller's promise, as for a copy within one device.
        unsafe { self.memcpy_dtod_async(ctx, dst, src, bytes, stream) }
    }

    fn load_function(
        &self,
        ctx: RawContext,
        _limits: &DeviceLimits,
        hash: u64,
        kernel: &'static str,
        entry: &str,
        source: &str,
    ) -> Result<RawFunction, CudaError> {
        self.device("cuModuleLoadData", ctx)?;
        let key = (hash, entry.to_owned());
        if let Some(&f) = self.loaded.lock().get(&key) {
            return Ok(RawFunction(f));
        }
        let function = Arc::new(EmuFunction::load(kernel, entry, source)?);
        let mut loaded = self.loaded.lock();
        if let Some(&f) = loaded.get(&key) {
            return Ok(RawFunction(f));
        }
        let handle = self.handle();
        self.functions.lock().insert(handle, function);
        loaded.insert(key, handle);
        Ok(RawFunction(handle))
    }

    fn function_resources(&self, function: RawFunction) -> Result<KernelResources, CudaError> {
        self.function("cuFuncGetAttribute", function)?;
        // What a light kernel uses on sm_90; the host compiler reports no registers.
        Ok(KernelResources {
            registers_per_thread: 32,
            static_shared: 0,
        })
    }

    fn function_param_sizes(&self, function: RawFunction) -> Result<Option<Vec<usize>>, CudaError> {
        Ok(Some(self.function("cuFuncGetParamInfo", function)?.param_sizes()))
    }

    fn function_allow_dynamic_shared(
        &self,
        ctx: RawContext,
        function: RawFunction,
        bytes: u32,
    ) -> Result<(), CudaError> {
        self.device("cuFuncSetAttribute", ctx)?;
        let f = self.function("cuFuncSetAttribute", function)?;
        if bytes as usize > DeviceLimits::SM_90.shared_per_block_optin {
            return Err(invalid_value(
                "cuFuncSetAttribute",
                "more dynamic shared memory than the device's opt-in limit",
            ));
        }
        f.max_dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    unsafe fn launch_kernel(
        &self,
        ctx: RawContext,
        function: RawFunction,
        g: &LaunchGeometry,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        let call = "cuLaunchKernel";
        self.device(call, ctx)?;
        let f = self.function(call, function)?;
        // SAFETY: the caller's contract: one readable pointer per parameter.
        let mut block = unsafe { self.params(call, &f, g, params) }?;
        let touches = self.touches(f.pointers(&block));
        let what = format!("kernel `{}`", f.kernel);
        let g = *g;
        self.enqueue(
            call,
            stream,
            &touches,
            &what,
            Box::new(move || {
                // SAFETY: the launch's contract: the memory the parameters name stays alive
                // until the launch completed.
                unsafe { f.run(&g, &mut block) }
            }),
        )
        .map(|_| ())
    }

    fn graph_create(&self, ctx: RawContext) -> Result<RawGraph, CudaError> {
        let device = self.device("cuGraphCreate", ctx)?;
        let handle = self.handle();
        self.graphs.lock().insert(
            handle,
            EmuGraph {
                device,
                nodes: Vec::new(),
            },
        );
        Ok(RawGraph(handle))
    }

    fn graph_add_empty(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
    ) -> Result<RawGraphNode, CudaError> {
        self.add_node("cuGraphAddEmptyNode", ctx, graph, deps, NodeWork::Empty)
    }

    unsafe fn graph_add_kernel(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        function: RawFunction,
        g: &LaunchGeometry,
        params: &mut [*mut c_void],
    ) -> Result<RawGraphNode, CudaError> {
        let call = "cuGraphAddKernelNode";
        let f = self.function(call, function)?;
        // SAFETY: the caller's contract: one readable pointer per parameter.
        let block = unsafe { self.params(call, &f, g, params) }?;
        let work = NodeWork::Kernel {
            function: f,
            geometry: *g,
            params: Arc::new(Mutex::new(block)),
        };
        self.add_node(call, ctx, graph, deps, work)
    }

    unsafe fn graph_add_host(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        function: HostFunction,
        data: *mut c_void,
    ) -> Result<RawGraphNode, CudaError> {
        let work = NodeWork::Host {
            function,
            data: data as usize,
        };
        self.add_node("cuGraphAddHostNode", ctx, graph, deps, work)
    }

    unsafe fn graph_add_copy(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        device: u64,
        host: *mut u8,
        bytes: usize,
        direction: CopyDirection,
    ) -> Result<RawGraphNode, CudaError> {
        let call = "cuGraphAddMemcpyNode";
        self.check_range(call, device, bytes, &[MemoryKind::Device, MemoryKind::Managed])?;
        let work = NodeWork::Copy {
            device,
            host: host as usize,
            bytes,
            direction,
        };
        self.add_node(call, ctx, graph, deps, work)
    }

    fn graph_instantiate(&self, ctx: RawContext, graph: RawGraph) -> Result<RawGraphExec, CudaError> {
        let call = "cuGraphInstantiate";
        let device = self.device(call, ctx)?;
        let nodes = {
            let graphs = self.graphs.lock();
            let g = graphs.get(&graph.0).ok_or_else(|| invalid_handle(call))?;
            // Nodes were added after their dependencies: their order is a topological order.
            g.nodes.iter().map(|(_, w)| w.clone()).collect::<Vec<_>>()
        };
        let handle = self.handle();
        self.execs.lock().insert(handle, (device, Arc::new(nodes)));
        Ok(RawGraphExec(handle))
    }

    unsafe fn graph_launch(
        &self,
        ctx: RawContext,
        exec: RawGraphExec,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        let call = "cuGraphLaunch";
        let device = self.device(call, ctx)?;
        let (exec_device, nodes) = self
            .execs
            .lock()
            .get(&exec.0)
            .cloned()
            .ok_or_else(|| invalid_handle(call))?;
        if exec_device != device {
            return Err(invalid_handle(call));
        }
        let touches = self.touches(nodes.iter().flat_map(node_pointers));
        let what = format!("a launch of graph executable {}", exec.0);
        self.enqueue(
            call,
            stream,
            &touches,
            &what,
            Box::new(move || nodes.iter().try_for_each(run_node)),
        )
        .map(|_| ())
    }

    unsafe fn graph_destroy(&self, _ctx: RawContext, graph: RawGraph) {
        self.graphs.lock().remove(&graph.0);
    }

    unsafe fn graph_exec_destroy(&self, _ctx: RawContext, exec: RawGraphExec) {
        // A launch still queued holds its own reference to the nodes.
        self.execs.lock().remove(&exec.0);
    }
}
