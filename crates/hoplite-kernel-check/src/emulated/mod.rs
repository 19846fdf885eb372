//! An emulated GPU for tests: [`HostDevice`], an execution space whose launches run the
//! generated CUDA C of `#[kernel]`s on the CPU, the way a device backend runs them.
//!
//! This is a **test substitute for a GPU, not a backend for users**. It lets the code that a
//! device backend depends on — the `#[kernel]` translation, the recognition of a launch's
//! `with(..)` closure, the device ABI's parameter packing, the partials and the host join of
//! reductions, the two passes of a scan, team scratch and barriers, and views that live in
//! memory the host may not dereference — run in CI without a GPU. The conformance suite's
//! portable checks (`hoplite_conformance::portable_checks::<HostDevice>()`) run on it
//! unchanged.
//!
//! What a launch does, as `hoplite-cuda`'s dispatch does:
//!
//! 1. It asks the kernel for its [`DeviceLaunch`] (the `#[kernel]`, its scalar captures, its
//!    handles' views) and refuses any other kernel (a closure) with
//!    [`Error::NotADeviceKernel`]; the native closure is never called.
//! 2. It compiles the kernel's CUDA C with the host C++ compiler ([`HostModule::compile_info`]),
//!    once per source in the process (and once per source on disk, under the build folder).
//! 3. It lays the handles (pointer, extents, strides) and scalars out with the device ABI's
//!    packer and launches the entry on a small grid: a few blocks of a few threads, so that
//!    grid-stride loops, several blocks and, in team launches and device-joined reductions,
//!    threads of one block running at once with real barriers are exercised.
//! 4. Reductions get one partial per launched thread (one per block where the device joins
//!    the library's reducers itself), which the host joins with the launch's reducer in
//!    thread order and finalizes once; a reducer that is not commutative takes the blocked
//!    walk (`hoplite_abi::ReduceWalk::Blocked`: one contiguous block of the space per thread,
//!    an MDRange flattened in the policy's inner order), so thread order is index order, and
//!    an MDRange whose tiles are not visited as nested loops is refused for it, as on
//!    `Cuda`. Scans run twice: the chunk sums, their exclusive prefix on the host, then the
//!    final pass.
//!
//! Its memory space, [`HostDeviceSpace`], is host memory presented as device memory: views in
//! it are filled and read through [`MemorySpace::copy_from_host`] and
//! [`MemorySpace::copy_to_host`] (plain copies), never dereferenced by host code, and only
//! `HostDevice` launches take them. Views of host memory are refused at launch with a typed
//! error, as on a GPU. Its unique tokens ([`HostDeviceToken`], from
//! [`KernelTokenSpace::kernel_token`]) are lock words in that memory, which the generated C
//! acquires and releases with its atomics, as on a GPU; host pools are refused.
//!
//! Launches need a host C++ compiler ([`host_compiler`]); without one they fail with
//! [`Error::Device`]. Compiled libraries go to [`build_dir`], which a test points into its
//! target folder with [`set_build_dir`].

mod dispatch;
mod values;

use std::any::TypeId;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hoplite_abi::{
    DeviceIteration, DeviceJoin, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess, HandleArg,
    IndexOrder, IterationArgs, KernelArg, ParamBuffer, ReduceWalk, ScalarType, TokenArg, device_join_for,
};
use hoplite_core::AllocationRecords;
use hoplite_core::device_kernel::{DeviceHandle, DeviceLaunch, DeviceTokenArg};
use hoplite_core::{
    DeviceUniqueToken, Error, ExecutionSpace, HostSpace, KernelTokenSpace, MemorySpace, Reducer, Result,
    ScanValue, SpaceAccessibility,
};

use crate::{CheckError, Grid, HostModule, Outcome, host_compiler};
use values::{DeviceValue, decode, encode, same};

/// The execution space's name, in errors.
const SPACE: &str = "HostDevice";

/// The grid of a range launch (and of MDRanges above rank 3, which the entry walks as one
/// flat range): 3 blocks of 4 threads.
pub const RANGE_GRID: Grid = Grid {
    blocks: [3, 1, 1],
    threads: [4, 1, 1],
};

/// The most threads of a team (one block): a GPU-like limit that host threads can still
/// run at once.
pub const MAX_TEAM_SIZE: usize = 64;

/// The most blocks a team launch runs (each block runs every `blocks`-th team of the league).
pub const TEAM_BLOCKS: u32 = 3;

/// The dynamic shared memory of a block, which holds a team's scratch at both levels.
pub const SHARED_BYTES_PER_BLOCK: usize = 96 * 1024;

/// The vector length limit (a warp), which team launches accept; the entry's vector ranges
/// run in each thread's own loop.
pub const MAX_VECTOR_LENGTH: usize = 32;

/// The grid of an MDRange launch of rank `rank`: for ranks 1 to 3 one grid axis per
/// dimension (the entry walks dimension `d` on its own axis, so unused axes stay 1); above,
/// the range grid.
pub fn mdrange_grid(rank: usize) -> Grid {
    match rank {
        1 => Grid {
            blocks: [2, 1, 1],
            threads: [4, 1, 1],
        },
        2 => Grid {
            blocks: [2, 2, 1],
            threads: [4, 2, 1],
        },
        3 => Grid {
            blocks: [2, 2, 2],
            threads: [2, 2, 2],
        },
        _ => RANGE_GRID,
    }
}

/// The emulated GPU: launches of `#[kernel]`s run their generated CUDA C on the CPU (see the
/// [module documentation](self)). A test substitute for a GPU, not a backend for users.
///
/// Every value is the same instance; launches complete before they return.
///
/// ```
/// use hoplite_kernel_check::emulated::HostDevice;
/// use hoplite_core::ExecutionSpace;
/// assert_eq!(HostDevice.name(), "HostDevice");
/// assert!(HostDevice.max_team_size() > 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostDevice;

/// The memory of [`HostDevice`]: host memory that host code treats as device memory. Views
/// in it are not host-accessible; `from_slice`, `new` and `to_vec` copy through
/// [`copy_from_host`](MemorySpace::copy_from_host) and
/// [`copy_to_host`](MemorySpace::copy_to_host), as for a GPU's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostDeviceSpace;

// SAFETY: allocations are `HostSpace`'s, valid, aligned to its alignment and unshared until
// `deallocate` hands them back to it; zeroed allocations are `HostSpace`'s zeroed ones. The
// space is not host-accessible (`HOST_ACCESSIBLE` is false): host code reaches it only
// through the copies, which copy exactly the bytes asked for (the memory is host memory
// underneath, so the copies are plain copies).
unsafe impl MemorySpace for HostDeviceSpace {
    const ALIGNMENT: usize = HostSpace::ALIGNMENT;
    const HOST_ACCESSIBLE: bool = false;

    fn name(&self) -> &'static str {
        "HostDeviceSpace"
    }

    fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        HostSpace.allocate(label, bytes).map_err(|e| self.own_error(e))
    }

    fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        HostSpace
            .allocate_zeroed(label, bytes)
            .map_err(|e| self.own_error(e))
    }

    fn records(&self) -> &'static AllocationRecords {
        static RECORDS: AllocationRecords = AllocationRecords::new();
        &RECORDS
    }

    unsafe fn copy_from_host(&self, dst: NonNull<u8>, src: *const u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller promises `src` is valid for reads and `dst` for writes of `bytes`
        // bytes, and that nothing else uses `dst` during the call; the memory is host memory
        // of this process underneath.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
        Ok(())
    }

    unsafe fn copy_to_host(&self, dst: *mut u8, src: NonNull<u8>, bytes: usize) -> Result<()> {
        // SAFETY: as in `copy_from_host`, with the directions swapped.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, bytes) };
        Ok(())
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: every allocation of this space was made by `HostSpace` with these bytes.
        unsafe { HostSpace.deallocate(ptr, bytes) }
    }
}

impl HostDeviceSpace {
    /// An allocation error of the underlying `HostSpace`, naming this space.
    fn own_error(&self, e: Error) -> Error {
        match e {
            Error::AllocationFailed {
                label, bytes, reason, ..
            } => Error::AllocationFailed {
                label,
                bytes,
                space: self.name(),
                reason,
            },
            other => other,
        }
    }
}

/// A unique token of [`HostDevice`] kernels: lock words in [`HostDeviceSpace`], as a GPU's
/// token has them in its memory.
pub type HostDeviceToken = DeviceUniqueToken<HostDeviceSpace>;

impl KernelTokenSpace for HostDevice {
    type KernelToken = HostDeviceToken;

    fn kernel_token(&self) -> Result<HostDeviceToken> {
        self.kernel_token_with_size(self.concurrency())
    }

    fn kernel_token_with_size(&self, size: usize) -> Result<HostDeviceToken> {
        DeviceUniqueToken::new_in(HostDeviceSpace, SPACE, size)
    }
}

// SAFETY: `HostDevice` kernels are the generated C compiled for this host, running on host
// threads, and `HostDeviceSpace` allocations are host memory of this process, so the entry
// may dereference them; every launch passes a view's address only after checking that the
// view is in this space.
unsafe impl SpaceAccessibility<HostDeviceSpace> for HostDevice {}

/// Graphs on the emulated device run on the generic host implementation, whose nodes launch
/// through this device's dispatch one by one: the conformance suite's graph checks exercise
/// the device launches of graph nodes (a GPU backend builds its own graphs instead).
impl hoplite_graph::GraphSpace for HostDevice {
    type Backend = hoplite_graph::HostGraph<HostDevice>;
    fn graph_backend(&self) -> hoplite_graph::HostGraph<HostDevice> {
        hoplite_graph::HostGraph::new(*self)
    }
}

impl ExecutionSpace for HostDevice {
    type MemorySpace = HostDeviceSpace;
    type ScratchMemorySpace = HostDeviceSpace;
    type ArrayLayout = hoplite_core::LayoutRight;
    type TeamMember<'t> = hoplite_core::device_kernel::DeviceTeamMember;

    fn name(&self) -> &'static str {
        SPACE
    }

    fn fence(&self) -> Result<()> {
        // Every launch completes before it returns.
        Ok(())
    }

    fn in_parallel(&self) -> bool {
        // Host code never runs inside this space's kernels (they are generated C).
        false
    }

    /// `false`, as for a GPU, although every launch here has completed when it returns (a
    /// conservative answer: schedulers fence where they need not). Front ends take it to mean
    /// a device space: the explicit graph's host implementation then launches each node
    /// itself instead of grouping nodes into host closures, which a device cannot run.
    fn synchronous_launches(&self) -> bool {
        false
    }

    fn concurrency(&self) -> usize {
        // The most threads one launch has: a team launch of the largest teams.
        TEAM_BLOCKS as usize * MAX_TEAM_SIZE
    }

    fn max_team_size(&self) -> usize {
        MAX_TEAM_SIZE
    }

    fn max_vector_length(&self) -> usize {
        MAX_VECTOR_LENGTH
    }

    fn max_scratch_size(&self, level: usize) -> usize {
        match level {
            // Both levels live in the block's dynamic shared memory (their sum is checked at
            // launch).
            0 | 1 => SHARED_BYTES_PER_BLOCK,
            _ => 0,
        }
    }

    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        writeln!(
            out,
            "HostDevice: an emulated GPU running generated CUDA C on the host (a test substitute)"
        )?;
        writeln!(
            out,
            "  ranges: {:?} blocks of {:?} threads; teams: up to {TEAM_BLOCKS} blocks of up to {MAX_TEAM_SIZE} threads",
            RANGE_GRID.blocks, RANGE_GRID.threads
        )?;
        if detail {
            writeln!(
                out,
                "  compiler: {}; build folder: {}",
                compiler().as_deref().unwrap_or("none found"),
                build_dir().display()
            )?;
            writeln!(out, "  shared memory per block: {SHARED_BYTES_PER_BLOCK} bytes")?;
        }
        Ok(())
    }
}

static BUILD_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Sets the folder compiled kernels go to (and are reused from, by source hash): a test
/// points it into its target folder (`env!("CARGO_TARGET_TMPDIR")`).
pub fn set_build_dir(dir: impl Into<PathBuf>) {
    *BUILD_DIR.lock().unwrap_or_else(PoisonError::into_inner) = Some(dir.into());
}

/// The folder compiled kernels go to: the one [`set_build_dir`] set, else
/// `$HOPLITE_HOST_DEVICE_DIR`, else `hoplite-host-device` in the system's temporary folder.
pub fn build_dir() -> PathBuf {
    if let Some(dir) = BUILD_DIR.lock().unwrap_or_else(PoisonError::into_inner).clone() {
        return dir;
    }
    std::env::var_os("HOPLITE_HOST_DEVICE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hoplite-host-device"))
}

/// The host C++ compiler, looked for once.
fn compiler() -> Option<String> {
    static COMPILER: OnceLock<Option<String>> = OnceLock::new();
    COMPILER.get_or_init(host_compiler).clone()
}

/// A [`CheckError`] as the core's device error.
fn device_error(e: CheckError) -> Error {
    Error::Device {
        space: SPACE,
        reason: e.to_string(),
    }
}

/// The module of `kernel`, compiled once per source in the process.
fn module(kernel: &DeviceKernelInfo) -> Result<Arc<HostModule>> {
    type Modules = Mutex<HashMap<(u64, &'static str), Arc<HostModule>>>;
    static MODULES: OnceLock<Modules> = OnceLock::new();
    let modules = MODULES.get_or_init(Default::default);
    let key = (kernel.source_hash, kernel.entry);
    if let Some(m) = modules.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(Arc::clone(m));
    }
    let cxx = compiler().ok_or_else(|| Error::Device {
        space: SPACE,
        reason: "no host C++ compiler to compile the kernel's CUDA C (set CXX, or install g++)".to_owned(),
    })?;
    // Compiled outside the lock; a kernel compiled twice at once is kept once.
    let compiled = Arc::new(HostModule::compile_info(kernel, &cxx, &build_dir()).map_err(device_error)?);
    let mut modules = modules.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(Arc::clone(modules.entry(key).or_insert(compiled)))
}

/// Compiles `kernels` for [`HostDevice`] launches ahead of them, on as many threads as the
/// host has cores: a suite that launches many kernels compiles them in parallel instead of
/// one at a time as its launches reach them. Kernels already compiled (in the process or on
/// disk) are not compiled again.
///
/// # Errors
///
/// The first kernel that does not compile, as [`Error::Device`] with the compiler's log, or
/// the error of a missing host C++ compiler.
pub fn precompile(kernels: &[DeviceKernelInfo]) -> Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(kernel) = kernels.get(k) else {
                            return Ok(());
                        };
                        module(kernel)?;
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|payload| Err(Error::from_panic("precompiling HostDevice kernels", payload)))
        })
    })
}

/// The device launch behind a kernel, or the error that says a closure cannot run here.
fn device_launch<'k>(label: &str, launch: Option<DeviceLaunch<'k>>) -> Result<DeviceLaunch<'k>> {
    launch.ok_or_else(|| Error::NotADeviceKernel {
        label: label.to_owned(),
        space: SPACE,
    })
}

/// The scalar type of a view's elements, if a device kernel can take them.
fn element_scalar(element: TypeId) -> Option<ScalarType> {
    macro_rules! scalars {
        ($($t:ty => $s:ident),*) => {$(
            if element == TypeId::of::<$t>() {
                return Some(ScalarType::$s);
            }
        )*};
    }
    scalars!(bool => Bool, i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64,
        usize => Usize, isize => Isize);
    None
}

/// A launch's kernel, compiled, and its arguments in parameter order.
struct Prepared {
    label: String,
    kernel: DeviceKernelInfo,
    module: Arc<HostModule>,
    args: Vec<KernelArg>,
}

/// A unique token's lock words as a kernel argument: a [`HostDeviceToken`], never a host pool
/// or another device's token. The launch borrows the token until it returns, and every launch
/// completes before it returns, so the words outlive it.
fn token_arg(name: &str, token: &DeviceTokenArg) -> std::result::Result<TokenArg, String> {
    let Some(words) = &token.token else {
        return Err(format!(
            "`{name}` is a host unique token (`{}`), which device kernels cannot acquire from; pass `HostDevice.kernel_token()`",
            token.type_name
        ));
    };
    if !words.memory_space.is::<HostDeviceSpace>() {
        return Err(format!(
            "the unique token `{name}` (`{}`) is in another device's memory; pass `HostDevice.kernel_token()`",
            token.type_name
        ));
    }
    Ok(TokenArg {
        words: words.words as u64,
        size: words.size as u64,
    })
}

/// The error for a launch this space cannot run as asked.
fn invalid(label: &str, kernel: &str, reason: impl std::fmt::Display) -> Error {
    Error::Device {
        space: SPACE,
        reason: format!("`{label}`: kernel `{kernel}`: {reason}"),
    }
}

impl Prepared {
    /// Checks `launch`'s handles and scalars against the kernel's parameters, lays them out in
    /// parameter order and compiles the kernel.
    fn new(label: &str, launch: &DeviceLaunch<'_>) -> Result<Prepared> {
        let kernel = launch.kernel;
        let bad = |reason: String| invalid(label, kernel.name, reason);
        let mut handles = launch.handles.iter();
        let mut scalars = launch.scalars.iter();
        let mut tokens = launch.tokens.iter();
        let mut args = Vec::with_capacity(kernel.params.len());
        for param in kernel.params {
            match *param {
                DeviceParam::Handle {
                    name, element, rank, ..
                } => {
                    let handle = handles
                        .next()
                        .ok_or_else(|| bad(format!("no handle for parameter `{name}`")))?;
                    args.push(KernelArg::Handle(handle_arg(
                        label, &kernel, name, element, rank, handle,
                    )?));
                }
                DeviceParam::Scalar { name, ty } => {
                    let value = scalars
                        .next()
                        .ok_or_else(|| bad(format!("no value for the scalar `{name}`")))?;
                    if value.scalar_type() != ty {
                        return Err(bad(format!(
                            "the scalar `{name}` is {ty}, and the launch passes {}",
                            value.scalar_type()
                        )));
                    }
                    args.push(KernelArg::Scalar(*value));
                }
                DeviceParam::TokenBits { name } => {
                    let token = tokens
                        .next()
                        .ok_or_else(|| bad(format!("no unique token for `{name}`")))?;
                    args.push(KernelArg::TokenBits(token_arg(name, token).map_err(bad)?));
                }
            }
        }
        if handles.next().is_some() || scalars.next().is_some() || tokens.next().is_some() {
            return Err(bad(
                "more handles, scalars or unique tokens than the kernel has parameters".to_owned(),
            ));
        }
        Ok(Prepared {
            label: label.to_owned(),
            kernel,
            module: module(&kernel)?,
            args,
        })
    }

    fn invalid(&self, reason: impl std::fmt::Display) -> Error {
        invalid(&self.label, self.kernel.name, reason)
    }

    /// Checks that the kernel iterates as the policy does and computes `pattern`'s kind.
    fn expect(&self, iteration: DeviceIteration, pattern: impl Fn(DevicePattern) -> bool) -> Result<()> {
        if self.kernel.iteration != iteration {
            return Err(self.invalid(format!(
                "the kernel iterates over {:?}, and the launch's policy over {iteration:?}",
                self.kernel.iteration
            )));
        }
        if !pattern(self.kernel.pattern) {
            return Err(self.invalid(format!(
                "the kernel computes {:?}, which this launch does not run",
                self.kernel.pattern
            )));
        }
        Ok(())
    }

    /// The order an MDRange walks its indices in: that of the first writer of rank 2 or more
    /// (else the first such view), as a device backend picks it.
    fn index_order(&self) -> IndexOrder {
        let strides = |writers: bool| {
            self.args.iter().find_map(|a| match a {
                KernelArg::Handle(h)
                    if h.strides.len() >= 2 && (!writers || h.access == HandleAccess::Write) =>
                {
                    Some(IndexOrder::of_strides(&h.strides))
                }
                _ => None,
            })
        };
        strides(true).or_else(|| strides(false)).unwrap_or_default()
    }

    /// Runs the entry with `params` on `grid` with `shared` bytes of dynamic shared memory.
    ///
    /// # Safety
    ///
    /// `params` was packed for this kernel by the device ABI's packer from `self.args`, and
    /// its partials or values pointer (for a reduction or scan) addresses a live buffer of
    /// one value per partial `grid` writes; `shared` is at least the scratch the packed
    /// requests need.
    unsafe fn run(&self, grid: Grid, shared: usize, params: &mut ParamBuffer) -> Result<()> {
        // SAFETY: the caller's contract for `params`, the partials and `shared`; the handles'
        // addresses are views of this space (checked in `handle_arg`) that the launch holds
        // borrowed until it returns, covering their extents and strides, and the launch
        // functions of the core checked every writer against the policy's index space and
        // every borrow against the others before the dispatch.
        match unsafe { self.module.launch_packed(grid, shared, params) } {
            Outcome::Completed => Ok(()),
            Outcome::Trapped => Err(self.invalid(
                "a thread trapped (an index outside a view, a division by zero, or another error the native kernel panics on)",
            )),
        }
    }

    /// Launches a `parallel_for` entry.
    fn run_for(&self, iteration: &IterationArgs, grid: Grid, shared: usize) -> Result<()> {
        let mut params =
            hoplite_abi::pack_for(&self.kernel, iteration, &self.args).map_err(|e| self.invalid(e.reason))?;
        // SAFETY: packed by the ABI's packer from `self.args`; a `parallel_for` has no
        // partials; `shared` is the caller's scratch bytes for `grid`.
        unsafe { self.run(grid, shared, &mut params) }
    }

    /// Launches a reduce entry over each of `launches` in turn (an iteration space and its
    /// grid), every thread from `reducer.init()`, and joins the partials in thread order, the
    /// launches' in the order given, then finalizes once.
    fn reduce<R: Reducer, V: DeviceValue>(
        &self,
        launches: impl IntoIterator<Item = (IterationArgs, Grid)>,
        shared: usize,
        reducer: &R,
    ) -> Result<R::Value> {
        if typeid::of::<V>() != typeid::of::<R::Value>() {
            return Err(self.invalid("the reduction's value type has no device layout here"));
        }
        if !V::reduced_by(self.kernel.pattern) {
            return Err(self.invalid(format!(
                "the kernel computes {:?}, and the launch reduces into `{}`",
                self.kernel.pattern,
                std::any::type_name::<R::Value>()
            )));
        }
        // SAFETY: `V` is `R::Value` (equal type ids, checked above).
        let identity: V = unsafe { same(reducer.init()) };
        let identity = encode(&[identity]);
        let join: Option<DeviceJoin> = device_join_for(self.kernel.pattern, reducer.device_join());
        // One block per thread for a join that is not commutative: partials in index order.
        let walk = ReduceWalk::for_join(reducer.is_commutative());
        let mut total = reducer.init();
        for (iteration, grid) in launches {
            let mut params =
                hoplite_abi::pack_reduce(&self.kernel, &iteration, &self.args, &identity, join, walk)
                    .map_err(|e| self.invalid(e.reason))?;
            let count = if join.is_some() {
                grid.blocks.iter().map(|&b| b as usize).product()
            } else {
                grid.thread_count()
            };
            // 8-aligned, as a device allocation is: `count` values of `V::size()` bytes.
            let mut partials = vec![0u64; (count * V::size()).div_ceil(8)];
            let last = params.offsets().len() - 1;
            params.set(last, &(partials.as_mut_ptr() as usize as u64).to_le_bytes());
            // SAFETY: packed by the ABI's packer from `self.args` for this kernel's pattern,
            // whose value layout is `V`'s (`reduced_by`); the partials pointer addresses
            // `count` values of `V::size()` bytes, one per thread of `grid` (per block with a
            // device join), alive until the call returns.
            unsafe { self.run(grid, shared, &mut params) }?;
            let bytes: Vec<u8> = partials.iter().flat_map(|w| w.to_le_bytes()).collect();
            for partial in decode::<V>(&bytes, count) {
                // SAFETY: `V` is `R::Value`.
                reducer.join(&mut total, unsafe { same::<V, R::Value>(partial) });
            }
        }
        reducer.finalize(&mut total);
        Ok(total)
    }

    /// Runs a scan entry over `begin..end` in two passes and returns the total: the first
    /// pass stores each thread's chunk sum, the host turns them into exclusive prefixes in
    /// thread order, the final pass runs every index from them.
    fn scan<T: ScanValue, V: DeviceValue>(&self, begin: u64, end: u64) -> Result<T> {
        if typeid::of::<V>() != typeid::of::<T>() {
            return Err(self.invalid("the scan's value type has no device layout here"));
        }
        let DevicePattern::Scan(scalar) = self.kernel.pattern else {
            return Err(self.invalid(format!(
                "the kernel computes {:?}, not a scan",
                self.kernel.pattern
            )));
        };
        if DevicePattern::Reduce(scalar) != V::PATTERN {
            return Err(self.invalid(format!(
                "the kernel scans {scalar}, and the launch `{}`",
                std::any::type_name::<T>()
            )));
        }
        if begin == end {
            return Ok(T::zero());
        }
        // SAFETY: `V` is `T` (equal type ids, checked above).
        let zero = encode(&[unsafe { same::<T, V>(T::zero()) }]);
        let iteration = IterationArgs::Range { begin, end };
        let mut params = hoplite_abi::pack_scan(&self.kernel, &iteration, &self.args, &zero)
            .map_err(|e| self.invalid(e.reason))?;
        let grid = RANGE_GRID;
        let count = grid.thread_count();
        let mut values = vec![0u64; (count * V::size()).div_ceil(8)];
        let n = params.offsets().len();
        params.set(n - 2, &(values.as_mut_ptr() as usize as u64).to_le_bytes());
        // SAFETY: packed by the ABI's packer for this scan; the values pointer addresses one
        // value per thread of `grid`, alive until the call returns; the final-pass flag is
        // false (as packed).
        unsafe { self.run(grid, 0, &mut params) }?;
        let bytes: Vec<u8> = values.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut running = T::zero();
        let mut prefixes = Vec::with_capacity(count);
        for sum in decode::<V>(&bytes, count) {
            // SAFETY: `V` is `T` (checked above), in both directions.
            let (prefix, sum) = unsafe { (same::<T, V>(running), same::<V, T>(sum)) };
            prefixes.push(prefix);
            running = running + sum;
        }
        let encoded = encode(&prefixes);
        for (word, chunk) in values.iter_mut().zip(encoded.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(b);
        }
        params.set(n - 1, &[1]);
        // SAFETY: as for the first pass; the values now hold each thread's starting prefix and
        // the flag says final.
        unsafe { self.run(grid, 0, &mut params) }?;
        Ok(running)
    }
}

/// A handle's view as the entry's argument: checked against the parameter (element type,
/// rank) and the memory space.
fn handle_arg(
    label: &str,
    kernel: &DeviceKernelInfo,
    name: &str,
    element: ScalarType,
    rank: usize,
    handle: &DeviceHandle<'_>,
) -> Result<HandleArg> {
    let bad = |reason: String| invalid(label, kernel.name, reason);
    let Some(got) = element_scalar(handle.element) else {
        return Err(bad(format!(
            "view `{}` holds `{}`, which no device kernel takes; use a view of a scalar type",
            handle.label, handle.element_name
        )));
    };
    if got != element || handle.extents.len() != rank || handle.strides.len() != rank {
        return Err(bad(format!(
            "parameter `{name}` takes a rank-{rank} view of {element}, and view `{}` is a rank-{} view of {got}",
            handle.label,
            handle.extents.len()
        )));
    }
    if handle.space.downcast_ref::<HostDeviceSpace>().is_none() {
        return Err(bad(format!(
            "view `{}` is not in `HostDeviceSpace`; a `HostDevice` launch takes only views of its own memory, as a GPU's does",
            handle.label
        )));
    }
    Ok(HandleArg {
        ptr: handle.data as u64,
        access: handle.access,
        element,
        extents: handle.extents.clone(),
        strides: handle.strides.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_have_several_blocks_and_threads_and_unused_axes_stay_one() {
        for rank in 1..=6 {
            let g = mdrange_grid(rank);
            assert!(g.blocks.iter().product::<u32>() > 1, "{g:?}");
            assert!(g.threads.iter().product::<u32>() > 1, "{g:?}");
            for axis in rank.min(3)..3 {
                if rank <= 3 {
                    assert_eq!((g.blocks[axis], g.threads[axis]), (1, 1), "rank {rank}: {g:?}");
                }
            }
        }
        assert!(RANGE_GRID.thread_count() > RANGE_GRID.threads[0] as usize);
    }

    #[test]
    fn the_space_is_not_host_accessible_and_copies_round_trip() {
        const { assert!(!HostDeviceSpace::HOST_ACCESSIBLE) };
        let v = hoplite_core::View::<i64, 1, hoplite_core::LayoutRight, HostDeviceSpace>::from_slice(
            "v",
            [4],
            &[1, 2, 3, 4],
        )
        .expect("upload");
        assert_eq!(v.to_vec().expect("download"), [1, 2, 3, 4]);
    }
}
