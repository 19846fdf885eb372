// Over 800 lines: the launches (range, MDRange, team; for, reduce, scan) share one check, plan and pack path, with its unit tests beside it.
//! Launching a [`DeviceKernel`](hoplite_core::device_kernel::DeviceKernel) over a range, an MDRange or a
//! league of teams on a [`Cuda`] instance, for the core's `parallel_for`, `parallel_reduce`
//! and `parallel_scan` on a `Cuda` policy (`crate::dispatch` finds the kernel in the launch):
//! the module from the cache, loaded once per device; the geometry from [`crate::geometry`];
//! the parameters packed by [`crate::params`]; then `cuLaunchKernel` on the instance's
//! stream. [`DeviceArg`] is the argument list every launch here checks and packs; raw kernels
//! take it as [`RawArg`](crate::raw::RawArg).

use std::collections::HashMap;
use std::sync::Arc;

use hoplite_core::device_kernel::{DeviceKernelInfo, HandleAccess};
use hoplite_core::{IterationOrder, MDRangePolicy, Reducer, ScanValue, TeamPolicy};
use parking_lot::Mutex;

use crate::driver::{self, Device, Stream, StreamBuffer};
use crate::geometry::{
    DeviceLimits, IndexOrder, KernelResources, LaunchGeometry, TeamScratch, blocks_per_sm, fits,
    mdrange_geometry_in, occupancy_geometry, range_geometry, team_geometry, team_scratch,
};
use crate::params::{
    IterationArgs, KernelArg, ParamBuffer, pack_for_args_info, pack_reduction, pack_scan_args_info,
};
use crate::reduce::{
    DeviceReduceValue, ReduceWalk, decode, encode, exclusive_prefix, join_partials, partials_count,
    partials_geometry, value_layout, walk_for,
};
use crate::{Cuda, CudaError};

mod args;

pub(crate) use self::args::DeviceArg;
pub use self::args::DeviceScalar;

/// A kernel loaded on a device: the function and what it uses.
pub(crate) struct Loaded {
    pub(crate) function: driver::Function,
    pub(crate) resources: KernelResources,
}

/// The kernel `k` loaded on `device`: compiled (or taken from the cache) and loaded once per
/// device.
pub(crate) fn load_info(k: &DeviceKernelInfo, device: &Device) -> Result<Arc<Loaded>, CudaError> {
    load_source(device, k.source_hash, k.name, k.entry, k.cuda_source)
}

/// The entry `entry` of `source` (key `hash`, see [`crate::nvrtc::ModuleCache::ptx_of_source`]) loaded on
/// `device`: compiled (or taken from the cache) and loaded once per device and key.
pub(crate) fn load_source(
    device: &Device,
    hash: u64,
    kernel: &'static str,
    entry: &str,
    source: &str,
) -> Result<Arc<Loaded>, CudaError> {
    /// Loaded kernels by (device ordinal, source hash).
    type Table = HashMap<(usize, u64), Arc<Loaded>>;
    static LOADED: Mutex<Option<Table>> = Mutex::new(None);
    let key = (device.ordinal, hash);
    if let Some(l) = LOADED.lock().get_or_insert_with(HashMap::new).get(&key) {
        return Ok(l.clone());
    }
    let function = driver::load_function(device, hash, kernel, entry, source)?;
    let resources = function.resources(device)?;
    let loaded = Arc::new(Loaded { function, resources });
    LOADED
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(key, loaded.clone());
    Ok(loaded)
}

/// Refuses a view of another GPU than `instance_device` (argument `k`'s device is the `k`-th
/// item, `None` for a scalar) unless `peer_enabled(instance_device, view_device)` says the
/// instance's context may touch that GPU's memory (peer access enabled by
/// `Cuda::enable_peer_access`; the launches pass [`driver::peer_access_enabled`]). Pure, so
/// the decision is tested without a driver.
pub(crate) fn check_devices(
    kernel: &'static str,
    instance_device: usize,
    devices: impl IntoIterator<Item = Option<usize>>,
    peer_enabled: impl Fn(usize, usize) -> bool,
) -> Result<(), CudaError> {
    for (k, device) in devices.into_iter().enumerate() {
        if let Some(view_device) = device
            && view_device != instance_device
            && !peer_enabled(instance_device, view_device)
        {
            return Err(CudaError::WrongDevice {
                what: format!("argument {k} of kernel `{kernel}`"),
                view_device,
                instance_device,
            });
        }
    }
    Ok(())
}

/// [`check_devices`] for the arguments of a launch on `instance_device`: views of other GPUs
/// whose peer access was enabled, and atomic updates of their memory only where the link
/// carries atomics natively ([`driver::peer_atomics_enabled`]).
pub(crate) fn check_arg_devices(
    kernel: &'static str,
    instance_device: usize,
    args: &[DeviceArg],
) -> Result<(), CudaError> {
    check_devices(
        kernel,
        instance_device,
        args.iter().map(|a| a.device),
        driver::peer_access_enabled,
    )?;
    check_devices(
        kernel,
        instance_device,
        args.iter().map(DeviceArg::atomic_device),
        driver::peer_atomics_enabled,
    )
}

/// Whether `iteration` has no point: a range or a dimension of a box with `begin == end`, or
/// a league of no team (as `hoplite_core::IndexBounds` counts its points).
pub(crate) fn is_empty(iteration: &IterationArgs) -> bool {
    match iteration {
        IterationArgs::Range { begin, end } => begin >= end,
        IterationArgs::MdRange { begins, ends, .. } => begins.iter().zip(ends).any(|(b, e)| b >= e),
        IterationArgs::Team { league_size, .. } => *league_size == 0,
    }
}

/// Checks the handles against the iteration space: writers contain it (`ends`, the
/// iteration's ends, or for a team launch [`team_writer_ends`]) and overlap no other handle.
///
/// As the core checks a launch's handles (`hoplite_core`'s handle check skips a launch with
/// no point), a launch over an empty `iteration` runs no kernel and stores nowhere, so its
/// writers need not contain anything: any writer is accepted there. Overlaps are refused
/// whatever the iteration, as the core refuses conflicting borrows before it looks at it.
pub(crate) fn check_args(
    kernel: &'static str,
    iteration: &IterationArgs,
    ends: &[u64],
    args: &[DeviceArg],
) -> Result<(), CudaError> {
    let invalid = |reason: String| CudaError::InvalidLaunch { kernel, reason };
    let empty = is_empty(iteration);
    for (k, a) in args.iter().enumerate() {
        let Some(extents) = &a.writer_extents else {
            continue;
        };
        // A team launch's writers need the league along their first dimension, whatever
        // their rank (see `team_writer_ends`); other launches' writers contain every index.
        let contained = match iteration {
            IterationArgs::Team { .. } => extents
                .first()
                .is_some_and(|&rows| ends.first().is_none_or(|&league| league <= rows)),
            _ => extents.len() == ends.len() && extents.iter().zip(ends).all(|(e, end)| end <= e),
        };
        if !empty && !contained {
            return Err(invalid(format!(
                "argument {k}: a writer of extents {extents:?} cannot take every index up to {ends:?}; launch over a range inside the view"
            )));
        }
        let Some((lo, hi)) = a.bytes else { continue };
        for (j, b) in args.iter().enumerate() {
            if j != k
                && let Some((blo, bhi)) = b.bytes
                && blo < hi
                && lo < bhi
            {
                return Err(invalid(format!(
                    "argument {k} is a writer whose memory overlaps argument {j}; pass disjoint views"
                )));
            }
        }
    }
    Ok(())
}

impl Cuda {
    /// Launches the kernel `k` (a `#[kernel]` `parallel_for` over a `RangePolicy`, found at run
    /// time in a launch on a `Cuda` policy) over `range` on this instance's stream, with `args` in
    /// the kernel's parameter order. Returns once the launch is queued;
    /// [`fence`](hoplite_core::ExecutionSpace::fence) waits for it (the views passed are kept alive
    /// until then).
    ///
    /// # Errors
    ///
    /// Why this instance has no device; [`CudaError::InvalidLaunch`] for arguments that do
    /// not match the kernel or a writer that does not contain a non-empty range; NVRTC's
    /// errors; the driver's error.
    pub(crate) fn launch_range_info(
        &self,
        k: &DeviceKernelInfo,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        occupancy: Option<u8>,
    ) -> Result<(), CudaError> {
        let (begin, end) = checked_range_info(k, range)?;
        let iteration = IterationArgs::Range { begin, end };
        self.launch_info(
            k,
            iteration,
            &[end],
            args,
            occupied(occupancy, move |limits, _| {
                Ok(range_geometry(limits, end - begin))
            }),
        )
    }

    /// Launches the kernel `k` (a `#[kernel]` `parallel_for` over an `MDRangePolicy` of rank `R`,
    /// found at run time in a launch on a `Cuda` policy) over `begins..ends` per dimension, as
    /// [`launch_range_info`](Self::launch_range_info) does.
    ///
    /// # Errors
    ///
    /// As for [`launch_range_info`](Self::launch_range_info), and a dimension whose begin is past
    /// its end.
    pub(crate) fn launch_mdrange_info<const R: usize>(
        &self,
        k: &DeviceKernelInfo,
        begins: [usize; R],
        ends: [usize; R],
        args: &[DeviceArg],
        occupancy: Option<u8>,
    ) -> Result<(), CudaError> {
        let (iteration, ends, (lengths, order)) = checked_mdrange_info::<R>(k, begins, ends, args)?;
        self.launch_info(
            k,
            iteration,
            &ends,
            args,
            occupied(occupancy, move |limits, _| {
                Ok(mdrange_geometry_in(limits, &lengths, order))
            }),
        )
    }

    /// Launches the kernel `k` (a `#[kernel]` `parallel_for` over a `TeamPolicy`, found at run time
    /// in a launch on a `Cuda` policy) over the policy's league of teams of `policy.team_size()`
    /// threads (`TeamSize::Auto`: the size that keeps the most threads resident with the policy's
    /// scratch, up to one any kernel fits; [`auto_team_size`](crate::geometry::auto_team_size)).
    /// Both scratch levels, per team and per thread, are the block's dynamic shared memory. Team
    /// kernels store through atomic handles, into their team's row of a rank-2 writer, or at their
    /// league rank of a rank-1 writer; such a writer must have an entry per team (all writers of
    /// one launch of the same rank).
    ///
    /// # Errors
    ///
    /// As for [`launch_range_info`](Self::launch_range_info); a writer of rank above 2, of another
    /// rank than the launch's other writers, or with fewer rows than the league; a team size of 0
    /// or above the device's block limit; scratch at a level above 1, or more than the device's
    /// shared memory per block.
    pub(crate) fn launch_team_info(
        &self,
        k: &DeviceKernelInfo,
        policy: &TeamPolicy<Cuda>,
        args: &[DeviceArg],
    ) -> Result<(), CudaError> {
        let team = TeamLaunch::of_info(k, policy)?;
        let ends = team_writer_ends(team.league);
        let iteration = team.iteration();
        let geometry = occupied(policy.desired_occupancy(), move |limits, resources| {
            team.plan(limits, resources)
        });
        self.launch_info(k, iteration, &ends, args, geometry)
    }

    /// The `launch` step of the explicit launches, for the kernel `k`.
    fn launch_info(
        &self,
        k: &DeviceKernelInfo,
        iteration: IterationArgs,
        ends: &[u64],
        args: &[DeviceArg],
        geometry: impl FnOnce(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError>,
    ) -> Result<(), CudaError> {
        // Pure checks first, so bad input is reported the same with or without a device.
        let mut params = pack_for_args_info(k, &iteration, args)?;
        check_args(k.name, &iteration, ends, args)?;
        let Some(plan) = self.plan_info(k, &iteration, args, geometry)? else {
            return Ok(());
        };
        // SAFETY: `params` was packed by `pack_for_args_info` against `k.params`, and
        // `check_args` found every writer containing the iteration space and overlapping no
        // other handle; the views are kept alive below until the next fence.
        unsafe { plan.launch(&mut params) }?;
        self.inner
            .keep_alive
            .keep(args.iter().filter_map(|a| a.keep.clone()));
        Ok(())
    }

    /// The device side of a launch after the pure checks: the stream, the loaded kernel and
    /// the geometry, checked against the device. `None` for an empty iteration space.
    /// The `plan` step of the explicit launches, for the kernel `k`.
    fn plan_info(
        &self,
        k: &DeviceKernelInfo,
        iteration: &IterationArgs,
        args: &[DeviceArg],
        geometry: impl FnOnce(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError>,
    ) -> Result<Option<Plan<'_>>, CudaError> {
        let stream = self.stream()?;
        let device = &stream.device;
        check_arg_devices(k.name, device.ordinal, args)?;
        if is_empty(iteration) {
            return Ok(None); // an empty iteration space: nothing to compile or run
        }
        let loaded = load_info(k, device)?;
        let Some(g) = geometry(&device.limits, &loaded.resources)? else {
            return Ok(None);
        };
        if !fits(&device.limits, &g) || g.block_threads() > u64::from(device.limits.max_threads_per_block) {
            return Err(CudaError::InvalidLaunch {
                kernel: k.name,
                reason: format!("the geometry {g:?} does not fit the device"),
            });
        }
        if blocks_per_sm(
            &device.limits,
            &loaded.resources,
            g.block[0] * g.block[1] * g.block[2],
            g.shared_bytes as usize,
        ) == 0
        {
            return Err(CudaError::InvalidLaunch {
                kernel: k.name,
                reason: format!(
                    "a block of {:?} threads does not fit one multiprocessor with {:?}",
                    g.block, loaded.resources
                ),
            });
        }
        Ok(Some(Plan {
            stream,
            function: loaded.function,
            geometry: g,
        }))
    }

    /// A reduction: validates, allocates the partials on the device, launches, copies them
    /// back and joins them in a fixed order, in index order for a reducer that is not
    /// commutative (see [`crate::reduce`]).
    /// The `reduce` step of the explicit launches, for the kernel `k`.
    fn reduce_info<R>(
        &self,
        k: &DeviceKernelInfo,
        iteration: IterationArgs,
        ends: &[u64],
        args: &[DeviceArg],
        reducer: &R,
        geometry: impl FnOnce(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError>,
    ) -> Result<R::Value, CudaError>
    where
        R: Reducer,
        R::Value: DeviceReduceValue,
    {
        let (mut params, join) = pack_reduction(k, &iteration, args, reducer)?;
        let partials_param = params.offsets().len() - 1;
        check_args(k.name, &iteration, ends, args)?;
        let Some(plan) = self.plan_info(k, &iteration, args, |limits, resources| {
            Ok(geometry(limits, resources)?.map(|g| partials_geometry(limits, g)))
        })?
        else {
            return Ok(join_partials(reducer, []));
        };
        let bytes = partials_bytes::<R::Value>(k, &plan.geometry, join.is_some())?;
        let partials = StreamBuffer::new(plan.stream, bytes)?;
        params.set(partials_param, &partials.address().to_le_bytes());
        // SAFETY: `params` was packed by `pack_reduce_args_info` against `k.params` and the
        // kernel's pattern, which fixes the partial's size; the partials pointer is a live
        // allocation of one partial per launched thread of `plan.geometry`; `check_args`
        // found every writer containing the iteration space and overlapping no other handle;
        // the views in `args` are borrowed until the download below has waited for the launch.
        unsafe { plan.launch(&mut params) }?;
        partials.read_back(bytes, |host| join_partials(reducer, decode::<R::Value>(host)))
    }

    /// Reduces with the kernel `k` (a `#[kernel]` `parallel_reduce` over a `RangePolicy`, found at
    /// run time) over `range` on this instance's stream and returns the reducer's value: every
    /// launched thread accumulates from `reducer.init()`, the host joins the partials in a fixed
    /// order (see [`crate::reduce`]) and finalizes once. A reducer whose join is not commutative
    /// ([`Reducer::is_commutative`]) is joined in index order, as the core's axiom asks: each
    /// thread folds one contiguous block of the range. Waits for the launch.
    ///
    /// # Errors
    ///
    /// As for [`launch_range_info`](Self::launch_range_info), and [`CudaError::InvalidLaunch`] when
    /// the kernel is not a reduction of the reducer's value type.
    pub(crate) fn reduce_range_info<R>(
        &self,
        k: &DeviceKernelInfo,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        reducer: &R,
        occupancy: Option<u8>,
    ) -> Result<R::Value, CudaError>
    where
        R: Reducer,
        R::Value: DeviceReduceValue,
    {
        let (begin, end) = checked_range_info(k, range)?;
        self.reduce_info::<R>(
            k,
            IterationArgs::Range { begin, end },
            &[end],
            args,
            reducer,
            occupied(occupancy, move |limits, _| {
                Ok(range_geometry(limits, end - begin))
            }),
        )
    }

    /// Reduces with the kernel `k` (a `#[kernel]` `parallel_reduce` over an `MDRangePolicy` of rank
    /// `N`, found at run time) over the policy's box, as
    /// [`reduce_range_info`](Self::reduce_range_info) does. A reducer that is not commutative is
    /// joined in the order of nested loops in the policy's inner order (the last index fastest
    /// for `Right`, as an `MDRangePolicy` without tiles visits its box).
    ///
    /// # Errors
    ///
    /// As for [`reduce_range_info`](Self::reduce_range_info) and
    /// [`launch_mdrange_info`](Self::launch_mdrange_info).
    pub(crate) fn reduce_mdrange_info<R, const N: usize>(
        &self,
        k: &DeviceKernelInfo,
        policy: &MDRangePolicy<Cuda, N>,
        args: &[DeviceArg],
        reducer: &R,
    ) -> Result<R::Value, CudaError>
    where
        R: Reducer,
        R::Value: DeviceReduceValue,
    {
        let checked = checked_mdrange_info::<N>(k, policy.begin(), policy.end(), args)?;
        let (iteration, ends, (lengths, order)) =
            reduce_mdrange_order(checked, walk_for(reducer), policy.inner_order());
        let geometry = occupied(policy.desired_occupancy(), move |limits, _| {
            Ok(mdrange_geometry_in(limits, &lengths, order))
        });
        self.reduce_info::<R>(k, iteration, &ends, args, reducer, geometry)
    }

    /// Reduces with the kernel `k` (a `#[kernel]` `parallel_reduce` over a `TeamPolicy`, found at
    /// run time) over the policy's league, as [`reduce_range_info`](Self::reduce_range_info) does;
    /// every thread of every team contributes its partial. A reducer that is not commutative is
    /// joined as the host backends join it: by contiguous runs of teams (one run per block), and
    /// within a run by team rank. Writers and scratch as in
    /// [`launch_team_info`](Self::launch_team_info).
    ///
    /// # Errors
    ///
    /// As for [`reduce_range_info`](Self::reduce_range_info) and
    /// [`launch_team_info`](Self::launch_team_info).
    pub(crate) fn reduce_team_info<R>(
        &self,
        k: &DeviceKernelInfo,
        policy: &TeamPolicy<Cuda>,
        args: &[DeviceArg],
        reducer: &R,
    ) -> Result<R::Value, CudaError>
    where
        R: Reducer,
        R::Value: DeviceReduceValue,
    {
        let team = TeamLaunch::of_info(k, policy)?;
        self.reduce_info::<R>(
            k,
            team.iteration(),
            &team_writer_ends(team.league),
            args,
            reducer,
            occupied(policy.desired_occupancy(), move |limits, resources| {
                team.plan(limits, resources)
            }),
        )
    }

    /// Scans with the kernel `k` (a `#[kernel]` `parallel_scan` over a `RangePolicy`, found at run
    /// time) over `range` and returns the total. Two launches of the same geometry: the first
    /// stores each thread's chunk sum, the host turns them into exclusive prefix sums in thread
    /// order ([`exclusive_prefix`](crate::reduce::exclusive_prefix)), the second runs the final
    /// pass from them. Waits for both.
    ///
    /// # Errors
    ///
    /// As for [`launch_range_info`](Self::launch_range_info), and [`CudaError::InvalidLaunch`] when
    /// the kernel is not a scan of `T`.
    pub(crate) fn scan_range_info<T>(
        &self,
        k: &DeviceKernelInfo,
        range: std::ops::Range<usize>,
        args: &[DeviceArg],
        occupancy: Option<u8>,
    ) -> Result<T, CudaError>
    where
        T: DeviceReduceValue + ScanValue,
    {
        let (begin, end) = checked_range_info(k, range)?;
        let range = IterationArgs::Range { begin, end };
        let mut params = pack_scan_args_info::<T>(k, &range, args)?;
        let final_param = params.offsets().len() - 1;
        let values_param = final_param - 1;
        check_args(k.name, &range, &[end], args)?;
        let geometry = occupied(occupancy, move |limits, _| {
            Ok(range_geometry(limits, end - begin))
        });
        let Some(plan) = self.plan_info(k, &range, args, |limits, resources| {
            Ok(geometry(limits, resources)?.map(|g| partials_geometry(limits, g)))
        })?
        else {
            return Ok(T::zero());
        };
        let bytes = partials_bytes::<T>(k, &plan.geometry, false)?;
        let values = StreamBuffer::new(plan.stream, bytes)?;
        params.set(values_param, &values.address().to_le_bytes());
        // SAFETY: `params` was packed by `pack_scan_args_info` against `k.params` and the
        // kernel's pattern; the values pointer is a live allocation of one `T` per launched
        // thread of `plan.geometry`, the geometry both passes use (the entry derives its
        // chunks from it); writers contain the range and overlap no other handle; the views
        // in `args` are borrowed until the synchronization below.
        unsafe { plan.launch(&mut params) }?;
        let mut sums: Vec<T> = values.read_back(bytes, |host| decode::<T>(host).collect())?;
        let total = exclusive_prefix(&mut sums);
        values.upload(&encode(&sums))?;
        params.set(final_param, &[1]);
        // SAFETY: as for the first pass; the prefixes were queued on the same stream before
        // this launch, so the final pass reads them.
        unsafe { plan.launch(&mut params) }?;
        plan.stream.synchronize()?;
        Ok(total)
    }
}

/// `geometry`, cut to `occupancy` percent of the blocks the device keeps resident for the
/// kernel where the launch's policy asked for a desired occupancy
/// ([`occupancy_geometry`]).
pub(crate) fn occupied(
    occupancy: Option<u8>,
    geometry: impl FnOnce(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError>,
) -> impl FnOnce(&DeviceLimits, &KernelResources) -> Result<Option<LaunchGeometry>, CudaError> {
    move |limits, resources| {
        let g = geometry(limits, resources)?;
        Ok(match occupancy {
            Some(percent) => g.map(|g| occupancy_geometry(limits, resources, g, percent)),
            None => g,
        })
    }
}

/// The bounds of `range` for the kernel `k`, or the error for a range that starts after it ends.
pub(crate) fn checked_range_info(
    k: &DeviceKernelInfo,
    range: std::ops::Range<usize>,
) -> Result<(u64, u64), CudaError> {
    let (begin, end) = (range.start as u64, range.end as u64);
    if begin > end {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!("range {begin}..{end} starts after it ends"),
        });
    }
    Ok((begin, end))
}

/// The order an MDRange over `args` walks its indices in: that of the first writer of rank 2
/// or more (else the first such view), so that neighbouring threads touch its neighbouring
/// elements ([`IndexOrder::of_strides`]).
pub(crate) fn index_order(args: &[DeviceArg]) -> IndexOrder {
    let strides = |writers: bool| {
        args.iter().find_map(|a| match &a.arg {
            KernelArg::Handle(h) if h.strides.len() >= 2 && (!writers || h.access == HandleAccess::Write) => {
                Some(IndexOrder::of_strides(&h.strides))
            }
            _ => None,
        })
    };
    strides(true).or_else(|| strides(false)).unwrap_or_default()
}

/// An MDRange's iteration space, its ends, and its geometry's lengths and index order.
pub(crate) type CheckedMdRange = (IterationArgs, Vec<u64>, (Vec<u64>, IndexOrder));

/// The iteration space (walked in the order `args` suggest, [`index_order`]), the ends and
/// the geometry's lengths and order of an MDRange of the kernel `k`, or the dimension that
/// starts after it ends.
pub(crate) fn checked_mdrange_info<const R: usize>(
    k: &DeviceKernelInfo,
    begins: [usize; R],
    ends: [usize; R],
    args: &[DeviceArg],
) -> Result<CheckedMdRange, CudaError> {
    let begins: Vec<u64> = begins.iter().map(|&b| b as u64).collect();
    let ends: Vec<u64> = ends.iter().map(|&e| e as u64).collect();
    if let Some(d) = (0..R).find(|&d| begins[d] > ends[d]) {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!("dimension {d}: {}..{} starts after it ends", begins[d], ends[d]),
        });
    }
    let lengths: Vec<u64> = (0..R).map(|d| ends[d] - begins[d]).collect();
    let order = index_order(args);
    let iteration = IterationArgs::MdRange {
        begins,
        ends: ends.clone(),
        order,
    };
    Ok((iteration, ends, (lengths, order)))
}

/// An MDRange reduction's iteration and geometry order for `walk`: the blocked walk (a
/// reducer that is not commutative) flattens the box in `visit`, the order of nested loops
/// whose index order its partials must follow, rather than in the order the views suggest
/// (which only decides how neighbouring threads touch memory).
pub(crate) fn reduce_mdrange_order(
    checked: CheckedMdRange,
    walk: ReduceWalk,
    visit: IterationOrder,
) -> CheckedMdRange {
    let (mut iteration, ends, (lengths, mut order)) = checked;
    if walk == ReduceWalk::Blocked {
        order = match visit {
            IterationOrder::Right => IndexOrder::LastFastest,
            IterationOrder::Left => IndexOrder::FirstFastest,
        };
        if let IterationArgs::MdRange { order: walked, .. } = &mut iteration {
            *walked = order;
        }
    }
    (iteration, ends, (lengths, order))
}

/// The iteration space a team launch's writers must contain: the league, along their first
/// dimension. A team stores into its row or plane of a writer (`team_row`, `team_plane`,
/// indexed by the league rank) or at its league rank of a rank-1 writer
/// (`league_token().single()`), so every writer needs an entry per team there; its other
/// dimensions are checked per access by the kernel. Checked before the launch, because a
/// failed check inside a device kernel traps, which ends the process's use of the device,
/// where the host's panic only fails the launch.
pub(crate) fn team_writer_ends(league: u64) -> Vec<u64> {
    vec![league]
}

/// What a team launch takes from its policy: the league, the team size the policy reports
/// (for `TeamSize::Auto` the space's recommended size, [`crate::geometry::auto_team_size`]),
/// and the scratch (checked here: only levels 0 and 1 exist).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TeamLaunch {
    pub(crate) league: u64,
    size: u32,
    scratch: TeamScratch,
    vector_length: u64,
}

impl TeamLaunch {
    /// The launch `policy` describes for the kernel `k`. Team size and scratch are checked
    /// against the device when the geometry is computed, not against the policy's host
    /// limits.
    pub(crate) fn of_info(k: &DeviceKernelInfo, policy: &TeamPolicy<Cuda>) -> Result<TeamLaunch, CudaError> {
        if let Some(level) = policy.invalid_scratch_level() {
            return Err(CudaError::InvalidLaunch {
                kernel: k.name,
                reason: format!("scratch level {level} does not exist; use level 0 or 1"),
            });
        }
        Ok(TeamLaunch {
            league: policy.league_size() as u64,
            // What the policy reports is what the members see: `Auto` resolves to the
            // space's recommended size for this scratch, never to a size of the kernel's.
            size: u32::try_from(policy.team_size()).unwrap_or(u32::MAX),
            scratch: team_scratch(&[policy.scratch_size(0), policy.scratch_size(1)]),
            vector_length: policy.vector_length() as u64,
        })
    }

    /// The entry's iteration parameters: the league, the four scratch requests and the vector
    /// length.
    pub(crate) fn iteration(&self) -> IterationArgs {
        IterationArgs::Team {
            league_size: self.league,
            scratch: self.scratch,
            vector_length: self.vector_length,
        }
    }

    /// The geometry: teams of the policy's size, the scratch as the block's dynamic shared
    /// memory; an error where the kernel's resources and the scratch do not fit that size.
    pub(crate) fn plan(
        &self,
        limits: &DeviceLimits,
        resources: &KernelResources,
    ) -> Result<Option<LaunchGeometry>, CudaError> {
        team_geometry(limits, resources, self.league, self.size, self.scratch)
    }
}

/// The bytes of the partials of a launch of `g` (one per block where the device joins each
/// block's values, else one per launched thread), in `V`'s device layout.
fn partials_bytes<V: DeviceReduceValue>(
    k: &DeviceKernelInfo,
    g: &LaunchGeometry,
    joined_on_device: bool,
) -> Result<usize, CudaError> {
    let size = value_layout(V::PATTERN).map_or(0, |l| l.size);
    usize::try_from(partials_count(g, joined_on_device))
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!(
                "{} partials of {size} bytes do not fit the address space",
                partials_count(g, joined_on_device)
            ),
        })
}

/// A launch ready for the device: the stream, the function and the checked geometry.
pub(crate) struct Plan<'a> {
    pub(crate) stream: &'a Stream,
    pub(crate) function: driver::Function,
    pub(crate) geometry: LaunchGeometry,
}

impl Plan<'_> {
    /// `cuLaunchKernel` of the planned function with `params` on the stream.
    ///
    /// # Safety
    ///
    /// `params` must be packed for the kernel's entry by one of `crate::params`' packers
    /// (which check them against the kernel's `params()` and pattern); every handle and
    /// partials address in it must be a live allocation of the device that stays alive until
    /// the launch completes, every writer must contain the iteration space and overlap no
    /// other handle.
    pub(crate) unsafe fn launch(&self, params: &mut ParamBuffer) -> Result<(), CudaError> {
        let g = &self.geometry;
        let mut pointers = params.pointers();
        // SAFETY: `function` is a loaded kernel of this stream's device whose entry takes
        // exactly the parameters packed in `params` (the caller's contract, and the
        // `DeviceKernel` contract that the entry matches `params()`); `pointers` holds one
        // pointer per parameter into `params`, which outlives the call (the driver copies the
        // values before returning); every address in them is live until the launch completes
        // (the caller's contract); the geometry was checked against the device by `plan`.
        unsafe { self.function.launch(self.stream, g, &mut pointers) }
    }
}

#[cfg(test)]
mod tests {
    use hoplite_core::{LayoutLeft, View};

    use super::*;
    use crate::{CudaSpace, CudaUVMSpace};

    #[test]
    fn views_carry_their_device_and_another_devices_are_refused() {
        // Zero-length views allocate nothing, so they exist without a driver.
        let on_1: View<f64, 1, LayoutLeft, CudaSpace> =
            View::without_initializing_in(CudaSpace::on_device(1), "x", [0]).expect("no memory needed");
        let managed_on_1: View<f32, 2, LayoutLeft, CudaUVMSpace> =
            View::without_initializing_in(CudaUVMSpace::on_device(1), "m", [0, 0]).expect("no memory needed");
        let on_0: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
        let args = [
            DeviceArg::read(&on_1),
            DeviceArg::scalar(2.0),
            DeviceArg::write(&managed_on_1),
        ];
        assert_eq!(
            args.iter().map(|a| a.device).collect::<Vec<_>>(),
            [Some(1), None, Some(1)]
        );
        assert!(check_devices("k", 1, args.iter().map(|a| a.device), no_peers).is_ok());
        let e = check_devices("k", 0, args.iter().map(|a| a.device), no_peers)
            .expect_err("device 1's views on device 0");
        assert!(
            matches!(
                &e,
                CudaError::WrongDevice { what, view_device: 1, instance_device: 0 } if what.contains("argument 0")
            ),
            "{e}"
        );
        let mixed = [DeviceArg::read(&on_1), DeviceArg::write(&on_0)];
        let e = check_devices("k", 1, mixed.iter().map(|a| a.device), no_peers)
            .expect_err("a device-0 view on device 1");
        assert!(
            matches!(&e, CudaError::WrongDevice { what, view_device: 0, instance_device: 1 } if what.contains("argument 1")),
            "{e}"
        );
        assert!(e.to_string().contains("Cuda::on_device(0)"), "{e}");
        assert!(e.to_string().contains("enable_peer_access(0)"), "{e}");
    }

    #[test]
    fn atomic_updates_of_a_peers_memory_need_native_peer_atomics() {
        let on_1: View<f64, 1, LayoutLeft, CudaSpace> =
            View::without_initializing_in(CudaSpace::on_device(1), "x", [0]).expect("no memory needed");
        let bins_on_1: View<u32, 1, LayoutLeft, CudaSpace> =
            View::without_initializing_in(CudaSpace::on_device(1), "bins", [0]).expect("no memory needed");
        let args = [
            DeviceArg::read(&on_1),
            DeviceArg::atomic(&bins_on_1),
            DeviceArg::scalar(1.0),
        ];
        assert_eq!(
            args.iter().map(DeviceArg::atomic_device).collect::<Vec<_>>(),
            [None, Some(1), None]
        );
        // Access 0 -> 1 enabled over a link without native atomics: the reader passes, the
        // atomic handle does not.
        let enabled = |d: usize, p: usize| (d, p) == (0, 1);
        let native = |_: usize, _: usize| false;
        assert!(check_devices("k", 0, args.iter().map(|a| a.device), enabled).is_ok());
        let e = check_devices("k", 0, args.iter().map(DeviceArg::atomic_device), native)
            .expect_err("no native peer atomics");
        assert!(
            matches!(&e, CudaError::WrongDevice { what, view_device: 1, instance_device: 0 } if what.contains("argument 1")),
            "{e}"
        );
        assert!(check_devices("k", 0, args.iter().map(DeviceArg::atomic_device), enabled).is_ok());
    }

    /// A writer of `extents` over the bytes `bytes` of device 0, as `DeviceArg::write` makes
    /// one (the views themselves would need a driver to allocate).
    fn writer(extents: &[u64], bytes: (u64, u64)) -> DeviceArg {
        DeviceArg {
            arg: KernelArg::Handle(crate::params::HandleArg {
                ptr: bytes.0,
                access: HandleAccess::Write,
                element: hoplite_core::device_kernel::ScalarType::U32,
                extents: extents.to_vec(),
                strides: vec![1; extents.len()],
            }),
            writer_extents: Some(extents.to_vec()),
            bytes: Some(bytes),
            device: Some(0),
            keep: None,
        }
    }

    #[test]
    fn writers_need_not_contain_an_empty_iteration() {
        let huge = 1u64 << 32;
        let marks = [writer(&[1, 1, 1], (0x1000, 0x1004))];
        let mdrange = |begins: [u64; 3], ends: [u64; 3]| IterationArgs::MdRange {
            begins: begins.to_vec(),
            ends: ends.to_vec(),
            order: IndexOrder::LastFastest,
        };
        // The core accepts this launch of `2^32 x 2^32 x 0` points (its handle check skips a
        // launch with no point); so does Cuda, and it runs nothing.
        let empty = mdrange([0, 0, 0], [huge, huge, 0]);
        assert!(is_empty(&empty));
        assert!(check_args("k", &empty, &[huge, huge, 0], &marks).is_ok());
        // Empty by a dimension whose begin is its end, not 0.
        let at_seven = mdrange([0, 7, 0], [huge, 7, 9]);
        assert!(is_empty(&at_seven));
        assert!(check_args("k", &at_seven, &[huge, 7, 9], &marks).is_ok());
        // One point more in the last dimension and the writer must hold every point.
        let one_deep = mdrange([0, 0, 0], [huge, huge, 1]);
        assert!(!is_empty(&one_deep));
        let e = check_args("k", &one_deep, &[huge, huge, 1], &marks).expect_err("not contained");
        assert!(e.to_string().contains("cannot take every index"), "{e}");
        assert!(check_args("k", &mdrange([0, 0, 0], [1, 1, 1]), &[1, 1, 1], &marks).is_ok());

        // Ranges: `5..5` takes a writer of any extent (and of any rank), `0..5` one of 5.
        let short = [writer(&[3], (0x2000, 0x200c))];
        let range = |begin, end| IterationArgs::Range { begin, end };
        assert!(check_args("k", &range(5, 5), &[5], &short).is_ok());
        assert!(check_args("k", &range(5, 5), &[5], &marks).is_ok());
        assert!(check_args("k", &range(0, 5), &[5], &short).is_err());
        assert!(check_args("k", &range(0, 3), &[3], &short).is_ok());

        // A league of no team takes any writer; a league of 2 one with a row per team.
        let league = |league_size| IterationArgs::Team {
            league_size,
            scratch: TeamScratch::default(),
            vector_length: 1,
        };
        assert!(check_args("k", &league(0), &team_writer_ends(0), &marks).is_ok());
        // Every writer needs the league along its first dimension, whatever its rank: a
        // rank-3 writer of one plane does not take a league of 2; a rank-2 writer of 2 rows
        // and a rank-1 writer of 2 entries take a league of 2 together, not of 3.
        let e = check_args("k", &league(2), &team_writer_ends(2), &marks).expect_err("one plane");
        assert!(e.to_string().contains("argument 0"), "{e}");
        let rows_and_sums = [writer(&[2, 5], (0x1000, 0x1050)), writer(&[2], (0x2000, 0x2010))];
        assert!(check_args("k", &league(2), &team_writer_ends(2), &rows_and_sums).is_ok());
        let e = check_args("k", &league(3), &team_writer_ends(3), &rows_and_sums).expect_err("short");
        assert!(e.to_string().contains("argument 0"), "{e}");
        let sums_first = [writer(&[2], (0x2000, 0x2010)), writer(&[3, 5], (0x1000, 0x1078))];
        let e = check_args("k", &league(3), &team_writer_ends(3), &sums_first).expect_err("short");
        assert!(e.to_string().contains("argument 0"), "{e}");

        // Overlapping handles are refused whatever the iteration, as conflicting borrows are.
        let overlapping = [
            writer(&[1, 1, 1], (0x1000, 0x1004)),
            writer(&[3], (0x1000, 0x100c)),
        ];
        for (iteration, ends) in [(empty, vec![huge, huge, 0]), (range(0, 0), vec![0])] {
            let e = check_args("k", &iteration, &ends, &overlapping).expect_err("overlap");
            assert!(e.to_string().contains("overlaps argument 1"), "{e}");
        }
    }

    #[test]
    fn auto_teams_launch_the_size_the_policy_reports() {
        use hoplite_core::device_kernel::{DeviceIteration, DevicePattern};
        use hoplite_core::{PerTeam, PerThread, TeamSize};

        use crate::geometry::auto_team_size;

        let info = DeviceKernelInfo {
            name: "team_kernel",
            entry: "team_kernel_for_team",
            iteration: DeviceIteration::Team,
            pattern: DevicePattern::For,
            params: &[],
            cuda_source: "",
            source_hash: 0,
        };
        for (team, thread) in [(0, 0), (40 * 1024, 0), (1024, 256)] {
            let policy = TeamPolicy::new(Cuda::default(), 7, TeamSize::Auto)
                .with_scratch_size(0, PerTeam(team), PerThread(thread))
                .with_scratch_size(1, PerTeam(64), PerThread(8));
            let launch = TeamLaunch::of_info(&info, &policy).expect("levels 0 and 1");
            // The launch runs teams of the size the policy reports (without a device 0, as
            // `max_team_size`; the launch then stops at the missing driver), and lays out
            // the scratch that size was chosen for.
            assert_eq!(launch.size as usize, policy.team_size());
            assert_eq!(
                launch.scratch,
                team_scratch(&[policy.scratch_size(0), policy.scratch_size(1)])
            );
            for limits in [DeviceLimits::SM_70, DeviceLimits::SM_80, DeviceLimits::SM_90] {
                // What `Cuda::recommended_team_size` gives on such a device.
                let size = auto_team_size(&limits, launch.scratch);
                let on_device = TeamLaunch { size, ..launch };
                for registers_per_thread in [1, 32, 64, 128, 255] {
                    let k = KernelResources {
                        registers_per_thread,
                        static_shared: 0,
                    };
                    let g = on_device
                        .plan(&limits, &k)
                        .expect("every kernel fits the recommended size")
                        .expect("a league of 7");
                    assert_eq!(g.block, [size, 1, 1], "{registers_per_thread} registers");
                    assert!(blocks_per_sm(&limits, &k, size, g.shared_bytes as usize) >= 1);
                }
            }
        }
    }

    #[test]
    fn blocked_mdrange_reductions_walk_the_policys_order() {
        let checked = || {
            let iteration = IterationArgs::MdRange {
                begins: vec![0, 0],
                ends: vec![4, 5],
                // What a column-major view suggests for neighbouring threads.
                order: IndexOrder::FirstFastest,
            };
            (iteration, vec![4, 5], (vec![4, 5], IndexOrder::FirstFastest))
        };
        let order_of = |c: &CheckedMdRange| match &c.0 {
            IterationArgs::MdRange { order, .. } => (*order, c.2.1),
            other => panic!("{other:?}"),
        };
        // Strided: the views decide; blocked: the nested loops' order, whatever the views.
        let strided = reduce_mdrange_order(checked(), ReduceWalk::Strided, IterationOrder::Right);
        assert_eq!(
            order_of(&strided),
            (IndexOrder::FirstFastest, IndexOrder::FirstFastest)
        );
        let right = reduce_mdrange_order(checked(), ReduceWalk::Blocked, IterationOrder::Right);
        assert_eq!(
            order_of(&right),
            (IndexOrder::LastFastest, IndexOrder::LastFastest)
        );
        let left = reduce_mdrange_order(checked(), ReduceWalk::Blocked, IterationOrder::Left);
        assert_eq!(
            order_of(&left),
            (IndexOrder::FirstFastest, IndexOrder::FirstFastest)
        );
    }

    /// No pair enabled: only the instance's own device is accepted.
    fn no_peers(_: usize, _: usize) -> bool {
        false
    }

    #[test]
    fn enabled_peer_access_admits_the_peers_views_in_that_direction_only() {
        // Instance of device 0; views of devices 0, 1 and 2; access 0 -> 1 enabled, and
        // 1 -> 0 and 2 -> 0 too, which must not count for an instance of device 0.
        let enabled = [(0, 1), (1, 0), (2, 0)];
        let peers = |device: usize, peer: usize| enabled.contains(&(device, peer));
        let ok = [Some(0), None, Some(1), Some(1)];
        assert!(check_devices("k", 0, ok, peers).is_ok());
        let e = check_devices("k", 0, [Some(1), Some(0), Some(2)], peers).expect_err("0 -> 2 not enabled");
        assert!(
            matches!(&e, CudaError::WrongDevice { what, view_device: 2, instance_device: 0 } if what.contains("argument 2")),
            "{e}"
        );
        assert!(e.to_string().contains("enable_peer_access(2)"), "{e}");
        assert!(e.to_string().contains("can_access_peer(0, 2)"), "{e}");
        // Device 2's instance may use device 0's views (2 -> 0), not device 1's.
        assert!(check_devices("k", 2, [Some(0), Some(2)], peers).is_ok());
        let e = check_devices("k", 2, [Some(0), Some(1)], peers).expect_err("2 -> 1 not enabled");
        assert!(
            matches!(
                &e,
                CudaError::WrongDevice {
                    view_device: 1,
                    instance_device: 2,
                    ..
                }
            ),
            "{e}"
        );
        // The pairs are only asked about views of other devices, with the instance first.
        let asked = std::cell::RefCell::new(Vec::new());
        let record = |device: usize, peer: usize| {
            asked.borrow_mut().push((device, peer));
            true
        };
        assert!(check_devices("k", 3, [Some(3), None, Some(1), Some(0)], record).is_ok());
        assert_eq!(*asked.borrow(), [(3, 1), (3, 0)]);
    }

    #[test]
    fn without_a_driver_no_pair_is_enabled_but_a_device_reaches_itself() {
        assert!(driver::peer_access_enabled(1, 1));
        if !crate::driver_present() {
            assert!(!driver::peer_access_enabled(0, 1));
        }
    }
}
