//! The `ExecutionPolicy` axioms for `RangePolicy`: exactly once, scheduling does not change
//! results, and the conversions to `MDRangePolicy<_, 1>` and `TeamPolicy`.
//!
//! These checks run on host spaces only: exactly once is counted with an atomic handle, which
//! a launch takes only of host memory (a writer's read-modify-write would lose a visit that
//! two threads make at once), and the order of joins is seen through a `Custom` reducer of a
//! `Vec`, which has no device layout.

use std::ops::Range;

use hoplite_core::{
    Custom, MDRangePolicy, RangePolicy, Schedule, Sum, TeamMember, TeamPolicy, View, parallel_for,
    parallel_reduce, parallel_scan,
};

use crate::util::{SCHEDULES, int_data, same};
use crate::{FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

/// Counts the visits of every index below `range.end + 2` for `policy`'s launch, and checks
/// each index of `range` was visited once and no other index at all.
fn visits_once<S: FullSpace>(policy: RangePolicy<S>, range: Range<usize>, what: &str) -> Outcome {
    let counts: View<u32, 1> = View::new("range-visits", [range.end + 2])?;
    let hits = counts.atomic();
    parallel_for("range-visits", policy, |i| {
        hits.fetch_add(*i, 1);
    })?;
    drop(hits);
    let want: Vec<u32> = (0..range.end + 2)
        .map(|i| u32::from(range.contains(&i)))
        .collect();
    same(&counts.to_vec()?, &want, || {
        format!("visit counts of {what} over {range:?}")
    })
}

/// Axiom 1 (exactly once): a range launch calls the kernel once for every index of
/// `begin..end` and for no other index, for empty, tiny, odd and large ranges.
pub fn visits_every_index_exactly_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for range in [0..0, 9..9, 0..1, 0..2, 3..17, 0..1000, 5..10_007] {
            visits_once(
                RangePolicy::new(space.clone(), range.clone()),
                range,
                "the default policy",
            )?;
        }
        Ok(())
    })
}

/// Axioms 1 and 3: every schedule (static, dynamic) and chunk size (1, odd, larger than the
/// range) visits every index exactly once.
pub fn chunked_schedules_visit_every_index_exactly_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for (schedule, chunk) in SCHEDULES {
            for range in [2..2003, 0..1, 4..4] {
                let mut policy = RangePolicy::new(space.clone(), range.clone()).with_schedule(schedule);
                if let Some(c) = chunk {
                    policy = policy.with_chunk_size(c);
                }
                visits_once(policy, range, &format!("{schedule:?} schedule, chunk {chunk:?}"))?;
            }
        }
        Ok(())
    })
}

/// Axiom 3: schedule and chunk size change only how work is distributed: an integer sum,
/// an order-sensitive concatenation and a scan give the same results for all of them.
pub fn schedule_does_not_change_results<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 10_007;
        let data = int_data(n);
        let want_sum: i64 = data.iter().sum();
        let want_order: Vec<usize> = (0..n).step_by(97).collect();
        let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
        for (schedule, chunk) in SCHEDULES {
            let mut policy = RangePolicy::new(space.clone(), 0..n).with_schedule(schedule);
            if let Some(c) = chunk {
                policy = policy.with_chunk_size(c);
            }
            let what = format!("{schedule:?} schedule, chunk {chunk:?}");
            let sum = parallel_reduce(
                "sum",
                policy.clone(),
                |i, acc: &mut i64| *acc += data[*i],
                Sum::new(),
            )?;
            ensure_eq!(sum, want_sum, "Sum<i64> with {what}");
            let order = parallel_reduce(
                "concat",
                policy.clone(),
                |i, acc: &mut Vec<usize>| {
                    if *i % 97 == 0 {
                        acc.push(*i);
                    }
                },
                &concat,
            )?;
            same(&order, &want_order, || {
                format!("concatenated indices with {what}")
            })?;
            let total: i64 = parallel_scan("scan", policy, |i, partial: &mut i64, _| *partial += data[*i])?;
            ensure_eq!(total, want_sum, "scan total with {what}");
        }
        Ok(())
    })
}

/// The conversions `RangePolicy -> MDRangePolicy<_, 1> -> TeamPolicy` carry the chunk (as
/// the tile) and the schedule, and launch on the space over the same points; league rank `r`
/// is index `r`.
pub fn conversions_visit_the_same_points<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 37;
        let range = RangePolicy::new(space.clone(), 0..n)
            .with_chunk_size(5)
            .with_schedule(Schedule::Dynamic);
        let md = MDRangePolicy::<S, 1>::from(range.clone());
        ensure_eq!(
            (md.tiles(), md.schedule()),
            ([5], Schedule::Dynamic),
            "the converted MDRange policy"
        );
        let team = TeamPolicy::try_from(range.clone())?;
        ensure_eq!(
            (
                team.league_size(),
                team.team_size(),
                team.chunk_size(),
                team.schedule()
            ),
            (n, 1, Some(5), Schedule::Dynamic),
            "the converted team policy"
        );
        let counts: View<u32, 2> = View::new("converted-visits", [3, n])?;
        let hits = counts.atomic();
        parallel_for("as-range", range, |i| {
            hits.fetch_add([0, *i], 1);
        })?;
        parallel_for("as-md", md.clone(), |i| {
            hits.fetch_add([1, i[0]], 1);
        })?;
        parallel_for("as-team", team, |m| {
            hits.fetch_add([2, m.league_rank()], 1);
        })?;
        let via_md = TeamPolicy::try_from(md)?;
        ensure_eq!(
            via_md.league_size(),
            n,
            "the league size of MDRangePolicy<1> -> TeamPolicy"
        );
        drop(hits);
        same(&counts.to_vec()?, &vec![1u32; 3 * n], || {
            "visits of the range, MDRange and team launches".to_owned()
        })
    })
}
