//! Misuse: implementing, without `unsafe`, a concept whose answers unsafe code trusts.
//!
//! A dispatch that visited an index twice at once, a policy whose bounds were smaller than
//! what it visits, a layout whose offsets left the allocation or an atomic type that was not
//! atomic would each let safe kernels race or store out of bounds. So these traits are
//! `unsafe` to implement (E0200): the implementer signs the `# Safety` contract.

use std::io;
use std::ptr::NonNull;

use hoplite_core::AllocationRecords;
use hoplite_core::{
    ArrayLayout, ExecutionSpace, ForKernel, HostSpace, LayoutRight, MemorySpace, ParallelFor,
    RangePolicy, Result,
};
use hoplite_serial::SerialTeamMember;

#[derive(Clone, Copy, Debug, Default)]
struct Diagonal;

impl ArrayLayout for Diagonal {
    const NAME: &'static str = "Diagonal";
    fn strides(_extents: &[usize], strides: &mut [usize]) {
        strides.fill(0);
    }
    fn accepts(_strides: &[usize]) -> bool {
        true
    }
    fn offset<const R: usize>(_strides: &[usize; R], _index: &[usize; R]) -> usize {
        1 << 40
    }
}

#[derive(Clone, Debug, Default)]
struct Dangling;

impl MemorySpace for Dangling {
    const ALIGNMENT: usize = 8;
    fn name(&self) -> &'static str {
        "Dangling"
    }
    fn allocate(&self, _label: &str, _bytes: usize) -> Result<NonNull<u8>> {
        Ok(NonNull::dangling())
    }
    fn records(&self) -> &'static AllocationRecords {
        static RECORDS: AllocationRecords = AllocationRecords::new();
        &RECORDS
    }
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _bytes: usize) {}
}

/// A space whose dispatch could run the kernel twice at once.
#[derive(Clone, Debug, Default, PartialEq)]
struct Twice;

impl ExecutionSpace for Twice {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = SerialTeamMember<'t>;
    fn name(&self) -> &'static str {
        "Twice"
    }
    fn fence(&self) -> Result<()> {
        Ok(())
    }
    fn in_parallel(&self) -> bool {
        false
    }
    fn concurrency(&self) -> usize {
        2
    }
    fn max_team_size(&self) -> usize {
        1
    }
    fn max_vector_length(&self) -> usize {
        1
    }
    fn max_scratch_size(&self, _level: usize) -> usize {
        0
    }
    fn print_configuration(&self, out: &mut dyn io::Write, _detail: bool) -> io::Result<()> {
        writeln!(out, "Twice")
    }
}

impl ParallelFor<RangePolicy<Twice>> for Twice {
    fn parallel_for<K: ForKernel<RangePolicy<Twice>>>(
        &self,
        _label: &str,
        _policy: &RangePolicy<Twice>,
        _kernel: K,
    ) -> Result<()> {
        Ok(())
    }
}

fn main() {}
