//! Unique tokens as `#[kernel]` arguments: a device token's lock words reach a device launch,
//! and a launch on host threads given one fails with a message that names the fix.
use hoplite_macros::kernel;
use hoplite_serial::Serial;

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::device_launch_of;
use hoplite_core::{
    DeviceUniqueToken, Error, HostSpace, Idx, KernelTokenSpace, RangePolicy, TokenPool, UniqueToken, View,
    parallel_for,
};

/// Counts, per id, the iterations that held it.
#[kernel(crate = hoplite_core)]
fn count_ids(_i: Idx<'_>, counts: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken, step: u64) {
    let id = tokens.guard();
    counts.fetch_add(*id, step);
}

#[test]
fn a_device_token_in_a_host_launch_is_a_kernel_panic_that_names_the_fix() {
    let space = Serial::default();
    let device = DeviceUniqueToken::new_in(HostSpace, "Example", 4).expect("a token");
    let counts: View<u64, 1> = View::new("counts", [4]).expect("a view");
    let e = parallel_for(
        "device token on the host",
        (RangePolicy::new(space.clone(), 0..10), (counts.atomic(),)),
        count_ids::with(&device, 1),
    )
    .expect_err("a device token has no host side");
    assert!(
        matches!(&e, Error::KernelPanicked { message, .. }
            if message.contains("`tokens` lives in device memory") && message.contains("kernel_token")),
        "{e}"
    );
    // The space stays usable, with a host token.
    let host = space.kernel_token_with_size(4).expect("a pool");
    parallel_for(
        "host token",
        (RangePolicy::new(space, 0..10), (counts.atomic(),)),
        count_ids::with(&host, 1),
    )
    .expect("a host pool on a host space");
    assert_eq!(counts.to_vec().expect("read").iter().sum::<u64>(), 10);
}

#[test]
fn a_device_launch_sees_each_token_and_the_scalars() {
    let device = DeviceUniqueToken::new_in(HostSpace, "Example", 40).expect("a token");
    let kernel = count_ids::with(&device, 3);
    let launch = device_launch_of(&kernel, Vec::new()).expect("a registered with-closure");
    assert_eq!(launch.kernel.name, "count_ids");
    assert_eq!(launch.scalars, [hoplite_core::device_kernel::ScalarValue::U64(3)]);
    let [arg] = &launch.tokens[..] else {
        panic!("one token, got {:?}", launch.tokens)
    };
    let words = arg.token.as_ref().expect("a device token has lock words");
    assert_eq!(
        (words.words, words.size),
        (device.lock_words().data() as usize, 40)
    );
    assert!(words.memory_space.is::<HostSpace>());

    let pool = TokenPool::new(2, "Example").expect("a pool");
    let kernel = count_ids::with(&pool, 5);
    let launch = device_launch_of(&kernel, Vec::new()).expect("a registered with-closure");
    assert!(launch.tokens[0].token.is_none(), "a host pool has no lock words");
    assert!(launch.tokens[0].type_name.contains("TokenPool"));
}
