//! The record of a memory space's live allocations (label, bytes, address), with current and
//! high-water byte counts.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

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

    pub(crate) fn insert(&self, id: u64, label: Arc<str>, bytes: usize, address: usize) {
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

    pub(crate) fn remove(&self, id: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
