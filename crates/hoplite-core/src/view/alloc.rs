//! Tracked allocations: every view's memory has a record (label, bytes, space), and run-time
//! borrows that enforce "one writer or many readers" per region of an allocation.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::borrow::{BorrowId, BorrowTable, Refused};
use crate::error::Result;
use crate::space::MemorySpace;

/// The live allocations of one memory space, with current and high-water byte counts.
///
/// Each memory space owns one (a `static`), returned by
/// [`MemorySpace::records`](crate::MemorySpace::records).
#[derive(Debug, Default)]
pub struct AllocationRecords {
    live: Mutex<BTreeMap<u64, RecordEntry>>,
    current: AtomicUsize,
    high_water: AtomicUsize,
}

#[derive(Debug, Clone)]
struct RecordEntry {
    label: Arc<str>,
    bytes: usize,
    address: usize,
}

/// One live allocation, as listed by [`AllocationRecords::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationRecord {
    /// The label given at allocation.
    pub label: String,
    /// Size in bytes.
    pub bytes: usize,
    /// Start address (for matching with other tools).
    pub address: usize,
}

impl AllocationRecords {
    /// An empty set of records (for a `static`).
    pub const fn new() -> Self {
        AllocationRecords {
            live: Mutex::new(BTreeMap::new()),
            current: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
        }
    }

    fn insert(&self, id: u64, label: Arc<str>, bytes: usize, address: usize) {
        self.live.lock().insert(
            id,
            RecordEntry {
                label,
                bytes,
                address,
            },
        );
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.high_water.fetch_max(now, Ordering::Relaxed);
    }

    fn remove(&self, id: u64) {
        if let Some(entry) = self.live.lock().remove(&id) {
            self.current.fetch_sub(entry.bytes, Ordering::Relaxed);
        }
    }

    /// Bytes currently allocated.
    pub fn current_bytes(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// The most bytes ever allocated at once.
    pub fn high_water_bytes(&self) -> usize {
        self.high_water.load(Ordering::Relaxed)
    }

    /// The live allocation whose bytes contain `address` (Kokkos'
    /// `SharedAllocationRecord::find`): which view owns a pointer that came back from C code,
    /// a profiler or a debugger. `None` when no live allocation of this space contains it.
    ///
    /// ```
    /// use hoplite_core::{HostSpace, MemorySpace, View};
    /// let v: View<f64, 1> = View::new("field", [1000])?;
    /// let inner = v.data().wrapping_add(10) as usize;
    /// let record = HostSpace.records().find(inner).expect("a live allocation");
    /// assert_eq!((record.label.as_str(), record.bytes), ("field", 8000));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn find(&self, address: usize) -> Option<AllocationRecord> {
        self.live
            .lock()
            .values()
            .find(|e| address >= e.address && address - e.address < e.bytes)
            .map(|e| AllocationRecord {
                label: e.label.to_string(),
                bytes: e.bytes,
                address: e.address,
            })
    }

    /// The live allocations, oldest first.
    pub fn snapshot(&self) -> Vec<AllocationRecord> {
        self.live
            .lock()
            .values()
            .map(|e| AllocationRecord {
                label: e.label.to_string(),
                bytes: e.bytes,
                address: e.address,
            })
            .collect()
    }

    /// Prints the live allocations of `space_name` (Kokkos `print_records`): one line each
    /// with label and bytes, plus addresses with `detail`, then the totals.
    pub fn print(&self, out: &mut dyn io::Write, space_name: &str, detail: bool) -> io::Result<()> {
        let live = self.snapshot();
        writeln!(out, "{space_name}: {} live allocation(s)", live.len())?;
        for r in &live {
            if detail {
                writeln!(out, "  {:#018x}  {:>14} bytes  {}", r.address, r.bytes, r.label)?;
            } else {
                writeln!(out, "  {:>14} bytes  {}", r.bytes, r.label)?;
            }
        }
        writeln!(
            out,
            "  current {} bytes, high-water {} bytes",
            self.current_bytes(),
            self.high_water_bytes()
        )
    }
}

/// How a handle uses an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// Loads only; shared with other readers.
    Read,
    /// Loads and stores; exclusive.
    Write,
    /// Atomic read-modify-writes; shared with other atomic handles only.
    Atomic,
}

impl AccessKind {
    pub(crate) fn compatible(self, other: AccessKind) -> bool {
        matches!(
            (self, other),
            (AccessKind::Read, AccessKind::Read) | (AccessKind::Atomic, AccessKind::Atomic)
        )
    }

    /// What a handle of this kind is called in messages: "reader", "writer" or "atomic
    /// handle".
    ///
    /// ```
    /// use hoplite_core::view::AccessKind;
    /// assert_eq!(AccessKind::Write.noun(), "writer");
    /// ```
    pub fn noun(self) -> &'static str {
        match self {
            AccessKind::Read => "reader",
            AccessKind::Write => "writer",
            AccessKind::Atomic => "atomic handle",
        }
    }
}

/// Largest rank of a view.
pub const MAX_VIEW_RANK: usize = 8;

/// The region of an allocation a view covers: all of it, or a box of index ranges in the
/// coordinates of the allocation's original (root) view. Two views of one allocation overlap
/// exactly when their boxes intersect in every root dimension.
///
/// Most views cover their whole allocation, so that case holds no ranges: a footprint is two
/// words, and handles, which carry their view's footprint into every launch, stay small to move
/// (a 136-byte box of ranges was copied several times per launch). Subviews share their box.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Footprint(Region);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Region {
    /// Every element of the allocation; `empty` when it has none.
    Whole { empty: bool },
    /// The elements of a box: one `lo..hi` range per root dimension.
    Box(Arc<[(usize, usize)]>),
}

impl Footprint {
    /// The whole of a root view of `extents`.
    pub fn whole(extents: &[usize]) -> Self {
        Footprint(Region::Whole {
            empty: extents.contains(&0),
        })
    }

    /// The box as one `lo..hi` range per root dimension. `root_extents` are the root view's
    /// extents, the answer when the footprint is the whole allocation (the view asking is
    /// then the root view, or one with its extents).
    pub(crate) fn ranges(&self, root_extents: &[usize]) -> Vec<(usize, usize)> {
        match &self.0 {
            Region::Whole { .. } => root_extents.iter().map(|&e| (0, e)).collect(),
            Region::Box(ranges) => ranges.to_vec(),
        }
    }

    /// The box of `ranges` (one per root dimension).
    pub(crate) fn from_ranges(ranges: Vec<(usize, usize)>) -> Self {
        Footprint(Region::Box(ranges.into()))
    }

    /// Whether the region is the whole allocation (possibly empty).
    pub(crate) fn is_whole(&self) -> bool {
        matches!(self.0, Region::Whole { .. })
    }

    /// Whether the region holds no element.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Region::Whole { empty } => *empty,
            Region::Box(ranges) => ranges.iter().any(|(lo, hi)| lo >= hi),
        }
    }

    /// Whether every element of `other` is in this region (both of one allocation). A box is
    /// not known to cover the whole allocation (the root's extents are not at hand), so the
    /// answer can be a conservative `false`, never a wrong `true`.
    ///
    /// ```
    /// use hoplite_core::{Slice, View};
    /// let x: View<f64, 1> = View::new("x", [10])?;
    /// let low: View<f64, 1> = x.subview([Slice::Range(0..5)])?;
    /// let mid: View<f64, 1> = x.subview([Slice::Range(2..4)])?;
    /// assert!(x.footprint().covers(&low.footprint()));
    /// assert!(low.footprint().covers(&mid.footprint()));
    /// assert!(!mid.footprint().covers(&low.footprint()));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn covers(&self, other: &Footprint) -> bool {
        if other.is_empty() {
            return true;
        }
        match (&self.0, &other.0) {
            (Region::Whole { empty }, _) => !empty,
            (Region::Box(a), Region::Box(b)) => a.iter().zip(b.iter()).all(|(a, b)| a.0 <= b.0 && b.1 <= a.1),
            (Region::Box(_), Region::Whole { .. }) => false,
        }
    }

    /// Whether the two regions (of one allocation) share an element.
    pub fn overlaps(&self, other: &Footprint) -> bool {
        if self.is_empty() || other.is_empty() {
            return false;
        }
        match (&self.0, &other.0) {
            (Region::Box(a), Region::Box(b)) => a.iter().zip(b.iter()).all(|(a, b)| a.0 < b.1 && b.0 < a.1),
            // A non-empty whole allocation meets every non-empty part of it.
            _ => true,
        }
    }
}

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
        self.space.records().remove(self.id);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_overlap_only_when_every_dimension_does() {
        let whole = Footprint::whole(&[10, 20]);
        let narrowed = |dim: usize, lo: usize, hi: usize| {
            let mut ranges = whole.ranges(&[10, 20]);
            ranges[dim] = (lo, hi);
            Footprint::from_ranges(ranges)
        };
        let left = narrowed(1, 0, 10);
        let right = narrowed(1, 10, 20);
        let row3 = narrowed(0, 3, 4);
        assert!(!left.overlaps(&right));
        assert!(left.overlaps(&row3) && right.overlaps(&row3));
        assert!(whole.overlaps(&left) && left.overlaps(&whole) && whole.overlaps(&whole));
        let empty = narrowed(0, 5, 5);
        assert!(empty.is_empty());
        assert!(!empty.overlaps(&whole) && !whole.overlaps(&empty));
        let nothing = Footprint::whole(&[10, 0]);
        assert!(nothing.is_empty() && !nothing.overlaps(&nothing) && !nothing.overlaps(&left));
    }

    #[test]
    fn records_track_current_and_high_water_bytes() {
        static RECORDS: AllocationRecords = AllocationRecords::new();
        RECORDS.insert(1, Arc::from("a"), 100, 0x1000);
        RECORDS.insert(2, Arc::from("b"), 50, 0x2000);
        RECORDS.remove(1);
        assert_eq!((RECORDS.current_bytes(), RECORDS.high_water_bytes()), (50, 150));
        let mut out = Vec::new();
        RECORDS
            .print(&mut out, "TestSpace", true)
            .expect("print to memory");
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("1 live allocation") && text.contains("50 bytes  b"),
            "{text}"
        );
        assert!(
            text.contains("0x0000000000002000") && text.contains("high-water 150"),
            "{text}"
        );
    }
}
