//! Modules and kernels: PTX loaded into a device's context, a kernel function found in it,
//! its attributes, and its launch on a stream.

use std::ffi::{CStr, c_int, c_void};

use cudarc::driver::sys;

use super::{Device, Stream, check};
use crate::CudaError;
use crate::geometry::{KernelResources, LaunchGeometry};

/// A kernel function of a loaded module. Modules are never unloaded, so the handle stays valid
/// for the life of the process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Function(sys::CUfunction);

// SAFETY: a function handle may be used from any thread (the driver API is thread-safe), and
// the module it belongs to is never unloaded.
unsafe impl Send for Function {}
// SAFETY: as for `Send`.
unsafe impl Sync for Function {}

/// Loads the PTX `image` into `device`'s context (`cuModuleLoadData`, for the life of the
/// process) and returns its function `entry`.
pub(crate) fn load_function(device: &Device, image: &CStr, entry: &CStr) -> Result<Function, CudaError> {
    device.bind()?;
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the device's context is current; `image` is NUL-terminated PTX that outlives
    // the call; `module` is a live out pointer.
    check("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut module, image.as_ptr().cast())
    })?;
    let mut function: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: `module` was just loaded; `entry` is NUL-terminated; live out pointer.
    check("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut function, module, entry.as_ptr())
    })?;
    Ok(Function(function))
}

impl Function {
    /// What the function uses per launch: its registers per thread and static shared memory
    /// (`cuFuncGetAttribute`).
    pub(crate) fn resources(&self) -> Result<KernelResources, CudaError> {
        let attr = |a: sys::CUfunction_attribute| -> Result<usize, CudaError> {
            let mut v: c_int = 0;
            // SAFETY: `self.0` is a live function; a known attribute; live out pointer.
            check("cuFuncGetAttribute", unsafe {
                sys::cuFuncGetAttribute(&mut v, a, self.0)
            })?;
            Ok(v.max(0) as usize)
        };
        Ok(KernelResources {
            registers_per_thread: attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)? as u32,
            static_shared: attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        })
    }

    /// Lets launches of the function on `device` (the device it was loaded on) use `bytes` of
    /// dynamic shared memory, past the default per-block limit
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`). The caller checked `bytes` against
    /// the device's opt-in limit; the driver refuses more.
    pub(crate) fn allow_dynamic_shared(&self, device: &Device, bytes: u32) -> Result<(), CudaError> {
        device.bind()?;
        // SAFETY: the context is current; the function is loaded in it (the caller's device);
        // the attribute takes a byte count.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(
                self.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as c_int,
            )
        })
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
        stream.device.bind()?;
        // SAFETY: the caller's contract for the function, the parameters, the memory and the
        // geometry; `extra` is null; the stream is live and of the bound context.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                self.0,
                g.grid[0],
                g.grid[1],
                g.grid[2],
                g.block[0],
                g.block[1],
                g.block[2],
                g.shared_bytes,
                stream.raw(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    /// The driver's handle, for a graph's kernel node.
    #[cfg(feature = "graph")]
    pub(super) fn raw(&self) -> sys::CUfunction {
        self.0
    }
}
