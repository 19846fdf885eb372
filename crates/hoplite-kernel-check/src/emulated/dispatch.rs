//! The core's launches on [`HostDevice`]: `parallel_for`, `parallel_reduce` and
//! `parallel_scan` over range, MDRange and team policies, for `#[kernel]` kernels, each run
//! as the kernel's generated entry through [`Prepared`] (see the [module documentation](super)).

use hoplite_abi::{DeviceIteration, DevicePattern, IndexOrder, IterationArgs, TeamScratch};
use hoplite_core::{
    Error, ForKernel, IterationOrder, MDRangePolicy, MinMaxLocScalar, MinMaxScalar, ParallelFor,
    ParallelReduce, ParallelScan, RangePolicy, ReduceKernel, Reducer, Result, ScanKernel, ScanValue,
    TeamPolicy, ValLoc,
};

use super::{
    HostDevice, MAX_TEAM_SIZE, Prepared, RANGE_GRID, SHARED_BYTES_PER_BLOCK, TEAM_BLOCKS, device_launch,
    mdrange_grid,
};
use crate::Grid;

/// A range's iteration space.
fn range_args(begin: usize, end: usize) -> IterationArgs {
    IterationArgs::Range {
        begin: begin as u64,
        end: end as u64,
    }
}

/// The launch of a team policy: its iteration space, grid and dynamic shared memory.
fn team_launch(prepared: &Prepared, policy: &TeamPolicy<HostDevice>) -> Result<(IterationArgs, Grid, usize)> {
    if let Some(level) = policy.invalid_scratch_level() {
        return Err(prepared.invalid(format!("scratch level {level} does not exist; use level 0 or 1")));
    }
    let team = policy.team_size();
    if team == 0 || team > MAX_TEAM_SIZE {
        return Err(prepared.invalid(format!(
            "team size {team}: a team is one block of 1 to {MAX_TEAM_SIZE} threads"
        )));
    }
    let (per_team, per_thread) = policy.scratch_size(0);
    let (level1_per_team, level1_per_thread) = policy.scratch_size(1);
    let scratch = TeamScratch {
        per_team,
        per_thread,
        level1_per_team,
        level1_per_thread,
    };
    // `team` is at most `MAX_TEAM_SIZE`, so it fits.
    let threads = u32::try_from(team).unwrap_or(u32::MAX);
    let shared = scratch.bytes(threads);
    if shared > SHARED_BYTES_PER_BLOCK {
        return Err(prepared.invalid(format!(
            "{shared} bytes of scratch per team exceed the {SHARED_BYTES_PER_BLOCK} bytes of shared memory of a block; ask for less"
        )));
    }
    let league = policy.league_size();
    let blocks = u32::try_from(league).unwrap_or(u32::MAX).clamp(1, TEAM_BLOCKS);
    let grid = Grid {
        blocks: [blocks, 1, 1],
        threads: [threads, 1, 1],
    };
    let iteration = IterationArgs::Team {
        league_size: league as u64,
        scratch,
        vector_length: policy.vector_length() as u64,
    };
    Ok((iteration, grid, shared))
}

/// Tries `$run` with the value type `$v` set to each listed type, returning from the caller
/// with the first that is `$value`.
macro_rules! with_device_value {
    ($value:ty, |$v:ident| $run:expr) => {
        with_device_value!(@each $value, |$v| $run; i32, i64, u32, u64, f32, f64, usize, isize, bool,
            ValLoc<i32>, ValLoc<i64>, ValLoc<u32>, ValLoc<u64>, ValLoc<f32>, ValLoc<f64>, ValLoc<usize>,
            ValLoc<isize>,
            MinMaxScalar<i32>, MinMaxScalar<i64>, MinMaxScalar<u32>, MinMaxScalar<u64>, MinMaxScalar<f32>,
            MinMaxScalar<f64>, MinMaxScalar<usize>, MinMaxScalar<isize>,
            MinMaxLocScalar<i32>, MinMaxLocScalar<i64>, MinMaxLocScalar<u32>, MinMaxLocScalar<u64>,
            MinMaxLocScalar<f32>, MinMaxLocScalar<f64>, MinMaxLocScalar<usize>, MinMaxLocScalar<isize>,
            Option<usize>)
    };
    (@each $value:ty, |$v:ident| $run:expr; $($t:ty),*) => {$(
        if typeid::of::<$value>() == typeid::of::<$t>() {
            type $v = $t;
            return $run;
        }
    )*};
}

/// The error for a reduction into a value type with no device layout.
fn no_device_value<V>(prepared: &Prepared) -> Error {
    prepared.invalid(format!(
        "a reduction into `{}`, which has no device layout; reduce a scalar, a `ValLoc`, a `MinMaxScalar` or a `MinMaxLocScalar` of one",
        std::any::type_name::<V>()
    ))
}

// SAFETY: the kernel is never called on the host: the generated entry runs, whose
// `DeviceKernel` contract keeps its stores at the launch's own points (or checked against
// the extents passed); the core checked every writer against the range and every borrow
// before the dispatch; the launch returns only once every emulated thread has finished, so
// no access outlives the call.
unsafe impl ParallelFor<RangePolicy<HostDevice>> for HostDevice {
    fn parallel_for<K: ForKernel<RangePolicy<HostDevice>>>(
        &self,
        label: &str,
        policy: &RangePolicy<HostDevice>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::Range, |p| p == DevicePattern::For)?;
        if policy.is_empty() {
            return Ok(());
        }
        prepared.run_for(&range_args(policy.begin(), policy.end()), RANGE_GRID, 0)
    }
}

// SAFETY: as for the range policy; the entry walks the box given, which the core checked the
// writers against.
unsafe impl<const N: usize> ParallelFor<MDRangePolicy<HostDevice, N>> for HostDevice {
    fn parallel_for<K: ForKernel<MDRangePolicy<HostDevice, N>>>(
        &self,
        label: &str,
        policy: &MDRangePolicy<HostDevice, N>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::MdRange(N), |p| p == DevicePattern::For)?;
        if policy.is_empty() {
            return Ok(());
        }
        prepared.run_for(&mdrange_args(&prepared, policy), mdrange_grid(N), 0)
    }
}

/// An MDRange policy's iteration space, walked in the order the handles suggest.
fn mdrange_args<const N: usize>(prepared: &Prepared, policy: &MDRangePolicy<HostDevice, N>) -> IterationArgs {
    IterationArgs::MdRange {
        begins: policy.begin().iter().map(|&b| b as u64).collect(),
        ends: policy.end().iter().map(|&e| e as u64).collect(),
        order: prepared.index_order(),
    }
}

// SAFETY: as for the range policy; team kernels store through atomics, their team's row or
// their league rank, which the core checked against the league.
unsafe impl ParallelFor<TeamPolicy<HostDevice>> for HostDevice {
    fn parallel_for<K: ForKernel<TeamPolicy<HostDevice>>>(
        &self,
        label: &str,
        policy: &TeamPolicy<HostDevice>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::Team, |p| p == DevicePattern::For)?;
        let (iteration, grid, shared) = team_launch(&prepared, policy)?;
        if policy.league_size() == 0 {
            return Ok(());
        }
        prepared.run_for(&iteration, grid, shared)
    }
}

// SAFETY: as for `ParallelFor`; reductions return the joined value after the launches.
unsafe impl ParallelReduce<RangePolicy<HostDevice>> for HostDevice {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<RangePolicy<HostDevice>, R::Value>>(
        &self,
        label: &str,
        policy: &RangePolicy<HostDevice>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::Range, |p| {
            !matches!(p, DevicePattern::For | DevicePattern::Scan(_))
        })?;
        let (begin, end) = (policy.begin(), policy.end());
        let whole = (begin < end).then(|| (range_args(begin, end), RANGE_GRID));
        with_device_value!(R::Value, |V| prepared.reduce::<R, V>(whole, 0, reducer));
        Err(no_device_value::<R::Value>(&prepared))
    }
}

// SAFETY: as for the range policy.
unsafe impl<const N: usize> ParallelReduce<MDRangePolicy<HostDevice, N>> for HostDevice {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<MDRangePolicy<HostDevice, N>, R::Value>>(
        &self,
        label: &str,
        policy: &MDRangePolicy<HostDevice, N>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::MdRange(N), |p| {
            !matches!(p, DevicePattern::For | DevicePattern::Scan(_))
        })?;
        let mut iteration = mdrange_args(&prepared, policy);
        if !reducer.is_commutative() {
            // The blocked walk flattens the box in the policy's inner order, which is index
            // order where the policy visits its box as nested loops; other tilings are
            // refused, as `Cuda` refuses them.
            if !policy.visits_in_nested_order() {
                return Err(prepared.invalid(format!(
                    "the reducer `{}` is not commutative, so its partial results must join in the MDRange's visit order, which with tiles {:?} is tile by tile; drop `with_tiles`, or reduce with a commutative reducer",
                    std::any::type_name::<R>(),
                    policy.tiles()
                )));
            }
            if let IterationArgs::MdRange { order, .. } = &mut iteration {
                *order = match policy.inner_order() {
                    IterationOrder::Right => IndexOrder::LastFastest,
                    IterationOrder::Left => IndexOrder::FirstFastest,
                };
            }
        }
        let whole = (!policy.is_empty()).then(|| (iteration, mdrange_grid(N)));
        with_device_value!(R::Value, |V| prepared.reduce::<R, V>(whole, 0, reducer));
        Err(no_device_value::<R::Value>(&prepared))
    }
}

// SAFETY: as for the range policy.
unsafe impl ParallelReduce<TeamPolicy<HostDevice>> for HostDevice {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<TeamPolicy<HostDevice>, R::Value>>(
        &self,
        label: &str,
        policy: &TeamPolicy<HostDevice>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::Team, |p| {
            !matches!(p, DevicePattern::For | DevicePattern::Scan(_))
        })?;
        let (iteration, grid, shared) = team_launch(&prepared, policy)?;
        let whole = (policy.league_size() > 0).then_some((iteration, grid));
        with_device_value!(R::Value, |V| prepared.reduce::<R, V>(whole, shared, reducer));
        Err(no_device_value::<R::Value>(&prepared))
    }
}

// SAFETY: as for `ParallelFor`; the two passes run one after the other (each returns only
// once its threads finished), so passes over one index never overlap.
unsafe impl ParallelScan<RangePolicy<HostDevice>> for HostDevice {
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<HostDevice>, T>>(
        &self,
        label: &str,
        policy: &RangePolicy<HostDevice>,
        kernel: K,
    ) -> Result<T> {
        let launch = device_launch(label, kernel.device_launch())?;
        let prepared = Prepared::new(label, &launch)?;
        prepared.expect(DeviceIteration::Range, |p| matches!(p, DevicePattern::Scan(_)))?;
        let (begin, end) = (policy.begin() as u64, policy.end() as u64);
        macro_rules! attempt {
            ($($t:ty),*) => {$(
                if typeid::of::<T>() == typeid::of::<$t>() {
                    return prepared.scan::<T, $t>(begin, end);
                }
            )*};
        }
        attempt!(i32, i64, u32, u64, f32, f64, usize, isize);
        Err(prepared.invalid(format!(
            "a scan of `{}`, which has no device layout; scan a numeric scalar",
            std::any::type_name::<T>()
        )))
    }
}
