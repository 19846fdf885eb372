//! Host mirrors of device views and copies between them ordered on a `Cuda` stream.
//!
//! [`create_mirror_view`] makes a host view with the extents and layout of a device view
//! (Kokkos' `create_mirror_view`); [`create_mirror_view_and_copy`] also copies the contents.
//! [`Cuda::deep_copy_to_device`] and [`Cuda::deep_copy_to_host`] copy between a host view and
//! a device view of the same extents and layout on an instance's stream, after the work already
//! queued there:
//!
//! * From page-locked host memory ([`CudaHostPinnedSpace`]) the copy is asynchronous: it
//!   returns once queued, and until the next fence of the instance the host view stays
//!   borrowed (read for an upload, written for a download), so host guards on it report the
//!   conflict instead of racing the DMA engine.
//! * From pageable memory ([`HostSpace`]) the driver may stage or block anyway (CUDA's API
//!   synchronization rules for pageable transfers), so the copy is made synchronous: it waits
//!   for the stream before it returns.

use std::any::Any;
use std::sync::Arc;

use hoplite_core::profiling::{CopySide, DeepCopyScope};
use hoplite_core::{ArrayLayout, HostAccessibleSpace, HostSpace, MemorySpace, View};

use crate::driver;
use crate::pending::Access;
use crate::{Cuda, CudaError, CudaHostPinnedSpace, DeviceAccessibleSpace, DeviceScalar};

/// Host memory a stream-ordered copy may use, and whether it is page-locked.
///
/// # Safety
///
/// With `PAGE_LOCKED = true` an implementation promises that every allocation of the space is
/// page-locked memory registered with the driver for every device's context
/// (`cuMemHostAlloc` or `cuMemHostRegister` with the portable flag) and stays so until it is
/// freed, so the device's copy engine may
/// read or write it after the call that queued the copy has returned.
pub unsafe trait HostTransferSpace: HostAccessibleSpace {
    /// Whether copies to and from the space can run asynchronously.
    const PAGE_LOCKED: bool;
}

// SAFETY: pageable memory does not claim to be page-locked; copies through it synchronize.
unsafe impl HostTransferSpace for HostSpace {
    const PAGE_LOCKED: bool = false;
}

// SAFETY: `CudaHostPinnedSpace` allocates with `cuMemHostAlloc(CU_MEMHOSTALLOC_PORTABLE)` in
// device 0's primary context (retained for the life of the process), which makes the memory
// page-locked for every context, and frees with `cuMemFreeHost`.
unsafe impl HostTransferSpace for CudaHostPinnedSpace {
    const PAGE_LOCKED: bool = true;
}

/// A host view with the extents and layout of `view`, every element `T::default()`, labelled
/// `<label>_mirror` (Kokkos' `create_mirror_view` of a device view; a host view's own mirror
/// is itself, `hoplite_core::create_mirror_view`).
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::{create_mirror_view, CudaSpace};
/// let x: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
/// let m = create_mirror_view(&x)?;
/// assert_eq!(m.extents(), x.extents());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// The host allocation's error.
pub fn create_mirror_view<T, const R: usize, L, S>(
    view: &View<T, R, L, S>,
) -> hoplite_core::Result<View<T, R, L, HostSpace>>
where
    T: DeviceScalar,
    L: ArrayLayout,
    S: DeviceAccessibleSpace,
{
    create_mirror_view_in(HostSpace, view)
}

/// A mirror of `view` in the host space `space`: [`CudaHostPinnedSpace`] for a staging view
/// whose copies run asynchronously.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::{create_mirror_view_in, CudaHostPinnedSpace, CudaSpace};
/// let x: View<f32, 1, LayoutLeft, CudaSpace> = View::default();
/// match create_mirror_view_in(CudaHostPinnedSpace, &x) {
///     Ok(m) => assert_eq!(m.len(), 0),
///     Err(e) => println!("{e}"), // pinned memory needs the driver
/// }
/// ```
///
/// # Errors
///
/// The host allocation's error.
pub fn create_mirror_view_in<T, const R: usize, L, S, H>(
    space: H,
    view: &View<T, R, L, S>,
) -> hoplite_core::Result<View<T, R, L, H>>
where
    T: DeviceScalar,
    L: ArrayLayout,
    S: DeviceAccessibleSpace,
    H: HostTransferSpace,
{
    View::new_in(space, &format!("{}_mirror", view.label()), view.extents())
}

/// A host mirror of `view` holding its contents (Kokkos' `create_mirror_view_and_copy`). The
/// copy waits for the work queued on `Cuda` instances.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::{create_mirror_view_and_copy, CudaSpace};
/// match View::<i32, 1, LayoutLeft, CudaSpace>::without_initializing("x", [4]) {
///     Ok(x) => assert_eq!(create_mirror_view_and_copy(&x)?.len(), 4),
///     Err(e) => println!("{e}"), // no device here
/// }
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// The host allocation's error; a view that is not contiguous (copy it into a contiguous
/// device view with `Cuda::copy` first); the driver's error.
pub fn create_mirror_view_and_copy<T, const R: usize, L, S>(
    view: &View<T, R, L, S>,
) -> hoplite_core::Result<View<T, R, L, HostSpace>>
where
    T: DeviceScalar,
    L: ArrayLayout,
    S: DeviceAccessibleSpace,
{
    let mirror = create_mirror_view(view)?;
    {
        let mut guard = mirror.host_write()?;
        let host = guard.as_mut_slice().ok_or_else(|| CudaError::Transfer {
            label: view.label().to_owned(),
            reason: "the mirror is not contiguous; use LayoutLeft or LayoutRight".to_owned(),
        })?;
        crate::copy_to_host(host, view)?;
    }
    Ok(mirror)
}

/// The bytes a copy between `a` and `b` moves: both contiguous, with the same extents.
/// Reports a copy of `bytes` bytes from `src` into `dst` to the Kokkos Tools connector until
/// the value drops (a synchronous copy ends when it is done, an asynchronous one when queued).
fn profile_transfer<T, const R: usize, L, S1, S2>(
    dst: &View<T, R, L, S1>,
    src: &View<T, R, L, S2>,
    bytes: usize,
) -> DeepCopyScope
where
    T: hoplite_core::ViewValue,
    L: ArrayLayout,
    S1: MemorySpace,
    S2: MemorySpace,
{
    let side = |space: &'static str, label, ptr: *const T| CopySide {
        space,
        label,
        ptr: ptr.cast(),
    };
    DeepCopyScope::begin(
        side(dst.space().profiling_name(), dst.label(), dst.data()),
        side(src.space().profiling_name(), src.label(), src.data()),
        bytes as u64,
    )
}

fn transfer_bytes<T, const R: usize, L, S1, S2>(
    a: &View<T, R, L, S1>,
    b: &View<T, R, L, S2>,
) -> Result<usize, CudaError>
where
    T: DeviceScalar,
    L: ArrayLayout,
    S1: hoplite_core::MemorySpace,
    S2: hoplite_core::MemorySpace,
{
    if a.extents() != b.extents() {
        return Err(CudaError::Transfer {
            label: a.label().to_owned(),
            reason: format!(
                "extents {:?} and {:?} (`{}`) differ; copy between views of the same extents",
                a.extents(),
                b.extents(),
                b.label()
            ),
        });
    }
    if let Some(label) = [(a.label(), a.is_contiguous()), (b.label(), b.is_contiguous())]
        .into_iter()
        .find_map(|(label, contiguous)| (!contiguous).then_some(label))
    {
        return Err(CudaError::Transfer {
            label: label.to_owned(),
            reason: "the view is not contiguous; copy through a contiguous view (Cuda::copy on the device)"
                .to_owned(),
        });
    }
    Ok(a.len() * size_of::<T>())
}

/// A host borrow that conflicts with another handle, as the transfer's error.
fn borrowed(label: &str, conflict: &hoplite_core::Error) -> CudaError {
    CudaError::Transfer {
        label: label.to_owned(),
        reason: format!(
            "the host view is in use ({conflict}); drop its guards, or fence the instance that copies it"
        ),
    }
}

impl Cuda {
    /// Runs `copy`, which queues a copy on `stream` with host memory of `H` touching
    /// `device_bytes` of the device view, after the conflicting work queued on other instances,
    /// and ends it: from or into page-locked memory it runs on after this returns, so `keep`
    /// (the host view's handle and the device view) stays alive until the next fence, and the
    /// copy is recorded as queued work ([`Cuda::queue_work`]); with pageable memory the copy
    /// is waited for now.
    fn transfer<H: HostTransferSpace>(
        &self,
        what: &'static str,
        stream: &driver::Stream,
        device_bytes: Access,
        keep: [Arc<dyn Any + Send + Sync>; 2],
        copy: impl FnOnce() -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        if H::PAGE_LOCKED {
            self.queue_work(what, &[device_bytes], &[stream.device.ordinal], || {
                copy()?;
                self.inner.keep_alive.keep(keep);
                Ok(())
            })
        } else {
            self.wait_for_queued(&[device_bytes])?;
            copy()?;
            stream.synchronize()
        }
    }

    /// The stream for a copy of the device view `label`, whose memory is device
    /// `view_device`'s: refused on another device's stream (no peer access).
    fn transfer_stream(&self, label: &str, view_device: usize) -> Result<&driver::Stream, CudaError> {
        let stream = self.stream()?;
        if stream.device.ordinal != view_device {
            return Err(CudaError::WrongDevice {
                what: format!("the copy's device view `{label}`"),
                view_device,
                instance_device: stream.device.ordinal,
            });
        }
        Ok(stream)
    }

    /// Copies the host view `src` into the device view `dst` (same extents and layout, both
    /// contiguous) on this instance's stream, after the work queued on it. From
    /// [`CudaHostPinnedSpace`] the copy is asynchronous and `src` stays borrowed for reading
    /// until the next fence; from [`HostSpace`] it waits for the stream before returning (see
    /// "Mirrors and stream-ordered copies" in docs/cuda.md).
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{create_mirror_view_in, Cuda, CudaHostPinnedSpace, CudaSpace};
    /// let run = || -> Result<(), Box<dyn std::error::Error>> {
    ///     let cuda = Cuda::new()?;
    ///     let x = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [1024])?;
    ///     let staging = create_mirror_view_in(CudaHostPinnedSpace, &x)?;
    ///     staging.host_write()?.fill(1.0);
    ///     cuda.deep_copy_to_device(&x, &staging)?; // queued
    ///     assert!(staging.host_write().is_err()); // the copy still reads it
    ///     cuda.synchronize()?;
    ///     staging.host_write()?.fill(2.0);
    ///     Ok(())
    /// };
    /// if let Err(e) = run() {
    ///     println!("{e}"); // no device here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::Transfer`] for different extents, a view that is not contiguous, or a host
    /// view another handle writes; why this instance has no device; the driver's error.
    pub fn deep_copy_to_device<T, const R: usize, L, S, H>(
        &self,
        dst: &View<T, R, L, S>,
        src: &View<T, R, L, H>,
    ) -> Result<(), CudaError>
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace + 'static,
        H: HostTransferSpace + 'static,
    {
        let bytes = transfer_bytes(dst, src)?;
        let reader = src.read();
        if let Some(conflict) = reader.conflict() {
            return Err(borrowed(src.label(), conflict));
        }
        if bytes == 0 {
            return Ok(());
        }
        let stream = self.transfer_stream(dst.label(), dst.space().device_ordinal())?;
        let _profiled = profile_transfer(dst, src, bytes);
        let device_bytes = Access::bytes(dst.data() as usize as u64, bytes as u64, true);
        let keep = [
            Arc::new(reader) as Arc<dyn Any + Send + Sync>,
            Arc::new(dst.clone()),
        ];
        self.transfer::<H>("deep_copy_to_device", stream, device_bytes, keep, || {
            // SAFETY: `dst` is a contiguous device view of `bytes` bytes in the context of the
            // device its space names, the stream's (checked just above); `src` is `bytes`
            // contiguous bytes of host memory that no host writer touches while `reader` is
            // held: until `transfer`'s synchronization (pageable memory), or until the next
            // fence, which drops the reader and the views kept alive (page-locked memory,
            // which the copy engine reads after this returns).
            unsafe {
                driver::copy_to_device_async(stream, dst.data() as usize as u64, src.data().cast(), bytes)
            }
        })
    }

    /// Copies the device view `src` into the host view `dst` (same extents and layout, both
    /// contiguous) on this instance's stream, after the work queued on it. Into
    /// [`CudaHostPinnedSpace`] the copy is asynchronous and `dst` stays borrowed for writing
    /// until the next fence (read it after the fence); into [`HostSpace`] it waits for the
    /// stream before returning.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{create_mirror_view, Cuda, CudaError, CudaSpace};
    /// let x: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// let m = create_mirror_view(&x)?;
    /// match Cuda::new() {
    ///     Ok(cuda) => cuda.deep_copy_to_host(&m, &x)?,
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`deep_copy_to_device`](Self::deep_copy_to_device), and a host view another
    /// handle reads or writes.
    pub fn deep_copy_to_host<T, const R: usize, L, S, H>(
        &self,
        dst: &View<T, R, L, H>,
        src: &View<T, R, L, S>,
    ) -> Result<(), CudaError>
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace + 'static,
        H: HostTransferSpace + 'static,
    {
        let bytes = transfer_bytes(dst, src)?;
        let writer = dst.write();
        if let Some(conflict) = writer.conflict() {
            return Err(borrowed(dst.label(), conflict));
        }
        if bytes == 0 {
            return Ok(());
        }
        let stream = self.transfer_stream(src.label(), src.space().device_ordinal())?;
        let _profiled = profile_transfer(dst, src, bytes);
        let device_bytes = Access::bytes(src.data() as usize as u64, bytes as u64, false);
        let keep = [
            Arc::new(writer) as Arc<dyn Any + Send + Sync>,
            Arc::new(src.clone()),
        ];
        self.transfer::<H>("deep_copy_to_host", stream, device_bytes, keep, || {
            // SAFETY: `src` is a contiguous device view of `bytes` bytes in the stream's
            // device's context (checked just above); `dst` is `bytes` contiguous bytes of host
            // memory that no other handle reads or writes while `writer` is held: until
            // `transfer`'s synchronization, or until the next fence (page-locked memory). The
            // bytes written are values of `T` (device views hold values of their element
            // type, which `DeviceScalar` gives `T`'s representation).
            unsafe {
                driver::copy_to_host_async(
                    stream,
                    dst.data().cast_mut().cast(),
                    src.data() as usize as u64,
                    bytes,
                )
            }
        })
    }
}
