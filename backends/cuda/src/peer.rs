//! Peer access between GPUs: whether a device can use another's memory
//! ([`can_access_peer`]) and enabling it for an instance's device
//! ([`Cuda::enable_peer_access`]), after which that instance's launches take the peer's
//! views (Kokkos/CUDA programs call `cudaDeviceEnablePeerAccess` for the same).
//!
//! Access is per pair of contexts and one way: enabling it from device 0 to device 1 lets
//! kernels on device 0 read and write device 1's memory, not the other way round. The backend
//! uses each device's primary context, retained for the life of the process, so access once
//! enabled lasts until the process ends; a process-wide table records the enabled pairs and
//! every launch consults it.

use crate::driver::{self, Device};
use crate::{Cuda, CudaError};

/// Whether kernels on device `device` can read and write device `peer`'s memory once peer
/// access is enabled (`cuDeviceCanAccessPeer`: NVLink or a PCIe path the hardware allows). A
/// device always reaches its own memory, so `can_access_peer(d, d)` is `true`.
///
/// ```
/// use hoplite_cuda::{can_access_peer, Cuda};
///
/// match can_access_peer(0, 1) {
///     Ok(true) => {
///         let cuda = Cuda::on_device(0)?;
///         cuda.enable_peer_access(1)?; // launches on `cuda` now take device 1's views
///     }
///     Ok(false) => println!("no peer path from GPU 0 to GPU 1: copy the data instead"),
///     Err(e) => println!("{e}"), // no driver, or fewer than two GPUs
/// }
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::NoDriver`], [`CudaError::NoDevice`], [`CudaError::DriverTooOld`];
/// [`CudaError::InvalidDevice`] for an ordinal past the last device; the driver's error.
pub fn can_access_peer(device: usize, peer: usize) -> Result<bool, CudaError> {
    driver::can_access_peer(device, peer)
}

impl Cuda {
    /// Enables peer access from this instance's GPU to GPU `peer` (`cuCtxEnablePeerAccess` in
    /// this GPU's primary context): afterwards kernels launched on any instance of this GPU
    /// (`parallel_for`, `parallel_reduce`, `parallel_scan` of `#[kernel]`s, `launch_raw*`,
    /// `fill`, `copy`, and the nodes of a `CudaGraph` instantiated afterwards) take views of
    /// `peer`'s memory
    /// and read and write it over the peer link, where without it they refuse them with
    /// [`CudaError::WrongDevice`].
    ///
    /// Access is one way (enable it on an instance of `peer` too for the other direction) and
    /// lasts for the rest of the process. Enabling it again, or for the instance's own GPU, is
    /// `Ok`. [`Cuda::copy`] between contiguous views of two GPUs of the same order needs no
    /// peer access (it uses `cuMemcpyPeerAsync`); the copies between host and device views
    /// (`deep_copy_to_device`, `deep_copy_to_host`) still take only views of the instance's
    /// GPU.
    ///
    /// ```
    /// use hoplite::prelude::*;
    /// use hoplite::{BoundReader, BoundWriter, kernel};
    /// use hoplite_core::{LayoutRight, View};
    /// use hoplite_cuda::{Cuda, CudaError, CudaSpace};
    ///
    /// #[kernel]
    /// fn scale(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    ///     y.set(i, a * x.get(i));
    /// }
    ///
    /// let run = || -> Result<(), Box<dyn std::error::Error>> {
    ///     let cuda = Cuda::on_device(0)?;
    ///     let x = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(1), "x", [1000])?;
    ///     let y = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(CudaSpace::on_device(0), "y", [1000])?;
    ///     match cuda.enable_peer_access(1) {
    ///         Ok(()) => {
    ///             // GPU 0 reads x on GPU 1 over the peer link.
    ///             let range = RangePolicy::new(cuda.clone(), 0..1000);
    ///             parallel_for("scale", (range, (y.write(), x.read())), scale::with(2.0))?;
    ///             cuda.fence()?;
    ///         }
    ///         Err(CudaError::PeerAccessUnsupported { .. }) => {
    ///             println!("no peer path: copy x to GPU 0 first");
    ///         }
    ///         Err(e) => return Err(e.into()),
    ///     }
    ///     Ok(())
    /// };
    /// if let Err(e) = run() {
    ///     println!("{e}"); // no driver, or fewer than two GPUs
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// Why this instance has no device; [`CudaError::InvalidDevice`] for a `peer` past the last
    /// device; [`CudaError::PeerAccessUnsupported`], naming both devices, when the hardware has
    /// no peer path between them; the driver's error (such as `CUDA_ERROR_TOO_MANY_PEERS`).
    pub fn enable_peer_access(&self, peer: usize) -> Result<(), CudaError> {
        let device = &self.stream()?.device;
        if peer == device.ordinal {
            return Ok(());
        }
        let peer = Device::get(peer)?;
        driver::enable_peer_access(device, &peer)
    }
}
