//! Compile-time and value checks of the serial space's concept implementations.

use std::fmt::Debug;

use hoplite_core::{
    ExecutionSpace, HostSpace, Idx, LayoutRight, MdIdx, MemorySpace, TeamMember, TeamPolicy, TokenPool,
    UniqueToken, UniqueTokenSpace, parallel_for,
};
use hoplite_serial::{MAX_SCRATCH_LEVEL0, MAX_SCRATCH_LEVEL1, Serial, SerialTeamMember};
use static_assertions::{assert_impl_all, assert_not_impl_any, assert_type_eq_all};

assert_impl_all!(Serial: ExecutionSpace, UniqueTokenSpace, Send, Sync, Clone, Default, PartialEq, Debug);
assert_impl_all!(TokenPool: UniqueToken, Send, Sync, Clone, Debug);
assert_impl_all!(SerialTeamMember<'static>: TeamMember, Debug);
assert_not_impl_any!(Idx<'static>: Send, Sync);
assert_not_impl_any!(MdIdx<'static, 3>: Send, Sync);
assert_type_eq_all!(<Serial as ExecutionSpace>::MemorySpace, HostSpace);
assert_type_eq_all!(<Serial as ExecutionSpace>::ScratchMemorySpace, HostSpace);
assert_type_eq_all!(<Serial as ExecutionSpace>::ArrayLayout, LayoutRight);
assert_type_eq_all!(<Serial as UniqueTokenSpace>::InstanceToken, TokenPool);

#[test]
fn instances_are_values() {
    let a = Serial::default();
    assert_eq!(a, a.clone());
    assert_eq!(Serial::default(), Serial::default());
    assert_eq!(a.instance_id(), 0);
    let b = Serial::new();
    let c = Serial::new();
    assert_ne!(b, a);
    assert_ne!(b, c);
    assert_eq!(b, b.clone());
    assert_ne!(b.instance_id(), 0);
}

#[test]
fn limits_and_names() {
    let s = Serial::default();
    assert_eq!(s.name(), "Serial");
    assert_eq!(s.concurrency(), 1);
    assert_eq!(s.max_team_size(), 1);
    assert_eq!(s.max_vector_length(), 1);
    assert_eq!(s.max_scratch_size(0), MAX_SCRATCH_LEVEL0);
    assert_eq!(s.max_scratch_size(1), MAX_SCRATCH_LEVEL1);
    assert_eq!(s.max_scratch_size(2), 0);
    assert_eq!(
        TeamPolicy::new(s.clone(), 3, hoplite_core::TeamSize::Auto).team_size(),
        1
    );
    assert!(s.fence().is_ok());
    assert_eq!(HostSpace.name(), "HostSpace");
}

#[test]
fn print_configuration_mentions_the_essentials() {
    let mut short = Vec::new();
    Serial::default()
        .print_configuration(&mut short, false)
        .expect("writes to a Vec");
    let short = String::from_utf8(short).expect("utf-8");
    assert!(short.contains("Serial") && short.contains("1 thread"), "{short}");
    let mut long = Vec::new();
    Serial::default()
        .print_configuration(&mut long, true)
        .expect("writes to a Vec");
    let long = String::from_utf8(long).expect("utf-8");
    assert!(long.starts_with(&short), "{long}");
    assert!(
        long.contains(&MAX_SCRATCH_LEVEL0.to_string()) && long.contains("LayoutRight"),
        "{long}"
    );
}

#[test]
fn launches_on_different_instances_are_independent() {
    let (a, b) = (Serial::new(), Serial::new());
    let hits = std::sync::atomic::AtomicUsize::new(0);
    for space in [a, b, Serial::default()] {
        parallel_for(
            "each",
            hoplite_core::RangePolicy::new(space.clone(), 0..10),
            |i| {
                hits.fetch_add(*i, std::sync::atomic::Ordering::Relaxed);
            },
        )
        .expect("launch");
        space.fence().expect("fence");
    }
    assert_eq!(hits.into_inner(), 3 * 45);
}
