//! Emulated CUDA graphs: the work of a graph's nodes (empty, kernel, host, memcpy), a graph
//! being built, its executable (the nodes in the order they were added, a topological order,
//! since a node names only nodes added before it), and the run of a node on a stream's thread.

use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;

use super::kernel::{EmuFunction, ParamBlock};
use super::sanitizer::Access;
use super::stream::Fault;
use super::{Emulated, invalid_handle, invalid_value};
use crate::CudaError;
use crate::driver::api::{CopyDirection, HostFunction, RawContext, RawGraph, RawGraphNode};
use crate::geometry::LaunchGeometry;

/// A graph node's work.
#[derive(Clone)]
pub(super) enum NodeWork {
    Empty,
    Kernel {
        function: Arc<EmuFunction>,
        geometry: LaunchGeometry,
        params: Arc<Mutex<ParamBlock>>,
    },
    Host {
        function: HostFunction,
        data: usize,
    },
    Copy {
        device: u64,
        host: usize,
        bytes: usize,
        direction: CopyDirection,
    },
}

/// A graph being built: its nodes in the order they were added, and their ids.
pub(super) struct EmuGraph {
    pub(super) device: usize,
    pub(super) nodes: Vec<(usize, NodeWork)>,
}

/// An instantiated graph: its device and its nodes' work, in a topological order.
pub(super) type Executable = (usize, Arc<Vec<NodeWork>>);

/// The addresses a graph node's work touches, and how.
pub(super) fn node_pointers(work: &NodeWork) -> Vec<(u64, Access)> {
    match work {
        NodeWork::Empty | NodeWork::Host { .. } => Vec::new(),
        NodeWork::Kernel { function, params, .. } => function.pointers(&params.lock()),
        NodeWork::Copy {
            device,
            host,
            direction,
            ..
        } => {
            let (device_side, host_side) = match direction {
                CopyDirection::ToHost => (Access::Read, Access::Write),
                CopyDirection::ToDevice => (Access::Write, Access::Read),
            };
            vec![(*device, device_side), (*host as u64, host_side)]
        }
    }
}

/// Runs a graph node's or launch's work on the calling (stream) thread.
pub(super) fn run_node(work: &NodeWork) -> Result<(), Fault> {
    match work {
        NodeWork::Empty => Ok(()),
        NodeWork::Kernel {
            function,
            geometry,
            params,
        } => {
            // SAFETY: the node's creator promised the memory and parameters for every launch
            // of the graph (`graph_add_kernel`'s contract).
            unsafe { function.run(geometry, &mut params.lock()) }
        }
        NodeWork::Host { function, data } => {
            // SAFETY: `graph_add_host`'s contract: the function makes no driver call, does not
            // unwind, and its data is valid while the graph may run.
            unsafe { function(*data as *mut c_void) };
            Ok(())
        }
        NodeWork::Copy {
            device,
            host,
            bytes,
            direction,
        } => {
            let (src, dst) = match direction {
                CopyDirection::ToHost => (*device as usize as *const u8, *host as *mut u8),
                CopyDirection::ToDevice => (*host as *const u8, *device as usize as *mut u8),
            };
            // SAFETY: `graph_add_copy`'s contract: both are valid for `bytes` bytes while the
            // graph may run, and the graph's edges keep other work off them.
            unsafe { std::ptr::copy(src, dst, *bytes) };
            Ok(())
        }
    }
}

impl Emulated {
    /// Adds a node of `work` after `deps` (nodes of `graph`) to `graph`.
    pub(super) fn add_node(
        &self,
        call: &'static str,
        ctx: RawContext,
        graph: RawGraph,
        deps: &[RawGraphNode],
        work: NodeWork,
    ) -> Result<RawGraphNode, CudaError> {
        let device = self.device(call, ctx)?;
        let handle = self.handle();
        let mut graphs = self.graphs.lock();
        let g = graphs.get_mut(&graph.0).ok_or_else(|| invalid_handle(call))?;
        if g.device != device {
            return Err(invalid_handle(call));
        }
        if let Some(d) = deps.iter().find(|d| !g.nodes.iter().any(|(id, _)| *id == d.0)) {
            return Err(invalid_value(
                call,
                &format!("dependency {d:?} is not a node of the graph"),
            ));
        }
        g.nodes.push((handle, work));
        Ok(RawGraphNode(handle))
    }
}
