//! Misuse: a policy of one execution space handed to another space's dispatch.
//!
//! A policy names the instance it launches on (`RangePolicy<Serial>` runs on a `Serial`
//! instance). A `Device` backend implements `ParallelFor` for its own policies only (ranges
//! and 2-d boxes here), so giving it a serial policy would run the launch on the wrong
//! instance (and, for a real device, hand host-side scheduling data to device code). It must
//! not compile, and the message must come from `ParallelFor`'s
//! `#[diagnostic::on_unimplemented]`.

use std::io;

use hoplite_core::{
    ExecutionPolicy, ExecutionSpace, ForKernel, HostSpace, LayoutRight, MDRangePolicy, ParallelFor,
    RangePolicy, Result,
};
use hoplite_serial::{Serial, SerialTeamMember};

/// A second execution space (a stand-in for a device backend).
#[derive(Clone, Debug, Default, PartialEq)]
struct Device;

impl ExecutionSpace for Device {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = SerialTeamMember<'t>;
    fn name(&self) -> &'static str {
        "Device"
    }
    fn fence(&self) -> Result<()> {
        Ok(())
    }
    fn in_parallel(&self) -> bool {
        false
    }
    fn concurrency(&self) -> usize {
        1
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
        writeln!(out, "Device")
    }
}

// SAFETY: the kernel is never called.
unsafe impl ParallelFor<RangePolicy<Device>> for Device {
    fn parallel_for<K: ForKernel<RangePolicy<Device>>>(
        &self,
        _label: &str,
        _policy: &RangePolicy<Device>,
        _kernel: K,
    ) -> Result<()> {
        Ok(())
    }
}

// SAFETY: the kernel is never called.
unsafe impl ParallelFor<MDRangePolicy<Device, 2>> for Device {
    fn parallel_for<K: ForKernel<MDRangePolicy<Device, 2>>>(
        &self,
        _label: &str,
        _policy: &MDRangePolicy<Device, 2>,
        _kernel: K,
    ) -> Result<()> {
        Ok(())
    }
}

/// Runs any policy the device can dispatch.
fn launch_on_device<P>(device: &Device, policy: &P) -> Result<()>
where
    P: ExecutionPolicy,
    Device: ParallelFor<P>,
{
    device.parallel_for("on-device", policy, |_: P::Item<'_>| {})
}

fn main() {
    let serial_policy = RangePolicy::new(Serial::default(), 0..4);
    let _ = launch_on_device(&Device, &serial_policy);
}
