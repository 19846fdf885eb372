//! The `ExecutionPolicy` axioms for `MDRangePolicy` of ranks 1 to 3: every point exactly
//! once for odd tiles, edge tiles and all four combinations of iteration orders.
//!
//! Every check runs on every space: `#[kernel]`s count the visits of each point through
//! atomic handles of views in the space's own memory, reduce, and mark points through writers.

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, IterationOrder, MDRangePolicy, MdIdx, Sum, parallel_for, parallel_reduce,
};
use hoplite_macros::kernel;

use crate::errors::{mark_point_2, mark_point_3};
use crate::util::same;
use crate::{LaunchSpace, Outcome, SpaceView, check};

use IterationOrder::{Left, Right};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each; the
/// markers `mark_point_2` and `mark_point_3` are listed with `errors`).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<point_weight_1>,
    DeviceKernelInfo::of::<point_weight_2>,
    DeviceKernelInfo::of::<point_weight_3>,
    DeviceKernelInfo::of::<count_points_2>,
    DeviceKernelInfo::of::<cells_from_origin>,
    DeviceKernelInfo::of::<sum_cells>,
    DeviceKernelInfo::of::<count_point_1>,
    DeviceKernelInfo::of::<count_point_2>,
    DeviceKernelInfo::of::<count_point_3>,
];

/// Adds 1 to `hits` at every point of a rank-1 MDRange launch.
#[kernel(crate = hoplite_core)]
pub fn count_point_1(p: MdIdx<'_, 1>, hits: BoundAtomic<'_, u32, 1>) {
    hits.fetch_add(p, 1);
}

/// Adds 1 to `hits` at every point of a rank-2 MDRange launch.
#[kernel(crate = hoplite_core)]
pub fn count_point_2(p: MdIdx<'_, 2>, hits: BoundAtomic<'_, u32, 2>) {
    hits.fetch_add(p, 1);
}

/// Adds 1 to `hits` at every point of a rank-3 MDRange launch.
#[kernel(crate = hoplite_core)]
pub fn count_point_3(p: MdIdx<'_, 3>, hits: BoundAtomic<'_, u32, 3>) {
    hits.fetch_add(p, 1);
}

/// Adds the weight of each point of a rank-1 MDRange: from 17, per index `x`,
/// `w * 1_000_003 + 7 * x + 1` (wrapping), then `w % 1_000_000`; a wrong, missing or
/// repeated point changes the sum.
#[kernel(crate = hoplite_core)]
pub fn point_weight_1(p: MdIdx<'_, 1>, acc: &mut i64) {
    let mut w = 17i64;
    w = w.wrapping_mul(1_000_003).wrapping_add(p[0] as i64 * 7 + 1);
    *acc += w % 1_000_000;
}

/// [`point_weight_1()`] for rank 2.
#[kernel(crate = hoplite_core)]
pub fn point_weight_2(p: MdIdx<'_, 2>, acc: &mut i64) {
    let mut w = 17i64;
    w = w.wrapping_mul(1_000_003).wrapping_add(p[0] as i64 * 7 + 1);
    w = w.wrapping_mul(1_000_003).wrapping_add(p[1] as i64 * 7 + 1);
    *acc += w % 1_000_000;
}

/// [`point_weight_1()`] for rank 3.
#[kernel(crate = hoplite_core)]
pub fn point_weight_3(p: MdIdx<'_, 3>, acc: &mut i64) {
    let mut w = 17i64;
    w = w.wrapping_mul(1_000_003).wrapping_add(p[0] as i64 * 7 + 1);
    w = w.wrapping_mul(1_000_003).wrapping_add(p[1] as i64 * 7 + 1);
    w = w.wrapping_mul(1_000_003).wrapping_add(p[2] as i64 * 7 + 1);
    *acc += w % 1_000_000;
}

/// Counts the points of a rank-2 MDRange.
#[kernel(crate = hoplite_core)]
pub fn count_points_2(_p: MdIdx<'_, 2>, acc: &mut i64) {
    *acc += 1;
}

/// Stores `100 * i + j` at the cell of logical index `(i, j)` = token + `origin`.
#[kernel(crate = hoplite_core)]
pub fn cells_from_origin(ij: MdIdx<'_, 2>, u: BoundWriter<'_, i64, 2>, origin: i64) {
    let i = ij[0] as i64 + origin;
    let j = ij[1] as i64 + origin;
    u.set(ij, 100 * i + j);
}

/// Sums the cells of its box.
#[kernel(crate = hoplite_core)]
pub fn sum_cells(ij: MdIdx<'_, 2>, u: BoundReader<'_, i64, 2>, acc: &mut i64) {
    *acc += u.get(ij);
}

/// Every combination of outer (tile) and inner (point) order.
pub(crate) const ORDERS: [(IterationOrder, IterationOrder); 4] =
    [(Right, Right), (Right, Left), (Left, Right), (Left, Left)];

/// Every point of `[0, end)` in row-major order, flagged whether it lies in `begin..end`.
pub(crate) fn inside<const R: usize>(begin: [usize; R], end: [usize; R]) -> Vec<u32> {
    let total: usize = end.iter().product();
    (0..total)
        .map(|mut flat| {
            let mut ok = true;
            for d in (0..R).rev() {
                let x = flat % end[d];
                flat /= end[d];
                ok &= x >= begin[d];
            }
            u32::from(ok)
        })
        .collect()
}

/// Counts the visits of every point of an MDRange launch of rank 1 to 3 into a view of the
/// same rank, by that rank's kernel.
pub(crate) trait Counted<const R: usize> {
    fn count<S: LaunchSpace>(
        policy: MDRangePolicy<S, R>,
        counts: &SpaceView<S, u32, R>,
    ) -> hoplite_core::Result<()>;
}

/// Picks the visit-counting kernel of the rank.
pub(crate) struct Visits;

impl Counted<1> for Visits {
    fn count<S: LaunchSpace>(
        policy: MDRangePolicy<S, 1>,
        counts: &SpaceView<S, u32, 1>,
    ) -> hoplite_core::Result<()> {
        parallel_for("md-visits", (policy, (counts.atomic(),)), count_point_1::with())
    }
}

impl Counted<2> for Visits {
    fn count<S: LaunchSpace>(
        policy: MDRangePolicy<S, 2>,
        counts: &SpaceView<S, u32, 2>,
    ) -> hoplite_core::Result<()> {
        parallel_for("md-visits", (policy, (counts.atomic(),)), count_point_2::with())
    }
}

impl Counted<3> for Visits {
    fn count<S: LaunchSpace>(
        policy: MDRangePolicy<S, 3>,
        counts: &SpaceView<S, u32, 3>,
    ) -> hoplite_core::Result<()> {
        parallel_for("md-visits", (policy, (counts.atomic(),)), count_point_3::with())
    }
}

/// Launches the box with the given tiles and orders and checks each point was visited once.
fn md_visits_once<S: LaunchSpace, const R: usize>(
    space: &S,
    begin: [usize; R],
    end: [usize; R],
    tiles: Option<[usize; R]>,
    (outer, inner): (IterationOrder, IterationOrder),
) -> Outcome
where
    Visits: Counted<R>,
{
    let mut policy = MDRangePolicy::new(space.clone(), begin, end).with_iteration(outer, inner);
    if let Some(t) = tiles {
        policy = policy.with_tiles(t);
    }
    let counts = SpaceView::<S, u32, R>::new("md-visits", end)?;
    Visits::count(policy, &counts)?;
    same(&counts.to_vec()?, &inside(begin, end), || {
        format!(
            "visit counts (row-major over [0, end)) of {begin:?}..{end:?}, \
             tiles {tiles:?}, outer {outer:?}, inner {inner:?}"
        )
    })
}

/// A weight per point that makes a wrong, missing or repeated point change the sum.
fn weight<const R: usize>(p: [usize; R]) -> i64 {
    p.iter().fold(17i64, |acc, &x| {
        acc.wrapping_mul(1_000_003).wrapping_add(x as i64 * 7 + 1)
    }) % 1_000_000
}

/// The sum of [`weight`] over an MDRange of rank 1 to 3, by that rank's kernel.
trait Weighed<const R: usize> {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, R>) -> hoplite_core::Result<i64>;
}

/// Picks the kernel of the rank.
struct Weights;

impl Weighed<1> for Weights {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, 1>) -> hoplite_core::Result<i64> {
        parallel_reduce("md-sum", policy, point_weight_1::with(), Sum::new())
    }
}

impl Weighed<2> for Weights {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, 2>) -> hoplite_core::Result<i64> {
        parallel_reduce("md-sum", policy, point_weight_2::with(), Sum::new())
    }
}

impl Weighed<3> for Weights {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, 3>) -> hoplite_core::Result<i64> {
        parallel_reduce("md-sum", policy, point_weight_3::with(), Sum::new())
    }
}

fn md_reduce<S: LaunchSpace, const R: usize>(
    space: &S,
    begin: [usize; R],
    end: [usize; R],
    tiles: [usize; R],
) -> Outcome
where
    Weights: Weighed<R>,
{
    let mut want = 0i64;
    hoplite_core::for_each_point(begin, end, Right, |p| want += weight(p));
    for order in ORDERS {
        for tiles in [None, Some(tiles)] {
            let mut policy = MDRangePolicy::new(space.clone(), begin, end).with_iteration(order.0, order.1);
            if let Some(t) = tiles {
                policy = policy.with_tiles(t);
            }
            let got = Weights::weighed(policy)?;
            ensure_eq!(
                got,
                want,
                "Sum over {begin:?}..{end:?}, tiles {tiles:?}, orders {order:?}"
            );
        }
    }
    Ok(())
}

/// Axiom 1 for rank 1: tiles of 1, odd tiles, a tile larger than the range, any order.
pub fn rank_1_visits_every_point_exactly_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for tiles in [None, Some([1]), Some([4]), Some([7]), Some([50])] {
            for order in ORDERS {
                md_visits_once(space, [3], [40], tiles, order)?;
            }
        }
        Ok(())
    })
}

/// Axiom 1 for rank 2: default tiles, odd tiles that leave short edge tiles, tiles larger
/// than the box, all four order combinations, a box not starting at the origin.
pub fn rank_2_visits_every_point_exactly_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for tiles in [
            None,
            Some([3, 2]),
            Some([2, 3]),
            Some([5, 4]),
            Some([1, 1]),
            Some([16, 16]),
        ] {
            for order in ORDERS {
                md_visits_once(space, [1, 2], [12, 9], tiles, order)?;
            }
        }
        Ok(())
    })
}

/// Axiom 1 for rank 3: as for rank 2.
pub fn rank_3_visits_every_point_exactly_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for tiles in [None, Some([2, 3, 2]), Some([3, 1, 4]), Some([5, 7, 6])] {
            for order in ORDERS {
                md_visits_once(space, [0, 1, 2], [5, 7, 6], tiles, order)?;
            }
        }
        Ok(())
    })
}

/// A box that is empty in one dimension runs no iteration, and reduces to the identity.
pub fn empty_box_runs_no_iteration<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for order in ORDERS {
            // Marks at every point of [0, end + 2): an iteration anywhere near the box shows.
            let policy = MDRangePolicy::new(space.clone(), [2, 3], [2, 9])
                .with_tiles([2, 2])
                .with_iteration(order.0, order.1);
            let marks = SpaceView::<S, u32, 2>::new("md-visits", [4, 11])?;
            parallel_for("md-empty", (policy, (marks.write(),)), mark_point_2::with())?;
            same(&marks.to_vec()?, &[0; 4 * 11], || {
                format!("points visited in the empty box [2, 3]..[2, 9], orders {order:?}")
            })?;
            let policy =
                MDRangePolicy::new(space.clone(), [0, 4, 0], [3, 4, 5]).with_iteration(order.0, order.1);
            let marks = SpaceView::<S, u32, 3>::new("md-visits", [5, 6, 7])?;
            parallel_for("md-empty", (policy, (marks.write(),)), mark_point_3::with())?;
            same(&marks.to_vec()?, &[0; 5 * 6 * 7], || {
                format!("points visited in the empty box [0, 4, 0]..[3, 4, 5], orders {order:?}")
            })?;
        }
        let sum = parallel_reduce(
            "md-empty",
            MDRangePolicy::new(space.clone(), [0, 5], [4, 5]).with_tiles([3, 3]),
            count_points_2::with(),
            Sum::new(),
        )?;
        ensure_eq!(sum, 0, "a reduction over an empty box");
        Ok(())
    })
}

/// `parallel_reduce` over an MDRange adds every point's contribution once, for any tiles
/// and orders, ranks 1 to 3.
pub fn reduce_covers_every_point_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        md_reduce(space, [5], [301], [13])?;
        md_reduce(space, [1, 0], [23, 17], [4, 5])?;
        md_reduce(space, [0, 2, 1], [6, 9, 8], [5, 2, 3])?;
        Ok(())
    })
}

/// Bounds of any integer type, and negative lower bounds with an origin (ghost cells): tokens
/// are `logical - origin` and cover exactly the shifted box; a bound below the origin is a
/// typed error naming the fix, before any iteration runs.
pub fn signed_bounds_with_an_origin<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        // u(-1:6, -1:4): 8 x 6 elements with one ghost layer.
        let u = SpaceView::<S, i64, 2>::new("u", [8, 6])?;
        let whole = MDRangePolicy::new(space.clone(), [-1i64, -1], [7, 5]).with_origin([-1, -1]);
        parallel_for("ghosts", (whole, (u.write(),)), cells_from_origin::with(-1))?;
        let got = u.to_vec()?;
        let want: Vec<i64> = (-1..7).flat_map(|i| (-1..5).map(move |j| 100 * i + j)).collect();
        same(&got, &want, || "every cell of u(-1:6, -1:4)".into())?;
        // The interior, given as u32 bounds, with the same origin.
        let interior = MDRangePolicy::new(space.clone(), [0u32, 0], [6, 4]).with_origin([-1, -1]);
        let cells = parallel_reduce(
            "interior",
            (interior, (u.read(),)),
            sum_cells::with(),
            Sum::<i64>::new(),
        )?;
        let want: i64 = (0..6).flat_map(|i| (0..4).map(move |j| 100 * i + j)).sum();
        ensure_eq!(cells, want, "interior sum through an origin");
        // Marks at every point the bounds could reach if the -1 were taken as 0 or wrapped
        // into the box.
        let marks = SpaceView::<S, u32, 2>::new("ran", [5, 5])?;
        let below = parallel_for(
            "below",
            (
                MDRangePolicy::new(space.clone(), [-1i32, 0], [4, 4]),
                (marks.write(),),
            ),
            mark_point_2::with(),
        );
        ensure!(
            matches!(
                &below,
                Err(hoplite_core::Error::BoundOutsideIndexSpace { dim: 0, bound: -1, origin: 0, label })
                    if label.as_str() == "below"
            ),
            "a negative bound without an origin gave {below:?}"
        );
        ensure!(
            below.expect_err("checked").to_string().contains("with_origin"),
            "the message names the fix"
        );
        let ran = marks.to_vec()?.iter().filter(|&&m| m != 0).count();
        ensure_eq!(ran, 0, "points where a refused launch ran");
        Ok(())
    })
}
