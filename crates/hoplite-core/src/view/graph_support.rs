//! Support for front ends that record launches instead of running them (explicit graphs, the
//! implicit DAG runtime): a comparable identity of the allocation behind a view.
//!
//! Such a front end keeps a node's views and access kinds ([`AccessKind`](super::AccessKind))
//! rather than its handles, and makes fresh handles each time the node runs. To tell whether two
//! recorded accesses touch the same memory it needs to compare allocations across views of any
//! element type, rank and layout, which [`View::same_allocation`] cannot do once the views are
//! type-erased. [`View::allocation_key`] gives a plain key for that; together with
//! [`View::footprint`] it says exactly which elements two accesses share.

use std::sync::Arc;

use crate::space::{ArrayLayout, MemorySpace};
use crate::view::{View, ViewValue};

/// The identity of one allocation (all views made from it, subviews included, share it).
///
/// Two keys taken from views that are alive at the same time are equal exactly when the views
/// use the same allocation. A key says nothing once every view of its allocation is gone (a
/// later allocation may reuse it), so keep a view alongside the key while comparing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllocationKey(usize);

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> View<T, R, L, S> {
    /// The key of the allocation this view uses (see [`AllocationKey`]).
    ///
    /// ```
    /// use hoplite_core::{Slice, View};
    /// let m: View<f64, 2> = View::new("m", [4, 5])?;
    /// let row: View<f64, 1> = m.subview([Slice::Index(2), Slice::All])?;
    /// let other: View<i32, 1> = View::new("other", [3])?;
    /// assert_eq!(m.allocation_key(), row.allocation_key());
    /// assert_ne!(m.allocation_key(), other.allocation_key());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn allocation_key(&self) -> AllocationKey {
        AllocationKey(Arc::as_ptr(&self.alloc) as *const () as usize)
    }
}
