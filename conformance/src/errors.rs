//! Bad input (ExecutionPolicy axiom 2, validation): each launch is refused with a typed error
//! that names the launch, the offending value and the limit, and the kernel never runs.
//!
//! A refused `#[kernel]` marks, through a writer or team slots, every point where it runs, so
//! the same checks see on every space that nothing ran. Where no view can hold a mark per
//! point (a box of `2^32 x 2^32` points), the refusal comes from validation, before any
//! handle is checked; an empty box of `2^32 x 2^32 x 0` points takes a writer of one element,
//! as every launch with no point takes any writer, and a count over it must be 0.

use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundTeamSlots, BoundWriter, Error, Idx, MDRangePolicy, MdIdx, PerTeam, PerThread, RangePolicy, Sum,
    TeamMember, TeamPolicy, parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_macros::kernel;

use crate::util::mentions;
use crate::{Failure, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<mark_index>,
    DeviceKernelInfo::of::<mark_point_1>,
    DeviceKernelInfo::of::<mark_point_2>,
    DeviceKernelInfo::of::<mark_point_3>,
    DeviceKernelInfo::of::<mark_member>,
    DeviceKernelInfo::of::<count_f64>,
    DeviceKernelInfo::of::<count_scan_i64>,
    DeviceKernelInfo::of::<count_members>,
    DeviceKernelInfo::of::<count_points_3>,
    DeviceKernelInfo::of::<weigh_point_2>,
];

/// Marks each index it runs at: a refused launch must leave every mark 0.
#[kernel(crate = hoplite_core)]
pub fn mark_index(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>) {
    ran.set(i, 1);
}

/// Marks each point of a rank-1 MDRange it runs at.
#[kernel(crate = hoplite_core)]
pub fn mark_point_1(p: MdIdx<'_, 1>, ran: BoundWriter<'_, u32, 1>) {
    ran.set(p, 1);
}

/// Marks each point of a rank-2 MDRange it runs at.
#[kernel(crate = hoplite_core)]
pub fn mark_point_2(p: MdIdx<'_, 2>, ran: BoundWriter<'_, u32, 2>) {
    ran.set(p, 1);
}

/// Marks each point of a rank-3 MDRange it runs at.
#[kernel(crate = hoplite_core)]
pub fn mark_point_3(p: MdIdx<'_, 3>, ran: BoundWriter<'_, u32, 3>) {
    ran.set(p, 1);
}

/// Marks the slot `[league rank, team rank]` of each team member it runs as.
#[kernel(crate = hoplite_core)]
pub fn mark_member(m: &impl TeamMember, ran: BoundTeamSlots<'_, u32>) {
    ran.set(m.team_slot(), 1);
}

/// Counts the points of a rank-3 MDRange it runs at.
#[kernel(crate = hoplite_core)]
pub fn count_points_3(_p: MdIdx<'_, 3>, acc: &mut usize) {
    *acc += 1;
}

/// Adds `10 * i + j` for each point `(i, j)` of a rank-2 MDRange.
#[kernel(crate = hoplite_core)]
pub fn weigh_point_2(p: MdIdx<'_, 2>, acc: &mut usize) {
    *acc += p[0] * 10 + p[1];
}

/// Counts its iterations as an `f64` sum.
#[kernel(crate = hoplite_core)]
pub fn count_f64(_i: Idx<'_>, acc: &mut f64) {
    *acc += 1.0;
}

/// Counts its iterations as an `i64` scan.
#[kernel(crate = hoplite_core)]
pub fn count_scan_i64(_i: Idx<'_>, partial: &mut i64, _is_final: bool) {
    *partial += 1;
}

/// Counts the members of a team launch.
#[kernel(crate = hoplite_core)]
pub fn count_members(_m: &impl TeamMember, acc: &mut usize) {
    *acc += 1;
}

/// The error of a launch whose kernel marked `marks` (read back) where it ran; fails if the
/// launch succeeded or any point was marked.
fn refused(label: &str, result: hoplite_core::Result<()>, marks: Vec<u32>) -> Result<Error, Failure> {
    let ran = marks.iter().filter(|&&m| m != 0).count();
    match result {
        Err(e) if ran == 0 => Ok(e),
        Err(e) => Err(Failure::msg(format!(
            "`{label}` was refused ({e}) after iterations ran at {ran} points"
        ))),
        Ok(()) => Err(Failure::msg(format!(
            "`{label}` was launched (iterations ran at {ran} points) but must be refused"
        ))),
    }
}

/// Launches `policy` with [`mark_index()`] over marks of `extent` elements: see [`refused`].
fn refused_range<S: LaunchSpace>(
    label: &str,
    policy: RangePolicy<S>,
    extent: usize,
) -> Result<Error, Failure> {
    let marks = SpaceView::<S, u32, 1>::new("ran", [extent])?;
    let result = parallel_for(label, (policy, (marks.write(),)), mark_index::with());
    refused(label, result, marks.to_vec()?)
}

/// Launches `policy` with [`mark_member()`] over a slot per member of `league` teams of `team`
/// threads: see [`refused`].
fn refused_team<S: LaunchSpace>(
    label: &str,
    policy: TeamPolicy<S>,
    league: usize,
    team: usize,
) -> Result<Error, Failure> {
    let marks = SpaceView::<S, u32, 2>::new("ran", [league, team])?;
    let result = parallel_for(label, (policy, (marks.team_slots(),)), mark_member::with::<S>());
    refused(label, result, marks.to_vec()?)
}

/// Launches `policy` with [`mark_point_2()`] over marks of `extents`: see [`refused`].
fn refused_box<S: LaunchSpace>(
    label: &str,
    policy: MDRangePolicy<S, 2>,
    extents: [usize; 2],
) -> Result<Error, Failure> {
    let marks = SpaceView::<S, u32, 2>::new("ran", extents)?;
    let result = parallel_for(label, (policy, (marks.write(),)), mark_point_2::with());
    refused(label, result, marks.to_vec()?)
}

/// Fails with the error unless it is the expected one.
fn is(what: &str, ok: bool, err: &Error) -> Outcome {
    ensure!(ok, "{what}: wrong error {err:?}");
    Ok(())
}

/// A range (or one MDRange dimension) with begin after end is `Error::InvalidRange`, for
/// `parallel_for`, `parallel_reduce` and `parallel_scan`.
pub fn reversed_range_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        #[expect(
            clippy::reversed_empty_ranges,
            reason = "a reversed range is the bad input under test"
        )]
        let (r1, r2, r3) = (5..3, 9..2, 4..1);
        let err = refused_range("reversed", RangePolicy::new(space.clone(), r1), 10)?;
        is(
            "reversed range",
            matches!(&err, Error::InvalidRange { label, dim: None, begin: 5, end: 3 } if label == "reversed"),
            &err,
        )?;
        mentions(&err.to_string(), &["`reversed`", "begin 5", "end 3"])?;
        let err = parallel_reduce(
            "reversed-reduce",
            RangePolicy::new(space.clone(), r2),
            count_f64::with(),
            Sum::new(),
        );
        ensure!(
            matches!(err, Err(Error::InvalidRange { begin: 9, end: 2, .. })),
            "a reversed reduction gave {err:?}"
        );
        let err = parallel_scan(
            "reversed-scan",
            RangePolicy::new(space.clone(), r3),
            count_scan_i64::with(),
        );
        ensure!(
            matches!(err, Err(Error::InvalidRange { begin: 4, end: 1, .. })),
            "a reversed scan gave {err:?}"
        );
        let marks = SpaceView::<S, u32, 3>::new("ran", [4, 8, 5])?;
        let result = parallel_for(
            "reversed-md",
            (
                MDRangePolicy::new(space.clone(), [0, 8, 1], [4, 6, 5]),
                (marks.write(),),
            ),
            mark_point_3::with(),
        );
        let err = refused("reversed-md", result, marks.to_vec()?)?;
        is(
            "reversed MDRange dimension",
            matches!(
                &err,
                Error::InvalidRange {
                    dim: Some(1),
                    begin: 8,
                    end: 6,
                    ..
                }
            ),
            &err,
        )?;
        mentions(&err.to_string(), &["`reversed-md`", "dimension 1"])
    })
}

/// A chunk size of 0 is `Error::ZeroChunk`, for range and team policies.
pub fn zero_chunk_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let err = refused_range(
            "chunk0",
            RangePolicy::new(space.clone(), 0..10).with_chunk_size(0),
            10,
        )?;
        is(
            "range chunk 0",
            matches!(&err, Error::ZeroChunk { label } if label == "chunk0"),
            &err,
        )?;
        let err = refused_team(
            "team-chunk0",
            TeamPolicy::new(space.clone(), 3, 1).with_chunk_size(0),
            3,
            1,
        )?;
        is(
            "team chunk 0",
            matches!(&err, Error::ZeroChunk { label } if label == "team-chunk0"),
            &err,
        )
    })
}

/// A desired occupancy outside 1 to 100 percent is `Error::InvalidOccupancy` naming the
/// launch and the percentage, for range, MDRange and team policies; nothing runs.
pub fn occupancy_outside_1_to_100_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let err = refused_range(
            "occupancy0",
            RangePolicy::new(space.clone(), 0..10).with_desired_occupancy(0),
            10,
        )?;
        is(
            "range occupancy 0%",
            matches!(&err, Error::InvalidOccupancy { label, percent: 0 } if label == "occupancy0"),
            &err,
        )?;
        mentions(&err.to_string(), &["`occupancy0`", "0%", "1 to 100"])?;
        let err = refused_box(
            "occupancy101",
            MDRangePolicy::new(space.clone(), [0, 0], [4, 5]).with_desired_occupancy(101),
            [4, 5],
        )?;
        is(
            "MDRange occupancy 101%",
            matches!(&err, Error::InvalidOccupancy { percent: 101, .. }),
            &err,
        )?;
        let err = refused_team(
            "team-occupancy255",
            TeamPolicy::new(space.clone(), 3, 1).with_desired_occupancy(255),
            3,
            1,
        )?;
        is(
            "team occupancy 255%",
            matches!(&err, Error::InvalidOccupancy { label, percent: 255 } if label == "team-occupancy255"),
            &err,
        )
    })
}

/// A tile extent of 0 is `Error::ZeroTile` naming the dimension.
pub fn zero_tile_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let marks = SpaceView::<S, u32, 3>::new("ran", [4, 4, 4])?;
        let result = parallel_for(
            "tile0",
            (
                MDRangePolicy::new(space.clone(), [0, 0, 0], [4, 4, 4]).with_tiles([2, 2, 0]),
                (marks.write(),),
            ),
            mark_point_3::with(),
        );
        let err = refused("tile0", result, marks.to_vec()?)?;
        is(
            "tile 0",
            matches!(&err, Error::ZeroTile { label, dim: 2 } if label == "tile0"),
            &err,
        )?;
        let md = MDRangePolicy::<S, 1>::from(RangePolicy::new(space.clone(), 0..4).with_chunk_size(0));
        let marks = SpaceView::<S, u32, 1>::new("ran", [4])?;
        let result = parallel_for("converted-chunk0", (md, (marks.write(),)), mark_point_1::with());
        let err = refused("converted-chunk0", result, marks.to_vec()?)?;
        is(
            "a chunk of 0 converted to a tile",
            matches!(&err, Error::ZeroTile { dim: 0, .. }),
            &err,
        )
    })
}

/// An MDRange whose arithmetic overflows `usize` is `Error::IndexSpaceTooLarge`, never a launch
/// that silently visits fewer points: a tile reaching past `usize::MAX`, more points or more
/// tiles than `usize` counts. An empty box of huge extents is valid and visits nothing: it
/// launches with a writer of one element (a launch with no point needs no writer to contain
/// it) and marks nothing there, and a count over it is 0.
pub fn overflowing_mdrange_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let huge = 1usize << 32;
        // The first box fits its marks, so a launch that was not refused shows as marks; no
        // view holds marks for the others, whose refusal comes before any handle is checked.
        let cases = [
            (
                "wrapping tile",
                MDRangePolicy::new(space.clone(), [5, 0], [10, 3]).with_tiles([usize::MAX, 1]),
                [10, 3],
            ),
            (
                "2^32 x 2^32 points",
                MDRangePolicy::new(space.clone(), [0, 0], [huge, huge]),
                [1, 1],
            ),
            (
                "2^32 x 2^32 tiles",
                MDRangePolicy::new(space.clone(), [0, 0], [huge, huge]).with_tiles([1, 1]),
                [1, 1],
            ),
        ];
        for (label, policy, extents) in cases {
            let err = refused_box(label, policy, extents)?;
            is(
                label,
                matches!(&err, Error::IndexSpaceTooLarge { label: l, .. } if l == label),
                &err,
            )?;
            mentions(&err.to_string(), &[label, "usize::MAX"])?;
        }
        let empty = MDRangePolicy::new(space.clone(), [0, 0, 0], [huge, huge, 0]);
        let marks = SpaceView::<S, u32, 3>::new("ran", [1, 1, 1])?;
        parallel_for(
            "empty huge box",
            (empty.clone(), (marks.write(),)),
            mark_point_3::with(),
        )?;
        ensure_eq!(marks.to_vec()?, vec![0], "marks of an empty box");
        let visits = parallel_reduce("empty huge box", empty, count_points_3::with(), Sum::new())?;
        ensure_eq!(visits, 0, "points visited in an empty box");
        // The largest tile that does not wrap runs every point.
        let sum = parallel_reduce(
            "largest tile",
            MDRangePolicy::new(space.clone(), [5, 0], [10, 3]).with_tiles([usize::MAX - 5, 1]),
            weigh_point_2::with(),
            Sum::<usize>::new(),
        )?;
        ensure_eq!(
            sum,
            (5..10).map(|i| 3 * 10 * i + 3).sum::<usize>(),
            "sum over the box"
        );
        Ok(())
    })
}

/// A team size of 0 is `Error::ZeroTeamSize`.
pub fn zero_team_size_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let err = refused_team("team0", TeamPolicy::new(space.clone(), 4, 0), 4, 1)?;
        is(
            "team size 0",
            matches!(&err, Error::ZeroTeamSize { label } if label == "team0"),
            &err,
        )
    })
}

/// A vector length of 0, not a power of two, or above `max_vector_length` is
/// `Error::InvalidVectorLength` naming the space; the maximum itself launches.
pub fn bad_vector_length_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let max = space.max_vector_length();
        ensure!(
            max.is_power_of_two(),
            "max_vector_length {max} is not a power of two"
        );
        for bad in [0, 3, max * 2] {
            let err = refused_team(
                "vector",
                TeamPolicy::new(space.clone(), 2, 1).with_vector_length(bad),
                2,
                1,
            )?;
            let ok = matches!(&err, Error::InvalidVectorLength { requested, max: m, space: name, .. }
                if *requested == bad && *m == max && *name == space.name());
            is(&format!("vector length {bad}"), ok, &err)?;
        }
        let members = parallel_reduce(
            "vector-max",
            TeamPolicy::new(space.clone(), 2, 1).with_vector_length(max),
            count_members::with::<S>(),
            Sum::new(),
        )?;
        ensure_eq!(members, 2, "members of teams with the maximum vector length");
        Ok(())
    })
}

/// Scratch above `max_scratch_size(level)` is `Error::ScratchTooLarge`, a level other than
/// 0 or 1 is `Error::InvalidScratchLevel`.
pub fn scratch_above_the_maximum_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for level in [0, 1] {
            let max = space.max_scratch_size(level);
            if max == usize::MAX {
                continue;
            }
            let p = TeamPolicy::new(space.clone(), 2, 1).with_scratch_size(level, PerTeam(max), PerThread(1));
            let err = refused_team("scratch", p, 2, 1)?;
            let ok = matches!(&err, Error::ScratchTooLarge { level: l, requested, max: m, .. }
                if *l == level && *requested == max + 1 && *m == max);
            is(&format!("level-{level} scratch of {max} + 1 bytes"), ok, &err)?;
        }
        let p = TeamPolicy::new(space.clone(), 2, 1).with_scratch_size(2, PerTeam(8), PerThread(0));
        let err = refused_team("level2", p, 2, 1)?;
        is(
            "scratch level 2",
            matches!(&err, Error::InvalidScratchLevel { level: 2, .. }),
            &err,
        )
    })
}

/// A range not starting at 0 does not convert to a team policy: `Error::PolicyConversion`.
pub fn range_not_starting_at_zero_does_not_convert_to_teams<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        match TeamPolicy::try_from(RangePolicy::new(space.clone(), 3..10)) {
            Err(err @ Error::PolicyConversion { .. }) => {
                mentions(&err.to_string(), &["starts at 3", "TeamPolicy"])
            }
            other => Err(Failure::msg(format!(
                "converting 3..10 to a team policy gave {other:?}"
            ))),
        }
    })
}
