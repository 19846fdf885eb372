// Over 800 lines: the real side of the seam is one `impl Api`, each method one driver call
// (or a short sequence) with its SAFETY argument.
//! The real side of the driver seam: [`Cudarc`], each [`Api`] call one call (or a short
//! sequence) of `cudarc::driver::sys`, each arguing its contract. The only file of the crate
//! that calls the driver.
//!
//! cudarc loads `libcuda` at the first driver call and panics when it is missing, so
//! [`Cudarc::init`] checks with `is_culib_present` first and every wrapper calls `init`'s
//! result (through [`super::driver`]) before anything else.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use cudarc::driver::sys;

use super::api::{
    Api, CopyDirection, DeviceInfo, DriverInfo, HostFunction, MemoryKind, RawContext, RawEvent, RawFunction,
    RawGraph, RawGraphExec, RawGraphNode, RawStream,
};
use crate::CudaError;
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry};
use crate::nvrtc::ModuleCache;

/// The CUDA driver, loaded at run time by cudarc.
pub(crate) struct Cudarc;

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
fn check(call: &'static str, result: sys::CUresult) -> Result<(), CudaError> {
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

fn ctx_of(ctx: RawContext) -> sys::CUcontext {
    ctx.0 as sys::CUcontext
}
fn stream_of(stream: RawStream) -> sys::CUstream {
    stream.0 as sys::CUstream
}
fn event_of(event: RawEvent) -> sys::CUevent {
    event.0 as sys::CUevent
}
fn graph_of(graph: RawGraph) -> sys::CUgraph {
    graph.0 as sys::CUgraph
}

/// The driver's handle of device `ordinal` (the caller checked it is below the count).
fn device_handle(ordinal: usize) -> Result<sys::CUdevice, CudaError> {
    let mut dev: sys::CUdevice = 0;
    // SAFETY: initialized driver (every caller runs after `init` succeeded); `ordinal` is
    // below the device count, so it fits `c_int`; `dev` is a live out pointer.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut dev, ordinal as c_int)
    })?;
    Ok(dev)
}

/// Makes `ctx` current (`cuCtxSetCurrent`), as every call below needs.
fn bind(ctx: RawContext) -> Result<(), CudaError> {
    // SAFETY: `ctx` is a retained primary context from `open_device`, valid for the life of
    // the process.
    check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx_of(ctx)) })
}

// SAFETY: every call is the driver's own, with the driver's contract, which is what the
// trait's contract restates.
unsafe impl Api for Cudarc {
    fn describe(&self, info: &DriverInfo) -> String {
        format!(
            "CUDA {}.{}, {} device(s)",
            info.version / 1000,
            (info.version % 1000) / 10,
            info.device_count
        )
    }

    fn init(&self) -> Result<DriverInfo, CudaError> {
        // SAFETY: `is_culib_present` only tries to open the driver library by its usual
        // names (running its initializers, which set up the library itself) and closes it
        // again.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDriver {
                looked_for: driver_names(),
            });
        }
        // SAFETY: the library is present, so cudarc's loader finds it and `cuInit`, which
        // every driver since CUDA 2.0 exports; flags must be 0.
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
        Ok(DriverInfo {
            device_count: count as usize,
            version,
        })
    }

    fn open_device(&self, ordinal: usize) -> Result<DeviceInfo, CudaError> {
        let dev = device_handle(ordinal)?;
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
        Ok(DeviceInfo {
            name,
            total_memory,
            limits,
            memory_pools,
            context: RawContext(ctx as usize),
        })
    }

    fn bind(&self, ctx: RawContext) -> Result<(), CudaError> {
        bind(ctx)
    }

    fn can_access_peer(&self, device: usize, peer: usize) -> Result<bool, CudaError> {
        let from = device_handle(device)?;
        let to = device_handle(peer)?;
        let mut can: c_int = 0;
        // SAFETY: initialized driver; both handles come from `cuDeviceGet`; `can` is a live
        // out pointer.
        check("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, from, to)
        })?;
        Ok(can != 0)
    }

    fn native_peer_atomics(&self, device: usize, peer: usize) -> Result<bool, CudaError> {
        let from = device_handle(device)?;
        let to = device_handle(peer)?;
        let mut value: c_int = 0;
        // SAFETY: initialized driver; both handles come from `cuDeviceGet`; `value` is a live
        // out pointer.
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

    fn enable_peer_access(&self, ctx: RawContext, peer: RawContext) -> Result<bool, CudaError> {
        bind(ctx)?;
        // SAFETY: `ctx` is current and `peer` a live primary context (both retained for the
        // life of the process); flags must be 0.
        let result = unsafe { sys::cuCtxEnablePeerAccess(ctx_of(peer), 0) };
        match result {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(true),
            sys::CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => Ok(false),
            other => check("cuCtxEnablePeerAccess", other).map(|()| true),
        }
    }

    fn stream_create(&self, ctx: RawContext) -> Result<RawStream, CudaError> {
        bind(ctx)?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: the context is current; `raw` is a live out pointer; flags 0 is
        // CU_STREAM_DEFAULT.
        check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut raw, 0) })?;
        Ok(RawStream(raw as usize))
    }

    fn stream_is_blocking(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError> {
        bind(ctx)?;
        let mut flags: std::ffi::c_uint = 0;
        // SAFETY: `stream` is a live stream of the bound context; `flags` is a live out pointer.
        check("cuStreamGetFlags", unsafe {
            sys::cuStreamGetFlags(stream_of(stream), &mut flags)
        })?;
        Ok(flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING as std::ffi::c_uint == 0)
    }

    unsafe fn stream_destroy(&self, ctx: RawContext, stream: RawStream) {
        if bind(ctx).is_ok() {
            // SAFETY: by the caller's promise `stream` is live and not used afterwards; work
            // still queued completes before the driver frees it.
            let _ = unsafe { sys::cuStreamDestroy_v2(stream_of(stream)) };
        }
    }

    fn stream_synchronize(&self, ctx: RawContext, stream: RawStream) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: `stream` is a live stream of the bound context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(stream_of(stream))
        })
    }

    fn stream_wait_event(
        &self,
        ctx: RawContext,
        stream: RawStream,
        event: RawEvent,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: both handles are live; a stream may wait for an event of any context; flags
        // 0 is the default wait.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(stream_of(stream), event_of(event), 0)
        })
    }

    fn stream_query(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError> {
        bind(ctx)?;
        // SAFETY: the stream is live and its context current.
        match unsafe { sys::cuStreamQuery(stream_of(stream)) } {
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuStreamQuery", other).map(|()| true),
        }
    }

    fn event_create(&self, ctx: RawContext, timing: bool) -> Result<RawEvent, CudaError> {
        bind(ctx)?;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        let flags = if timing {
            0
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
        };
        // SAFETY: the context is current; `raw` is a live out pointer; the flags are a valid
        // `CUevent_flags` value.
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut raw, flags) })?;
        Ok(RawEvent(raw as usize))
    }

    fn event_record(&self, ctx: RawContext, event: RawEvent, stream: RawStream) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: both handles are live; the caller records an event on a stream of the
        // event's own context, which is current.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(event_of(event), stream_of(stream))
        })
    }

    fn event_query(&self, ctx: RawContext, event: RawEvent) -> Result<bool, CudaError> {
        bind(ctx)?;
        // SAFETY: `event` is a live event of the bound context.
        match unsafe { sys::cuEventQuery(event_of(event)) } {
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuEventQuery", other).map(|()| true),
        }
    }

    fn event_synchronize(&self, ctx: RawContext, event: RawEvent) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: `event` is a live event of the bound context.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(event_of(event))
        })
    }

    fn event_elapsed(&self, ctx: RawContext, start: RawEvent, end: RawEvent) -> Result<f32, CudaError> {
        bind(ctx)?;
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live timing events of one context; `ms` is a live out
        // pointer. The CUDA 2.0 entry point is used, not `_v2` (CUDA 12.8), so any 12.x
        // driver has it.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, event_of(start), event_of(end))
        })?;
        Ok(ms)
    }

    unsafe fn event_destroy(&self, ctx: RawContext, event: RawEvent) {
        if bind(ctx).is_ok() {
            // SAFETY: by the caller's promise `event` is live and destroyed once; the driver
            // defers the release of an event a stream still waits for.
            let _ = unsafe { sys::cuEventDestroy_v2(event_of(event)) };
        }
    }

    fn mem_alloc(
        &self,
        ctx: RawContext,
        kind: MemoryKind,
        bytes: usize,
        portable: bool,
    ) -> Result<u64, CudaError> {
        bind(ctx)?;
        match kind {
            MemoryKind::Device => {
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: bound context; live out pointer.
                check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
                Ok(p)
            }
            MemoryKind::Managed => {
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: bound context; live out pointer; CU_MEM_ATTACH_GLOBAL (1) makes the
                // memory accessible from every stream and the host.
                check("cuMemAllocManaged", unsafe {
                    sys::cuMemAllocManaged(&mut p, bytes, 1)
                })?;
                Ok(p)
            }
            MemoryKind::HostPinned => {
                let mut p: *mut c_void = std::ptr::null_mut();
                let flags = if portable {
                    sys::CU_MEMHOSTALLOC_PORTABLE
                } else {
                    0
                };
                // SAFETY: bound context; live out pointer; flags 0 or
                // CU_MEMHOSTALLOC_PORTABLE.
                check("cuMemHostAlloc", unsafe {
                    sys::cuMemHostAlloc(&mut p, bytes, flags)
                })?;
                Ok(p as usize as u64)
            }
        }
    }

    fn mem_alloc_async(&self, ctx: RawContext, bytes: usize, stream: RawStream) -> Result<u64, CudaError> {
        bind(ctx)?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: the stream's context is current; live out pointer; the caller checked that
        // the device has memory pools.
        check("cuMemAllocAsync", unsafe {
            sys::cuMemAllocAsync(&mut p, bytes, stream_of(stream))
        })?;
        Ok(p)
    }

    unsafe fn mem_free(&self, ctx: RawContext, kind: MemoryKind, address: u64) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: by the caller's promise `address` is a live allocation of this kind, not
        // used afterwards.
        unsafe {
            match kind {
                MemoryKind::Device | MemoryKind::Managed => check("cuMemFree_v2", sys::cuMemFree_v2(address)),
                MemoryKind::HostPinned => check(
                    "cuMemFreeHost",
                    sys::cuMemFreeHost(address as usize as *mut c_void),
                ),
            }
        }
    }

    unsafe fn mem_free_async(
        &self,
        ctx: RawContext,
        address: u64,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: by the caller's promise a pooled allocation used only by work queued before
        // on `stream`, which the free is ordered after.
        check("cuMemFreeAsync", unsafe {
            sys::cuMemFreeAsync(address, stream_of(stream))
        })
    }

    unsafe fn memset_d8(
        &self,
        ctx: RawContext,
        address: u64,
        value: u8,
        bytes: usize,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: device memory valid for `bytes` bytes (the caller's promise).
        check("cuMemsetD8_v2", unsafe {
            sys::cuMemsetD8_v2(address, value, bytes)
        })
    }

    unsafe fn memcpy_htod(
        &self,
        ctx: RawContext,
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: both addresses and their lifetime by the caller's promise; the stream is
        // live and of the bound context.
        unsafe {
            match stream {
                Some(s) => check(
                    "cuMemcpyHtoDAsync_v2",
                    sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream_of(s)),
                ),
                None => check("cuMemcpyHtoD_v2", sys::cuMemcpyHtoD_v2(dst, src.cast(), bytes)),
            }
        }
    }

    unsafe fn memcpy_dtoh(
        &self,
        ctx: RawContext,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: both addresses and their lifetime by the caller's promise; the stream is
        // live and of the bound context.
        unsafe {
            match stream {
                Some(s) => check(
                    "cuMemcpyDtoHAsync_v2",
                    sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream_of(s)),
                ),
                None => check("cuMemcpyDtoH_v2", sys::cuMemcpyDtoH_v2(dst.cast(), src, bytes)),
            }
        }
    }

    unsafe fn memcpy_dtod_async(
        &self,
        ctx: RawContext,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: both addresses and their lifetime by the caller's promise; the stream is
        // live and of the bound context.
        check("cuMemcpyDtoDAsync_v2", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream_of(stream))
        })
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
        bind(ctx)?;
        // SAFETY: both addresses and their lifetime by the caller's promise; both contexts
        // are retained primary contexts of the devices that own the memory; the stream is
        // live and of the bound context.
        check("cuMemcpyPeerAsync", unsafe {
            sys::cuMemcpyPeerAsync(
                dst,
                ctx_of(dst_ctx),
                src,
                ctx_of(src_ctx),
                bytes,
                stream_of(stream),
            )
        })
    }

    fn load_function(
        &self,
        ctx: RawContext,
        limits: &DeviceLimits,
        hash: u64,
        kernel: &'static str,
        entry: &str,
        source: &str,
    ) -> Result<RawFunction, CudaError> {
        let (ptx, _) = ModuleCache::global().ptx_of_source(hash, kernel, entry, &limits.arch(), source)?;
        let invalid = |reason: String| CudaError::InvalidLaunch { kernel, reason };
        let image = CString::new(ptx.as_bytes()).map_err(|_| invalid("the PTX holds a NUL byte".into()))?;
        let entry = CString::new(entry).map_err(|_| invalid("the entry name holds a NUL byte".into()))?;
        bind(ctx)?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the context is current; `image` is NUL-terminated PTX that outlives the
        // call; `module` is a live out pointer. Modules are never unloaded.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut module, image.as_ptr().cast())
        })?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; `entry` is NUL-terminated; live out pointer.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut function, module, entry.as_ptr())
        })?;
        Ok(RawFunction(function as usize))
    }

    fn function_resources(&self, function: RawFunction) -> Result<KernelResources, CudaError> {
        let attr = |a: sys::CUfunction_attribute| -> Result<usize, CudaError> {
            let mut v: c_int = 0;
            // SAFETY: `function` is a live function (modules are never unloaded); a known
            // attribute; live out pointer.
            check("cuFuncGetAttribute", unsafe {
                sys::cuFuncGetAttribute(&mut v, a, function.0 as sys::CUfunction)
            })?;
            Ok(v.max(0) as usize)
        };
        Ok(KernelResources {
            registers_per_thread: attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)? as u32,
            static_shared: attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        })
    }

    fn function_param_sizes(&self, _function: RawFunction) -> Result<Option<Vec<usize>>, CudaError> {
        Ok(None)
    }

    fn function_allow_dynamic_shared(
        &self,
        ctx: RawContext,
        function: RawFunction,
        bytes: u32,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: the context is current; the function is loaded in it; the attribute takes
        // a byte count.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(
                function.0 as sys::CUfunction,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as c_int,
            )
        })
    }

    unsafe fn launch_kernel(
        &self,
        ctx: RawContext,
        function: RawFunction,
        g: &LaunchGeometry,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: the caller's contract for the function, the parameters, the memory and the
        // geometry; `extra` is null; the stream is live and of the bound context.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                function.0 as sys::CUfunction,
                g.grid[0],
                g.grid[1],
                g.grid[2],
                g.block[0],
                g.block[1],
                g.block[2],
                g.shared_bytes,
                stream_of(stream),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    fn graph_create(&self, ctx: RawContext) -> Result<RawGraph, CudaError> {
        bind(ctx)?;
        let mut raw: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the context is current; live out pointer; flags must be 0.
        check("cuGraphCreate", unsafe { sys::cuGraphCreate(&mut raw, 0) })?;
        Ok(RawGraph(raw as usize))
    }

    fn graph_add_empty(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
    ) -> Result<RawGraphNode, CudaError> {
        bind(ctx)?;
        let deps = node_handles(deps);
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph (the wrapper only
        // names nodes its own adds returned); live out pointer.
        check("cuGraphAddEmptyNode", unsafe {
            sys::cuGraphAddEmptyNode(&mut node, graph_of(graph), deps.as_ptr(), deps.len())
        })?;
        Ok(RawGraphNode(node as usize))
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
        bind(ctx)?;
        let deps = node_handles(deps);
        let node_params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: function.0 as sys::CUfunction,
            gridDimX: g.grid[0],
            gridDimY: g.grid[1],
            gridDimZ: g.grid[2],
            blockDimX: g.block[0],
            blockDimY: g.block[1],
            blockDimZ: g.block[2],
            sharedMemBytes: g.shared_bytes,
            kernelParams: params.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            // `func` names the function: no CUkernel, and the context that is current.
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph; the function,
        // parameters, memory and geometry by the caller's contract; `params` outlives the
        // call, in which the driver copies the values; live out pointer.
        check("cuGraphAddKernelNode_v2", unsafe {
            sys::cuGraphAddKernelNode_v2(
                &mut node,
                graph_of(graph),
                deps.as_ptr(),
                deps.len(),
                &node_params,
            )
        })?;
        Ok(RawGraphNode(node as usize))
    }

    unsafe fn graph_add_host(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        function: HostFunction,
        data: *mut c_void,
    ) -> Result<RawGraphNode, CudaError> {
        bind(ctx)?;
        let deps = node_handles(deps);
        let params = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(function),
            userData: data,
        };
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph; the function and
        // its data by the caller's contract; live out pointer.
        check("cuGraphAddHostNode", unsafe {
            sys::cuGraphAddHostNode(&mut node, graph_of(graph), deps.as_ptr(), deps.len(), &params)
        })?;
        Ok(RawGraphNode(node as usize))
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
        bind(ctx)?;
        let deps = node_handles(deps);
        let copy = memcpy_1d(device, host.cast(), bytes, direction);
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current and passed as the copy's context; `deps` are nodes
        // of this graph; both buffers by the caller's contract; live out pointer.
        check("cuGraphAddMemcpyNode", unsafe {
            sys::cuGraphAddMemcpyNode(
                &mut node,
                graph_of(graph),
                deps.as_ptr(),
                deps.len(),
                &copy,
                ctx_of(ctx),
            )
        })?;
        Ok(RawGraphNode(node as usize))
    }

    fn graph_instantiate(&self, ctx: RawContext, graph: RawGraph) -> Result<RawGraphExec, CudaError> {
        bind(ctx)?;
        let mut raw: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: the graph is complete and of the current context; live out pointer; flags 0
        // launch it as built.
        check("cuGraphInstantiateWithFlags", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut raw, graph_of(graph), 0)
        })?;
        Ok(RawGraphExec(raw as usize))
    }

    unsafe fn graph_launch(
        &self,
        ctx: RawContext,
        exec: RawGraphExec,
        stream: RawStream,
    ) -> Result<(), CudaError> {
        bind(ctx)?;
        // SAFETY: `exec` is a live executable of this context; the stream is live; what the
        // nodes use by the caller's contract.
        check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(exec.0 as sys::CUgraphExec, stream_of(stream))
        })
    }

    unsafe fn graph_destroy(&self, ctx: RawContext, graph: RawGraph) {
        if bind(ctx).is_ok() {
            // SAFETY: by the caller's promise `graph` is live and destroyed once; an
            // executable made from it does not depend on it.
            let _ = unsafe { sys::cuGraphDestroy(graph_of(graph)) };
        }
    }

    unsafe fn graph_exec_destroy(&self, ctx: RawContext, exec: RawGraphExec) {
        if bind(ctx).is_ok() {
            // SAFETY: by the caller's promise `exec` is live, not running, destroyed once.
            let _ = unsafe { sys::cuGraphExecDestroy(exec.0 as sys::CUgraphExec) };
        }
    }
}

/// The driver's node handles of `deps`.
fn node_handles(deps: &[RawGraphNode]) -> Vec<sys::CUgraphNode> {
    deps.iter().map(|d| d.0 as sys::CUgraphNode).collect()
}

/// A one-dimensional copy of `bytes` bytes between the device buffer `device` and the host
/// buffer `host`, as a memcpy node takes it.
fn memcpy_1d(device: u64, host: *mut c_void, bytes: usize, direction: CopyDirection) -> sys::CUDA_MEMCPY3D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let to_host = direction == CopyDirection::ToHost;
    let (src_type, dst_type) = if to_host {
        (CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST)
    } else {
        (CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE)
    };
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: if to_host {
            std::ptr::null()
        } else {
            host.cast_const()
        },
        srcDevice: if to_host { device } else { 0 },
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: bytes,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: if to_host { host } else { std::ptr::null_mut() },
        dstDevice: if to_host { 0 } else { device },
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: bytes,
        dstHeight: 1,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}
