//! The `ExecutionSpace` axioms: instances are values, in-order launches, fence, concurrency,
//! `in_parallel`, configuration.

use std::sync::atomic::{AtomicBool, Ordering};

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, Idx, LAnd, MDRangePolicy, RangePolicy, Sum, TeamPolicy, TeamSize, View,
    parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_macros::kernel;

use crate::util::{Problems, same};

use crate::{FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<store_scaled_index>,
    DeviceKernelInfo::of::<store_doubled>,
    DeviceKernelInfo::of::<store_less_one>,
    DeviceKernelInfo::of::<sum_of>,
    DeviceKernelInfo::of::<count_overlap>,
    DeviceKernelInfo::of::<sum_of_indices>,
];

/// `y[i] = scale * i`.
#[kernel(crate = hoplite_core)]
pub fn store_scaled_index(i: Idx<'_>, y: BoundWriter<'_, i64, 1>, scale: i64) {
    y.set(i, scale * (*i as i64));
}

/// `b[i] = 2 a[i]`.
#[kernel(crate = hoplite_core)]
pub fn store_doubled(i: Idx<'_>, b: BoundWriter<'_, i64, 1>, a: BoundReader<'_, i64, 1>) {
    b.set(i, 2 * a.get(i));
}

/// `a[i] = b[i] - 1`.
#[kernel(crate = hoplite_core)]
pub fn store_less_one(i: Idx<'_>, a: BoundWriter<'_, i64, 1>, b: BoundReader<'_, i64, 1>) {
    a.set(i, b.get(i) - 1);
}

/// The sum of `a`.
#[kernel(crate = hoplite_core)]
pub fn sum_of(i: Idx<'_>, a: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc += a.get(i);
}

/// The sum of the launch's indices.
#[kernel(crate = hoplite_core)]
pub fn sum_of_indices(i: Idx<'_>, acc: &mut i64) {
    *acc += *i as i64;
}

/// Counts the iterations running at once: `active[0]` goes up on entry and down on exit, and
/// `most[0]` keeps the highest count seen; `delay` atomic no-ops on `active[1]` in between
/// keep each iteration running a while (atomics are never optimized away).
#[kernel(crate = hoplite_core)]
pub fn count_overlap(
    _i: Idx<'_>,
    active: BoundAtomic<'_, i64, 1>,
    most: BoundAtomic<'_, i64, 1>,
    delay: i64,
) {
    let now = active.fetch_add(0, 1) + 1;
    most.fetch_max(0, now);
    let mut k = 0;
    while k < delay {
        active.fetch_add(1, 0);
        k += 1;
    }
    active.fetch_add(0, -1);
}

/// Axiom 1: a clone is the same instance (`a == a.clone()`, also for a clone of a clone).
pub fn clones_are_the_same_instance<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let a = space.clone();
        ensure!(
            a == *space,
            "a clone compares unequal to its original: {a:?} vs {space:?}"
        );
        let b = a.clone();
        ensure!(
            b == *space && b == a,
            "a clone of a clone compares unequal: {b:?} vs {space:?}"
        );
        let itself: &S = space;
        ensure!(
            PartialEq::eq(itself, space),
            "an instance compares unequal to itself: {space:?}"
        );
        Ok(())
    })
}

/// Axiom 1: `S::default() == S::default()`: there is one default instance.
pub fn default_instances_are_equal<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        let (a, b) = (S::default(), S::default());
        ensure!(a == b, "two default instances compare unequal: {a:?} vs {b:?}");
        ensure!(
            a.clone() == b,
            "a clone of the default instance compares unequal to it"
        );
        Ok(())
    })
}

/// Axiom 3: once `fence` returns `Ok`, every launch submitted before it has completed and
/// its stores are visible to the host.
pub fn fence_waits_for_prior_launches<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 4096;
        let y = SpaceView::<S, i64, 1>::new("fenced", [n])?;
        for round in 1..=3i64 {
            let policy = RangePolicy::new(space.clone(), 0..n);
            parallel_for(
                "fence-write",
                (policy, (y.write(),)),
                store_scaled_index::with(round),
            )?;
            space.fence()?;
            let want: Vec<i64> = (0..n as i64).map(|i| round * i).collect();
            same(&y.to_vec()?, &want, || format!("after fence, round {round}"))?;
        }
        space.fence()?;
        S::default().fence()?;
        Ok(())
    })
}

/// Axiom 2: a launch observes every effect of the launches submitted before it to the
/// same instance (each launch here reads what the previous one wrote, with no fence in
/// between).
pub fn launches_run_in_submission_order<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 3001;
        let a = SpaceView::<S, i64, 1>::new("a", [n])?;
        let b = SpaceView::<S, i64, 1>::new("b", [n])?;
        let range = || RangePolicy::new(space.clone(), 0..n);
        parallel_for("first", (range(), (a.write(),)), store_scaled_index::with(1))?;
        parallel_for("second", (range(), (b.write(), a.read())), store_doubled::with())?;
        parallel_for("third", (range(), (a.write(), b.read())), store_less_one::with())?;
        let total = parallel_reduce("fourth", (range(), (a.read(),)), sum_of::with(), Sum::new())?;
        space.fence()?;
        let want: Vec<i64> = (0..n as i64).map(|i| 2 * i - 1).collect();
        same(&a.to_vec()?, &want, || "the third launch's result".to_owned())?;
        ensure_eq!(
            total,
            want.iter().sum::<i64>(),
            "a reduction over the third launch's result"
        );
        Ok(())
    })
}

/// Axiom 5: `in_parallel` is true on the thread running a kernel of the space (for, reduce
/// and scan over every policy kind) and false outside, also on other threads.
pub fn in_parallel_is_true_exactly_inside_kernels<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure!(!space.in_parallel(), "in_parallel is true outside any kernel");
        let all = parallel_reduce(
            "in-parallel-range",
            RangePolicy::new(space.clone(), 0..257),
            |_, acc: &mut bool| *acc = *acc && space.in_parallel(),
            LAnd::new(),
        )?;
        ensure!(all, "in_parallel is false inside a range kernel");
        let all = parallel_reduce(
            "in-parallel-md",
            MDRangePolicy::new(space.clone(), [0, 0], [9, 7]).with_tiles([2, 3]),
            |_, acc: &mut bool| *acc = *acc && space.in_parallel(),
            LAnd::new(),
        )?;
        ensure!(all, "in_parallel is false inside an MDRange kernel");
        let all = parallel_reduce(
            "in-parallel-team",
            TeamPolicy::new(space.clone(), 5, TeamSize::Auto),
            |_, acc: &mut bool| *acc = *acc && space.in_parallel(),
            LAnd::new(),
        )?;
        ensure!(all, "in_parallel is false inside a team kernel");
        let outside_in_scan: u32 = parallel_scan(
            "in-parallel-scan",
            RangePolicy::new(space.clone(), 0..100),
            |_, partial: &mut u32, _| *partial += u32::from(!space.in_parallel()),
        )?;
        ensure_eq!(outside_in_scan, 0, "scan iterations that saw in_parallel false");
        let other_thread = AtomicBool::new(false);
        parallel_for(
            "in-parallel-other-thread",
            RangePolicy::new(space.clone(), 0..1),
            |_| {
                std::thread::scope(|s| {
                    s.spawn(|| {
                        other_thread.store(
                            S::default().in_parallel() || space.in_parallel(),
                            Ordering::Relaxed,
                        )
                    });
                });
            },
        )?;
        ensure!(
            !other_thread.into_inner(),
            "in_parallel is true on a thread that runs no kernel"
        );
        ensure!(
            !space.in_parallel(),
            "in_parallel is still true after the launches returned"
        );
        Ok(())
    })
}

/// Axiom 4, first half: `concurrency` is at least 1.
pub fn concurrency_is_at_least_one<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure!(space.concurrency() >= 1, "concurrency is {}", space.concurrency());
        ensure!(
            S::default().concurrency() >= 1,
            "the default instance's concurrency is 0"
        );
        Ok(())
    })
}

/// Axiom 4, second half: no more iterations of one launch run at the same time than
/// `concurrency` says.
pub fn concurrency_bounds_simultaneous_iterations<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let limit = space.concurrency();
        let n = (limit * 16).clamp(64, 512);
        for (k, policy) in [
            RangePolicy::new(space.clone(), 0..n),
            RangePolicy::new(space.clone(), 0..n)
                .with_schedule(hoplite_core::Schedule::Dynamic)
                .with_chunk_size(1),
        ]
        .into_iter()
        .enumerate()
        {
            let active = SpaceView::<S, i64, 1>::new("active", [2])?;
            let most = SpaceView::<S, i64, 1>::new("most", [1])?;
            parallel_for(
                "concurrency",
                (policy, (active.atomic(), most.atomic())),
                count_overlap::with(200),
            )?;
            let most = most.to_vec()?[0];
            ensure!(
                most >= 1 && most as usize <= limit,
                "{most} iterations ran at once (policy {k}), but concurrency is {limit}"
            );
            ensure_eq!(
                active.to_vec()?[0],
                0,
                "iterations still counted active after the launch"
            );
        }
        Ok(())
    })
}

/// `name` and `print_configuration` (short and detailed) say something, in UTF-8.
pub fn print_configuration_is_not_empty<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure!(!space.name().is_empty(), "the space's name is empty");
        for detail in [false, true] {
            let mut out = Vec::new();
            space
                .print_configuration(&mut out, detail)
                .map_err(|e| crate::Failure::msg(format!("print_configuration failed: {e}")))?;
            let text = String::from_utf8(out)
                .map_err(|e| crate::Failure::msg(format!("print_configuration wrote non-UTF-8: {e}")))?;
            ensure!(
                !text.trim().is_empty(),
                "print_configuration(detail = {detail}) wrote nothing"
            );
        }
        Ok(())
    })
}

/// A kernel can launch on the space again: the nested launch runs every iteration and
/// returns before the outer iteration goes on.
pub fn nested_launches_complete<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (outer, inner) = (4usize, 5usize);
        let cells: View<u64, 1> = View::new("nested-cells", [outer * inner])?;
        let hits = cells.atomic();
        let problems = Problems::new();
        parallel_for("outer", RangePolicy::new(space.clone(), 0..outer), |i| {
            let i = *i;
            let inner_result = parallel_for("inner", RangePolicy::new(space.clone(), 0..inner), |j| {
                hits.fetch_add(i * inner + *j, (i * 10 + *j + 1) as u64);
            });
            problems.check(inner_result.is_ok(), || {
                format!("inner launch failed: {inner_result:?}")
            });
            let sum = parallel_reduce(
                "inner-sum",
                RangePolicy::new(space.clone(), 0..i + 1),
                |j, acc: &mut usize| *acc += *j,
                Sum::new(),
            );
            problems.check(sum == Ok(i * (i + 1) / 2), || {
                format!("inner reduction over 0..={i} gave {sum:?}")
            });
            problems.check(space.in_parallel(), || {
                "in_parallel is false after a nested launch returned".to_owned()
            });
        })?;
        problems.into_outcome("nested launches")?;
        drop(hits);
        let want: Vec<u64> = (0..outer)
            .flat_map(|i| (0..inner).map(move |j| (i * 10 + j + 1) as u64))
            .collect();
        same(&cells.to_vec()?, &want, || {
            "cells written by nested launches".to_owned()
        })
    })
}

/// `partition_space`: `n` parts (also 0), each an instance that runs launches correctly, with
/// weights as many parts as weights, and a partition into absurdly many parts a typed error,
/// not an abort.
pub fn partitions_are_instances_that_run_launches<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure!(
            space.partition_space(0)?.is_empty(),
            "a partition into 0 parts is not empty"
        );
        let parts = space.partition_space(2)?;
        ensure_eq!(parts.len(), 2, "partition_space(2)");
        let weighted = space.partition_space_weighted(&[3.0, 1.0, f64::NAN])?;
        ensure_eq!(weighted.len(), 3, "partition_space_weighted with 3 weights");
        for (k, part) in parts.iter().chain(&weighted).enumerate() {
            ensure!(part.concurrency() >= 1, "part {k} reports concurrency 0");
            let n = 1000;
            let sum = parallel_reduce(
                "partition-sum",
                RangePolicy::new(part.clone(), 0..n),
                sum_of_indices::with(),
                Sum::new(),
            )?;
            ensure_eq!(sum, (0..n as i64).sum::<i64>(), "a reduction on part {k}");
        }
        match space.partition_space(usize::MAX) {
            Err(hoplite_core::Error::ThreadsUnavailable { .. }) => {}
            Err(e) => {
                return Err(crate::Failure::msg(format!(
                    "partition_space(usize::MAX) failed with {e}"
                )));
            }
            Ok(p) => {
                return Err(crate::Failure::msg(format!(
                    "partition_space(usize::MAX) gave {} parts",
                    p.len()
                )));
            }
        }
        Ok(())
    })
}
