//! Tracked allocations: a view's memory, recorded in its space's
//! [`AllocationRecords`](crate::space::AllocationRecords), with the
//! run-time borrows that enforce "one writer or many readers" per region of it.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::borrow::{BorrowId, BorrowTable, Refused};
use super::footprint::{AccessKind, Footprint};
use crate::error::Result;
use crate::space::MemorySpace;

/// Memory of one space, allocated and freed with a record, plus the borrows of its handles.
pub(crate) struct TrackedAllocation<S: MemorySpace> {
    ptr: NonNull<u8>,
    bytes: usize,
    id: u64,
    label: Arc<str>,
    space: S,
    borrows: BorrowTable,
    /// For memory adopted from its owner (a `Vec` a view was made from without copying): the
    /// owner, which frees it when dropped (or `None` once given back); `None` for memory the
    /// space allocated.
    adopted: Option<Option<Box<dyn std::any::Any + Send + Sync>>>,
    /// The allocation of a null view: no memory, no record.
    null: bool,
}

// SAFETY: the allocation is plain memory owned by this value; every access to its elements
// goes through handles whose borrows (checked under the mutex) exclude data races, and the
// record bookkeeping is internally synchronized.
unsafe impl<S: MemorySpace> Send for TrackedAllocation<S> {}
// SAFETY: as above; shared references only reach the memory through borrow-checked handles.
unsafe impl<S: MemorySpace> Sync for TrackedAllocation<S> {}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl<S: MemorySpace> TrackedAllocation<S> {
    /// Allocates `bytes` zeroed bytes in `space` and records them under `label`.
    pub(crate) fn zeroed(space: S, label: &str, bytes: usize) -> Result<Arc<Self>> {
        let ptr = space.allocate_zeroed(label, bytes)?;
        Ok(Self::record(space, label, ptr, bytes, None))
    }

    /// Records `bytes` at `ptr`, which `owner` keeps alive and frees when dropped.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of `bytes` bytes for as long as `owner` lives, no
    /// one else accesses that memory while it does, and the memory is host memory of this
    /// process (every view of the allocation may be read and written on host threads).
    pub(crate) unsafe fn adopt(
        space: S,
        label: &str,
        ptr: NonNull<u8>,
        bytes: usize,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Arc<Self> {
        Self::record(space, label, ptr, bytes, Some(Some(owner)))
    }

    /// The allocation of a null view (`View::default()`, Kokkos' default-constructed view): no
    /// memory, no record and no profiling event; `ptr` (the view's dangling pointer, aligned
    /// for its elements) is never read, since a null view has no element. Its id is still
    /// unique, so front ends keep its accesses apart from every other view's.
    pub(crate) fn null(space: S, ptr: NonNull<u8>) -> Arc<Self> {
        Arc::new(TrackedAllocation {
            ptr,
            bytes: 0,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            label: Arc::from(""),
            space,
            borrows: BorrowTable::default(),
            adopted: None,
            null: true,
        })
    }

    /// Whether this is a null view's allocation.
    pub(crate) fn is_null(&self) -> bool {
        self.null
    }

    /// Gives back the owner of adopted memory when this is the last reference to the
    /// allocation (the memory then stays valid: the owner frees it only when dropped).
    pub(crate) fn try_into_owner(
        this: Arc<Self>,
    ) -> std::result::Result<Box<dyn std::any::Any + Send + Sync>, Arc<Self>> {
        if this.adopted.is_none() {
            return Err(this);
        }
        let mut alloc = Arc::try_unwrap(this)?;
        // `Drop` then sees adopted memory without its owner: it removes the record only.
        match alloc.adopted.as_mut().and_then(Option::take) {
            Some(owner) => Ok(owner),
            None => Err(Arc::new(alloc)),
        }
    }

    fn record(
        space: S,
        label: &str,
        ptr: NonNull<u8>,
        bytes: usize,
        adopted: Option<Option<Box<dyn std::any::Any + Send + Sync>>>,
    ) -> Arc<Self> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let label: Arc<str> = Arc::from(label);
        space
            .records()
            .insert(id, label.clone(), bytes, ptr.as_ptr() as usize);
        crate::profiling::allocate_data(space.profiling_name(), &label, ptr.as_ptr().cast(), bytes as u64);
        // Kokkos Tools' allocate hook, for any `tracing` subscriber.
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "hoplite::alloc", label = &*label, bytes, space = space.name(), "allocate");
        Arc::new(TrackedAllocation {
            ptr,
            bytes,
            id,
            label,
            space,
            borrows: BorrowTable::default(),
            adopted,
            null: false,
        })
    }

    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The allocation's id: unique for the life of the process, never reused.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn label(&self) -> &Arc<str> {
        &self.label
    }

    pub(crate) fn space(&self) -> &S {
        &self.space
    }

    /// Registers a borrow of `footprint` for `kind`, or says which live borrow conflicts.
    /// Conflicts are named by the allocation's label: every view of it shares that label.
    pub(crate) fn borrow(&self, kind: AccessKind, footprint: &Footprint) -> Result<BorrowId> {
        self.borrows.acquire(kind, footprint, &self.label)
    }

    /// As [`borrow`](Self::borrow), refused with the kinds that met only.
    pub(crate) fn try_borrow(
        &self,
        kind: AccessKind,
        footprint: &Footprint,
    ) -> std::result::Result<BorrowId, Refused> {
        self.borrows.try_acquire(kind, footprint)
    }

    /// As [`borrow`](Self::borrow), in borrow group `group` (see `BorrowTable::acquire_in`).
    pub(crate) fn borrow_in(&self, kind: AccessKind, footprint: &Footprint, group: u64) -> Result<BorrowId> {
        self.borrows.acquire_in(kind, footprint, &self.label, group)
    }

    /// Moves a granted borrow into group `group` (see `BorrowTable::regroup`).
    pub(crate) fn regroup(
        &self,
        borrow: BorrowId,
        kind: AccessKind,
        footprint: &Footprint,
        group: u64,
    ) -> Result<BorrowId> {
        self.borrows.regroup(borrow, kind, footprint, &self.label, group)
    }

    /// Ends a borrow taken from this allocation.
    pub(crate) fn release(&self, id: &BorrowId) {
        self.borrows.release(id);
    }
}

impl<S: MemorySpace> Drop for TrackedAllocation<S> {
    fn drop(&mut self) {
        if self.null {
            return; // nothing was allocated or recorded
        }
        self.space.records().remove(self.id);
        crate::profiling::deallocate_data(
            self.space.profiling_name(),
            &self.label,
            self.ptr.as_ptr().cast(),
            self.bytes as u64,
        );
        // Kokkos Tools' deallocate hook.
        #[cfg(feature = "tracing")]
        tracing::debug!(
            target: "hoplite::alloc",
            label = &*self.label,
            bytes = self.bytes,
            space = self.space.name(),
            "free"
        );
        if self.adopted.is_some() {
            // Adopted memory: its owner frees it when the field drops after this (or it was
            // given back and lives on in the caller's hands).
            return;
        }
        // SAFETY: `ptr` came from `allocate_zeroed(_, self.bytes)` of this space (memory
        // that is not adopted) and no handle outlives the allocation (each holds an `Arc`).
        unsafe { self.space.deallocate(self.ptr, self.bytes) };
    }
}

impl<S: MemorySpace> fmt::Debug for TrackedAllocation<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedAllocation")
            .field("label", &self.label)
            .field("bytes", &self.bytes)
            .field("space", &self.space.name())
            .finish()
    }
}
