//! The library's own device kernels, written with `#[kernel]` like any user kernel: filling a
//! view with a value and copying between views of any layout and strides, ranks 1 to 3.
//!
//! A kernel's element type is fixed, but filling and copying only move bits, so each exists
//! per element size: 1 byte (`bool`), 4 bytes (`u32`, also carrying `i32` and `f32`) and 8
//! bytes (`u64`, also carrying `i64`, `f64`, `usize`, `isize`). [`Cuda::fill`] and
//! [`Cuda::copy`] pick the kernel from the element size and the rank and hand the view to it as
//! a view of that carrier type (same pointer, extents and strides).

use hoplite_core::device_kernel::{DeviceKernel, DeviceKernelInfo, HandleAccess, ScalarType};
use hoplite_core::{ArrayLayout, Idx, MdIdx, View};
use hoplite_core::{BoundReader, BoundWriter};
use hoplite_macros::kernel;

use crate::launch::DeviceArg;
use crate::pending::Access;
use crate::reduce::DeviceReduceValue;
use crate::{Cuda, CudaError, DeviceAccessibleSpace, DeviceScalar};

macro_rules! fill_and_copy {
    ($t:ident: $fill1:ident $fill2:ident $fill3:ident, $copy1:ident $copy2:ident $copy3:ident) => {
        #[doc = concat!("Fills a rank-1 view of `", stringify!($t), "` bits with `value`.")]
        #[kernel(crate = hoplite_core)]
        pub fn $fill1(i: Idx<'_>, dst: BoundWriter<'_, $t, 1>, value: $t) {
            dst.set(i, value);
        }

        #[doc = concat!("Fills a rank-2 view of `", stringify!($t), "` bits with `value`.")]
        #[kernel(crate = hoplite_core)]
        pub fn $fill2(ij: MdIdx<'_, 2>, dst: BoundWriter<'_, $t, 2>, value: $t) {
            dst.set(ij, value);
        }

        #[doc = concat!("Fills a rank-3 view of `", stringify!($t), "` bits with `value`.")]
        #[kernel(crate = hoplite_core)]
        pub fn $fill3(ijk: MdIdx<'_, 3>, dst: BoundWriter<'_, $t, 3>, value: $t) {
            dst.set(ijk, value);
        }

        #[doc = concat!("Copies a rank-1 view of `", stringify!($t), "` bits, any strides.")]
        #[kernel(crate = hoplite_core)]
        pub fn $copy1(i: Idx<'_>, dst: BoundWriter<'_, $t, 1>, src: BoundReader<'_, $t, 1>) {
            dst.set(i, src.get(i));
        }

        #[doc = concat!("Copies a rank-2 view of `", stringify!($t), "` bits, any strides.")]
        #[kernel(crate = hoplite_core)]
        pub fn $copy2(ij: MdIdx<'_, 2>, dst: BoundWriter<'_, $t, 2>, src: BoundReader<'_, $t, 2>) {
            dst.set(ij, src.get(ij));
        }

        #[doc = concat!("Copies a rank-3 view of `", stringify!($t), "` bits, any strides.")]
        #[kernel(crate = hoplite_core)]
        pub fn $copy3(ijk: MdIdx<'_, 3>, dst: BoundWriter<'_, $t, 3>, src: BoundReader<'_, $t, 3>) {
            dst.set(ijk, src.get(ijk));
        }
    };
}

fill_and_copy!(bool: fill_b8_1 fill_b8_2 fill_b8_3, copy_b8_1 copy_b8_2 copy_b8_3);
fill_and_copy!(u32: fill_b32_1 fill_b32_2 fill_b32_3, copy_b32_1 copy_b32_2 copy_b32_3);
fill_and_copy!(u64: fill_b64_1 fill_b64_2 fill_b64_3, copy_b64_1 copy_b64_2 copy_b64_3);

/// The carrier of an element type: the kernels' element type of the same size.
fn carrier(scalar: ScalarType) -> ScalarType {
    match scalar.size() {
        1 => ScalarType::Bool,
        4 => ScalarType::U32,
        _ => ScalarType::U64,
    }
}

/// The rank a library kernel handles, or the typed error.
fn check_rank<const R: usize>(what: &'static str) -> Result<(), CudaError> {
    if (1..=3).contains(&R) {
        Ok(())
    } else {
        Err(CudaError::InvalidLaunch {
            kernel: what,
            reason: format!("views of rank {R}: the device {what} takes ranks 1 to 3"),
        })
    }
}

/// The iteration space of a whole view: its extents as MDRange ends.
fn ends<const R: usize, const N: usize>(extents: [usize; R]) -> [usize; N] {
    let mut out = [0; N];
    for (o, e) in out.iter_mut().zip(extents) {
        *o = e;
    }
    out
}

/// The kernel `K` as the launches find it.
fn info<K: DeviceKernel>() -> DeviceKernelInfo {
    DeviceKernelInfo::of::<K>()
}

impl Cuda {
    /// Launches the kernel of `kernels` (for ranks 1, 2 and 3) over the whole of a view of
    /// extents `e`.
    fn launch_whole<const R: usize>(
        &self,
        kernels: &[DeviceKernelInfo; 3],
        e: [usize; R],
        args: &[DeviceArg],
    ) -> Result<(), CudaError> {
        match R {
            1 => self.launch_range_info(&kernels[0], 0..e[0], args, None),
            2 => self.launch_mdrange_info::<2>(&kernels[1], [0; 2], ends(e), args, None),
            _ => self.launch_mdrange_info::<3>(&kernels[2], [0; 3], ends(e), args, None),
        }
    }

    /// Sets every element of the device view `view` to `value` on this instance's stream (the
    /// device `deep_copy(view, value)`), any layout and strides, ranks 1 to 3. Returns once
    /// the fill is queued, after the conflicting work queued on other instances;
    /// [`fence`](hoplite_core::ExecutionSpace::fence) waits for it, and so does another
    /// instance's later work on the view (a fill of another GPU's view, through peer access,
    /// waits for itself).
    ///
    /// ```
    /// use hoplite_core::{LayoutRight, View};
    /// use hoplite_cuda::{Cuda, CudaSpace};
    ///
    /// let cuda = Cuda::default();
    /// let v: View<f64, 2, LayoutRight, CudaSpace> = View::default();
    /// match cuda.fill(&v, 1.5) {
    ///     Ok(()) => assert!(cuda.is_available()),
    ///     Err(e) => println!("{e}"), // no device here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::InvalidLaunch`] for a rank above 3; why this instance has no device; the
    /// driver's and NVRTC's errors.
    pub fn fill<T, const R: usize, L, S>(&self, view: &View<T, R, L, S>, value: T) -> Result<(), CudaError>
    where
        T: DeviceScalar + DeviceReduceValue,
        L: ArrayLayout,
        S: DeviceAccessibleSpace,
    {
        check_rank::<R>("fill")?;
        let element = carrier(T::SCALAR);
        let dst = DeviceArg::handle_as(view, HandleAccess::Write, element);
        let mut bits = [0u8; 8];
        value.write_device(&mut bits);
        let value = match element {
            ScalarType::Bool => DeviceArg::scalar(bits[0] != 0),
            ScalarType::U32 => DeviceArg::scalar(u32::from_le_bytes([bits[0], bits[1], bits[2], bits[3]])),
            _ => DeviceArg::scalar(u64::from_le_bytes(bits)),
        };
        let args = [dst, value];
        let accesses: Vec<Access> = args.iter().filter_map(DeviceArg::access).collect();
        let e = view.extents();
        self.queue_work("fill", &accesses, &[view.space().device_ordinal()], || {
            let kernels = match element {
                ScalarType::Bool => [info::<fill_b8_1>(), info::<fill_b8_2>(), info::<fill_b8_3>()],
                ScalarType::U32 => [info::<fill_b32_1>(), info::<fill_b32_2>(), info::<fill_b32_3>()],
                _ => [info::<fill_b64_1>(), info::<fill_b64_2>(), info::<fill_b64_3>()],
            };
            self.launch_whole(&kernels, e, &args)
        })
    }

    /// Copies the device view `src` into the device view `dst` on this instance's stream:
    /// same element type and extents, any layouts and strides (subviews, transposes), ranks 1
    /// to 3. Returns once the copy is queued, after the conflicting work queued on other
    /// instances; [`fence`](hoplite_core::ExecutionSpace::fence) waits for it, and so does
    /// another instance's later work on either view.
    ///
    /// Between two GPUs (one of them this instance's), the copy waits for itself before it
    /// returns (the other GPU's host copies are not ordered after this stream); contiguous
    /// views with the same element
    /// order are copied with `cuMemcpyPeerAsync`, which needs no peer access (the driver
    /// stages the copy where the GPUs have no peer path); other layouts go through the copy
    /// kernel, which takes the other GPU's view after
    /// [`enable_peer_access`](Cuda::enable_peer_access) and is refused it otherwise.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, LayoutRight, View};
    /// use hoplite_cuda::{Cuda, CudaError, CudaSpace};
    ///
    /// let cuda = Cuda::default();
    /// let a: View<f32, 2, LayoutLeft, CudaSpace> = View::default();
    /// let b: View<f32, 2, LayoutRight, CudaSpace> = View::default();
    /// match cuda.copy(&b, &a) {
    ///     Ok(()) => assert!(cuda.is_available()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::Transfer`] when the extents differ; [`CudaError::InvalidLaunch`] for a rank
    /// above 3 or views whose memory overlaps; [`CudaError::WrongDevice`] for a view of a GPU
    /// that neither the peer copy nor the kernel can reach from this instance; why this
    /// instance has no device; the driver's and NVRTC's errors.
    pub fn copy<T, const R: usize, L1, L2, S1, S2>(
        &self,
        dst: &View<T, R, L1, S1>,
        src: &View<T, R, L2, S2>,
    ) -> Result<(), CudaError>
    where
        T: DeviceScalar,
        L1: ArrayLayout,
        L2: ArrayLayout,
        S1: DeviceAccessibleSpace,
        S2: DeviceAccessibleSpace,
    {
        check_rank::<R>("copy")?;
        let e = dst.extents();
        if e != src.extents() {
            return Err(CudaError::Transfer {
                label: dst.label().to_owned(),
                reason: format!(
                    "the destination has extents {e:?}, the source `{}` {:?}; copy between views of the same extents",
                    src.label(),
                    src.extents()
                ),
            });
        }
        let element = carrier(T::SCALAR);
        let args = [
            DeviceArg::handle_as(dst, HandleAccess::Write, element),
            DeviceArg::handle_as(src, HandleAccess::Read, element),
        ];
        let accesses: Vec<Access> = args.iter().filter_map(DeviceArg::access).collect();
        let same_order = dst.is_contiguous() && src.is_contiguous() && dst.strides() == src.strides();
        let [to, from] = [dst.space().device_ordinal(), src.space().device_ordinal()];
        if let Ok(instance) = self.device()
            && copies_between_peers(instance, to, from, same_order)
        {
            return self.queue_work("copy", &accesses, &[to, from], || {
                self.copy_between_peers(&args, to, from, dst.len() * size_of::<T>())
            });
        }
        let kernels = match element {
            ScalarType::Bool => [info::<copy_b8_1>(), info::<copy_b8_2>(), info::<copy_b8_3>()],
            ScalarType::U32 => [info::<copy_b32_1>(), info::<copy_b32_2>(), info::<copy_b32_3>()],
            _ => [info::<copy_b64_1>(), info::<copy_b64_2>(), info::<copy_b64_3>()],
        };
        self.queue_work("copy", &accesses, &[to, from], || {
            self.launch_whole(&kernels, e, &args)
        })
    }
}

/// Whether [`Cuda::copy`] on an instance of device `instance` copies between devices `to`
/// and `from` with `cuMemcpyPeerAsync` rather than the copy kernel: the views are on two GPUs,
/// one of them the instance's (its stream orders the copy), and `same_order` (both contiguous
/// with the same strides, so the bytes line up).
pub(crate) fn copies_between_peers(instance: usize, to: usize, from: usize, same_order: bool) -> bool {
    to != from && (instance == to || instance == from) && same_order
}

impl Cuda {
    /// The peer copy of [`Cuda::copy`]: `args` are the destination's and the source's handles,
    /// `bytes` their length; the views stay alive until the next fence.
    fn copy_between_peers(
        &self,
        args: &[DeviceArg; 2],
        to: usize,
        from: usize,
        bytes: usize,
    ) -> Result<(), CudaError> {
        let stream = self.stream()?;
        if bytes == 0 {
            return Ok(());
        }
        let address = |a: &DeviceArg| a.bytes.map_or(0, |(lo, _)| lo);
        let (dst_device, src_device) = (crate::driver::Device::get(to)?, crate::driver::Device::get(from)?);
        // SAFETY: the handles are of live views (kept alive below until the next fence) on
        // devices `to` and `from`, contiguous, so `bytes` (their length in bytes) from their
        // first element lie inside their allocations; views on two devices never overlap. As
        // for kernel launches, work of other streams on the views is ordered by the caller.
        unsafe {
            crate::driver::copy_peer_async(
                stream,
                address(&args[0]),
                &dst_device,
                address(&args[1]),
                &src_device,
                bytes,
            )
        }?;
        self.inner
            .keep_alive
            .keep(args.iter().filter_map(|a| a.keep.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_between_two_gpus_of_the_same_order_go_peer_to_peer() {
        // Instance of device 0: to or from device 1, contiguous in the same order.
        assert!(copies_between_peers(0, 1, 0, true));
        assert!(copies_between_peers(0, 0, 1, true));
        // Other layouts take the copy kernel (which needs peer access).
        assert!(!copies_between_peers(0, 1, 0, false));
        // Both views on one device: the kernel, on that device's instance or through peer
        // access.
        assert!(!copies_between_peers(0, 0, 0, true));
        assert!(!copies_between_peers(0, 1, 1, true));
        // Neither view on the instance's device: the kernel's device check decides.
        assert!(!copies_between_peers(0, 1, 2, true));
    }

    #[test]
    fn carriers_keep_the_size() {
        for s in [
            ScalarType::Bool,
            ScalarType::I32,
            ScalarType::U32,
            ScalarType::F32,
            ScalarType::I64,
            ScalarType::U64,
            ScalarType::F64,
            ScalarType::Usize,
            ScalarType::Isize,
        ] {
            assert_eq!(carrier(s).size(), s.size(), "{s}");
        }
        assert_eq!(ends::<2, 3>([4, 5]), [4, 5, 0]);
        assert_eq!(ends::<3, 3>([4, 5, 6]), [4, 5, 6]);
        assert!(check_rank::<4>("fill").is_err());
        assert!(check_rank::<3>("fill").is_ok());
    }
}
