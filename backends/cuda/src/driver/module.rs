//! Modules and kernels: a kernel's CUDA C compiled for a device and loaded into its context,
//! the kernel function found in it, its attributes, and its launch on a stream.

use std::ffi::c_void;

use super::api::RawFunction;
use super::{Device, Stream};
use crate::CudaError;
use crate::geometry::{KernelResources, LaunchGeometry};

/// A kernel function of a loaded module. Modules are never unloaded, so the handle stays valid
/// for the life of the process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Function(RawFunction);

/// The entry `entry` of the CUDA C `source` (key `hash`, see
/// [`ModuleCache::ptx_of_source`](crate::nvrtc::ModuleCache::ptx_of_source)) compiled for
/// `device` and loaded into its context for the life of the process.
pub(crate) fn load_function(
    device: &Device,
    hash: u64,
    kernel: &'static str,
    entry: &str,
    source: &str,
) -> Result<Function, CudaError> {
    device
        .api()
        .load_function(device.context(), &device.limits, hash, kernel, entry, source)
        .map(Function)
}

impl Function {
    /// What the function uses per launch: its registers per thread and static shared memory
    /// (`cuFuncGetAttribute`), as loaded on `device`.
    pub(crate) fn resources(&self, device: &Device) -> Result<KernelResources, CudaError> {
        device.api().function_resources(self.0)
    }

    /// The sizes of the entry's parameters where the driver reads them from the loaded
    /// function (the emulated driver); `None` from the CUDA driver, where the PTX tells.
    pub(crate) fn param_sizes(&self, device: &Device) -> Result<Option<Vec<usize>>, CudaError> {
        device.api().function_param_sizes(self.0)
    }

    /// Lets launches of the function on `device` (the device it was loaded on) use `bytes` of
    /// dynamic shared memory, past the default per-block limit
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`). The caller checked `bytes` against
    /// the device's opt-in limit; the driver refuses more.
    pub(crate) fn allow_dynamic_shared(&self, device: &Device, bytes: u32) -> Result<(), CudaError> {
        device
            .api()
            .function_allow_dynamic_shared(device.context(), self.0, bytes)
    }

    /// `cuLaunchKernel` of the function with geometry `g` on `stream`, its parameters read
    /// through `pointers` (one per parameter; the driver copies the values before it returns).
    ///
    /// # Safety
    ///
    /// The function is loaded on `stream`'s device; `pointers` holds exactly one valid pointer
    /// per parameter of the entry, to a value of that parameter's type and layout; every
    /// device address among those values is memory the kernel may touch, alive until the
    /// launch completes; `g` fits the device and the function.
    pub(crate) unsafe fn launch(
        &self,
        stream: &Stream,
        g: &LaunchGeometry,
        pointers: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        let device = &stream.device;
        // SAFETY: the caller's contract for the function, the parameters, the memory and the
        // geometry; the stream is live and of the device's context.
        unsafe {
            device
                .api()
                .launch_kernel(device.context(), self.0, g, stream.raw(), pointers)
        }
    }

    /// The driver's handle, for a graph's kernel node.
    #[cfg(feature = "graph")]
    pub(super) fn raw(&self) -> RawFunction {
        self.0
    }
}
