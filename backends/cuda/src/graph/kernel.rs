//! `#[kernel]` nodes of a [`CudaGraph`]: a launch checked and packed when it is added, loaded
//! and added as a CUDA kernel node when the graph is built.

use std::any::Any;
use std::sync::Arc;

use hoplite_core::TeamPolicy;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::device_kernel::DeviceLaunch;
use hoplite_graph::{DevicePolicy, NodeKernel};

use super::Geometry;
use crate::dispatch::device_args;
use crate::driver;
use crate::geometry::{DeviceLimits, KernelResources, LaunchGeometry, mdrange_geometry_in, range_geometry};
use crate::launch::{
    CheckedMdRange, DeviceArg, Loaded, TeamLaunch, check_args, check_devices, checked_mdrange_info,
    checked_range_info, load_info, occupied, team_writer_ends,
};
use crate::params::{IterationArgs, ParamBuffer, pack_for_args_info};
use crate::{Cuda, CudaError};

/// A `#[kernel]` launch checked and packed, waiting for `instantiate` to load it.
pub(super) struct KernelNode {
    pub(super) name: &'static str,
    /// The kernel, loaded on the graph's device when the graph is built.
    pub(super) kernel: DeviceKernelInfo,
    geometry: Geometry,
    /// The policy's desired occupancy, which cuts the geometry on the device.
    occupancy: Option<u8>,
    pub(super) params: ParamBuffer,
    /// Each argument's device (`None` for a scalar), checked against the graph's device.
    devices: Vec<Option<usize>>,
    /// Each argument's device where it updates memory atomically (`None` otherwise).
    atomic_devices: Vec<Option<usize>>,
    /// The views the kernel reads and writes, alive as long as the graph.
    _keep: Vec<Arc<dyn Any + Send + Sync>>,
}

impl KernelNode {
    /// The node launching `kernel` with `params` packed from `args`, whose devices it records
    /// and whose views it keeps alive.
    pub(super) fn new(
        kernel: DeviceKernelInfo,
        geometry: Geometry,
        params: ParamBuffer,
        args: &[DeviceArg],
    ) -> KernelNode {
        KernelNode {
            name: kernel.name,
            kernel,
            geometry,
            occupancy: None,
            params,
            devices: args.iter().map(|a| a.device).collect(),
            atomic_devices: args.iter().map(DeviceArg::atomic_device).collect(),
            _keep: args.iter().filter_map(DeviceArg::keep).collect(),
        }
    }

    /// The node with the geometry cut to `percent` of the device's resident blocks, as an
    /// eager launch of a policy with that desired occupancy is.
    pub(super) fn with_occupancy(mut self, percent: Option<u8>) -> KernelNode {
        self.occupancy = percent;
        self
    }

    /// The launch shape on a device of `limits` for the loaded kernel's `resources` (`None`
    /// for an empty iteration space).
    pub(super) fn geometry(
        &self,
        limits: &DeviceLimits,
        resources: &KernelResources,
    ) -> Result<Option<LaunchGeometry>, CudaError> {
        occupied(self.occupancy, |limits, resources| {
            (self.geometry)(limits, resources)
        })(limits, resources)
    }

    /// The kernel loaded on `device` (compiled at first use, then from the module cache).
    pub(super) fn load(&self, device: &driver::Device) -> Result<Arc<Loaded>, CudaError> {
        load_info(&self.kernel, device)
    }

    /// As a launch's `check_arg_devices`, from the devices recorded when the node was made.
    pub(super) fn check_devices(&self, instance_device: usize) -> Result<(), CudaError> {
        check_devices(
            self.name,
            instance_device,
            self.devices.iter().copied(),
            driver::peer_access_enabled,
        )?;
        check_devices(
            self.name,
            instance_device,
            self.atomic_devices.iter().copied(),
            driver::peer_atomics_enabled,
        )
    }
}

/// What a kernel node iterates over: the entry's iteration arguments, the ends the writers
/// must contain, and the geometry, computed on the device when the graph is built.
type NodePlan = (IterationArgs, Vec<u64>, Geometry);

/// The plan of a node over `range`.
pub(super) fn range_plan(k: &DeviceKernelInfo, range: std::ops::Range<usize>) -> Result<NodePlan, CudaError> {
    let (begin, end) = checked_range_info(k, range)?;
    let geometry: Geometry = Box::new(move |limits, _| Ok(range_geometry(limits, end - begin)));
    Ok((IterationArgs::Range { begin, end }, vec![end], geometry))
}

/// The plan of a node over an MDRange's box, checked (`checked_mdrange_of_any_rank`).
fn mdrange_plan(checked: CheckedMdRange) -> NodePlan {
    let (iteration, ends, (lengths, order)) = checked;
    let geometry: Geometry = Box::new(move |limits, _| Ok(mdrange_geometry_in(limits, &lengths, order)));
    (iteration, ends, geometry)
}

/// The plan of a node over the league of `policy`.
pub(super) fn team_plan(k: &DeviceKernelInfo, policy: &TeamPolicy<Cuda>) -> Result<NodePlan, CudaError> {
    let team = TeamLaunch::of_info(k, policy)?;
    let ends = team_writer_ends(team.league);
    let iteration = team.iteration();
    let geometry: Geometry = Box::new(move |limits, resources| team.plan(limits, resources));
    Ok((iteration, ends, geometry))
}

/// The node launching `k` over `plan` with `args`, checked and packed as a launch is.
fn packed_node(k: DeviceKernelInfo, plan: NodePlan, args: &[DeviceArg]) -> Result<KernelNode, CudaError> {
    let (iteration, ends, geometry) = plan;
    let params = pack_for_args_info(&k, &iteration, args)?;
    check_args(k.name, &iteration, &ends, args)?;
    Ok(KernelNode::new(k, geometry, params, args))
}

/// The kernel node of a front-end graph node whose kernel is a `#[kernel]`'s `with` (a
/// `then_parallel_for` of the generic builder), checked and packed as the eager launch is;
/// `None` for a closure.
pub(super) fn front_end_kernel_node(node: &dyn NodeKernel<Cuda>) -> Result<Option<KernelNode>, CudaError> {
    let mut made = None;
    node.describe_device_launch(&mut |launch, policy| made = Some(kernel_node_of(&launch, &policy)));
    made.transpose()
}

fn kernel_node_of(
    launch: &DeviceLaunch<'_>,
    policy: &DevicePolicy<'_, Cuda>,
) -> Result<KernelNode, CudaError> {
    let k = &launch.kernel;
    let args = device_args(launch)?;
    let plan = match policy {
        DevicePolicy::Range(range) => range_plan(k, range.begin()..range.end())?,
        DevicePolicy::MdRange { begin, end, .. } => {
            mdrange_plan(checked_mdrange_of_any_rank(k, begin, end, &args)?)
        }
        DevicePolicy::Team(team_policy) => team_plan(k, team_policy)?,
    };
    Ok(packed_node(*k, plan, &args)?.with_occupancy(policy.desired_occupancy()))
}

/// [`checked_mdrange_info`] for a box whose rank is known only at run time.
pub(super) fn checked_mdrange_of_any_rank(
    k: &DeviceKernelInfo,
    begin: &[usize],
    end: &[usize],
    args: &[DeviceArg],
) -> Result<CheckedMdRange, CudaError> {
    fn of_rank<const R: usize>(
        k: &DeviceKernelInfo,
        begin: &[usize],
        end: &[usize],
        args: &[DeviceArg],
    ) -> Result<CheckedMdRange, CudaError> {
        let rank_error = || CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!("an MDRange of rank {} with {} ends", begin.len(), end.len()),
        };
        let begins: [usize; R] = begin.try_into().map_err(|_| rank_error())?;
        let ends: [usize; R] = end.try_into().map_err(|_| rank_error())?;
        checked_mdrange_info::<R>(k, begins, ends, args)
    }
    match begin.len() {
        1 => of_rank::<1>(k, begin, end, args),
        2 => of_rank::<2>(k, begin, end, args),
        3 => of_rank::<3>(k, begin, end, args),
        4 => of_rank::<4>(k, begin, end, args),
        5 => of_rank::<5>(k, begin, end, args),
        6 => of_rank::<6>(k, begin, end, args),
        rank => Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!("an MDRange of rank {rank}; ranks 1 to 6 are supported"),
        }),
    }
}
