//! Memory spaces of the CUDA backend: [`CudaSpace`] (device memory), [`CudaUVMSpace`]
//! (managed memory) and [`CudaHostPinnedSpace`] (page-locked host memory), allocated through
//! the driver, and the host transfers of views.
//!
//! The host cannot dereference device memory, so views in [`CudaSpace`] and
//! [`CudaUVMSpace`] are not [`HostAccessibleSpace`]: host guards, host kernels and the core's
//! `deep_copy` on them do not compile. Data moves with [`copy_to_device`] and
//! [`copy_to_host`]. Managed memory is left out of host access too, because a device without
//! concurrent managed access faults when the host touches it while a kernel runs.
//! [`CudaHostPinnedSpace`] is ordinary (page-locked) host memory: host accessible, for
//! staging transfers.

use std::ptr::NonNull;

use hoplite_core::AllocationRecords;
use hoplite_core::{Error, HostAccessibleSpace, HostSpace, MemorySpace, MemorySpaceAccess, Result};

use crate::driver::{self, MemoryKind};

/// The alignment of every allocation: `cuMemAlloc` and its kin return 256-byte aligned
/// memory, which `allocate` checks.
const ALIGN: usize = 256;

fn dangling() -> NonNull<u8> {
    NonNull::new(std::ptr::without_provenance_mut(ALIGN)).unwrap_or(NonNull::dangling())
}

fn allocate_kind(
    space: &'static str,
    kind: MemoryKind,
    ordinal: usize,
    label: &str,
    bytes: usize,
    zeroed: bool,
) -> Result<NonNull<u8>> {
    if bytes == 0 {
        return Ok(dangling());
    }
    let fail = |reason: String| Error::AllocationFailed {
        label: label.to_owned(),
        bytes,
        space,
        reason,
    };
    // Views dropped while queued launches still used them are freed at their instance's next
    // fence: when memory runs short, fence those instances and try once more, as a CUDA
    // free would have waited for the device (see `crate::pending`).
    let ptr = match driver::allocate(kind, ordinal, bytes) {
        Ok(ptr) => ptr,
        Err(first) if crate::pending::release_kept() => {
            driver::allocate(kind, ordinal, bytes).map_err(|e| {
                fail(format!(
                    "{e} (also after waiting for the queued launches that kept dropped views; first: {first})"
                ))
            })?
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    let Some(ptr) = NonNull::new(ptr).filter(|p| (p.as_ptr() as usize).is_multiple_of(ALIGN)) else {
        // SAFETY: `ptr` came from `allocate(kind, ordinal, _)` just above and is not used again.
        unsafe { driver::free(kind, ordinal, ptr) };
        return Err(fail(format!(
            "the driver returned memory not aligned to {ALIGN} bytes"
        )));
    };
    if zeroed {
        let cleared = match kind {
            MemoryKind::HostPinned => {
                // SAFETY: page-locked host memory of this process, `bytes` long, just
                // allocated and not shared yet.
                unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
                Ok(())
            }
            MemoryKind::Device | MemoryKind::Managed => driver::zero(ordinal, ptr.as_ptr(), bytes),
        };
        if let Err(e) = cleared {
            // SAFETY: as above: just allocated, not used again.
            unsafe { driver::free(kind, ordinal, ptr.as_ptr()) };
            return Err(fail(e.to_string()));
        }
    }
    Ok(ptr)
}

macro_rules! cuda_space {
    ($name:ident, $kind:expr, $label:literal, $kokkos_name:literal) => {
        // SAFETY: allocations come from the driver's allocator of this kind with the size
        // asked for, checked to be `ALIGNMENT`-aligned, or are an aligned dangling pointer
        // for zero bytes; they are valid for reads and writes of `bytes` bytes where this
        // space is accessible (device code for device and managed memory, which host code
        // never dereferences because these spaces are not `HostAccessibleSpace`), and are
        // not reused until `deallocate`; zeroed ones are cleared before they are returned
        // (pinned memory on the host; device and managed memory by a memset on the legacy
        // default stream of the space's device, which every later copy and every launch on a
        // `Cuda` stream of that device, all blocking streams, is ordered after, and launches
        // and stream copies take a view only on its own device's streams); the allocation,
        // the memset and the free run in the space's device's context; the records are one
        // static; only pinned memory is `HOST_ACCESSIBLE`, and the host copies of the others
        // are the driver's synchronous copies of exactly the bytes asked for.
        unsafe impl MemorySpace for $name {
            const ALIGNMENT: usize = ALIGN;
            const HOST_ACCESSIBLE: bool = matches!($kind, MemoryKind::HostPinned);

            fn name(&self) -> &'static str {
                $label
            }

            /// Kokkos' name for the space, which Kokkos Tools connectors match on.
            fn profiling_name(&self) -> &'static str {
                $kokkos_name
            }

            fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
                allocate_kind($label, $kind, self.ordinal(), label, bytes, false)
            }

            fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
                allocate_kind($label, $kind, self.ordinal(), label, bytes, true)
            }

            fn records(&self) -> &'static AllocationRecords {
                static RECORDS: AllocationRecords = AllocationRecords::new();
                &RECORDS
            }

            /// The GPU of device and managed memory; `None` for pinned host memory.
            fn location(&self) -> Option<usize> {
                (!Self::HOST_ACCESSIBLE).then(|| self.ordinal())
            }

            unsafe fn copy_from_host(&self, dst: NonNull<u8>, src: *const u8, bytes: usize) -> Result<()> {
                if bytes == 0 {
                    return Ok(());
                }
                if Self::HOST_ACCESSIBLE {
                    // SAFETY: pinned memory is host memory; the caller promises both ranges.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
                    return Ok(());
                }
                // SAFETY: the caller promises `src` for `bytes` reads and `dst` inside an
                // allocation of this space (so of this device), unused during the call.
                unsafe { driver::copy_to_device(self.ordinal(), dst.as_ptr(), src, bytes) }.map_err(|e| {
                    Error::Device {
                        space: $label,
                        reason: e.to_string(),
                    }
                })
            }

            unsafe fn copy_to_host(&self, dst: *mut u8, src: NonNull<u8>, bytes: usize) -> Result<()> {
                if bytes == 0 {
                    return Ok(());
                }
                if Self::HOST_ACCESSIBLE {
                    // SAFETY: as in `copy_from_host`.
                    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, bytes) };
                    return Ok(());
                }
                // SAFETY: as in `copy_from_host`, the other way.
                unsafe { driver::copy_to_host(self.ordinal(), dst, src.as_ptr(), bytes) }.map_err(|e| {
                    Error::Device {
                        space: $label,
                        reason: e.to_string(),
                    }
                })
            }

            unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
                if bytes == 0 {
                    return;
                }
                // SAFETY: the caller promises `ptr` came from `allocate` of this space (so
                // from the driver with this kind, on this space's device) and is not used
                // afterwards.
                unsafe { driver::free($kind, self.ordinal(), ptr.as_ptr()) };
            }
        }

        // SAFETY: a space is accessible from and assignable to itself.
        unsafe impl MemorySpaceAccess<$name> for $name {
            const ASSIGNABLE: bool = true;
            const ACCESSIBLE: bool = true;
            const DEEPCOPY: bool = true;
        }
    };
}

/// Device memory (`cuMemAlloc`) of one GPU: where `Cuda` kernels allocate by default.
/// `CudaSpace::default()` is device 0's memory, [`CudaSpace::on_device`] another GPU's.
/// The host cannot dereference it.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::CudaSpace;
/// match View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [1000]) {
///     Ok(x) => assert_eq!(x.len(), 1000),
///     Err(e) => println!("{e}"), // no driver or no device here
/// }
/// ```
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct CudaSpace {
    device: usize,
}

/// Managed memory (`cuMemAllocManaged`, attached globally) allocated by one GPU's context:
/// one address on host and device, migrated on demand. Kernels use it like [`CudaSpace`];
/// the host reaches it through [`copy_to_host`] and [`copy_to_device`] (not directly, see the
/// module documentation). Launches take it on the allocating device's instances only, as
/// device memory.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::CudaUVMSpace;
/// if let Err(e) = View::<f32, 2, LayoutLeft, CudaUVMSpace>::without_initializing("m", [4, 4]) {
///     println!("{e}");
/// }
/// ```
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct CudaUVMSpace {
    device: usize,
}

macro_rules! on_device {
    ($name:ident, $what:literal) => {
        impl $name {
            #[doc = concat!("The ", $what, " of GPU `ordinal` (`", stringify!($name), "::default()` is device 0's).")]
            /// Views allocated in it belong to that device: launches and stream copies take
            /// them on instances of that device (`Cuda::on_device(ordinal)`) and refuse them on
            /// another device's with [`CudaError::WrongDevice`](crate::CudaError::WrongDevice),
            /// except launches on a device whose access to this one was enabled
            /// ([`Cuda::enable_peer_access`](crate::Cuda::enable_peer_access)).
            /// The ordinal is checked when memory is allocated: a device that does not exist
            /// is the allocation's error.
            ///
            /// ```
            /// use hoplite_core::{LayoutLeft, View};
            #[doc = concat!("use hoplite_cuda::", stringify!($name), ";")]
            #[doc = concat!("let space = ", stringify!($name), "::on_device(1);")]
            /// assert_eq!(space.device(), 1);
            /// match View::<f64, 1, LayoutLeft, _>::without_initializing_in(space, "x", [100]) {
            ///     Ok(x) => assert_eq!(x.space().device(), 1),
            ///     Err(e) => println!("{e}"), // no driver, or no second GPU here
            /// }
            /// ```
            pub const fn on_device(ordinal: usize) -> $name {
                $name { device: ordinal }
            }

            /// The ordinal of the GPU whose memory this is.
            ///
            /// ```
            #[doc = concat!("assert_eq!(hoplite_cuda::", stringify!($name), "::default().device(), 0);")]
            /// ```
            pub const fn device(&self) -> usize {
                self.device
            }

            const fn ordinal(&self) -> usize {
                self.device
            }
        }
    };
}

on_device!(CudaSpace, "device memory");
on_device!(CudaUVMSpace, "managed memory");

/// Page-locked host memory (`cuMemHostAlloc`, portable: page-locked for every GPU's context):
/// host memory the devices copy from and to at full speed. Host accessible, so host guards
/// and host kernels work on it.
///
/// ```
/// use hoplite_core::View;
/// use hoplite_cuda::CudaHostPinnedSpace;
/// match View::<u32, 1, hoplite_core::LayoutRight, CudaHostPinnedSpace>::new("staging", [8]) {
///     Ok(v) => assert_eq!(v.to_vec()?, [0; 8]),
///     Err(e) => println!("{e}"),
/// }
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct CudaHostPinnedSpace;

impl CudaHostPinnedSpace {
    /// The context pinned memory is allocated in: device 0's (portable, so every device's
    /// context sees it page-locked).
    const fn ordinal(&self) -> usize {
        0
    }
}

cuda_space!(CudaSpace, MemoryKind::Device, "CudaSpace", "Cuda");
cuda_space!(CudaUVMSpace, MemoryKind::Managed, "CudaUVMSpace", "CudaUVM");
cuda_space!(
    CudaHostPinnedSpace,
    MemoryKind::HostPinned,
    "CudaHostPinnedSpace",
    "CudaHostPinned"
);

// SAFETY: host code cannot dereference device memory (not accessible, not assignable); the
// copy goes through the driver.
unsafe impl MemorySpaceAccess<HostSpace> for CudaSpace {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = false;
    const DEEPCOPY: bool = true;
}

// SAFETY: as above, from the host's side.
unsafe impl MemorySpaceAccess<CudaSpace> for HostSpace {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = false;
    const DEEPCOPY: bool = true;
}

// SAFETY: managed memory is not dereferenced by host code here (see the module
// documentation), so neither constant claims access.
unsafe impl MemorySpaceAccess<HostSpace> for CudaUVMSpace {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = false;
    const DEEPCOPY: bool = true;
}

// SAFETY: device code reaches managed memory at the same address (unified addressing).
unsafe impl MemorySpaceAccess<CudaUVMSpace> for CudaSpace {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

// SAFETY: pinned memory is host memory of this process: host code dereferences it, with the
// same layout as `HostSpace` views.
unsafe impl MemorySpaceAccess<HostSpace> for CudaHostPinnedSpace {
    const ASSIGNABLE: bool = true;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

// SAFETY: `cuMemAllocHost` returns page-locked memory of this process that host threads may
// read and write until `cuMemFreeHost`; kernels of this backend never take pinned views (see
// `DeviceAccessibleSpace`), so no device write races a host guard.
unsafe impl HostAccessibleSpace for CudaHostPinnedSpace {}

/// A memory space `Cuda` kernels may take views of: device and managed memory.
///
/// # Safety
///
/// Launches pass the addresses of such views to device code of the device
/// [`device_ordinal`](Self::device_ordinal) names, and copy them in that device's context. An
/// implementation promises that every allocation of the space is device-addressable memory
/// of that device's primary context, and that host code never dereferences it (the space is
/// not `HostAccessibleSpace`), so kernels are the only accessors while they run.
pub unsafe trait DeviceAccessibleSpace: MemorySpace {
    /// The ordinal of the GPU whose context holds this space's allocations.
    ///
    /// ```
    /// use hoplite_core::MemorySpace;
    /// use hoplite_cuda::{CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, DeviceAccessibleSpace};
    /// assert_eq!(CudaSpace::on_device(2).device_ordinal(), 2);
    /// // The location the implicit DAG places launches by: the GPU, none for pinned host memory.
    /// assert_eq!((CudaSpace::on_device(2).location(), CudaUVMSpace::default().location()), (Some(2), Some(0)));
    /// assert_eq!(CudaHostPinnedSpace.location(), None);
    /// ```
    fn device_ordinal(&self) -> usize;
}

// SAFETY: `cuMemAlloc` memory of the space's device's primary context (`allocate` binds it);
// not host accessible.
unsafe impl DeviceAccessibleSpace for CudaSpace {
    fn device_ordinal(&self) -> usize {
        self.device
    }
}
// SAFETY: `cuMemAllocManaged` memory allocated in the space's device's primary context,
// device-addressable; not host accessible here.
unsafe impl DeviceAccessibleSpace for CudaUVMSpace {
    fn device_ordinal(&self) -> usize {
        self.device
    }
}

use hoplite_core::{ArrayLayout, View, ViewValue};

fn contiguous_bytes<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
    view: &View<T, R, L, S>,
) -> std::result::Result<usize, crate::CudaError> {
    if !view.is_contiguous() {
        return Err(crate::CudaError::Transfer {
            label: view.label().to_owned(),
            reason: "the view is not contiguous; copy a contiguous view (deep_copy a strided one into a contiguous host view first)".to_owned(),
        });
    }
    Ok(view.len() * size_of::<T>())
}

/// Copies `src` (host data, in `dst`'s memory order) into the device view `dst`.
///
/// The copy waits for the work already queued on `Cuda` instances (their streams are
/// blocking streams, which the driver's synchronous copy waits for) and is complete when it
/// returns.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::{copy_to_device, CudaSpace};
/// match View::<f32, 1, LayoutLeft, CudaSpace>::without_initializing("x", [3]) {
///     Ok(x) => copy_to_device(&x, &[1.0, 2.0, 3.0])?,
///     Err(e) => println!("{e}"),
/// }
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::Transfer`](crate::CudaError::Transfer) when `dst` is not contiguous or the
/// lengths differ; the driver's error when the copy fails.
pub fn copy_to_device<T: crate::DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
    dst: &View<T, R, L, S>,
    src: &[T],
) -> std::result::Result<(), crate::CudaError> {
    let bytes = contiguous_bytes(dst)?;
    if src.len() != dst.len() {
        return Err(crate::CudaError::Transfer {
            label: dst.label().to_owned(),
            reason: format!(
                "{} host elements for a view of {}; pass exactly one per element",
                src.len(),
                dst.len()
            ),
        });
    }
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: `DeviceScalar` types are primitives without padding, so the `src.len()`
    // initialized values are exactly `bytes` initialized bytes.
    let src = unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<u8>(), bytes) };
    // SAFETY: `dst` is a contiguous view of `bytes` bytes of device memory starting at its
    // data pointer, in the context of the device its space names (`DeviceAccessibleSpace`),
    // alive while `dst` is borrowed; host code never touches it, and the
    // synchronous copy waits for queued kernels.
    unsafe {
        driver::copy_to_device(
            dst.space().device_ordinal(),
            dst.data().cast_mut().cast(),
            src.as_ptr(),
            bytes,
        )
    }
}

/// Copies the device view `src` into `dst` (host data, in `src`'s memory order).
///
/// Waits for the work already queued on `Cuda` instances, as [`copy_to_device`] does.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::{copy_to_host, CudaSpace};
/// match View::<i32, 1, LayoutLeft, CudaSpace>::without_initializing("x", [3]) {
///     Ok(x) => {
///         let mut out = [7; 3];
///         copy_to_host(&mut out, &x)?;
///         assert_eq!(out, [0; 3]); // views start zeroed
///     }
///     Err(e) => println!("{e}"),
/// }
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// As for [`copy_to_device`].
pub fn copy_to_host<T: crate::DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
    dst: &mut [T],
    src: &View<T, R, L, S>,
) -> std::result::Result<(), crate::CudaError> {
    let bytes = contiguous_bytes(src)?;
    if dst.len() != src.len() {
        return Err(crate::CudaError::Transfer {
            label: src.label().to_owned(),
            reason: format!(
                "{} host elements for a view of {}; pass exactly one per element",
                dst.len(),
                src.len()
            ),
        });
    }
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: `dst` is `bytes` bytes of initialized, writable memory (primitives without
    // padding); the bytes copied in are values of `T` (device views hold only values of their
    // element type, which `DeviceScalar` promises has `T`'s representation, and start zeroed,
    // a valid `T`).
    let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), bytes) };
    // SAFETY: `src` is a contiguous view of `bytes` bytes of device memory from its data
    // pointer, in the context of the device its space names, alive while borrowed; the synchronous copy waits for queued kernels.
    unsafe {
        driver::copy_to_host(
            src.space().device_ordinal(),
            dst.as_mut_ptr(),
            src.data().cast(),
            bytes,
        )
    }
}
