//! The `ExecutionPolicy` axioms for `RangePolicy`: exactly once, scheduling (and a desired
//! occupancy) does not change results, and the conversions to `MDRangePolicy<_, 1>` and
//! `TeamPolicy`.
//!
//! Every check is counted or computed by `#[kernel]`s in the space's own memory (exactly once
//! through atomic handles; the order of joins through a `Custom` reducer whose `i64` value
//! spells the run of indices it saw), so they run on every space.

use std::ops::Range;

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    Custom, Idx, MDRangePolicy, MdIdx, RangePolicy, Schedule, Sum, TeamMember, TeamPolicy, parallel_for,
    parallel_reduce, parallel_scan,
};
use hoplite_macros::kernel;

use crate::reducer::{NO_RUN, extend_run, join_runs, show_run, sum_x_i64};
use crate::scan::prefix_sum_i64;
use crate::util::{SCHEDULES, int_data, same};
use crate::{Failure, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<count_index>,
    DeviceKernelInfo::of::<count_index_in_row>,
    DeviceKernelInfo::of::<count_point_in_row>,
    DeviceKernelInfo::of::<count_league_rank_in_row>,
];

/// Adds 1 to `hits[i]` at every index `i` of the launch.
#[kernel(crate = hoplite_core)]
pub fn count_index(i: Idx<'_>, hits: BoundAtomic<'_, u32, 1>) {
    hits.fetch_add(i, 1);
}

/// Adds 1 to `hits[row, i]` at every index `i` of a range launch.
#[kernel(crate = hoplite_core)]
pub fn count_index_in_row(i: Idx<'_>, hits: BoundAtomic<'_, u32, 2>, row: usize) {
    hits.fetch_add([row, *i], 1);
}

/// Adds 1 to `hits[row, p[0]]` at every point `p` of a rank-1 MDRange launch.
#[kernel(crate = hoplite_core)]
pub fn count_point_in_row(p: MdIdx<'_, 1>, hits: BoundAtomic<'_, u32, 2>, row: usize) {
    hits.fetch_add([row, p[0]], 1);
}

/// Adds 1 to `hits[row, league rank]` on every member of a team launch.
#[kernel(crate = hoplite_core)]
pub fn count_league_rank_in_row(m: &impl TeamMember, hits: BoundAtomic<'_, u32, 2>, row: usize) {
    hits.fetch_add([row, m.league_rank()], 1);
}

/// Counts the visits of every index below `range.end + 2` for `policy`'s launch, and checks
/// each index of `range` was visited once and no other index at all.
fn visits_once<S: LaunchSpace>(policy: RangePolicy<S>, range: Range<usize>, what: &str) -> Outcome {
    let counts = SpaceView::<S, u32, 1>::new("range-visits", [range.end + 2])?;
    parallel_for("range-visits", (policy, (counts.atomic(),)), count_index::with())?;
    let want: Vec<u32> = (0..range.end + 2)
        .map(|i| u32::from(range.contains(&i)))
        .collect();
    same(&counts.to_vec()?, &want, || {
        format!("visit counts of {what} over {range:?}")
    })
}

/// Axiom 1 (exactly once): a range launch calls the kernel once for every index of
/// `begin..end` and for no other index, for empty, tiny, odd and large ranges.
pub fn visits_every_index_exactly_once<S: LaunchSpace>(space: &S) -> Outcome {
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
pub fn chunked_schedules_visit_every_index_exactly_once<S: LaunchSpace>(space: &S) -> Outcome {
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

/// Data over `0..n` in the space's memory and what a sum, an order-sensitive concatenation of
/// the indices (kept as the run it spells, see `reducer::custom_join_keeps_index_order`) and an
/// inclusive scan of it give in a serial loop: what every range policy over `0..n` must give.
struct SumRunScan<S: LaunchSpace> {
    n: usize,
    x: SpaceView<S, i64, 1>,
    out: SpaceView<S, i64, 1>,
    want_sum: i64,
    want_prefix: Vec<i64>,
}

impl<S: LaunchSpace> SumRunScan<S> {
    fn new(n: usize) -> Result<Self, Failure> {
        let data = int_data(n);
        let want_prefix: Vec<i64> = data
            .iter()
            .scan(0, |acc, v| {
                *acc += v;
                Some(*acc)
            })
            .collect();
        Ok(SumRunScan {
            n,
            x: SpaceView::<S, i64, 1>::from_slice("x", [n], &data)?,
            out: SpaceView::<S, i64, 1>::new("prefix", [n])?,
            want_sum: data.iter().sum(),
            want_prefix,
        })
    }

    /// Fails unless `policy` (over `0..n`) gives the serial loop's sum, run and prefix sums.
    fn check(&self, policy: RangePolicy<S>, what: &str) -> Outcome {
        let (n, x, out) = (self.n, &self.x, &self.out);
        let sum = parallel_reduce(
            "sum",
            (policy.clone(), (x.read(),)),
            sum_x_i64::with(),
            Sum::new(),
        )?;
        ensure_eq!(sum, self.want_sum, "Sum<i64> with {what}");
        let concat = Custom::new(|| NO_RUN, join_runs);
        let run = parallel_reduce("concat", policy.clone(), extend_run::with(), &concat)?;
        ensure!(
            run == n as i64,
            "concatenated indices with {what}: {}, expected 0..{n}",
            show_run(run)
        );
        let total = parallel_scan(
            "scan",
            (policy, (out.write(), x.read())),
            prefix_sum_i64::with(true),
        )?;
        ensure_eq!(total, self.want_sum, "scan total with {what}");
        same(&out.to_vec()?, &self.want_prefix, || {
            format!("inclusive prefix sums with {what}")
        })
    }
}

/// Axiom 3: schedule and chunk size change only how work is distributed: an integer sum,
/// an order-sensitive concatenation of the indices and a scan give the same results for all
/// of them.
pub fn schedule_does_not_change_results<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 10_007;
        let expected = SumRunScan::<S>::new(n)?;
        for (schedule, chunk) in SCHEDULES {
            let mut policy = RangePolicy::new(space.clone(), 0..n).with_schedule(schedule);
            if let Some(c) = chunk {
                policy = policy.with_chunk_size(c);
            }
            expected.check(policy, &format!("{schedule:?} schedule, chunk {chunk:?}"))?;
        }
        Ok(())
    })
}

/// Axiom 3 for a desired occupancy (`with_desired_occupancy`): a device that launches only
/// that share of its resident blocks still visits every index exactly once and gives the same
/// sum, order-sensitive concatenation and scan; the conversions to `MDRangePolicy<_, 1>` and
/// `TeamPolicy` carry it, and those launches visit every point and league rank once too.
/// At 1% a GPU launches a few blocks whose threads walk the range many times over.
pub fn desired_occupancy_does_not_change_results<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 100_003;
        let expected = SumRunScan::<S>::new(n)?;
        for percent in [1, 37, 100] {
            let what = format!("a desired occupancy of {percent}%");
            let policy = RangePolicy::new(space.clone(), 0..n).with_desired_occupancy(percent);
            visits_once(policy.clone(), 0..n, &what)?;
            expected.check(policy.clone(), &what)?;
            let md = MDRangePolicy::<S, 1>::from(policy.clone());
            let team = TeamPolicy::try_from(policy)?;
            ensure_eq!(
                (md.desired_occupancy(), team.desired_occupancy()),
                (Some(percent), Some(percent)),
                "the desired occupancy of the converted MDRange and team policies"
            );
            let counts = SpaceView::<S, u32, 2>::new("occupancy-visits", [2, n])?;
            parallel_for("as-md", (md, (counts.atomic(),)), count_point_in_row::with(0))?;
            parallel_for(
                "as-team",
                (team, (counts.atomic(),)),
                count_league_rank_in_row::with::<S>(1),
            )?;
            same(&counts.to_vec()?, &vec![1u32; 2 * n], || {
                format!("visits of the MDRange and team launches with {what}")
            })?;
        }
        Ok(())
    })
}

/// The conversions `RangePolicy -> MDRangePolicy<_, 1> -> TeamPolicy` carry the chunk (as
/// the tile) and the schedule, and launch on the space over the same points; league rank `r`
/// is index `r`.
pub fn conversions_visit_the_same_points<S: LaunchSpace>(space: &S) -> Outcome {
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
        let counts = SpaceView::<S, u32, 2>::new("converted-visits", [3, n])?;
        parallel_for(
            "as-range",
            (range, (counts.atomic(),)),
            count_index_in_row::with(0),
        )?;
        parallel_for(
            "as-md",
            (md.clone(), (counts.atomic(),)),
            count_point_in_row::with(1),
        )?;
        parallel_for(
            "as-team",
            (team, (counts.atomic(),)),
            count_league_rank_in_row::with::<S>(2),
        )?;
        let via_md = TeamPolicy::try_from(md)?;
        ensure_eq!(
            via_md.league_size(),
            n,
            "the league size of MDRangePolicy<1> -> TeamPolicy"
        );
        same(&counts.to_vec()?, &vec![1u32; 3 * n], || {
            "visits of the range, MDRange and team launches".to_owned()
        })
    })
}
