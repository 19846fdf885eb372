//! The `ParallelScan` contract: the final pass runs once per index with the sum of all lower
//! indices, and the scan returns the total. Results go through views with writers, as real
//! kernels store them.
//!
//! Every check runs on every space: `#[kernel]` scans over views in the space's own memory,
//! with the final passes per index counted through an atomic handle.

use std::fmt::Debug;
use std::ops::Range;

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, Idx, RangePolicy, ScanValue, Schedule, ViewValue, parallel_scan,
};
use hoplite_macros::kernel;

use crate::util::{exact_f64_data, exclusive_prefix, int_data, same};
use crate::{LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<prefix_sum_i64>,
    DeviceKernelInfo::of::<prefix_sum_f64>,
    DeviceKernelInfo::of::<count_final_passes>,
];

const SIZES: [usize; 5] = [0, 1, 2, 1000, 100_003];

/// Stores the prefix sums of `x` in `out`: inclusive (add, then store) or exclusive (store,
/// then add).
#[kernel(crate = hoplite_core)]
pub fn prefix_sum_i64(
    i: Idx<'_>,
    out: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    inclusive: bool,
    partial: &mut i64,
    is_final: bool,
) {
    if inclusive {
        *partial += x.get(i);
    }
    if is_final {
        out.set(i, *partial);
    }
    if !inclusive {
        *partial += x.get(i);
    }
}

/// [`prefix_sum_i64()`] for `f64`.
#[kernel(crate = hoplite_core)]
pub fn prefix_sum_f64(
    i: Idx<'_>,
    out: BoundWriter<'_, f64, 1>,
    x: BoundReader<'_, f64, 1>,
    inclusive: bool,
    partial: &mut f64,
    is_final: bool,
) {
    if inclusive {
        *partial += x.get(i);
    }
    if is_final {
        out.set(i, *partial);
    }
    if !inclusive {
        *partial += x.get(i);
    }
}

/// Counts the indices (the scan's total is their number) and adds 1 to `finals[i]` at every
/// final-pass call of index `i`.
#[kernel(crate = hoplite_core)]
pub fn count_final_passes(i: Idx<'_>, finals: BoundAtomic<'_, u32, 1>, partial: &mut u64, is_final: bool) {
    if is_final {
        finals.fetch_add(i, 1);
    }
    *partial += 1;
}

/// An element type the scan checks run with: the kernel that scans it.
trait Scanned: ScanValue + ViewValue + PartialEq + Debug {
    /// Scans `x` into `out` over `policy` with this type's prefix-sum kernel.
    fn scan<S: LaunchSpace>(
        policy: RangePolicy<S>,
        out: &SpaceView<S, Self, 1>,
        x: &SpaceView<S, Self, 1>,
        inclusive: bool,
    ) -> hoplite_core::Result<Self>;
}

impl Scanned for i64 {
    fn scan<S: LaunchSpace>(
        policy: RangePolicy<S>,
        out: &SpaceView<S, i64, 1>,
        x: &SpaceView<S, i64, 1>,
        inclusive: bool,
    ) -> hoplite_core::Result<i64> {
        parallel_scan(
            "scan",
            (policy, (out.write(), x.read())),
            prefix_sum_i64::with(inclusive),
        )
    }
}

impl Scanned for f64 {
    fn scan<S: LaunchSpace>(
        policy: RangePolicy<S>,
        out: &SpaceView<S, f64, 1>,
        x: &SpaceView<S, f64, 1>,
        inclusive: bool,
    ) -> hoplite_core::Result<f64> {
        parallel_scan(
            "scan",
            (policy, (out.write(), x.read())),
            prefix_sum_f64::with(inclusive),
        )
    }
}

/// Scans `x[range]` (an exclusive or inclusive scan) into a view through a writer and compares
/// every element and the total with the sequential prefix sums.
fn scan_case<S: LaunchSpace, T: Scanned>(
    x: &[T],
    range: Range<usize>,
    inclusive: bool,
    policy: RangePolicy<S>,
    what: &str,
) -> Outcome {
    let input = SpaceView::<S, T, 1>::from_slice("scan-in", [x.len()], x)?;
    let out = SpaceView::<S, T, 1>::new("scan-out", [x.len()])?;
    let total = T::scan(policy, &out, &input, inclusive)?;
    let (prefix, want_total) = exclusive_prefix(&x[range.clone()], T::zero());
    let want: Vec<T> = if inclusive {
        prefix
            .iter()
            .zip(&x[range.clone()])
            .map(|(&p, &v)| p + v)
            .collect()
    } else {
        prefix
    };
    let kind = if inclusive { "inclusive" } else { "exclusive" };
    ensure_eq!(
        total,
        want_total,
        "the total of an {kind} scan over {range:?} ({what})"
    );
    let got = out.to_vec()?;
    same(&got[range.clone()], &want, || {
        format!("{kind} scan over {range:?} ({what})")
    })?;
    let untouched = got[..range.start]
        .iter()
        .chain(&got[range.end..])
        .all(|v| *v == T::default());
    ensure!(
        untouched,
        "an {kind} scan over {range:?} stored outside its range ({what})"
    );
    Ok(())
}

/// Runs [`scan_case`] for every size, element type and a few chunkings.
fn all_sizes<S: LaunchSpace>(space: &S, inclusive: bool) -> Outcome {
    for n in SIZES {
        let ints = int_data(n);
        let floats = exact_f64_data(n);
        let policies = [
            (RangePolicy::new(space.clone(), 0..n), "default policy"),
            (
                RangePolicy::new(space.clone(), 0..n).with_chunk_size(7),
                "chunks of 7",
            ),
            (
                RangePolicy::new(space.clone(), 0..n)
                    .with_schedule(Schedule::Dynamic)
                    .with_chunk_size(1000),
                "dynamic chunks of 1000",
            ),
        ];
        for (policy, what) in policies {
            if n > 1000 && what == "chunks of 7" {
                continue;
            }
            scan_case(&ints, 0..n, inclusive, policy.clone(), &format!("i64, {what}"))?;
            scan_case(&floats, 0..n, inclusive, policy, &format!("f64, {what}"))?;
        }
    }
    Ok(())
}

/// An exclusive scan (store, then add) matches the sequential exclusive prefix sums, for
/// sizes 0, 1, 2, 1000 and 100 003, i64 and exactly summable f64 data.
pub fn exclusive_scan_matches_sequential_prefix<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || all_sizes(space, false))
}

/// An inclusive scan (add, then store) matches the sequential inclusive prefix sums.
pub fn inclusive_scan_matches_sequential_prefix<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || all_sizes(space, true))
}

/// A scan over `begin..end` with `begin > 0` sums from `begin`: the prefix of `begin` is 0.
pub fn scan_over_an_offset_range_matches_sequential_prefix<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(1200);
        for (schedule, chunk) in [(Schedule::Static, 5), (Schedule::Dynamic, 33)] {
            for range in [37..1091, 1199..1200, 600..600] {
                let policy = RangePolicy::new(space.clone(), range.clone())
                    .with_schedule(schedule)
                    .with_chunk_size(chunk);
                scan_case(
                    &x,
                    range.clone(),
                    false,
                    policy.clone(),
                    &format!("{schedule:?}, chunk {chunk}"),
                )?;
                scan_case(&x, range, true, policy, &format!("{schedule:?}, chunk {chunk}"))?;
            }
        }
        Ok(())
    })
}

/// The kernel is called with `is_final == true` exactly once per index, and non-final
/// passes do not change the total.
pub fn final_pass_runs_once_per_index<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 257, 4099] {
            let finals = SpaceView::<S, u32, 1>::new("scan-finals", [n])?;
            let total: u64 = parallel_scan(
                "scan-count",
                (RangePolicy::new(space.clone(), 0..n), (finals.atomic(),)),
                count_final_passes::with(),
            )?;
            ensure_eq!(total, n as u64, "the total of a scan counting {n} indices");
            same(&finals.to_vec()?, &vec![1; n], || {
                format!("final-pass calls per index, n = {n}")
            })?;
        }
        Ok(())
    })
}
