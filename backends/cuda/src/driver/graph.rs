//! CUDA Graphs: a graph being built ([`Graph`]) and its executable ([`GraphExec`]), each
//! destroyed when dropped, and the nodes added to a graph.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;

use super::{Device, Function, Stream, check};
use crate::CudaError;
use crate::geometry::LaunchGeometry;

/// A node of a [`Graph`], named as a dependency of later nodes.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct GraphNode(sys::CUgraphNode);

/// Which way a memcpy node copies between device and page-locked host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyDirection {
    ToHost,
    ToDevice,
}

/// A CUDA graph of one device, being built; destroyed when dropped.
#[derive(Debug)]
pub(crate) struct Graph {
    raw: sys::CUgraph,
    device: Arc<Device>,
}

impl Graph {
    /// An empty graph whose nodes run on `device` (`cuGraphCreate`).
    pub(crate) fn new(device: Arc<Device>) -> Result<Graph, CudaError> {
        device.bind()?;
        let mut raw: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the device's context is current; live out pointer; flags must be 0.
        check("cuGraphCreate", unsafe { sys::cuGraphCreate(&mut raw, 0) })?;
        Ok(Graph { raw, device })
    }

    /// Adds an empty node after `deps` (a root, a join, an empty launch).
    pub(crate) fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode, CudaError> {
        self.device.bind()?;
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph (a `GraphNode` is
        // only made by this graph's adds, and a graph's nodes are named only in it), passed
        // as the driver's handles (`GraphNode` is transparent); live out pointer.
        check("cuGraphAddEmptyNode", unsafe {
            sys::cuGraphAddEmptyNode(&mut node, self.raw, deps.as_ptr().cast(), deps.len())
        })?;
        Ok(GraphNode(node))
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
        self.device.bind()?;
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: function.raw(),
            gridDimX: g.grid[0],
            gridDimY: g.grid[1],
            gridDimZ: g.grid[2],
            blockDimX: g.block[0],
            blockDimY: g.block[1],
            blockDimZ: g.block[2],
            sharedMemBytes: g.shared_bytes,
            kernelParams: pointers.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            // `func` names the function: no CUkernel, and the context that is current.
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph (see `add_empty`);
        // the function, parameters, memory and geometry by the caller's contract; `pointers`
        // outlives the call, in which the driver copies the values; live out pointer.
        check("cuGraphAddKernelNode_v2", unsafe {
            sys::cuGraphAddKernelNode_v2(&mut node, self.raw, deps.as_ptr().cast(), deps.len(), &params)
        })?;
        Ok(GraphNode(node))
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
        function: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<GraphNode, CudaError> {
        self.device.bind()?;
        let params = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(function),
            userData: data,
        };
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current; `deps` are nodes of this graph (see `add_empty`);
        // the function and its data by the caller's contract; live out pointer.
        check("cuGraphAddHostNode", unsafe {
            sys::cuGraphAddHostNode(&mut node, self.raw, deps.as_ptr().cast(), deps.len(), &params)
        })?;
        Ok(GraphNode(node))
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
        self.device.bind()?;
        let copy = memcpy_1d(device, host.cast(), bytes, direction);
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the context is current and passed as the copy's context; `deps` are nodes of
        // this graph (see `add_empty`); both buffers by the caller's contract; live out pointer.
        check("cuGraphAddMemcpyNode", unsafe {
            sys::cuGraphAddMemcpyNode(
                &mut node,
                self.raw,
                deps.as_ptr().cast(),
                deps.len(),
                &copy,
                self.device.context(),
            )
        })?;
        Ok(GraphNode(node))
    }

    /// Instantiates the graph as built (`cuGraphInstantiateWithFlags`, flags 0).
    pub(crate) fn instantiate(&self) -> Result<GraphExec, CudaError> {
        self.device.bind()?;
        let mut raw: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `raw` (the graph) is complete and of the current context; live out pointer;
        // flags 0 launch it as built.
        check("cuGraphInstantiateWithFlags", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut raw, self.raw, 0)
        })?;
        Ok(GraphExec {
            raw,
            device: self.device.clone(),
        })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: `raw` was created by `new` and is destroyed once; an executable made
            // from it does not depend on it.
            let _ = unsafe { sys::cuGraphDestroy(self.raw) };
        }
    }
}

/// An instantiated graph, launched on a stream; destroyed when dropped.
#[derive(Debug)]
pub(crate) struct GraphExec {
    raw: sys::CUgraphExec,
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
        self.device.bind()?;
        // SAFETY: `raw` is a live executable of this device; the stream is live; what the
        // nodes use by the caller's contract.
        check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(self.raw, stream.raw())
        })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: `raw` was created by `Graph::instantiate` and is destroyed once; its
            // owner waits for every launch before dropping it.
            let _ = unsafe { sys::cuGraphExecDestroy(self.raw) };
        }
    }
}

/// A one-dimensional copy of `bytes` bytes between the device buffer `device` and the host
/// buffer `host`, as a memcpy node takes it.
fn memcpy_1d(device: u64, host: *mut c_void, bytes: usize, direction: CopyDirection) -> sys::CUDA_MEMCPY3D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let to_host = direction == CopyDirection::ToHost;
    let (src_type, dst_type) = if to_host {
        (CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST)
    } else {
        (CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE)
    };
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: if to_host {
            std::ptr::null()
        } else {
            host.cast_const()
        },
        srcDevice: if to_host { device } else { 0 },
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: bytes,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: if to_host { host } else { std::ptr::null_mut() },
        dstDevice: if to_host { 0 } else { device },
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: bytes,
        dstHeight: 1,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}
