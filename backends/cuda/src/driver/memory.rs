//! Memory: allocations of device, managed and page-locked host memory for the memory spaces,
//! and the synchronous copies between host and device.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{Device, check};
use crate::CudaError;

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
