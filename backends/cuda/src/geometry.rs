//! Launch geometry: grids and blocks for ranges, MDRanges and teams, and occupancy. Pure
//! functions of a device's limits, so they are tested against the documented limits of
//! sm_70, sm_80 and sm_90 without a GPU.
//!
//! The shapes follow what `#[kernel]` entries expect (see `hoplite_core::device_kernel`):
//! ranges and MDRanges of rank above 3 walk `x` with a grid-stride loop; MDRanges of rank up
//! to 3 put their last index on `x`, the one before on `y`, the first of three on `z`, each
//! with its own grid-stride loop; a team is one block of `team size` threads along `x`, and
//! blocks walk the league. Grid-stride loops mean any grid covers any iteration space, so a
//! grid is only clamped, never an error.

use crate::CudaError;

/// What a device can run: the limits that decide launch shapes and occupancy (from the
/// driver's device attributes; the constants here are the CUDA C Programming Guide's).
///
/// ```
/// use hoplite_cuda::geometry::DeviceLimits;
/// assert_eq!(DeviceLimits::SM_90.max_threads_per_block, 1024);
/// assert_eq!(DeviceLimits::SM_90.shared_per_block_optin, 227 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Threads in a warp.
    pub warp_size: u32,
    /// Threads in a block.
    pub max_threads_per_block: u32,
    /// Block extents along x, y, z.
    pub max_block_dims: [u32; 3],
    /// Grid extents along x, y, z.
    pub max_grid_dims: [u32; 3],
    /// Threads resident on one multiprocessor.
    pub max_threads_per_sm: u32,
    /// Blocks resident on one multiprocessor.
    pub max_blocks_per_sm: u32,
    /// 32-bit registers of one multiprocessor.
    pub registers_per_sm: u32,
    /// 32-bit registers one block may use.
    pub registers_per_block: u32,
    /// Shared memory one block gets without opting in, in bytes.
    pub shared_per_block: usize,
    /// Shared memory one block may get by opting in, in bytes.
    pub shared_per_block_optin: usize,
    /// Shared memory of one multiprocessor, in bytes.
    pub shared_per_sm: usize,
    /// Shared memory the system reserves for every resident block, in bytes.
    pub reserved_shared_per_block: usize,
}

const KIB: usize = 1024;

impl DeviceLimits {
    /// Volta (sm_70, V100 with 80 SMs).
    pub const SM_70: DeviceLimits = DeviceLimits {
        compute_capability: (7, 0),
        sm_count: 80,
        warp_size: 32,
        max_threads_per_block: 1024,
        max_block_dims: [1024, 1024, 64],
        max_grid_dims: [i32::MAX as u32, 65535, 65535],
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        registers_per_sm: 65536,
        registers_per_block: 65536,
        shared_per_block: 48 * KIB,
        shared_per_block_optin: 96 * KIB,
        shared_per_sm: 96 * KIB,
        reserved_shared_per_block: 0,
    };

    /// Ampere (sm_80, A100 with 108 SMs).
    pub const SM_80: DeviceLimits = DeviceLimits {
        compute_capability: (8, 0),
        sm_count: 108,
        shared_per_block_optin: 163 * KIB,
        shared_per_sm: 164 * KIB,
        reserved_shared_per_block: KIB,
        ..Self::SM_70
    };

    /// Hopper (sm_90, H100 SXM with 132 SMs).
    pub const SM_90: DeviceLimits = DeviceLimits {
        compute_capability: (9, 0),
        sm_count: 132,
        shared_per_block_optin: 227 * KIB,
        shared_per_sm: 228 * KIB,
        reserved_shared_per_block: KIB,
        ..Self::SM_70
    };

    /// The virtual architecture NVRTC compiles for, such as `compute_90`.
    ///
    /// ```
    /// use hoplite_cuda::geometry::DeviceLimits;
    /// assert_eq!(DeviceLimits::SM_80.arch(), "compute_80");
    /// ```
    pub fn arch(&self) -> String {
        format!(
            "compute_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// A launch shape: blocks in the grid and threads in a block, along x, y, z, and the dynamic
/// shared memory of each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGeometry {
    /// Blocks along x, y, z (each at least 1).
    pub grid: [u32; 3],
    /// Threads along x, y, z (each at least 1).
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl LaunchGeometry {
    /// Threads in one block.
    pub fn block_threads(&self) -> u64 {
        self.block.iter().map(|&b| u64::from(b)).product()
    }

    /// Threads in the whole launch (`gridDim * blockDim`): the number of partials a
    /// reduction launch needs.
    pub fn total_threads(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product::<u64>() * self.block_threads()
    }
}

/// Threads per block of a range launch: eight warps, which keeps every multiprocessor of
/// sm_70 to sm_90 full (2048 resident threads are eight blocks).
pub const RANGE_BLOCK: u32 = 256;

/// Ceiling division that treats 0 as 1 block, clamped to `max`.
fn blocks(len: u64, per_block: u32, max: u32) -> u32 {
    let per_block = u64::from(per_block.max(1));
    let n = len.div_ceil(per_block).max(1);
    u32::try_from(n).unwrap_or(u32::MAX).min(max).max(1)
}

/// The smallest power of two at least `n` (and at least 1), as `u32`, capped at `cap`.
fn pow2_at_least(n: u64, cap: u32) -> u32 {
    let p = n.max(1).checked_next_power_of_two().unwrap_or(u64::MAX);
    u32::try_from(p).unwrap_or(u32::MAX).min(cap)
}

/// The geometry of a range of `len` indices: [`RANGE_BLOCK`] threads per block, enough blocks
/// for one index per thread up to the grid's x limit. `None` for an empty range (nothing to
/// launch).
///
/// ```
/// use hoplite_cuda::geometry::{range_geometry, DeviceLimits};
/// let g = range_geometry(&DeviceLimits::SM_90, 1000).expect("not empty");
/// assert_eq!((g.grid, g.block), ([4, 1, 1], [256, 1, 1]));
/// ```
pub fn range_geometry(limits: &DeviceLimits, len: u64) -> Option<LaunchGeometry> {
    if len == 0 {
        return None;
    }
    let block = RANGE_BLOCK.min(limits.max_threads_per_block);
    Some(LaunchGeometry {
        grid: [blocks(len, block, limits.max_grid_dims[0]), 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    })
}

/// The geometry of an MDRange with these per-dimension lengths (`end - begin`), first index
/// first. Ranks up to 3: the last length on x, then y, then z; a block of at most
/// [`RANGE_BLOCK`] threads, shaped as powers of two that fit the lengths (x first, so
/// neighbouring threads touch neighbouring elements of a `LayoutRight` view), each grid
/// extent clamped to the device's limit. Higher ranks: the product of the lengths as a range.
/// `None` when a length is 0.
///
/// ```
/// use hoplite_cuda::geometry::{mdrange_geometry, DeviceLimits};
/// let g = mdrange_geometry(&DeviceLimits::SM_80, &[100, 1000]).expect("not empty");
/// assert_eq!(g.block, [256, 1, 1]);
/// assert_eq!(g.grid, [4, 100, 1]);
/// ```
pub fn mdrange_geometry(limits: &DeviceLimits, lengths: &[u64]) -> Option<LaunchGeometry> {
    mdrange_geometry_in(limits, lengths, IndexOrder::LastFastest)
}

/// Which index of an MDRange the threads' x walks: the device ABI's (an MDRange entry takes
/// it as a parameter).
pub use hoplite_abi::IndexOrder;

/// [`mdrange_geometry`] for an entry walking `lengths` in `order`: with
/// [`IndexOrder::FirstFastest`] the first length is on x.
///
/// ```
/// use hoplite_cuda::geometry::{mdrange_geometry_in, DeviceLimits, IndexOrder};
/// let g = mdrange_geometry_in(&DeviceLimits::SM_80, &[1000, 100], IndexOrder::FirstFastest).expect("not empty");
/// assert_eq!(g.block, [256, 1, 1]);
/// assert_eq!(g.grid, [4, 100, 1]);
/// ```
pub fn mdrange_geometry_in(
    limits: &DeviceLimits,
    lengths: &[u64],
    order: IndexOrder,
) -> Option<LaunchGeometry> {
    if lengths.is_empty() || lengths.contains(&0) {
        return None;
    }
    if lengths.len() > 3 {
        let total = lengths.iter().try_fold(1u64, |acc, &l| acc.checked_mul(l));
        return range_geometry(limits, total.unwrap_or(u64::MAX));
    }
    // Lengths along x, y, z.
    let mut axes = [1u64; 3];
    match order {
        IndexOrder::LastFastest => {
            for (axis, &len) in lengths.iter().rev().enumerate() {
                axes[axis] = len;
            }
        }
        IndexOrder::FirstFastest => {
            for (axis, &len) in lengths.iter().enumerate() {
                axes[axis] = len;
            }
        }
    }
    let budget = RANGE_BLOCK.min(limits.max_threads_per_block);
    let mut block = [1u32; 3];
    let mut left = budget;
    for axis in 0..3 {
        block[axis] = pow2_at_least(axes[axis], left.min(limits.max_block_dims[axis]));
        left /= block[axis];
    }
    let mut grid = [1u32; 3];
    for axis in 0..3 {
        grid[axis] = blocks(axes[axis], block[axis], limits.max_grid_dims[axis]);
    }
    Some(LaunchGeometry {
        grid,
        block,
        shared_bytes: 0,
    })
}

/// What the compiled kernel itself needs per thread and per block (the driver's function
/// attributes `NUM_REGS` and `SHARED_SIZE_BYTES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Static shared memory per block, in bytes.
    pub static_shared: usize,
}

/// Resident blocks of `threads` threads on one multiprocessor, for a kernel using `kernel`'s
/// registers and static shared memory plus `dynamic_shared` bytes per block: the minimum over
/// the thread, block, register and shared memory limits (register allocation rounded as the
/// hardware does, 256 registers per warp). 0 when one block does not fit.
///
/// ```
/// use hoplite_cuda::geometry::{blocks_per_sm, DeviceLimits, KernelResources};
/// let k = KernelResources { registers_per_thread: 32, static_shared: 0 };
/// assert_eq!(blocks_per_sm(&DeviceLimits::SM_90, &k, 256, 0), 8);
/// ```
pub fn blocks_per_sm(
    limits: &DeviceLimits,
    kernel: &KernelResources,
    threads: u32,
    dynamic_shared: usize,
) -> u32 {
    if threads == 0 || threads > limits.max_threads_per_block {
        return 0;
    }
    let shared = kernel.static_shared.saturating_add(dynamic_shared);
    if shared > limits.shared_per_block_optin {
        return 0;
    }
    let by_threads = limits.max_threads_per_sm / threads;
    let warps = threads.div_ceil(limits.warp_size.max(1));
    // Registers are allocated per warp in units of 256.
    let regs_per_warp = (kernel.registers_per_thread.max(1) * limits.warp_size).div_ceil(256) * 256;
    let regs_per_block = regs_per_warp.saturating_mul(warps);
    if regs_per_block > limits.registers_per_block {
        return 0;
    }
    let by_registers = limits.registers_per_sm / regs_per_block.max(1);
    let per_block_shared = shared + limits.reserved_shared_per_block;
    let by_shared = u32::try_from(limits.shared_per_sm / per_block_shared.max(1)).unwrap_or(u32::MAX);
    by_threads
        .min(limits.max_blocks_per_sm)
        .min(by_registers)
        .min(by_shared)
}

/// Scratch memory a team asks for, in bytes: the device ABI's (a team entry takes the four
/// requests as parameters and lays its dynamic shared memory out from them).
pub use hoplite_abi::TeamScratch;

/// A policy's scratch requests, `levels[level] = (bytes per team, bytes per thread)` as
/// `TeamPolicy::scratch_size` gives them (levels past 1 do not exist), in the device ABI's
/// shape: what a team launch lays out and what `TeamSize::Auto`'s size is chosen for.
///
/// ```
/// use hoplite_cuda::geometry::{team_scratch, TeamScratch};
/// let s = team_scratch(&[(1024, 16), (4096, 0)]);
/// assert_eq!(s, TeamScratch { per_team: 1024, per_thread: 16, level1_per_team: 4096, level1_per_thread: 0 });
/// ```
pub fn team_scratch(levels: &[(usize, usize)]) -> TeamScratch {
    let level = |l: usize| levels.get(l).copied().unwrap_or((0, 0));
    TeamScratch {
        per_team: level(0).0,
        per_thread: level(0).1,
        level1_per_team: level(1).0,
        level1_per_thread: level(1).1,
    }
}

/// The most registers one thread of a kernel can use (sm_70 to sm_90).
pub const MAX_REGISTERS_PER_THREAD: u32 = 255;

/// The largest team (a warp multiple) whose block fits one multiprocessor whatever the
/// kernel: at [`MAX_REGISTERS_PER_THREAD`] registers a thread, 256 threads on sm_70 to sm_90
/// (65 536 registers, allocated 256 at a time per warp).
///
/// ```
/// use hoplite_cuda::geometry::{team_size_for_any_kernel, DeviceLimits};
/// assert_eq!(team_size_for_any_kernel(&DeviceLimits::SM_90), 256);
/// ```
pub fn team_size_for_any_kernel(limits: &DeviceLimits) -> u32 {
    let heaviest = KernelResources {
        registers_per_thread: MAX_REGISTERS_PER_THREAD,
        static_shared: 0,
    };
    let warp = limits.warp_size.max(1);
    let mut size = (limits.max_threads_per_block / warp * warp).max(warp);
    while size > warp && blocks_per_sm(limits, &heaviest, size, 0) == 0 {
        size -= warp;
    }
    size
}

/// The team size of `TeamSize::Auto` (the space's recommended size, which a `TeamPolicy`
/// reports as its `team_size()` before any kernel is known): the warp multiple up to
/// [`team_size_for_any_kernel`] that keeps the most threads resident per multiprocessor
/// with `scratch` in shared memory; of equally good sizes, the smallest (more blocks to
/// spread the league). It depends on the device and the scratch only, so the size the policy
/// reports is the size its launches use, for every kernel: up to that cap, registers never
/// stop a block from fitting. The warp size when no team holds the scratch (the launch then
/// reports the scratch and the limit).
///
/// ```
/// use hoplite_cuda::geometry::{auto_team_size, DeviceLimits, TeamScratch};
/// // 32 blocks of 64 fill the 2048 threads of a multiprocessor.
/// assert_eq!(auto_team_size(&DeviceLimits::SM_90, TeamScratch::default()), 64);
/// ```
pub fn auto_team_size(limits: &DeviceLimits, scratch: TeamScratch) -> u32 {
    let warp = limits.warp_size.max(1);
    let cap = team_size_for_any_kernel(limits);
    // Registers do not bound a block of at most `cap` threads; shared memory and the
    // multiprocessor's thread and block limits do.
    let any_kernel = KernelResources::default();
    let mut best: Option<(u32, u32)> = None; // (resident threads, size)
    let mut size = warp;
    while size <= cap {
        let resident = blocks_per_sm(limits, &any_kernel, size, scratch.bytes(size)) * size;
        if resident > 0 && best.is_none_or(|(r, _)| resident > r) {
            best = Some((resident, size));
        }
        size += warp;
    }
    best.map_or(warp, |(_, size)| size)
}

/// The geometry of a team launch: one block of `team_size` threads per team along x, as
/// many blocks as teams up to what can be resident at once (blocks walk the league), and the
/// scratch as dynamic shared memory.
///
/// ```
/// use hoplite_cuda::geometry::{team_geometry, DeviceLimits, KernelResources, TeamScratch};
/// let k = KernelResources { registers_per_thread: 32, static_shared: 0 };
/// let g = team_geometry(&DeviceLimits::SM_90, &k, 10, 128, TeamScratch { per_team: 4096, ..TeamScratch::default() })?
///     .expect("a non-empty league");
/// assert_eq!((g.grid, g.block, g.shared_bytes), ([10, 1, 1], [128, 1, 1], 4096));
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::InvalidLaunch`] for a team size of 0 or above the device's block limit, or
/// scratch beyond the shared memory a block may have, with the numbers.
pub fn team_geometry(
    limits: &DeviceLimits,
    kernel: &KernelResources,
    league_size: u64,
    team_size: u32,
    scratch: TeamScratch,
) -> Result<Option<LaunchGeometry>, CudaError> {
    let invalid = |reason: String| CudaError::InvalidLaunch {
        kernel: "team policy",
        reason,
    };
    if team_size == 0 || team_size > limits.max_threads_per_block {
        return Err(invalid(format!(
            "team size {team_size}: a team is one block of 1 to {} threads on this device",
            limits.max_threads_per_block
        )));
    }
    let shared = scratch.bytes(team_size);
    let available = limits.shared_per_block_optin.saturating_sub(kernel.static_shared);
    if shared > available {
        return Err(invalid(format!(
            "{shared} bytes of scratch per team exceed the {available} bytes of shared memory a block may have on this device; ask for less scratch or use level 1"
        )));
    }
    if league_size == 0 {
        return Ok(None);
    }
    let per_sm = blocks_per_sm(limits, kernel, team_size, shared).max(1);
    let resident = u64::from(per_sm) * u64::from(limits.sm_count.max(1));
    let grid = blocks(league_size.min(resident), 1, limits.max_grid_dims[0]);
    Ok(Some(LaunchGeometry {
        grid: [grid, 1, 1],
        block: [team_size, 1, 1],
        shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
    }))
}

/// Whether `g` is a launch `limits` allows: every extent at least 1 and within the device's
/// grid and block limits, the block within the thread limit, the shared memory within the
/// opt-in limit. Every geometry this module makes passes; the launch checks it again.
///
/// ```
/// use hoplite_cuda::geometry::{fits, range_geometry, DeviceLimits};
/// let g = range_geometry(&DeviceLimits::SM_70, 1 << 40).expect("not empty");
/// assert!(fits(&DeviceLimits::SM_70, &g));
/// ```
pub fn fits(limits: &DeviceLimits, g: &LaunchGeometry) -> bool {
    (0..3).all(|a| {
        (1..=limits.max_grid_dims[a]).contains(&g.grid[a])
            && (1..=limits.max_block_dims[a]).contains(&g.block[a])
    }) && g.block_threads() <= u64::from(limits.max_threads_per_block)
        && (g.shared_bytes as usize) <= limits.shared_per_block_optin
}

/// `grid` with at most `budget` blocks in all (and at least one along each axis): x keeps
/// what it can first, then y, then z. Entries walk their space with grid-stride loops (or
/// blocks sized from the grid), so any such grid still covers it.
///
/// ```
/// use hoplite_cuda::geometry::cap_grid;
/// assert_eq!(cap_grid([1000, 40, 1], 300), [300, 1, 1]);
/// assert_eq!(cap_grid([10, 40, 3], 300), [10, 30, 1]);
/// assert_eq!(cap_grid([10, 4, 1], 300), [10, 4, 1]);
/// ```
pub fn cap_grid(grid: [u32; 3], budget: u64) -> [u32; 3] {
    let mut budget = budget.max(1);
    grid.map(|extent| {
        let kept = u64::from(extent).min(budget).max(1);
        budget = (budget / kept).max(1);
        u32::try_from(kept).unwrap_or(u32::MAX)
    })
}

/// `g` cut to `percent` of the blocks of its shape the device keeps resident at once
/// (`sm_count` times [`blocks_per_sm`] for the kernel's `resources`), rounded up and at least
/// one block: what a policy's `with_desired_occupancy(percent)` launches (Kokkos
/// `DesiredOccupancy`). The rest of the device stays free for kernels of other streams; the
/// launched threads walk the whole iteration space. A percentage above 100 is taken as 100
/// (the policy's check refuses it before a launch).
///
/// ```
/// use hoplite_cuda::geometry::{occupancy_geometry, range_geometry, DeviceLimits, KernelResources};
/// let limits = DeviceLimits::SM_90;
/// let light = KernelResources { registers_per_thread: 32, static_shared: 0 };
/// let g = range_geometry(&limits, 1 << 24).expect("not empty");
/// assert_eq!(g.grid[0], 65536);
/// // 132 SMs x 8 resident blocks of 256 threads = 1056 blocks at full occupancy.
/// assert_eq!(occupancy_geometry(&limits, &light, g, 100).grid[0], 1056);
/// assert_eq!(occupancy_geometry(&limits, &light, g, 25).grid[0], 264);
/// ```
pub fn occupancy_geometry(
    limits: &DeviceLimits,
    resources: &KernelResources,
    g: LaunchGeometry,
    percent: u8,
) -> LaunchGeometry {
    let threads = u32::try_from(g.block_threads()).unwrap_or(u32::MAX);
    // A block that fits no multiprocessor is refused by the launch; count one so the cap
    // stays defined.
    let per_sm = blocks_per_sm(limits, resources, threads, g.shared_bytes as usize).max(1);
    let resident = u64::from(limits.sm_count.max(1)) * u64::from(per_sm);
    let budget = (resident * u64::from(percent.clamp(1, 100))).div_ceil(100);
    LaunchGeometry {
        grid: cap_grid(g.grid, budget),
        ..g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [DeviceLimits; 3] = [DeviceLimits::SM_70, DeviceLimits::SM_80, DeviceLimits::SM_90];

    #[test]
    fn documented_limits() {
        for l in ALL {
            assert_eq!(l.max_threads_per_block, 1024);
            assert_eq!(l.max_block_dims, [1024, 1024, 64]);
            assert_eq!(l.max_grid_dims, [2_147_483_647, 65535, 65535]);
            assert_eq!(l.shared_per_block, 48 * 1024);
            assert_eq!(l.warp_size, 32);
            assert_eq!(l.max_threads_per_sm, 2048);
        }
        assert_eq!(DeviceLimits::SM_70.shared_per_block_optin, 96 * 1024);
        assert_eq!(DeviceLimits::SM_80.shared_per_block_optin, 163 * 1024);
        assert_eq!(DeviceLimits::SM_90.shared_per_block_optin, 227 * 1024);
        assert_eq!(DeviceLimits::SM_90.arch(), "compute_90");
    }

    #[test]
    fn ranges_cover_and_clamp() {
        for l in ALL {
            assert_eq!(range_geometry(&l, 0), None);
            let g = range_geometry(&l, 1).expect("one index");
            assert_eq!((g.grid, g.block), ([1, 1, 1], [256, 1, 1]));
            let g = range_geometry(&l, 257).expect("two blocks");
            assert_eq!(g.grid, [2, 1, 1]);
            // 2^50 indices: more blocks than the grid allows, so clamped; grid-stride loops
            // cover the rest.
            let g = range_geometry(&l, 1 << 50).expect("huge");
            assert_eq!(g.grid[0], l.max_grid_dims[0]);
            assert!(fits(&l, &g));
            let g = range_geometry(&l, u64::MAX).expect("max");
            assert!(fits(&l, &g));
        }
    }

    #[test]
    fn mdranges_put_the_last_index_on_x() {
        let l = DeviceLimits::SM_90;
        assert_eq!(mdrange_geometry(&l, &[3, 0]), None);
        assert_eq!(mdrange_geometry(&l, &[]), None);
        // Rank 2: a short last dimension leaves threads for y.
        let g = mdrange_geometry(&l, &[1000, 10]).expect("2d");
        assert_eq!(g.block, [16, 16, 1]);
        assert_eq!(g.grid, [1, 63, 1]);
        // Rank 3: z is the first index, and the block's z stays within 64.
        let g = mdrange_geometry(&l, &[100_000, 2, 2]).expect("3d");
        assert_eq!(g.block, [2, 2, 64]);
        assert_eq!(g.grid, [1, 1, 1563]);
        // y and z grids clamp at 65535.
        let g = mdrange_geometry(&l, &[1 << 40, 1 << 40, 1]).expect("clamped");
        assert_eq!(g.grid[1], 65535);
        assert_eq!(g.grid[2], 65535);
        assert!(fits(&l, &g));
        // Rank 4 and up: flattened onto x.
        let g = mdrange_geometry(&l, &[4, 4, 4, 4]).expect("4d");
        assert_eq!((g.grid, g.block), ([1, 1, 1], [256, 1, 1]));
        let g = mdrange_geometry(&l, &[1 << 30, 1 << 30, 1 << 30, 1 << 30]).expect("overflowing product");
        assert!(fits(&l, &g));
        for l in ALL {
            for lengths in [&[1u64][..], &[7, 9], &[5, 6, 7], &[1 << 20, 3, 1 << 20]] {
                let g = mdrange_geometry(&l, lengths).expect("non-empty");
                assert!(fits(&l, &g), "{lengths:?} on {l:?}: {g:?}");
                assert!(g.block_threads() <= 256);
            }
        }
    }

    #[test]
    fn occupancy_follows_each_limit() {
        let light = KernelResources {
            registers_per_thread: 32,
            static_shared: 0,
        };
        for l in ALL {
            // Threads: 2048 per SM.
            assert_eq!(blocks_per_sm(&l, &light, 1024, 0), 2);
            // Blocks: at most 32 per SM.
            assert_eq!(blocks_per_sm(&l, &light, 32, 0), 32);
            // Over the block limit.
            assert_eq!(blocks_per_sm(&l, &light, 1025, 0), 0);
            assert_eq!(blocks_per_sm(&l, &light, 0, 0), 0);
        }
        // Registers: 255 per thread round to 8192 per warp; 65536 per SM hold 8 warps.
        let heavy = KernelResources {
            registers_per_thread: 255,
            static_shared: 0,
        };
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_90, &heavy, 256, 0), 1);
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_90, &heavy, 512, 0), 0);
        // Shared memory: 48 KiB blocks, plus the 1 KiB reserved per block from sm_80.
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_70, &light, 128, 48 * 1024), 2);
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_80, &light, 128, 48 * 1024), 3);
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_90, &light, 128, 48 * 1024), 4);
        // Opt-in maximum on sm_90: one block; one byte more does not fit.
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_90, &light, 128, 227 * 1024), 1);
        assert_eq!(
            blocks_per_sm(&DeviceLimits::SM_90, &light, 128, 227 * 1024 + 1),
            0
        );
        assert_eq!(blocks_per_sm(&DeviceLimits::SM_70, &light, 128, 96 * 1024 + 1), 0);
    }

    #[test]
    fn auto_team_sizes() {
        for l in ALL {
            // 255 registers a thread, 256 per warp: eight warps use the 65 536 registers.
            assert_eq!(team_size_for_any_kernel(&l), 256);
            let heaviest = KernelResources {
                registers_per_thread: MAX_REGISTERS_PER_THREAD,
                static_shared: 0,
            };
            assert_eq!(blocks_per_sm(&l, &heaviest, 256, 0), 1);
            assert_eq!(blocks_per_sm(&l, &heaviest, 288, 0), 0);
            // 64 threads x 32 blocks = 2048: the first size that fills a multiprocessor.
            assert_eq!(auto_team_size(&l, TeamScratch::default()), 64);
            // Whatever the kernel's registers, a block of that size fits.
            for registers_per_thread in [1, 32, 128, MAX_REGISTERS_PER_THREAD] {
                let k = KernelResources {
                    registers_per_thread,
                    static_shared: 0,
                };
                assert!(
                    blocks_per_sm(&l, &k, 64, 0) >= 1,
                    "{registers_per_thread} registers"
                );
            }
        }
        // Large scratch per team: few blocks fit, so bigger teams keep more threads resident,
        // up to the size every kernel fits.
        let scratch = TeamScratch {
            per_team: 40 * 1024,
            per_thread: 0,
            ..TeamScratch::default()
        };
        let l = DeviceLimits::SM_90;
        let size = auto_team_size(&l, scratch);
        assert_eq!(size, 256);
        let blocks = blocks_per_sm(&l, &KernelResources::default(), size, scratch.bytes(size));
        assert_eq!(blocks, 5, "five blocks of 41 KiB in 228 KiB");
        // Scratch per thread: the size keeps a team's scratch within a block's shared memory.
        let per_thread = TeamScratch {
            per_thread: 1024,
            ..TeamScratch::default()
        };
        let size = auto_team_size(&l, per_thread);
        assert!(per_thread.bytes(size) <= l.shared_per_block_optin, "size {size}");
        assert!(team_geometry(&l, &KernelResources::default(), 10, size, per_thread).is_ok());
        // Scratch that no block can hold: the warp size, and the launch's geometry reports the
        // scratch and the limit.
        let too_much = TeamScratch {
            per_team: 300 * 1024,
            per_thread: 0,
            ..TeamScratch::default()
        };
        assert_eq!(auto_team_size(&l, too_much), 32);
        let err = team_geometry(&l, &KernelResources::default(), 10, 32, too_much).expect_err("too big");
        assert!(err.to_string().contains(&(227 * 1024).to_string()), "{err}");
    }

    #[test]
    fn team_geometries() {
        let k = KernelResources {
            registers_per_thread: 32,
            static_shared: 8 * 1024,
        };
        let l = DeviceLimits::SM_90;
        let none = team_geometry(&l, &k, 0, 128, TeamScratch::default()).expect("valid");
        assert_eq!(none, None);
        // A large league: as many blocks as can be resident (16 per SM at 128 threads).
        let g = team_geometry(&l, &k, 1 << 40, 128, TeamScratch::default())
            .expect("valid")
            .expect("non-empty");
        assert_eq!(g.grid, [16 * 132, 1, 1]);
        assert!(fits(&l, &g));
        assert!(team_geometry(&l, &k, 10, 0, TeamScratch::default()).is_err());
        assert!(team_geometry(&l, &k, 10, 1025, TeamScratch::default()).is_err());
        // Scratch plus the kernel's static shared memory must fit the opt-in limit.
        let fits_exactly = TeamScratch {
            per_team: 227 * 1024 - 8 * 1024,
            per_thread: 0,
            ..TeamScratch::default()
        };
        assert!(team_geometry(&l, &k, 10, 128, fits_exactly).is_ok());
        let one_more = TeamScratch {
            per_team: fits_exactly.per_team + 1,
            per_thread: 0,
            ..TeamScratch::default()
        };
        let err = team_geometry(&l, &k, 10, 128, one_more).expect_err("too big");
        assert!(err.to_string().contains("scratch"), "{err}");
        // Per-thread scratch scales with the team, each thread's part rounded up to 8 bytes.
        let per_thread = TeamScratch {
            per_team: 0,
            per_thread: 100,
            ..TeamScratch::default()
        };
        let g = team_geometry(&l, &k, 4, 256, per_thread)
            .expect("valid")
            .expect("non-empty");
        assert_eq!(g.shared_bytes, 104 * 256);
        // Level 1 follows level 0, per team and per thread, each part rounded alike.
        let both = TeamScratch {
            per_team: 20,
            per_thread: 4,
            level1_per_team: 9,
            level1_per_thread: 1,
        };
        let g = team_geometry(&l, &k, 4, 32, both)
            .expect("valid")
            .expect("non-empty");
        assert_eq!(g.shared_bytes, 24 + 16 + 32 * (8 + 8));
    }

    #[test]
    fn a_desired_occupancy_cuts_the_grid_to_its_share_of_the_resident_blocks() {
        let light = KernelResources {
            registers_per_thread: 32,
            static_shared: 0,
        };
        let heavy = KernelResources {
            registers_per_thread: 128,
            static_shared: 16 * 1024,
        };
        for l in ALL {
            for k in [light, heavy] {
                let mut shapes: Vec<LaunchGeometry> = [1u64, 1000, 1 << 24, 1 << 40]
                    .into_iter()
                    .filter_map(|n| range_geometry(&l, n))
                    .collect();
                shapes.extend(mdrange_geometry(&l, &[1 << 12, 1 << 12, 1 << 12]));
                shapes.extend(mdrange_geometry(&l, &[3, 1 << 20]));
                shapes.extend(team_geometry(&l, &k, 1 << 30, 128, TeamScratch::default()).expect("valid"));
                for g in shapes {
                    let threads = u32::try_from(g.block_threads()).expect("a block");
                    let resident = u64::from(l.sm_count) * u64::from(blocks_per_sm(&l, &k, threads, 0));
                    let blocks = |g: &LaunchGeometry| g.grid.iter().map(|&e| u64::from(e)).product::<u64>();
                    let mut last = 0;
                    for percent in [1, 25, 50, 99, 100] {
                        let cut = occupancy_geometry(&l, &k, g, percent);
                        let budget = (resident * u64::from(percent)).div_ceil(100);
                        assert_eq!((cut.block, cut.shared_bytes), (g.block, g.shared_bytes));
                        assert!(fits(&l, &cut), "{cut:?}");
                        assert!(blocks(&cut) <= budget.max(1), "{percent}% of {g:?}: {cut:?}");
                        assert!((0..3).all(|a| cut.grid[a] <= g.grid[a]), "{cut:?} within {g:?}");
                        // A grid within the budget is kept as it is.
                        if blocks(&g) <= budget {
                            assert_eq!(cut, g);
                        }
                        assert!(blocks(&cut) >= last, "more blocks for a larger share");
                        last = blocks(&cut);
                    }
                    // Out-of-range shares are clamped (the policy refuses them before a launch).
                    assert_eq!(occupancy_geometry(&l, &k, g, 0), occupancy_geometry(&l, &k, g, 1));
                    assert_eq!(
                        occupancy_geometry(&l, &k, g, 200),
                        occupancy_geometry(&l, &k, g, 100)
                    );
                }
            }
        }
        // A range of 2^24 on an H100 (132 SMs, 8 resident blocks of 256 light threads each):
        // 65536 blocks uncut, 1056 at 100% (one wave), 11 at 1%.
        let g = range_geometry(&DeviceLimits::SM_90, 1 << 24).expect("not empty");
        let at = |p| occupancy_geometry(&DeviceLimits::SM_90, &light, g, p).grid;
        assert_eq!(
            (g.grid, at(100), at(1)),
            ([65536, 1, 1], [1056, 1, 1], [11, 1, 1])
        );
    }

    #[test]
    fn a_capped_grid_keeps_x_first_and_never_drops_an_axis() {
        assert_eq!(cap_grid([5, 6, 7], 0), [1, 1, 1]);
        assert_eq!(cap_grid([5, 6, 7], 1000), [5, 6, 7]);
        assert_eq!(cap_grid([5, 6, 7], 60), [5, 6, 2]);
        assert_eq!(
            cap_grid([u32::MAX, 65535, 65535], u64::MAX),
            [u32::MAX, 65535, 65535]
        );
    }
}
