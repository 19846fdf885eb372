//! # hoplite-serial
//!
//! The serial backend: every kernel runs on the calling thread, in index order, before the
//! launch returns. It is the reference semantics every other backend is tested against, and
//! the cheapest way to run small problems (a launch costs a few nanoseconds).
//!
//! Teams have exactly one thread; asking for more is [`hoplite_core::Error::TeamSizeTooLarge`].
//!
//! ```
//! use hoplite_core::{parallel_reduce, RangePolicy, Sum};
//! use hoplite_serial::Serial;
//! let n = parallel_reduce("n", RangePolicy::new(Serial::default(), 0..10), |i, acc| *acc += *i, Sum::<usize>::new())?;
//! assert_eq!(n, 45);
//! # Ok::<(), hoplite_core::Error>(())
//! ```

use std::cell::Cell;
use std::io;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use hoplite_core::point_loop::TeamShare;
use hoplite_core::{
    ExecutionPolicy, ExecutionSpace, ForKernel, HostSpace, Idx, LayoutRight, MDRangePolicy, NestedLevel,
    ParallelFor, ParallelReduce, ParallelScan, RangePolicy, ReduceKernel, Reducer, Result, SCRATCH_LEVELS,
    ScanKernel, ScanValue, ScratchBuffer, ScratchPad, TeamMember, TeamPolicy, TokenPool, UniqueTokenSpace,
};

/// Largest level-0 scratch per team: 1 MiB (host scratch is ordinary memory).
pub const MAX_SCRATCH_LEVEL0: usize = 1 << 20;
/// Largest level-1 scratch per team: 256 MiB.
pub const MAX_SCRATCH_LEVEL1: usize = 1 << 28;

/// The serial execution space. `Serial::default()` is the default instance;
/// [`Serial::new`] makes an independent one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Serial {
    /// 0 is the default instance; [`Serial::new`] numbers the others from 1.
    instance: u64,
}

impl Serial {
    /// A new instance, distinct from every other.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Serial {
            instance: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The instance number (0 for the default instance).
    pub fn instance_id(&self) -> u64 {
        self.instance
    }
}

thread_local! {
    /// How many serial kernels the current thread is inside (nested launches nest).
    static KERNEL_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Marks the current thread as running a kernel while alive; panic-safe.
struct InKernel;

impl InKernel {
    #[inline(always)]
    fn enter() -> Self {
        KERNEL_DEPTH.with(|d| d.set(d.get() + 1));
        InKernel
    }
}

impl Drop for InKernel {
    #[inline(always)]
    fn drop(&mut self) {
        KERNEL_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

impl ExecutionSpace for Serial {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = SerialTeamMember<'t>;

    fn name(&self) -> &'static str {
        "Serial"
    }

    fn fence(&self) -> Result<()> {
        let _profiled = hoplite_core::profiling::FenceScope::begin(
            "hoplite::Serial::fence: Unnamed Instance Fence",
            || self.profiling_device_id(),
        );
        // Every launch completes before it returns.
        Ok(())
    }

    /// Kokkos' id for its `Serial` space: one instance (1) of device 0.
    fn profiling_device_id(&self) -> hoplite_core::profiling::DeviceId {
        hoplite_core::profiling::DeviceId::new(hoplite_core::profiling::DeviceType::SERIAL, 0, 1)
    }

    fn in_parallel(&self) -> bool {
        KERNEL_DEPTH.with(|d| d.get() > 0)
    }

    fn concurrency(&self) -> usize {
        1
    }

    fn max_team_size(&self) -> usize {
        1
    }

    fn max_vector_length(&self) -> usize {
        1
    }

    fn max_scratch_size(&self, level: usize) -> usize {
        match level {
            0 => MAX_SCRATCH_LEVEL0,
            1 => MAX_SCRATCH_LEVEL1,
            _ => 0,
        }
    }

    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        writeln!(
            out,
            "Serial execution space (instance {}): 1 thread, synchronous",
            self.instance
        )?;
        if detail {
            writeln!(out, "  memory space: HostSpace, layout: LayoutRight")?;
            writeln!(out, "  teams: 1 thread, vector length 1")?;
            writeln!(
                out,
                "  scratch per team: level 0 up to {MAX_SCRATCH_LEVEL0} bytes, level 1 up to {MAX_SCRATCH_LEVEL1} bytes"
            )?;
            writeln!(out, "  hoplite-serial {}", env!("CARGO_PKG_VERSION"))?;
        }
        Ok(())
    }
}

/// The team member of a serial team: one thread, so collectives return at once.
#[derive(Debug)]
pub struct SerialTeamMember<'t> {
    league_rank: usize,
    league_size: usize,
    team_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
    thread_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
}

// SAFETY: a serial launch makes one member per league rank, in sequence, each of team rank 0
// in a team of one; `SerialTeamMember` is not `Sync` (its scratch pads hold `Cell`s), and
// `visit_all` passes `&member` to a kernel generic over its brand. The provided methods are
// not overridden.
unsafe impl TeamMember for SerialTeamMember<'_> {
    fn league_rank(&self) -> usize {
        self.league_rank
    }

    fn league_size(&self) -> usize {
        self.league_size
    }

    fn team_rank(&self) -> usize {
        0
    }

    fn team_size(&self) -> usize {
        1
    }

    fn vector_length(&self) -> usize {
        1
    }

    fn team_barrier(&self) {}

    fn team_broadcast<T: Clone + Send + Sync + 'static>(&self, value: T, source: usize) -> T {
        assert!(
            source == 0,
            "team_broadcast: source rank {source} is not below the team size 1"
        );
        value
    }

    fn team_reduce<R>(&self, _reducer: &R, value: R::Value) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Sync + 'static,
    {
        value
    }

    fn team_scan<T: ScanValue>(&self, value: T) -> (T, T) {
        (T::zero(), value)
    }

    fn team_scratch(&self, level: usize) -> &ScratchPad<'_> {
        scratch_level(&self.team_scratch, level)
    }

    fn thread_scratch(&self, level: usize) -> &ScratchPad<'_> {
        scratch_level(&self.thread_scratch, level)
    }

    fn nested_reduce<R, F>(
        &self,
        _level: NestedLevel,
        range: Range<usize>,
        kernel: F,
        reducer: &R,
    ) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Send + Sync + 'static,
        F: for<'i> Fn(Idx<'i>, &mut R::Value),
    {
        let mut acc = reducer.init();
        for i in range {
            // SAFETY: a sequential loop hands each index to one iteration at a time, on
            // this thread, through a kernel generic over the brand.
            kernel(unsafe { Idx::new_unchecked(i) }, &mut acc);
        }
        acc
    }

    fn nested_scan<T, F>(&self, _level: NestedLevel, range: Range<usize>, kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool),
    {
        let mut partial = T::zero();
        for i in range {
            // SAFETY: as in `nested_reduce`.
            kernel(unsafe { Idx::new_unchecked(i) }, &mut partial, true);
        }
        partial
    }
}

fn scratch_level<'a, 't>(pads: &'a [ScratchPad<'t>; SCRATCH_LEVELS], level: usize) -> &'a ScratchPad<'t> {
    pads.get(level)
        .unwrap_or_else(|| panic!("scratch level {level} does not exist; levels are 0 and 1"))
}

mod sealed {
    /// The proof that a call comes from this crate: outside it the type cannot be named, so
    /// nothing outside can call [`SerialPolicy::visit_all`](super::SerialPolicy::visit_all),
    /// which makes iteration tokens and team members.
    #[derive(Clone, Copy, Debug)]
    pub struct Internal;

    pub trait Sealed {}
    impl Sealed for hoplite_core::RangePolicy<crate::Serial> {}
    impl<const R: usize> Sealed for hoplite_core::MDRangePolicy<crate::Serial, R> {}
    impl Sealed for hoplite_core::TeamPolicy<crate::Serial> {}
}

use sealed::Internal;

/// How the serial backend walks each kind of policy: every point, in order, on this thread.
///
/// Sealed, and its methods cannot be called from outside this crate: they mint the tokens
/// (and team members) that writers trust, so only the backend's own launches may run them.
/// Launch through `hoplite_core::parallel_for` / `parallel_reduce` / `parallel_scan`.
pub trait SerialPolicy: ExecutionPolicy<Space = Serial> + sealed::Sealed {
    /// Runs `kernel` once per point of the policy of launch `label`, in the policy's
    /// iteration order. Fails only before the first call (team scratch memory that cannot be
    /// allocated).
    #[doc(hidden)]
    fn run_all<K: ForKernel<Self>>(&self, _internal: Internal, label: &str, kernel: &K) -> Result<()>;

    /// Folds `kernel` over every point of the policy of launch `label` into `acc`, in order.
    #[doc(hidden)]
    fn fold_all<Red: Reducer, K: ReduceKernel<Self, Red::Value>>(
        &self,
        _internal: Internal,
        label: &str,
        kernel: &K,
        reducer: &Red,
        acc: &mut Red::Value,
    ) -> Result<()>;
}

impl SerialPolicy for RangePolicy<Serial> {
    #[inline(always)]
    fn run_all<K: ForKernel<Self>>(&self, _internal: Internal, _label: &str, kernel: &K) -> Result<()> {
        // SAFETY: the whole range goes to this one call, on this thread, which visits each
        // index once (in the kernel's own point loop: see `hoplite_core::point_loop`).
        unsafe { kernel.run_share(self.begin()..self.end()) };
        Ok(())
    }

    #[inline(always)]
    fn fold_all<Red: Reducer, K: ReduceKernel<Self, Red::Value>>(
        &self,
        _internal: Internal,
        _label: &str,
        kernel: &K,
        reducer: &Red,
        acc: &mut Red::Value,
    ) -> Result<()> {
        // SAFETY: as in `run_all`.
        unsafe { kernel.fold_share(self.begin()..self.end(), reducer, acc) };
        Ok(())
    }
}

impl<const R: usize> SerialPolicy for MDRangePolicy<Serial, R> {
    #[inline(always)]
    fn run_all<K: ForKernel<Self>>(&self, _internal: Internal, _label: &str, kernel: &K) -> Result<()> {
        // SAFETY: every tile goes to this one call, on this thread; tiles partition the box
        // and each point of a tile is visited once.
        unsafe { kernel.run_share(self.tile_share(0..self.num_tiles())) };
        Ok(())
    }

    #[inline(always)]
    fn fold_all<Red: Reducer, K: ReduceKernel<Self, Red::Value>>(
        &self,
        _internal: Internal,
        _label: &str,
        kernel: &K,
        reducer: &Red,
        acc: &mut Red::Value,
    ) -> Result<()> {
        // SAFETY: as in `run_all`.
        unsafe { kernel.fold_share(self.tile_share(0..self.num_tiles()), reducer, acc) };
        Ok(())
    }
}

/// The scratch of a serial team launch: one region per level, made of the team part and the
/// part of the team's only thread (one team at a time).
struct TeamScratch {
    buffers: [(ScratchBuffer, usize); SCRATCH_LEVELS],
}

impl TeamScratch {
    /// The scratch `policy` asks for. Fails when it cannot be allocated.
    fn new(policy: &TeamPolicy<Serial>, label: &str) -> Result<Self> {
        let mut buffers: [(ScratchBuffer, usize); SCRATCH_LEVELS] = Default::default();
        for (level, (buffer, team_words)) in buffers.iter_mut().enumerate() {
            let (team, thread) = policy.scratch_size(level);
            *team_words = team.div_ceil(8);
            let bytes = (*team_words * 8).saturating_add(thread);
            *buffer = ScratchBuffer::try_new(label, "Serial", bytes)?;
        }
        Ok(TeamScratch { buffers })
    }
}

/// Every team of a serial team launch, in league order, as the kernel's team loop walks
/// them (one key: a reduction keeps one partial).
struct SerialTeams<'a> {
    league_size: usize,
    scratch: &'a TeamScratch,
}

// SAFETY: one member per league rank, made here, on this thread, one team at a time
// (`SerialTeamMember`'s contract is argued at its impl).
unsafe impl TeamShare for SerialTeams<'_> {
    type Member<'it> = &'it SerialTeamMember<'it>;

    #[inline(always)]
    unsafe fn visit<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(usize, &'it SerialTeamMember<'it>),
    {
        let buffers = &self.scratch.buffers;
        for league_rank in 0..self.league_size {
            let member = SerialTeamMember {
                league_rank,
                league_size: self.league_size,
                team_scratch: std::array::from_fn(|l| {
                    ScratchPad::with_level(&buffers[l].0.words()[..buffers[l].1], l)
                }),
                thread_scratch: std::array::from_fn(|l| {
                    ScratchPad::with_level(&buffers[l].0.words()[buffers[l].1..], l)
                }),
            };
            visit(0, &member);
        }
    }
}

impl SerialPolicy for TeamPolicy<Serial> {
    fn run_all<K: ForKernel<Self>>(&self, _internal: Internal, label: &str, kernel: &K) -> Result<()> {
        let scratch = TeamScratch::new(self, label)?;
        let teams = SerialTeams {
            league_size: self.league_size(),
            scratch: &scratch,
        };
        // SAFETY: the whole league goes to this one call, on this thread.
        unsafe { kernel.run_teams(teams) };
        Ok(())
    }

    fn fold_all<Red: Reducer, K: ReduceKernel<Self, Red::Value>>(
        &self,
        _internal: Internal,
        label: &str,
        kernel: &K,
        reducer: &Red,
        acc: &mut Red::Value,
    ) -> Result<()> {
        let scratch = TeamScratch::new(self, label)?;
        let teams = SerialTeams {
            league_size: self.league_size(),
            scratch: &scratch,
        };
        // SAFETY: as in `run_all`.
        for (_, partial) in unsafe { kernel.fold_teams(teams, reducer) } {
            reducer.join(acc, partial);
        }
        Ok(())
    }
}

// SAFETY: `run_all` walks the points of the (validated) policy once each, in sequence, on
// the calling thread, and returns only when the last call has; the team members it makes are
// `SerialTeamMember`s, whose `TeamMember` contract is argued at their impl.
unsafe impl<P: SerialPolicy> ParallelFor<P> for Serial {
    #[inline]
    fn parallel_for<K: ForKernel<P>>(&self, label: &str, policy: &P, kernel: K) -> Result<()> {
        let _in = InKernel::enter();
        policy.run_all(Internal, label, &kernel)
    }
}

// SAFETY: as for `ParallelFor`: one sequential `fold_all`.
unsafe impl<P: SerialPolicy> ParallelReduce<P> for Serial {
    #[inline]
    fn parallel_reduce<R: Reducer, K: ReduceKernel<P, R::Value>>(
        &self,
        label: &str,
        policy: &P,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let _in = InKernel::enter();
        let mut acc = reducer.init();
        policy.fold_all(Internal, label, &kernel, reducer, &mut acc)?;
        reducer.finalize(&mut acc);
        Ok(acc)
    }
}

// SAFETY: one sequential pass over the range, each index once, on the calling thread.
unsafe impl ParallelScan<RangePolicy<Serial>> for Serial {
    #[inline]
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<Serial>, T>>(
        &self,
        _label: &str,
        policy: &RangePolicy<Serial>,
        kernel: K,
    ) -> Result<T> {
        let _in = InKernel::enter();
        let mut partial = T::zero();
        // SAFETY: the whole range goes to this one pass, on this thread, each index once.
        unsafe { kernel.scan_share(policy.begin()..policy.end(), &mut partial, true) };
        Ok(partial)
    }
}

impl UniqueTokenSpace for Serial {
    type InstanceToken = TokenPool;
    type GlobalToken = TokenPool;

    fn unique_token(&self) -> TokenPool {
        // A pool of one id (the concurrency) cannot fail to build.
        match TokenPool::new(self.concurrency(), "Serial") {
            Ok(pool) => pool,
            Err(e) => unreachable!("a pool of one id is valid: {e}"),
        }
    }

    fn unique_token_with_size(&self, size: usize) -> Result<TokenPool> {
        TokenPool::new(size, "Serial")
    }

    fn global_unique_token() -> TokenPool {
        // Serial instances may run on several application threads at once, and global scope ids
        // are unique across all of them: one id per thread the machine can run at once, so
        // that many serial kernels on different threads hold ids without waiting.
        static GLOBAL: OnceLock<TokenPool> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let ids = std::thread::available_parallelism().map_or(1, usize::from);
                match TokenPool::new(ids, "Serial") {
                    Ok(pool) => pool,
                    Err(e) => unreachable!("a pool of at least one id is valid: {e}"),
                }
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoplite_core::Error;

    #[test]
    fn instances_compare_by_identity() {
        let a = Serial::new();
        assert_eq!(a, a);
        assert_ne!(a, Serial::new());
        assert_eq!(Serial::default(), Serial::default());
        let err: Error = TokenPool::new(0, "Serial").expect_err("size 0");
        assert!(err.to_string().contains("at least one id"));
    }
}
