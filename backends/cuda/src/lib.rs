//! The CUDA backend of hoplite: the [`Cuda`] execution space (instances are streams), which
//! takes the core's `parallel_for`, `parallel_reduce` and `parallel_scan` of `#[kernel]`
//! kernels as every backend does, the [`CudaSpace`], [`CudaUVMSpace`] and
//! [`CudaHostPinnedSpace`] memory spaces, launch geometry and occupancy ([`geometry`]), kernel
//! parameter packing ([`params`]), the NVRTC module cache ([`nvrtc`]) that compiles
//! `#[kernel]` kernels at first use, device reductions and scans ([`reduce`]), the library's fill and copy kernels ([`library`]),
//! CUDA Graphs behind hoplite-graph (`graph`), DAG streams for hoplite-dag (`dag`),
//! streams as hoplite-select resources timed with CUDA events (`select`) — those three behind
//! the cargo features of the same names, below —, GrCUDA-style
//! raw kernels from CUDA C and a signature ([`raw`]), unique tokens for device kernels
//! ([`CudaUniqueToken`]) and peer access between GPUs ([`can_access_peer`], [`Cuda::enable_peer_access`]).
//!
//! The crate builds and its tests run on machines without CUDA: the driver (`libcuda`) and
//! NVRTC are loaded at run time, every driver call sits behind the check that the library is
//! present, and without it the public API returns [`CudaError::NoDriver`] or
//! [`CudaError::NoDevice`] instead of panicking. See `docs/cuda.md`.
//!
//! # Cargo features
//!
//! The adapters to hoplite's front ends are features, all on by default, so that this crate
//! alone is the whole backend; with `default-features = false` it is the core backend
//! (spaces, launches, reductions and scans, fills and copies, NVRTC, raw kernels, tokens, peer
//! access) and does not depend on the front ends:
//!
//! | feature | what it adds | depends on |
//! |---|---|---|
//! | `dag` | `dag` (`CudaDevice`, `CudaStream`, `CudaEvent`: `#[kernel]` launches as implicit-DAG vertices on CUDA streams) and `bandwidth` | hoplite-dag, hoplite-graph |
//! | `graph` | `graph` (`CudaGraph`: the generic builder's graphs as CUDA Graphs) | hoplite-graph |
//! | `select` | `select` (`CudaBackend`) | hoplite-select |
//!
//! The `hoplite` facade's `cuda` feature turns all three on.
//!
//! ```
//! use hoplite_core::ExecutionSpace;
//! use hoplite_cuda::Cuda;
//!
//! let mut out = Vec::new();
//! Cuda::default().print_configuration(&mut out, true)?;
//! println!("{}", String::from_utf8_lossy(&out)); // the device, or why there is none
//! # Ok::<(), std::io::Error>(())
//! ```
// On docs.rs (`--cfg docsrs`, nightly): each feature-gated item says which feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "dag")]
pub mod bandwidth;
#[cfg(feature = "dag")]
pub mod dag;
mod dispatch;
mod driver;
mod error;
pub mod geometry;
#[cfg(feature = "graph")]
pub mod graph;
mod launch;
pub mod library;
mod memory;
mod mirror;
pub mod nvrtc;
pub mod params;
mod peer;
mod pending;
pub mod raw;
pub mod reduce;
#[cfg(feature = "select")]
pub mod select;
mod space;
mod token;

pub use driver::{
    DEVICES_ENV as EMULATED_DEVICES_ENV, DRIVER_ENV, EMULATED_BUILD_DIR_ENV, SANITIZER_ENV, SCHEDULE_SEED_ENV,
};
pub use error::CudaError;
pub use launch::DeviceScalar;
pub use memory::{
    CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, DeviceAccessibleSpace, copy_to_device, copy_to_host,
};
pub use mirror::{HostTransferSpace, create_mirror_view, create_mirror_view_and_copy, create_mirror_view_in};
pub use peer::can_access_peer;
pub use space::{CONFLICT_FENCE, Cuda, StreamEvent};
pub use token::{CudaUniqueToken, device_token_size, lock_words};

/// Whether the CUDA driver library can be loaded on this machine (a GPU may still be
/// missing: [`Cuda::new`] says).
///
/// ```
/// if !hoplite_cuda::driver_present() {
///     println!("no CUDA driver: Cuda instances report CudaError::NoDriver");
/// }
/// ```
pub fn driver_present() -> bool {
    !matches!(driver::driver(), Err(CudaError::NoDriver { .. }))
}

/// Makes the emulated CUDA driver this process's driver, as `HOPLITE_CUDA_DRIVER=emulated`
/// does: the whole backend then runs on the CPU (streams as threads, kernels compiled by the
/// host C++ compiler), for tests and CI on machines without a GPU. It is never chosen without
/// being asked for. Call it before any other hoplite-cuda call.
///
/// ```
/// # if std::env::var_os("HOPLITE_CUDA_DRIVER").is_some() { return Ok(()); }
/// hoplite_cuda::use_emulated_driver()?;
/// assert!(hoplite_cuda::driver_is_emulated());
/// assert!(hoplite_cuda::device_count()? >= 1);
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::DriverChosen`] when the process already uses another driver.
pub fn use_emulated_driver() -> Result<(), CudaError> {
    driver::use_emulated()
}

/// Whether the driver is the emulated one (`HOPLITE_CUDA_DRIVER=emulated`), which runs the
/// backend on the CPU: tests that measure or need a real GPU skip themselves on it.
///
/// ```
/// if hoplite_cuda::driver_is_emulated() {
///     println!("kernels run on the CPU under the emulated CUDA driver");
/// }
/// ```
pub fn driver_is_emulated() -> bool {
    driver::driver().is_ok_and(|d| d.is_emulated())
}

/// How many CUDA devices the driver reports (`cuDeviceGetCount`); [`Cuda::on_device`] takes
/// ordinals below it.
///
/// ```
/// match hoplite_cuda::device_count() {
///     Ok(n) => assert!(n >= 1),
///     Err(e) => println!("{e}"), // no driver, or a driver without devices
/// }
/// ```
///
/// # Errors
///
/// [`CudaError::NoDriver`], [`CudaError::NoDevice`] (a driver that sees none),
/// [`CudaError::DriverTooOld`] or the driver's error.
pub fn device_count() -> Result<usize, CudaError> {
    Ok(driver::driver()?.device_count)
}

/// What the environment setting `name` (its value `value`) chooses between `on` and `off`,
/// unset meaning `off`: any other value is reported on standard error, saying that it is
/// taken as `off` (`off_means`), so that a misspelt setting does not pass unnoticed.
pub(crate) fn switch_setting(name: &str, value: Option<&str>, [on, off]: [&str; 2], off_means: &str) -> bool {
    match value {
        Some(v) if v == on => true,
        None => false,
        Some(v) if v == off => false,
        Some(other) => {
            eprintln!("hoplite-cuda: {name}={other:?} is neither `{on}` nor `{off}`; {off_means} (`{off}`)");
            false
        }
    }
}
