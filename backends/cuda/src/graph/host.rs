//! The node list of the submit in progress of a [`CudaGraph`](super::CudaGraph), which its
//! host nodes (run on the submitting thread between stages) and its reductions' joins (host
//! nodes of the CUDA graphs) run the front end's nodes from.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use hoplite_graph::{GraphNodes, NodeKernel};
use parking_lot::RwLock;

use crate::{Cuda, CudaError};

/// The node list of the submit in progress: set by `launch` from the list its submit borrows,
/// and cleared before the launch returns.
#[derive(Default)]
pub(super) struct SubmitList(RwLock<Option<ListPtr>>);

/// The address of a submit's node list.
#[derive(Clone, Copy)]
struct ListPtr(NonNull<GraphNodes<Cuda>>);

// SAFETY: a `ListPtr` is only dereferenced as a shared reference, while the list is borrowed by
// the submit that stored it (see `SubmitList::lease`), and `GraphNodes<Cuda>` is `Sync`: using
// `&GraphNodes` from a driver thread is what `Sync` allows.
unsafe impl Send for ListPtr {}
// SAFETY: as for `Send`; the pointer itself is only copied.
unsafe impl Sync for ListPtr {}

/// Clears a [`SubmitList`] when the launch that set it returns, by any path.
pub(super) struct ListLease<'a>(&'a SubmitList);

impl Drop for ListLease<'_> {
    fn drop(&mut self) {
        // The write lock waits for every host node running now (each holds the read lock while
        // it uses the list); one that starts later finds no list.
        *self.0.0.write() = None;
    }
}

impl SubmitList {
    /// Lends `nodes` to the host nodes until the returned lease drops; the lease borrows
    /// `nodes`, so the list outlives every use a host node makes of it.
    pub(super) fn lease<'a>(&'a self, nodes: &'a GraphNodes<Cuda>) -> ListLease<'a> {
        *self.0.write() = Some(ListPtr(NonNull::from(nodes)));
        ListLease(self)
    }

    /// Runs node `id` of the lent list, its panic caught as the node's error.
    pub(super) fn run(&self, id: usize) -> hoplite_core::Result<()> {
        self.with_node(id, |node| {
            catch_unwind(AssertUnwindSafe(|| node.run()))
                .unwrap_or_else(|p| Err(hoplite_core::Error::from_panic(node.label(), p)))
        })
    }

    /// Calls `f` with node `id` of the lent list.
    pub(super) fn with_node<T>(
        &self,
        id: usize,
        f: impl FnOnce(&dyn NodeKernel<Cuda>) -> hoplite_core::Result<T>,
    ) -> hoplite_core::Result<T> {
        let lent = self.0.read();
        let Some(list) = *lent else {
            return Err(CudaError::InvalidGraph {
                reason: "a host node ran without its graph's node list; submit the graph through `GraphBackend::submit` (or `Graph::submit`), which hands it over".into(),
            }
            .into());
        };
        // SAFETY: `list` was stored by `lease` from a `&GraphNodes` borrowed for as long as the
        // lease lives, and the lease clears it under the write lock before it drops — which
        // waits for this read guard. So while `lent` is held the list is alive and only
        // shared.
        let nodes = unsafe { list.0.as_ref() };
        let Some(node) = nodes.as_slice().get(id) else {
            return Err(CudaError::InvalidGraph {
                reason: format!("host node {id} is not in the node list of the submit"),
            }
            .into());
        };
        f(&**node)
    }
}
