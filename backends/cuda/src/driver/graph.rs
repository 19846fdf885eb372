//! CUDA Graphs: a graph being built ([`Graph`]) and its executable ([`GraphExec`]), each
//! destroyed when dropped, and the nodes added to a graph.

use std::ffi::c_void;
use std::sync::Arc;

use super::api::{CopyDirection, HostFunction, RawGraph, RawGraphExec, RawGraphNode};
use super::{Device, Function, Stream};
use crate::CudaError;
use crate::geometry::LaunchGeometry;

/// A node of a [`Graph`], named as a dependency of later nodes.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct GraphNode(RawGraphNode);

fn handles(deps: &[GraphNode]) -> Vec<RawGraphNode> {
    deps.iter().map(|d| d.0).collect()
}

/// A CUDA graph of one device, being built; destroyed when dropped.
#[derive(Debug)]
pub(crate) struct Graph {
    raw: RawGraph,
    device: Arc<Device>,
}

impl Graph {
    /// An empty graph whose nodes run on `device` (`cuGraphCreate`).
    pub(crate) fn new(device: Arc<Device>) -> Result<Graph, CudaError> {
        let raw = device.api().graph_create(device.context())?;
        Ok(Graph { raw, device })
    }

    /// Adds an empty node after `deps` (a root, a join, an empty launch).
    pub(crate) fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode, CudaError> {
        // `deps` are nodes of this graph: a `GraphNode` is only made by this graph's adds, and
        // a graph's nodes are named only in it.
        let d = &self.device;
        d.api()
            .graph_add_empty(d.context(), self.raw, &handles(deps))
            .map(GraphNode)
    }

    /// Adds a kernel node after `deps` launching `function` with geometry `g` and the
    /// parameters `pointers` points at (the driver copies the values here).
    ///
    /// # Safety
    ///
    /// As for [`Function::launch`] on a stream of the graph's device, for every launch of the
    /// graph: the memory the parameters name stays alive as long as the graph's executable
    /// may run.
    pub(crate) unsafe fn add_kernel(
        &mut self,
        deps: &[GraphNode],
        function: Function,
        g: &LaunchGeometry,
        pointers: &mut [*mut c_void],
    ) -> Result<GraphNode, CudaError> {
        let d = &self.device;
        // SAFETY: `deps` are nodes of this graph (see `add_empty`); the function, parameters,
        // memory and geometry by the caller's contract; `pointers` outlives the call, in which
        // the driver copies the values.
        unsafe {
            d.api()
                .graph_add_kernel(d.context(), self.raw, &handles(deps), function.raw(), g, pointers)
        }
        .map(GraphNode)
    }

    /// Adds a host node after `deps` that calls `function(data)` on a driver thread.
    ///
    /// # Safety
    ///
    /// `function` makes no CUDA call and does not unwind; `data` is valid for it for as long
    /// as the graph's executable may run.
    pub(crate) unsafe fn add_host(
        &mut self,
        deps: &[GraphNode],
        function: HostFunction,
        data: *mut c_void,
    ) -> Result<GraphNode, CudaError> {
        let d = &self.device;
        // SAFETY: `deps` are nodes of this graph (see `add_empty`); the function and its data
        // by the caller's contract.
        unsafe {
            d.api()
                .graph_add_host(d.context(), self.raw, &handles(deps), function, data)
        }
        .map(GraphNode)
    }

    /// Adds a memcpy node after `deps` copying `bytes` bytes between the device address
    /// `device` and the page-locked host memory at `host`, the way `direction` says, in the
    /// graph's device's context.
    ///
    /// # Safety
    ///
    /// `device` is memory of the graph's device and `host` page-locked host memory, each valid
    /// for `bytes` bytes for as long as the graph's executable may run, and no other work
    /// touches them while the node runs (the graph's edges order the nodes that do).
    pub(crate) unsafe fn add_copy(
        &mut self,
        deps: &[GraphNode],
        device: u64,
        host: *mut u8,
        bytes: usize,
        direction: CopyDirection,
    ) -> Result<GraphNode, CudaError> {
        let d = &self.device;
        // SAFETY: `deps` are nodes of this graph (see `add_empty`); both buffers by the
        // caller's contract.
        unsafe {
            d.api().graph_add_copy(
                d.context(),
                self.raw,
                &handles(deps),
                device,
                host,
                bytes,
                direction,
            )
        }
        .map(GraphNode)
    }

    /// Instantiates the graph as built (`cuGraphInstantiateWithFlags`, flags 0).
    pub(crate) fn instantiate(&self) -> Result<GraphExec, CudaError> {
        let raw = self
            .device
            .api()
            .graph_instantiate(self.device.context(), self.raw)?;
        Ok(GraphExec {
            raw,
            device: self.device.clone(),
        })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by `new` and is destroyed once; an executable made from it
        // does not depend on it.
        unsafe { self.device.api().graph_destroy(self.device.context(), self.raw) };
    }
}

/// An instantiated graph, launched on a stream; destroyed when dropped.
#[derive(Debug)]
pub(crate) struct GraphExec {
    raw: RawGraphExec,
    device: Arc<Device>,
}

impl GraphExec {
    /// Queues one run of the graph on `stream` (`cuGraphLaunch`).
    ///
    /// # Safety
    ///
    /// `stream` is a stream of the graph's device; everything the graph's nodes use (the
    /// kernels' memory, the host nodes' data, the copies' buffers) stays alive until the run
    /// completed, and the executable is not dropped before then.
    pub(crate) unsafe fn launch(&self, stream: &Stream) -> Result<(), CudaError> {
        // SAFETY: `raw` is a live executable of this device; the stream is live; what the
        // nodes use by the caller's contract.
        unsafe {
            self.device
                .api()
                .graph_launch(self.device.context(), self.raw, stream.raw())
        }
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by `Graph::instantiate` and is destroyed once; its owner
        // waits for every launch before dropping it.
        unsafe {
            self.device
                .api()
                .graph_exec_destroy(self.device.context(), self.raw)
        };
    }
}
