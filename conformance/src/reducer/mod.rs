//! The `Reducer` axioms through `parallel_reduce` on the space: every built-in reducer against
//! a sequential fold, tie rules of the location reducers, identities of empty ranges, index
//! order of joins and `finalize` once.
//!
//! Each reduction runs with the default policy, small static chunks and dynamic chunks, so
//! a backend that splits the range has to join many partial results.
//!
//! The portable checks launch `#[kernel]`s over data in the space's own memory and compare
//! with sequential folds on the host; the others use reducer values no device reduction
//! produces (vectors, tuples, arrays, complex numbers, `Option` locations, multi-indices) or
//! host-only targets and element types.
//!
//! One module per reducer family; every check is re-exported here, so its path (and the
//! name its failures carry) stays `reducer::<check>`.

use std::fmt::Debug;
use std::ops::Range;

use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{RangePolicy, Schedule};

use crate::{LaunchSpace, Outcome};

mod arith;
mod custom;
mod identity;
mod into_views;
mod location;
mod logical;
mod values;

pub use arith::*;
pub use custom::*;
pub use identity::*;
pub use into_views::*;
pub use location::*;
pub use logical::*;
pub use values::*;

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<sum_x_i64>,
    DeviceKernelInfo::of::<sum_x_f64>,
    DeviceKernelInfo::of::<sum_index_u32>,
    DeviceKernelInfo::of::<prod_x_f64>,
    DeviceKernelInfo::of::<prod_small_i64>,
    DeviceKernelInfo::of::<min_x_i64>,
    DeviceKernelInfo::of::<max_x_i64>,
    DeviceKernelInfo::of::<min_quarter_x_f64>,
    DeviceKernelInfo::of::<max_quarter_x_f64>,
    DeviceKernelInfo::of::<min_below_nan_thirds>,
    DeviceKernelInfo::of::<max_above_nan_thirds>,
    DeviceKernelInfo::of::<min_of_only_nan>,
    DeviceKernelInfo::of::<minmax_x_i64>,
    DeviceKernelInfo::of::<min_loc_x_i64>,
    DeviceKernelInfo::of::<min_loc_half_x_f64>,
    DeviceKernelInfo::of::<max_loc_x_i64>,
    DeviceKernelInfo::of::<minmax_loc_x_i64>,
    DeviceKernelInfo::of::<minmax_first_last_loc_x_i64>,
    DeviceKernelInfo::of::<min_loc_of_i64_max>,
    DeviceKernelInfo::of::<max_loc_of_f64_neg_infinity>,
    DeviceKernelInfo::of::<minmax_loc_of_constant_i64>,
    DeviceKernelInfo::of::<first_x_equal_to>,
    DeviceKernelInfo::of::<last_x_equal_to>,
    DeviceKernelInfo::of::<all_x_above>,
    DeviceKernelInfo::of::<any_x_above>,
    DeviceKernelInfo::of::<or_index_bits>,
    DeviceKernelInfo::of::<and_cleared_index_bits>,
    DeviceKernelInfo::of::<count_and_sum_indices>,
    DeviceKernelInfo::of::<extend_run>,
];

const N: usize = 1000;

/// The policies every reduction runs with.
fn policies<S: LaunchSpace>(space: &S, range: Range<usize>) -> [(RangePolicy<S>, &'static str); 4] {
    let p = || RangePolicy::new(space.clone(), range.clone());
    [
        (p(), "default policy"),
        (p().with_chunk_size(7), "static chunks of 7"),
        (p().with_chunk_size(1), "static chunks of 1"),
        (
            p().with_schedule(Schedule::Dynamic).with_chunk_size(64),
            "dynamic chunks of 64",
        ),
    ]
}

/// Runs `launch` (one reduction over the policy it is given) under every policy of `range`
/// and compares each result with `want`.
fn reduce_all<S, V>(
    space: &S,
    range: Range<usize>,
    launch: impl Fn(RangePolicy<S>) -> hoplite_core::Result<V>,
    want: &V,
    what: &str,
) -> Outcome
where
    S: LaunchSpace,
    V: PartialEq + Debug,
{
    for (policy, how) in policies(space, range.clone()) {
        let got = launch(policy)?;
        ensure_eq!(got, *want, "{what} over {range:?} with the {how}");
    }
    Ok(())
}

/// Values with repeated minima (-3 at 333, 600, 999) and maxima (40 at 100, 700, 800).
fn tie_data() -> Vec<i64> {
    let mut v: Vec<i64> = (0..N).map(|i| 5 + (i * 3 % 7) as i64).collect();
    for i in [333, 600, 999] {
        v[i] = -3;
    }
    for i in [100, 700, 800] {
        v[i] = 40;
    }
    v
}

/// Powers of two and their signs, so that every product is exact.
fn prod_data() -> Vec<f64> {
    (0..N)
        .map(|i| [1.0, 2.0, 0.5, -1.0, 1.0, 0.5, 2.0][i % 7])
        .collect()
}
