//! The team member of device spaces.

use std::ops::Range;

use crate::index::Idx;
use crate::reducer::{Reducer, ScanValue};
use crate::team::{NestedLevel, ScratchPad, TeamMember};

/// The team member type of a device space (`ExecutionSpace::TeamMember` of `Cuda`): its team
/// kernels run as the generated code of `#[kernel]`s, never as host closures, so no value of
/// this type exists; it only names the space's member type, which a team kernel's native
/// function is instantiated with.
///
/// ```
/// fn no_values(m: hoplite_core::device_kernel::DeviceTeamMember) -> usize {
///     match m {}
/// }
/// ```
#[derive(Debug)]
pub enum DeviceTeamMember {}

// SAFETY: the type has no values, so no method can ever be called and no promise of the
// contract is ever put to the test.
unsafe impl TeamMember for DeviceTeamMember {
    fn league_rank(&self) -> usize {
        match *self {}
    }
    fn league_size(&self) -> usize {
        match *self {}
    }
    fn team_rank(&self) -> usize {
        match *self {}
    }
    fn team_size(&self) -> usize {
        match *self {}
    }
    fn vector_length(&self) -> usize {
        match *self {}
    }
    fn team_barrier(&self) {
        match *self {}
    }
    fn team_broadcast<T: Clone + Send + Sync + 'static>(&self, _value: T, _source: usize) -> T {
        match *self {}
    }
    fn team_reduce<R>(&self, _reducer: &R, _value: R::Value) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Sync + 'static,
    {
        match *self {}
    }
    fn team_scan<T: ScanValue>(&self, _value: T) -> (T, T) {
        match *self {}
    }
    fn team_scratch(&self, _level: usize) -> &ScratchPad<'_> {
        match *self {}
    }
    fn thread_scratch(&self, _level: usize) -> &ScratchPad<'_> {
        match *self {}
    }
    fn nested_reduce<R, F>(
        &self,
        _level: NestedLevel,
        _range: Range<usize>,
        _kernel: F,
        _reducer: &R,
    ) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Send + Sync + 'static,
        F: for<'i> Fn(Idx<'i>, &mut R::Value),
    {
        match *self {}
    }
    fn nested_scan<T, F>(&self, _level: NestedLevel, _range: Range<usize>, _kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool),
    {
        match *self {}
    }
}
