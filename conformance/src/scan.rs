//! The `ParallelScan` contract: the final pass runs once per index with the sum of all lower
//! indices, and the scan returns the total. Results go through views with writers, as real
//! kernels store them.

use std::fmt::Debug;
use std::ops::Range;

use hoplite_core::{RangePolicy, ScanValue, Schedule, View, ViewValue, parallel_scan};

use crate::util::{exact_f64_data, exclusive_prefix, int_data, same};
use crate::{FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

const SIZES: [usize; 5] = [0, 1, 2, 1000, 100_003];

/// Scans `x[range]` (an exclusive or inclusive scan) into a view through a writer and compares
/// every element and the total with the sequential prefix sums.
fn scan_case<S, T>(
    space: &S,
    x: &[T],
    range: Range<usize>,
    inclusive: bool,
    policy: RangePolicy<S>,
    what: &str,
) -> Outcome
where
    S: FullSpace,
    T: ScanValue + ViewValue + PartialEq + Debug,
{
    let input: View<T, 1> = View::from_slice("scan-in", [x.len()], x)?;
    let out: View<T, 1> = View::new("scan-out", [x.len()])?;
    let total: T = parallel_scan(
        "scan",
        (policy, (out.write(), input.read())),
        |(i, (out, input)), partial: &mut T, is_final| {
            if inclusive {
                *partial = *partial + input.get(i);
            }
            if is_final {
                out.set(i, *partial);
            }
            if !inclusive {
                *partial = *partial + input.get(i);
            }
        },
    )?;
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
    let _ = space;
    Ok(())
}

/// Runs [`scan_case`] for every size, element type and a few chunkings.
fn all_sizes<S: FullSpace>(space: &S, inclusive: bool) -> Outcome {
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
            scan_case(
                space,
                &ints,
                0..n,
                inclusive,
                policy.clone(),
                &format!("i64, {what}"),
            )?;
            scan_case(space, &floats, 0..n, inclusive, policy, &format!("f64, {what}"))?;
        }
    }
    Ok(())
}

/// An exclusive scan (store, then add) matches the sequential exclusive prefix sums, for
/// sizes 0, 1, 2, 1000 and 100 003, i64 and exactly summable f64 data.
pub fn exclusive_scan_matches_sequential_prefix<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || all_sizes(space, false))
}

/// An inclusive scan (add, then store) matches the sequential inclusive prefix sums.
pub fn inclusive_scan_matches_sequential_prefix<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || all_sizes(space, true))
}

/// A scan over `begin..end` with `begin > 0` sums from `begin`: the prefix of `begin` is 0.
pub fn scan_over_an_offset_range_matches_sequential_prefix<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(1200);
        for (schedule, chunk) in [(Schedule::Static, 5), (Schedule::Dynamic, 33)] {
            for range in [37..1091, 1199..1200, 600..600] {
                let policy = RangePolicy::new(space.clone(), range.clone())
                    .with_schedule(schedule)
                    .with_chunk_size(chunk);
                scan_case(
                    space,
                    &x,
                    range.clone(),
                    false,
                    policy.clone(),
                    &format!("{schedule:?}, chunk {chunk}"),
                )?;
                scan_case(
                    space,
                    &x,
                    range,
                    true,
                    policy,
                    &format!("{schedule:?}, chunk {chunk}"),
                )?;
            }
        }
        Ok(())
    })
}

/// The kernel is called with `is_final == true` exactly once per index, and non-final
/// passes do not change the total.
pub fn final_pass_runs_once_per_index<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 257, 4099] {
            let finals: View<u32, 1> = View::new("scan-finals", [n])?;
            let calls = finals.atomic();
            let total: u64 = parallel_scan(
                "scan-count",
                RangePolicy::new(space.clone(), 0..n),
                |i, partial: &mut u64, is_final| {
                    if is_final {
                        calls.fetch_add(i, 1);
                    }
                    *partial += 1;
                },
            )?;
            drop(calls);
            ensure_eq!(total, n as u64, "the total of a scan counting {n} indices");
            same(&finals.to_vec()?, &vec![1; n], || {
                format!("final-pass calls per index, n = {n}")
            })?;
        }
        Ok(())
    })
}
