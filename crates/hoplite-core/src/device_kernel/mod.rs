//! Kernels for devices: what `#[kernel]` (crate `hoplite-macros`) tells a device backend about
//! a kernel it translated to CUDA C.
//!
//! A closure cannot run on a GPU, so a device backend needs the kernel as source. The
//! `#[kernel]` attribute keeps a function as ordinary Rust for the host backends and also
//! implements [`DeviceKernel`] for it: the CUDA C source of one `extern "C" __global__` entry,
//! the layout of that entry's parameters and a stable hash to cache the compiled module by.
//! Nothing here depends on CUDA; a backend compiles [`cuda_source`](DeviceKernel::cuda_source)
//! with NVRTC and launches [`ENTRY`](DeviceKernel::ENTRY) with the parameters laid out as
//! [`params`](DeviceKernel::params) says.
//!
//! # Launches on a device
//!
//! A device space takes the same launches as a host space:
//! `parallel_for(label, (policy, (y.write(), x.read())), axpy::with(a))`. The kernel a launch
//! hands the backend is a closure; `#[kernel]`'s `with` makes one whose type is registered
//! with the kernel's description and a reader of its scalar captures, so a device backend asks
//! the launch's kernel for its [`DeviceLaunch`] (the kernel, the scalars in declaration order,
//! each handle's view as a [`DeviceHandle`]) and gets `None` for any other closure, which it
//! refuses with [`Error::NotADeviceKernel`](crate::Error::NotADeviceKernel). The protocol and
//! its safety argument are in `device_kernel/launch.rs`; [`with_closure_scalars`] shows what a
//! backend sees.
//!
//! # The device ABI
//!
//! The types here that describe a kernel to a device ([`ScalarType`], [`ScalarValue`],
//! [`DeviceParam`], [`DevicePattern`], [`DeviceIteration`], [`DeviceJoin`],
//! [`DeviceKernelInfo`], the [`DeviceKernel`] trait itself) and [`stable_hash`] are defined in
//! the dependency-free crate [`hoplite_abi`] and re-exported here, so that `#[kernel]` (a
//! proc-macro crate), a device backend and the host check of the generated C share one
//! definition. That crate also documents the order and layout of an entry's parameters
//! ([`hoplite_abi#entry-parameters`]) and of team scratch ([`hoplite_abi#team-scratch`]), and
//! holds the packer that lays a launch's arguments out ([`hoplite_abi::pack_for`]).

mod dyn_reducer;
mod launch;
mod team_member;

pub use dyn_reducer::DynReducer;

pub use launch::{
    DeviceHandle, DeviceLaunch, DeviceToken, DeviceTokenArg, device_launch_of, with_closure_scalars,
};
#[doc(hidden)]
pub use launch::{WithClosure, no_tokens, register_generic_with_closure, register_with_closure};
pub use team_member::DeviceTeamMember;

pub use hoplite_abi::{
    DeviceIteration, DeviceJoin, DeviceKernel, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess,
    ReduceWalk, ScalarType, ScalarValue, stable_hash,
};
