//! Reduction and scan nodes of a [`CudaGraph`]: the kernel writing its partials, the copy of
//! the partials into page-locked host memory, the host node that joins them (or, for a scan,
//! replaces them with their prefixes, copied back for a final pass), and the buffers the graph
//! keeps for them.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{Reducer, ScanValue};
use parking_lot::Mutex;

use super::Geometry;
use super::kernel::KernelNode;
use crate::CudaError;
use crate::driver::{self, CopyDirection, DeviceBuffer, Graph, GraphNode, PinnedBuffer};
use crate::geometry::{LaunchGeometry, fits, range_geometry};
use crate::launch::{DeviceArg, check_args, checked_range_info};
use crate::params::{IterationArgs, ParamBuffer, pack_reduction, pack_scan_args_info};
use crate::reduce::{
    DeviceReduceValue, decode, encode, exclusive_prefix, partials_count, partials_geometry, value_layout,
};

/// Joins a reduction's partials (their device bytes, in thread order) and keeps the value;
/// a scan replaces them with their exclusive prefixes.
pub(super) trait PartialsJoin: Send + Sync {
    fn join(&self, partials: &mut [u8]) -> hoplite_core::Result<()>;
}

/// Replaces the chunk sums in `partials` with their exclusive prefixes; the total.
pub(super) fn prefix_in_place<T: DeviceReduceValue + ScanValue>(partials: &mut [u8]) -> T {
    let mut sums: Vec<T> = decode::<T>(partials).collect();
    let total = exclusive_prefix(&mut sums);
    partials.copy_from_slice(&encode(&sums));
    total
}

/// Device partials and the page-locked host copy of them, alive as long as the graph (no
/// launch of the graph is in flight when it drops: every submit waits for its launch).
struct PartialsBuffers {
    partials: DeviceBuffer,
    host: PinnedBuffer,
}

/// What the join's host node gets; boxed, so its address stays put.
struct JoinPayload {
    join: Arc<dyn PartialsJoin>,
    /// The page-locked copy of the partials (null with no partials).
    host: *mut u8,
    bytes: usize,
    label: &'static str,
    errors: Arc<Mutex<Option<hoplite_core::Error>>>,
}

/// The host function of a reduction's join node.
unsafe extern "C" fn run_join_node(user_data: *mut c_void) {
    // SAFETY: `user_data` is the address of a boxed `JoinPayload` owned by the graph's
    // nodes, which outlive the executable; it is only read.
    let payload = unsafe { &*user_data.cast::<JoinPayload>() };
    let partials: &mut [u8] = if payload.host.is_null() {
        &mut []
    } else {
        // SAFETY: `host` is page-locked memory of `bytes` bytes owned by the graph and used by
        // this node alone while it runs: the memcpy node before it finished writing it, the
        // scan's copy back runs after it, and the next launch cannot start before this one
        // was waited for (one submit at a time).
        unsafe { std::slice::from_raw_parts_mut(payload.host, payload.bytes) }
    };
    let joined = catch_unwind(AssertUnwindSafe(|| payload.join.join(partials)))
        .unwrap_or_else(|p| Err(hoplite_core::Error::from_panic(payload.label, p)));
    if let Err(e) = joined {
        let mut slot = payload.errors.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

/// A reduction node before and after `build`.
pub(super) struct ReduceNode {
    kernel: KernelNode,
    /// Bytes of one partial.
    value_size: usize,
    join: Arc<dyn PartialsJoin>,
    /// A scan: the host step writes prefixes, which are copied back for a final pass.
    scan: bool,
    /// The device joins each block's values: one partial per block, not per thread.
    joined_on_device: bool,
    buffers: Option<PartialsBuffers>,
    payload: Option<Box<JoinPayload>>,
}

impl ReduceNode {
    /// The node with its geometry cut to `percent` of the device's resident blocks
    /// ([`KernelNode::with_occupancy`]).
    pub(super) fn with_occupancy(mut self, percent: Option<u8>) -> ReduceNode {
        self.kernel = self.kernel.with_occupancy(percent);
        self
    }
}

/// A scan node of `k` over `range` whose host step is `join`: packs and checks as the eager
/// scan does, with one chunk sum per resident thread.
pub(super) fn scan<T>(
    k: DeviceKernelInfo,
    range: std::ops::Range<usize>,
    args: &[DeviceArg],
    join: Arc<dyn PartialsJoin>,
) -> Result<ReduceNode, CudaError>
where
    T: DeviceReduceValue + ScanValue,
{
    let (begin, end) = checked_range_info(&k, range)?;
    let iteration = IterationArgs::Range { begin, end };
    let params = pack_scan_args_info::<T>(&k, &iteration, args)?;
    check_args(k.name, &iteration, &[end], args)?;
    let geometry: Geometry = Box::new(move |limits, _| {
        Ok(range_geometry(limits, end - begin).map(|g| partials_geometry(limits, g)))
    });
    Ok(ReduceNode {
        kernel: KernelNode::new(k, geometry, params, args),
        value_size: value_layout(T::PATTERN).map_or(0, |l| l.size),
        join,
        scan: true,
        joined_on_device: false,
        buffers: None,
        payload: None,
    })
}

/// A reduction node of `k` over `iteration`: packs and checks as the eager reduction does,
/// cuts `geometry` to the resident threads (a partial each, or one per block where the device
/// joins), and joins with what `join` makes of the reducer.
pub(super) fn reduction<R>(
    k: DeviceKernelInfo,
    iteration: IterationArgs,
    ends: &[u64],
    args: &[DeviceArg],
    reducer: R,
    geometry: Geometry,
    join: impl FnOnce(R) -> Arc<dyn PartialsJoin>,
) -> Result<ReduceNode, CudaError>
where
    R: Reducer,
    R::Value: DeviceReduceValue,
{
    let (params, device_join) = pack_reduction(&k, &iteration, args, &reducer)?;
    check_args(k.name, &iteration, ends, args)?;
    let geometry: Geometry = Box::new(move |limits, resources| {
        Ok(geometry(limits, resources)?.map(|g| partials_geometry(limits, g)))
    });
    Ok(ReduceNode {
        kernel: KernelNode::new(k, geometry, params, args),
        value_size: value_layout(<R::Value as DeviceReduceValue>::PATTERN).map_or(0, |l| l.size),
        join: join(reducer),
        scan: false,
        joined_on_device: device_join.is_some(),
        buffers: None,
        payload: None,
    })
}

/// Adds a reduction's nodes (kernel, copy of the partials to the host, join) after `deps`;
/// returns the join node. Allocates the partials for the device's geometry.
pub(super) fn add_reduction(
    r: &mut ReduceNode,
    device: &Arc<driver::Device>,
    graph: &mut Graph,
    deps: &[GraphNode],
    errors: &Arc<Mutex<Option<hoplite_core::Error>>>,
) -> Result<GraphNode, CudaError> {
    r.kernel.check_devices(device.ordinal)?;
    let loaded = r.kernel.load(device)?;
    let geometry = r.kernel.geometry(&device.limits, &loaded.resources)?;
    let mut last: Vec<GraphNode> = deps.to_vec();
    let mut host: *mut u8 = std::ptr::null_mut();
    let mut scan_tail: Option<(u64, ParamBuffer, LaunchGeometry)> = None;
    let mut bytes = 0usize;
    if let Some(g) = geometry {
        if !fits(&device.limits, &g) {
            return Err(CudaError::InvalidLaunch {
                kernel: r.kernel.name,
                reason: format!("the geometry {g:?} does not fit the device"),
            });
        }
        let count = partials_count(&g, r.joined_on_device);
        bytes = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(r.value_size))
            .ok_or_else(|| CudaError::InvalidLaunch {
                kernel: r.kernel.name,
                reason: format!("{count} partials do not fit the address space"),
            })?
            .max(1);
        let buffers = r.buffers.insert(PartialsBuffers {
            partials: DeviceBuffer::new(device.clone(), bytes)?,
            host: PinnedBuffer::new(device.clone(), bytes)?,
        });
        let partials = buffers.partials.address();
        host = buffers.host.as_ptr();
        // A reduction's last parameter is the partials pointer; a scan's are the values
        // pointer and the final-pass flag.
        let params_count = r.kernel.params.offsets().len();
        let partials_param = if r.scan {
            params_count - 2
        } else {
            params_count - 1
        };
        r.kernel.params.set(partials_param, &partials.to_le_bytes());
        let mut pointers = r.kernel.params.pointers();
        // SAFETY: the entry takes exactly the parameters `pack_reduce` packed against
        // `K::params()` and the reducer's pattern, with the partials pointer now a live
        // allocation of one partial per launched thread of `g`, owned by the graph; `pointers`
        // point into the params, which the driver copies; the views are this device's memory
        // (checked above) and live as long as the graph; the geometry fits the device.
        let kernel = unsafe { graph.add_kernel(deps, loaded.function, &g, &mut pointers) }?;
        // SAFETY: the copy reads `bytes` bytes of the partials allocation of this device and
        // writes `bytes` bytes of the page-locked host buffer, both owned by the graph; it runs
        // after the kernel node, and the join host node after it.
        let memcpy = unsafe { graph.add_copy(&[kernel], partials, host, bytes, CopyDirection::ToHost) }?;
        last = vec![memcpy];
        if r.scan {
            let mut final_params = r.kernel.params.clone();
            final_params.set(params_count - 1, &[1]);
            scan_tail = Some((partials, final_params, g));
        }
    }
    let payload = r.payload.insert(Box::new(JoinPayload {
        join: r.join.clone(),
        host,
        bytes,
        label: r.kernel.name,
        errors: errors.clone(),
    }));
    let data = std::ptr::from_ref::<JoinPayload>(payload).cast_mut().cast();
    // SAFETY: `last` are nodes of this graph (the copy, or the reduction's own predecessors
    // for an empty range); `run_join_node` makes no CUDA call and catches panics; its data is
    // a boxed payload the graph owns, outliving the executable.
    let join = unsafe { graph.add_host(&last, run_join_node, data) }?;
    let Some((partials, mut final_params, g)) = scan_tail else {
        return Ok(join);
    };
    // SAFETY: the copy reads the prefixes the host node wrote into the page-locked buffer and
    // writes the values allocation, both `bytes` bytes owned by the graph; it runs after the
    // host node, and the final pass after it.
    let back = unsafe { graph.add_copy(&[join], partials, host, bytes, CopyDirection::ToDevice) }?;
    let mut pointers = final_params.pointers();
    // SAFETY: as for the first pass (the same entry, geometry and arguments, packed by
    // `pack_scan`), with the final-pass flag set; it runs after the prefixes were copied back,
    // so each thread starts from its prefix; `pointers` point into `final_params`, which the
    // driver copies here.
    unsafe { graph.add_kernel(&[back], loaded.function, &g, &mut pointers) }
}
