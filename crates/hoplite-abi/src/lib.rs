//! The device ABI of hoplite's `#[kernel]`s, defined once: the scalar types a kernel uses
//! ([`ScalarType`], [`ScalarValue`]), what a kernel tells a device backend about itself
//! ([`DeviceKernel`], [`DeviceKernelInfo`], [`DeviceParam`], [`DevicePattern`],
//! [`DeviceIteration`], [`DeviceJoin`]), the layout of its entry's parameters and the packer
//! that checks a launch's arguments against them and lays them out ([`pack_for`],
//! [`pack_reduce`], [`pack_scan`] into a [`ParamBuffer`]), and the hash compiled modules are
//! cached by ([`stable_hash`]).
//!
//! The crate has no dependencies, so that every party to the ABI uses the same definition:
//! `hoplite-macros` (a proc-macro crate, which cannot depend on `hoplite-core`) hashes and
//! names scalar types with it; `hoplite-core` re-exports it from `hoplite_core::device_kernel`;
//! the CUDA backend packs every launch of a `#[kernel]` with [`pack_for`] & co.; and
//! `hoplite-kernel-check`, which runs the generated CUDA C on the CPU, packs its host launches
//! with the same functions, so that a host run proves the parameter block a GPU gets.
//!
//! ```
//! use hoplite_abi::{
//!     DeviceIteration, DeviceKernelInfo, DeviceParam, DevicePattern, IterationArgs, KernelArg,
//!     ScalarType, ScalarValue, pack_for,
//! };
//!
//! const PARAMS: &[DeviceParam] = &[DeviceParam::Scalar { name: "a", ty: ScalarType::F32 }];
//! let kernel = DeviceKernelInfo {
//!     name: "scale",
//!     entry: "scale_for",
//!     iteration: DeviceIteration::Range,
//!     pattern: DevicePattern::For,
//!     params: PARAMS,
//!     cuda_source: "",
//!     source_hash: 0,
//! };
//! let range = IterationArgs::Range { begin: 0, end: 10 };
//! let p = pack_for(&kernel, &range, &[KernelArg::Scalar(ScalarValue::F32(2.0))])?;
//! // begin, end, then the `float` at the next multiple of 4.
//! assert_eq!(p.offsets(), [0, 8, 16]);
//! assert_eq!(&p.bytes()[16..20], &2.0f32.to_le_bytes());
//! # Ok::<(), hoplite_abi::PackError>(())
//! ```
//!
//! # Entry parameters
//!
//! The entry takes, in order:
//!
//! 1. the iteration space: for a range `begin, end` (two `unsigned long long`); for an MDRange
//!    of rank `R`, `R` begins then `R` ends, then the index order (`int`: 0 walks the last
//!    index on the threads' x, then y, then z, 1 the first index; flattened ranks above 3 make
//!    that index the fastest; [`IndexOrder::code`]); for teams, the league size then the
//!    policy's four scratch requests in bytes, as `with_scratch_size` gave them: per team at
//!    level 0, per team at level 1, per thread at level 0, per thread at level 1, then the
//!    policy's vector length, which the members report (six `unsigned long long`);
//! 2. per handle, in the kernel's parameter order: the element pointer, then `R` extents
//!    (`unsigned long long`), then `R` strides in elements (`unsigned long long`);
//! 3. per scalar capture, its value, and per unique token ([`DeviceParam::TokenBits`]) a pointer
//!    to its lock words (`unsigned int*`, one bit per id, bit `id % 32` of word `id / 32`)
//!    then its size (`unsigned long long`), in the kernel's parameter order;
//! 4. for a reduction, the walk (`int`: [`ReduceWalk::code`], 0 grid-stride loops, 1 one
//!    contiguous block of the iteration space per thread in thread order, for joins that are
//!    not commutative), the code of the join the device applies (`int`:
//!    [`DeviceJoin::code`], or -1 for none), the identity to start every thread's partial
//!    from, then a pointer to the partials: with a join, one per block (`gridDim` of them, x
//!    fastest; the block's first thread joins its threads' values in thread order), else one
//!    per launched thread (`gridDim * blockDim` of them, x fastest). The host joins them with
//!    the launch's reducer: under the blocked walk, in order, which is index order.
//!
//! For a scan the entry takes, after the scalars, the identity, a pointer to one value per
//! launched thread and a `bool`: whether this is the final pass. Each thread scans one
//! contiguous chunk of the range (`ceil(len / threads)` indices, in thread order). The first
//! launch (`false`) stores each thread's chunk sum; the host turns them into exclusive prefix
//! sums in thread order; the second launch (`true`) starts each thread from its prefix and
//! runs the kernel's final pass.
//!
//! Otherwise threads walk the iteration space with grid-stride loops (a reduction under the
//! blocked walk: contiguous blocks, an MDRange flattened in its index order, a league in
//! contiguous runs of teams per block; [`ReduceWalk`]), so any grid covers any range.
//!
//! Each parameter sits at an offset aligned to its size (a reduced struct value to 8), as the
//! CUDA ABI places kernel parameters, little-endian: [`ParamBuffer`] is both a packed argument
//! block and the storage `cuLaunchKernel`'s `kernelParams` pointers point into.
//!
//! # Team scratch
//!
//! Both scratch levels of a team kernel, per team (`m.team_scratch(level)`) and per thread
//! (`m.thread_scratch(level)`), live in the block's dynamic shared memory, each part rounded
//! up to 8 bytes as the host backends round a request, in this order:
//!
//! | part | bytes |
//! |---|---|
//! | the team's level 0 | `round8(team0)` |
//! | the team's level 1 | `round8(team1)` |
//! | each thread's level 0, by team rank | `blockDim.x * round8(thread0)` |
//! | each thread's level 1, by team rank | `blockDim.x * round8(thread1)` |
//!
//! A device backend launches with the sum ([`TeamScratch::bytes`]) as the `sharedMemBytes`
//! and the four requests as entry parameters. The entry traps if it got less dynamic shared
//! memory than the sum; the kernel allocates from each part with each element type's
//! alignment, as the host's `ScratchPad` does, and traps past a part, so an allocation fails
//! on the device exactly where it fails on the host.

mod host;
mod kernel;
mod pack;
mod scalar;

pub use host::{HostBuildError, build_host_library, host_compiler};
pub use kernel::{
    DeviceIteration, DeviceJoin, DeviceKernel, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess,
    ReduceWalk, ValueLayout, device_join_for, index_from_device, index_to_device, stable_hash, value_layout,
};
pub use pack::{
    HandleArg, IndexOrder, IterationArgs, KernelArg, MAX_PARAM_BYTES, PackError, ParamBuffer, TeamScratch,
    TokenArg, pack_for, pack_reduce, pack_scan,
};
pub use scalar::{ScalarType, ScalarValue};

/// The CUDA device on the CPU, as C++: the built-ins generated CUDA C uses (indices, barriers,
/// shared memory, atomics, `__trap`) defined so that a host C++ compiler builds a kernel, and
/// `hl_run_grid`, which runs a grid block by block with a block's threads as fibers that meet
/// at real barriers; `hl_call` unpacks an entry's parameters from a driver's `void**` by the
/// entry's own types, and `hl_param_layout` reports their sizes and kinds. One definition of
/// device semantics for every host run of generated kernels: hoplite-cuda's emulated driver
/// and hoplite-kernel-check's checks of the translation.
///
/// ```
/// assert!(hoplite_abi::HOST_DEVICE_HEADER.contains("hl_run_grid"));
/// ```
pub const HOST_DEVICE_HEADER: &str = include_str!("host_device.h");
