//! The driver seam: [`Api`], the CUDA driver calls the backend makes, in the driver API's own
//! terms (contexts, streams, events, memory, modules, graphs) over opaque handles. Two
//! implementations sit behind it: [`super::cudarc_api::Cudarc`], the real driver through
//! `cudarc::driver::sys`, and [`super::emulated::Emulated`], a driver that follows CUDA's
//! documented semantics on the CPU (streams as worker threads, kernels as their CUDA C
//! compiled by the host C++ compiler) so that everything above the seam runs in CI without a
//! GPU. The wrappers of this module (`Stream`, `Event`, `DeviceBuffer`, `Graph`, ..) own the
//! handles and call the seam; nothing above them sees either side.
//!
//! Every call names the context it runs in (the real side makes it current first), so the
//! seam has no per-thread state.

use std::ffi::c_void;

use crate::CudaError;
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry};

macro_rules! handle {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) struct $name(pub(crate) usize);
    )*};
}

handle!(
    /// A device's primary context (`CUcontext`).
    RawContext,
    /// A stream (`CUstream`).
    RawStream,
    /// An event (`CUevent`).
    RawEvent,
    /// A kernel function of a loaded module (`CUfunction`).
    RawFunction,
    /// A graph being built (`CUgraph`).
    RawGraph,
    /// A node of a graph (`CUgraphNode`).
    RawGraphNode,
    /// An instantiated graph (`CUgraphExec`).
    RawGraphExec,
);

/// What the driver says of itself at initialization.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DriverInfo {
    pub(crate) device_count: usize,
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor.
    pub(crate) version: i32,
}

/// What a device is, read once when it is opened.
#[derive(Clone, Debug)]
pub(crate) struct DeviceInfo {
    pub(crate) name: String,
    pub(crate) total_memory: usize,
    pub(crate) limits: DeviceLimits,
    /// Stream-ordered allocation (`cuMemAllocAsync`) is supported.
    pub(crate) memory_pools: bool,
    /// The primary context, retained for the life of the process.
    pub(crate) context: RawContext,
}

/// Which kind of memory an allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryKind {
    Device,
    Managed,
    HostPinned,
}

/// Which way a memcpy node copies between device and page-locked host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyDirection {
    ToHost,
    ToDevice,
}

/// A graph host node's function, called with its data on a driver thread.
pub(crate) type HostFunction = unsafe extern "C" fn(*mut c_void);

/// The CUDA driver calls of the backend. Each is the driver entry point its documentation
/// names, with the same contract; the `unsafe` ones take addresses the driver dereferences
/// (device or host memory, parameter pointers) or end a handle's life, and their `# Safety`
/// sections are the driver's preconditions.
///
/// # Safety
///
/// The wrappers above trust an implementation as they trust the CUDA driver: a handle it
/// returns stays valid until it is destroyed; an allocation of `bytes` bytes is that many
/// bytes no other allocation overlaps; a copy or kernel touches only the memory its caller
/// named; work queued on a stream runs in order, after what the stream waits for; a
/// synchronization returns only once the work it covers has completed.
pub(crate) unsafe trait Api: Send + Sync + 'static {
    /// What this driver is, for `print_configuration` ("CUDA 12.9", "emulated").
    fn describe(&self, info: &DriverInfo) -> String;
    /// `cuInit` and the device count; the typed error when there is no driver or device.
    fn init(&self) -> Result<DriverInfo, CudaError>;
    /// Opens device `ordinal` (below the count): its primary context and properties.
    fn open_device(&self, ordinal: usize) -> Result<DeviceInfo, CudaError>;
    /// Makes `ctx` current on the calling thread (`cuCtxSetCurrent`): the check that it is
    /// usable.
    fn bind(&self, ctx: RawContext) -> Result<(), CudaError>;

    /// `cuDeviceCanAccessPeer` between two devices (both below the count).
    fn can_access_peer(&self, device: usize, peer: usize) -> Result<bool, CudaError>;
    /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED` between two devices.
    fn native_peer_atomics(&self, device: usize, peer: usize) -> Result<bool, CudaError>;
    /// `cuCtxEnablePeerAccess` from `ctx` to `peer`: `Ok(false)` where the pair cannot be
    /// connected; access enabled before is success.
    fn enable_peer_access(&self, ctx: RawContext, peer: RawContext) -> Result<bool, CudaError>;

    /// `cuStreamCreate` (a blocking stream, flags 0).
    fn stream_create(&self, ctx: RawContext) -> Result<RawStream, CudaError>;
    /// Whether `stream` is a blocking stream (`cuStreamGetFlags` without
    /// `CU_STREAM_NON_BLOCKING`): its work orders with the legacy default stream's.
    fn stream_is_blocking(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError>;
    /// `cuStreamDestroy`: work still queued completes first.
    ///
    /// # Safety
    ///
    /// `stream` is live and not used afterwards.
    unsafe fn stream_destroy(&self, ctx: RawContext, stream: RawStream);
    /// `cuStreamSynchronize`.
    fn stream_synchronize(&self, ctx: RawContext, stream: RawStream) -> Result<(), CudaError>;
    /// `cuStreamWaitEvent`: later work on `stream` waits for the event's last record.
    fn stream_wait_event(&self, ctx: RawContext, stream: RawStream, event: RawEvent)
    -> Result<(), CudaError>;
    /// `cuStreamQuery`: `Ok(true)` when idle, `Ok(false)` for `CUDA_ERROR_NOT_READY`.
    fn stream_query(&self, ctx: RawContext, stream: RawStream) -> Result<bool, CudaError>;

    /// `cuEventCreate`, with timing or without (`CU_EVENT_DISABLE_TIMING`).
    fn event_create(&self, ctx: RawContext, timing: bool) -> Result<RawEvent, CudaError>;
    /// `cuEventRecord` on `stream`, after the work queued on it so far.
    fn event_record(&self, ctx: RawContext, event: RawEvent, stream: RawStream) -> Result<(), CudaError>;
    /// `cuEventQuery`: `Ok(true)` when reached (or never recorded), `Ok(false)` for
    /// `CUDA_ERROR_NOT_READY`.
    fn event_query(&self, ctx: RawContext, event: RawEvent) -> Result<bool, CudaError>;
    /// `cuEventSynchronize`.
    fn event_synchronize(&self, ctx: RawContext, event: RawEvent) -> Result<(), CudaError>;
    /// `cuEventElapsedTime` from `start` to `end`, in milliseconds.
    fn event_elapsed(&self, ctx: RawContext, start: RawEvent, end: RawEvent) -> Result<f32, CudaError>;
    /// `cuEventDestroy`.
    ///
    /// # Safety
    ///
    /// `event` is live and not used afterwards.
    unsafe fn event_destroy(&self, ctx: RawContext, event: RawEvent);

    /// `cuMemAlloc`, `cuMemAllocManaged` (attached globally) or `cuMemHostAlloc` (`portable`
    /// for every context): `bytes` (non-zero) bytes; the address (a device address, or a host
    /// one for page-locked memory).
    fn mem_alloc(
        &self,
        ctx: RawContext,
        kind: MemoryKind,
        bytes: usize,
        portable: bool,
    ) -> Result<u64, CudaError>;
    /// `cuMemAllocAsync` on `stream`, from the device's default pool.
    fn mem_alloc_async(&self, ctx: RawContext, bytes: usize, stream: RawStream) -> Result<u64, CudaError>;
    /// `cuMemFree` / `cuMemFreeHost`.
    ///
    /// # Safety
    ///
    /// `address` came from [`mem_alloc`](Api::mem_alloc) (or `mem_alloc_async`) of this kind
    /// and is not used afterwards.
    unsafe fn mem_free(&self, ctx: RawContext, kind: MemoryKind, address: u64) -> Result<(), CudaError>;
    /// `cuMemFreeAsync` on `stream`.
    ///
    /// # Safety
    ///
    /// `address` came from [`mem_alloc_async`](Api::mem_alloc_async); only work queued on
    /// `stream` before the free uses it.
    unsafe fn mem_free_async(
        &self,
        ctx: RawContext,
        address: u64,
        stream: RawStream,
    ) -> Result<(), CudaError>;
    /// `cuMemsetD8` of `bytes` bytes at `address` to `value`, on the legacy default stream.
    ///
    /// # Safety
    ///
    /// `address` is device or managed memory of the context, valid for `bytes` bytes.
    unsafe fn memset_d8(
        &self,
        ctx: RawContext,
        address: u64,
        value: u8,
        bytes: usize,
    ) -> Result<(), CudaError>;
    /// `cuMemcpyHtoD` (with `stream`: `cuMemcpyHtoDAsync`).
    ///
    /// # Safety
    ///
    /// `dst` is device or managed memory valid for `bytes` bytes; `src` is readable for
    /// `bytes` bytes until the copy completed (pageable memory is staged before the call
    /// returns).
    unsafe fn memcpy_htod(
        &self,
        ctx: RawContext,
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError>;
    /// `cuMemcpyDtoH` (with `stream`: `cuMemcpyDtoHAsync`).
    ///
    /// # Safety
    ///
    /// `src` is device or managed memory valid for `bytes` bytes; `dst` is writable for
    /// `bytes` bytes and touched by nothing else until the copy completed.
    unsafe fn memcpy_dtoh(
        &self,
        ctx: RawContext,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: Option<RawStream>,
    ) -> Result<(), CudaError>;
    /// `cuMemcpyDtoDAsync` on `stream`.
    ///
    /// # Safety
    ///
    /// Both are device or managed memory of the context, valid for `bytes` bytes until the
    /// copy completed.
    unsafe fn memcpy_dtod_async(
        &self,
        ctx: RawContext,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: RawStream,
    ) -> Result<(), CudaError>;
    /// `cuMemcpyPeerAsync` on `stream` (of `ctx`) from `src` of `src_ctx` to `dst` of
    /// `dst_ctx`.
    ///
    /// # Safety
    ///
    /// Both are device or managed memory of their contexts, valid for `bytes` bytes until the
    /// copy completed.
    #[allow(clippy::too_many_arguments)]
    unsafe fn memcpy_peer_async(
        &self,
        ctx: RawContext,
        dst: u64,
        dst_ctx: RawContext,
        src: u64,
        src_ctx: RawContext,
        bytes: usize,
        stream: RawStream,
    ) -> Result<(), CudaError>;

    /// The entry `entry` of the CUDA C `source` (key `hash`) compiled for the device and
    /// loaded into `ctx` for the life of the process (NVRTC and `cuModuleLoadData` on a GPU).
    fn load_function(
        &self,
        ctx: RawContext,
        limits: &DeviceLimits,
        hash: u64,
        kernel: &'static str,
        entry: &str,
        source: &str,
    ) -> Result<RawFunction, CudaError>;
    /// The function's registers per thread and static shared memory (`cuFuncGetAttribute`).
    fn function_resources(&self, function: RawFunction) -> Result<KernelResources, CudaError>;
    /// The sizes of the function's parameters, where the driver tells them (the CUDA driver
    /// does not: `None`, and the PTX is read instead).
    fn function_param_sizes(&self, function: RawFunction) -> Result<Option<Vec<usize>>, CudaError>;
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` of the function, in `ctx`.
    fn function_allow_dynamic_shared(
        &self,
        ctx: RawContext,
        function: RawFunction,
        bytes: u32,
    ) -> Result<(), CudaError>;
    /// `cuLaunchKernel` on `stream`; the parameter values are copied before it returns.
    ///
    /// # Safety
    ///
    /// As [`Function::launch`](super::Function::launch) says.
    unsafe fn launch_kernel(
        &self,
        ctx: RawContext,
        function: RawFunction,
        g: &LaunchGeometry,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Result<(), CudaError>;

    /// `cuGraphCreate`.
    fn graph_create(&self, ctx: RawContext) -> Result<RawGraph, CudaError>;
    /// `cuGraphAddEmptyNode` after `deps` (nodes of `graph`).
    fn graph_add_empty(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
    ) -> Result<RawGraphNode, CudaError>;
    /// `cuGraphAddKernelNode` after `deps`; the parameter values are copied.
    ///
    /// # Safety
    ///
    /// As for [`launch_kernel`](Api::launch_kernel), for every launch of the graph.
    #[allow(clippy::too_many_arguments)]
    unsafe fn graph_add_kernel(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        function: RawFunction,
        g: &LaunchGeometry,
        params: &mut [*mut c_void],
    ) -> Result<RawGraphNode, CudaError>;
    /// `cuGraphAddHostNode` after `deps`: `function(data)` on a driver thread.
    ///
    /// # Safety
    ///
    /// `function` makes no CUDA call and does not unwind; `data` is valid for it as long as
    /// the graph's executables may run.
    unsafe fn graph_add_host(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        function: HostFunction,
        data: *mut c_void,
    ) -> Result<RawGraphNode, CudaError>;
    /// `cuGraphAddMemcpyNode` after `deps`: `bytes` bytes between device memory `device` and
    /// page-locked `host`, as `direction` says.
    ///
    /// # Safety
    ///
    /// Both are valid for `bytes` bytes as long as the graph's executables may run.
    #[allow(clippy::too_many_arguments)]
    unsafe fn graph_add_copy(
        &self,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        device: u64,
        host: *mut u8,
        bytes: usize,
        direction: CopyDirection,
    ) -> Result<RawGraphNode, CudaError>;
    /// `cuGraphInstantiateWithFlags` (flags 0).
    fn graph_instantiate(&self, ctx: RawContext, graph: RawGraph) -> Result<RawGraphExec, CudaError>;
    /// `cuGraphLaunch` on `stream`.
    ///
    /// # Safety
    ///
    /// What the nodes use stays alive until the run completed; the executable is not
    /// destroyed before then.
    unsafe fn graph_launch(
        &self,
        ctx: RawContext,
        exec: RawGraphExec,
        stream: RawStream,
    ) -> Result<(), CudaError>;
    /// `cuGraphDestroy`.
    ///
    /// # Safety
    ///
    /// `graph` is live and not used afterwards.
    unsafe fn graph_destroy(&self, ctx: RawContext, graph: RawGraph);
    /// `cuGraphExecDestroy`.
    ///
    /// # Safety
    ///
    /// `exec` is live, not running, and not used afterwards.
    unsafe fn graph_exec_destroy(&self, ctx: RawContext, exec: RawGraphExec);
}
