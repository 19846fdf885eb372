// Over 800 lines: one concept's axioms (TeamPolicy and TeamMember), each check beside the
// #[kernel]s it launches; the checks share the module's recording helpers.
//! The `TeamPolicy` and `TeamMember` axioms: ranks, team limits, barrier, broadcast, team
//! reduce and scan, nested ranges and scratch memory.
//!
//! Every check runs with team size 1 and, when the space's `max_team_size` is above 1, with
//! team size 2. Collectives are called by every thread of a team in the same order, as the
//! concept requires.
//!
//! Most checks are portable: their kernels are `#[kernel]`s, which record what every thread
//! observed in views of the space's memory (its team slots, its team's row, the league rank
//! of a writer, atomic handles for exactly-once counts), and the host compares that with what
//! plain loops compute. The others test what only host kernels have: collectives of values
//! that are not device scalars (a `String` broadcast, `Custom` reducers in `team_reduce`) and
//! team planes.

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::team_owner;
use hoplite_core::{
    BoundTeamSlots, BoundWriter, Custom, Error, ExecutionSpace, Max, NestedLevel, PerTeam, PerThread,
    Schedule, Sum, TeamMember, TeamPolicy, TeamSize, TeamThreadRange, TeamVectorRange, ThreadVectorRange,
    VectorLength, View, parallel_for, parallel_reduce,
};
use hoplite_macros::kernel;

use crate::util::{Problems, exclusive_prefix, mismatch, same, team_sizes};
use crate::{FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<team_rank_visits>,
    DeviceKernelInfo::of::<barrier_rounds>,
    DeviceKernelInfo::of::<broadcast_from_every_rank>,
    DeviceKernelInfo::of::<slot_tags>,
    DeviceKernelInfo::of::<slots_beside_rows>,
    DeviceKernelInfo::of::<team_scans>,
    DeviceKernelInfo::of::<team_thread_visits>,
    DeviceKernelInfo::of::<thread_vector_visits>,
    DeviceKernelInfo::of::<team_vector_visits>,
    DeviceKernelInfo::of::<team_rows_and_sums>,
    DeviceKernelInfo::of::<nested_reductions_per_thread>,
    DeviceKernelInfo::of::<nested_scan_totals>,
    DeviceKernelInfo::of::<scan_into_team_row>,
    DeviceKernelInfo::of::<requested_scratch>,
    DeviceKernelInfo::of::<private_thread_scratch>,
    DeviceKernelInfo::of::<league_rank_sum>,
    DeviceKernelInfo::of::<single_broadcast_with_and_vector_length>,
];

const LEAGUES: [usize; 3] = [1, 4, 9];

/// The ownership block of the space's team loops (what `team_owner` splits by): a team-level
/// loop gives index `j` to team rank `(j / block) % team_size`.
fn team_block<S: ExecutionSpace>() -> usize {
    <S::TeamMember<'static> as TeamMember>::TEAM_BLOCK
}

/// Fails unless the row-major arrays of extents `dims` are equal, naming the first differing
/// element by its multi-index.
fn same_at<T: PartialEq + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    dims: &[usize],
    context: impl Fn() -> String,
) -> Outcome {
    if got.len() != want.len() {
        return same(got, want, context);
    }
    let Some(flat) = got.iter().zip(want).position(|(g, w)| g != w) else {
        return Ok(());
    };
    let mut index = vec![0; dims.len()];
    let mut rest = flat;
    for (k, d) in dims.iter().enumerate().rev() {
        index[k] = rest % d.max(&1);
        rest /= d.max(&1);
    }
    Err(crate::Failure::msg(format!(
        "{}: at {index:?}: got {:?}, expected {:?}",
        context(),
        got[flat],
        want[flat]
    )))
}

/// A kernel of these checks (public so the NVRTC check compiles it too): every member counts
/// itself atomically at `[league rank, team rank]` and records the league and team sizes it
/// reports at its own slot (a rank outside the views fails the access).
#[kernel(crate = hoplite_core)]
pub fn team_rank_visits(
    m: &impl TeamMember,
    hits: BoundAtomic<'_, u32, 2>,
    leagues: BoundTeamSlots<'_, usize>,
    teams: BoundTeamSlots<'_, usize>,
) {
    hits.fetch_add([m.league_rank(), m.team_rank()], 1);
    leagues.set(m.team_slot(), m.league_size());
    teams.set(m.team_slot(), m.team_size());
}

/// A kernel of these checks (public so the NVRTC check compiles it too): `rounds` rounds of
/// each thread writing its team-scratch slot, a barrier, every thread reading every slot, and
/// a barrier. Each thread records how many slots it read, how many held another value than
/// the one their writer stored that round, and the first such value (-1 if none).
#[kernel(crate = hoplite_core)]
pub fn barrier_rounds(
    m: &impl TeamMember,
    reads: BoundTeamSlots<'_, u32>,
    stale: BoundTeamSlots<'_, u32>,
    first_stale: BoundTeamSlots<'_, i64>,
    rounds: usize,
) {
    let ts = m.team_size();
    let lr = m.league_rank() as i64;
    let tr = m.team_rank();
    let slots = m
        .team_scratch(0)
        .alloc::<i64>(ts)
        .expect("the policy asks for one i64 per thread");
    let mut read = 0u32;
    let mut bad = 0u32;
    let mut first = -1i64;
    for round in 0..rounds {
        slots.set(tr, lr * 1000 + round as i64 * 10 + tr as i64);
        m.team_barrier();
        for r in 0..ts {
            let got = slots.get(r);
            read += 1;
            if got != lr * 1000 + round as i64 * 10 + r as i64 {
                if bad == 0 {
                    first = got;
                }
                bad += 1;
            }
        }
        m.team_barrier();
    }
    reads.set(m.team_slot(), read);
    stale.set(m.team_slot(), bad);
    first_stale.set(m.team_slot(), first);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): every thread
/// broadcasts `100 * league rank + team rank` from every source rank in turn; it records how
/// many broadcasts it made, how many gave another value than the source's, and the first such
/// value (`usize::MAX` if none).
#[kernel(crate = hoplite_core)]
pub fn broadcast_from_every_rank(
    m: &impl TeamMember,
    calls: BoundTeamSlots<'_, u32>,
    wrong: BoundTeamSlots<'_, u32>,
    first_wrong: BoundTeamSlots<'_, usize>,
) {
    let lr = m.league_rank();
    let tr = m.team_rank();
    let mut made = 0u32;
    let mut bad = 0u32;
    let mut first = usize::MAX;
    for source in 0..m.team_size() {
        let got = m.team_broadcast(lr * 100 + tr, source);
        made += 1;
        if got != lr * 100 + source {
            if bad == 0 {
                first = got;
            }
            bad += 1;
        }
    }
    calls.set(m.team_slot(), made);
    wrong.set(m.team_slot(), bad);
    first_wrong.set(m.team_slot(), first);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): every thread adds a
/// tag to what its own team slot holds.
#[kernel(crate = hoplite_core)]
pub fn slot_tags(m: &impl TeamMember, p: BoundTeamSlots<'_, usize>) {
    p.set(
        m.team_slot(),
        p.get(m.team_slot()) + 1000 * m.league_rank() + m.team_rank() + 1,
    );
}

/// A kernel of these checks (public so the NVRTC check compiles it too): stores through team
/// slots and the team's row of a writer (launched only with both on one view, which is
/// refused).
#[kernel(crate = hoplite_core)]
pub fn slots_beside_rows(m: &impl TeamMember, p: BoundTeamSlots<'_, f64>, w: BoundWriter<'_, f64, 2>) {
    p.set(m.team_slot(), 1.0);
    let row = w.team_row(m.league_token());
    TeamThreadRange::new(m, row.len()).parallel_for(|j| {
        row.set(j, 2.0);
    });
}

/// A kernel of these checks (public so the NVRTC check compiles it too): `team_scan` of an
/// integer and of a float per thread; each thread stores the four results in its slots.
#[kernel(crate = hoplite_core)]
pub fn team_scans(
    m: &impl TeamMember,
    prefixes: BoundTeamSlots<'_, i64>,
    totals: BoundTeamSlots<'_, i64>,
    fprefixes: BoundTeamSlots<'_, f64>,
    ftotals: BoundTeamSlots<'_, f64>,
) {
    let lr = m.league_rank() as i64;
    let tr = m.team_rank() as i64;
    let (prefix, total) = m.team_scan((tr + 1) * (lr + 1));
    prefixes.set(m.team_slot(), prefix);
    totals.set(m.team_slot(), total);
    let (fprefix, ftotal) = m.team_scan(0.5 * (tr + 1) as f64);
    fprefixes.set(m.team_slot(), fprefix);
    ftotals.set(m.team_slot(), ftotal);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): a `TeamThreadRange`
/// over `3..n` (`n` at most 64); every thread records the indices it ran as the bits of a
/// mask, and how many it ran again.
#[kernel(crate = hoplite_core)]
pub fn team_thread_visits(
    m: &impl TeamMember,
    masks: BoundTeamSlots<'_, u64>,
    again: BoundTeamSlots<'_, u32>,
    n: usize,
) {
    let mut mask = 0u64;
    let mut twice = 0u32;
    TeamThreadRange::new(m, 3..n).parallel_for(|j| {
        if mask & (1u64 << *j) != 0 {
            twice += 1;
        }
        mask |= 1u64 << *j;
    });
    masks.set(m.team_slot(), mask);
    again.set(m.team_slot(), twice);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): `team_thread_visits`
/// with a `ThreadVectorRange`.
#[kernel(crate = hoplite_core)]
pub fn thread_vector_visits(
    m: &impl TeamMember,
    masks: BoundTeamSlots<'_, u64>,
    again: BoundTeamSlots<'_, u32>,
    n: usize,
) {
    let mut mask = 0u64;
    let mut twice = 0u32;
    ThreadVectorRange::new(m, 3..n).parallel_for(|j| {
        if mask & (1u64 << *j) != 0 {
            twice += 1;
        }
        mask |= 1u64 << *j;
    });
    masks.set(m.team_slot(), mask);
    again.set(m.team_slot(), twice);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): `team_thread_visits`
/// with a `TeamVectorRange`.
#[kernel(crate = hoplite_core)]
pub fn team_vector_visits(
    m: &impl TeamMember,
    masks: BoundTeamSlots<'_, u64>,
    again: BoundTeamSlots<'_, u32>,
    n: usize,
) {
    let mut mask = 0u64;
    let mut twice = 0u32;
    TeamVectorRange::new(m, 3..n).parallel_for(|j| {
        if mask & (1u64 << *j) != 0 {
            twice += 1;
        }
        mask |= 1u64 << *j;
    });
    masks.set(m.team_slot(), mask);
    again.set(m.team_slot(), twice);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): a team stores its
/// row through two team loops of overlapping ranges (the second adds 1 to what the first
/// stored), then team rank 0 stores the row's sum at the league rank.
#[kernel(crate = hoplite_core)]
pub fn team_rows_and_sums(
    m: &impl TeamMember,
    a: BoundWriter<'_, u64, 2>,
    sums: BoundWriter<'_, u64, 1>,
    cols: usize,
) {
    let row = a.team_row(m.league_token());
    let base = 1000 * m.league_rank() as u64;
    TeamThreadRange::new(m, 0..cols).parallel_for(|j| {
        row.set(j, base + *j as u64);
    });
    TeamVectorRange::new(m, 5..cols - 3).parallel_for(|j| {
        row.set(j, row.get(j) + 1);
    });
    let mine = TeamThreadRange::new(m, cols)
        .parallel_reduce(|j, acc: &mut u64| *acc += base + *j as u64, Sum::new());
    if let Some(l) = m.league_token().single() {
        sums.set(l, mine);
    }
}

/// A kernel of these checks (public so the NVRTC check compiles it too): nested sums over
/// `2..n` at the three levels, a nested `Max` over `0..n` and an empty nested `Sum`, each
/// stored by every thread in its slot.
#[kernel(crate = hoplite_core)]
pub fn nested_reductions_per_thread(
    m: &impl TeamMember,
    team_thread: BoundTeamSlots<'_, u64>,
    thread_vector: BoundTeamSlots<'_, u64>,
    team_vector: BoundTeamSlots<'_, u64>,
    maxes: BoundTeamSlots<'_, i64>,
    empties: BoundTeamSlots<'_, f64>,
    n: usize,
) {
    let base = m.league_rank() as u64 * 100;
    let a =
        TeamThreadRange::new(m, 2..n).parallel_reduce(|j, s: &mut u64| *s += base + *j as u64, Sum::new());
    let b =
        ThreadVectorRange::new(m, 2..n).parallel_reduce(|j, s: &mut u64| *s += base + *j as u64, Sum::new());
    let c =
        TeamVectorRange::new(m, 2..n).parallel_reduce(|j, s: &mut u64| *s += base + *j as u64, Sum::new());
    team_thread.set(m.team_slot(), a);
    thread_vector.set(m.team_slot(), b);
    team_vector.set(m.team_slot(), c);
    let mx = TeamThreadRange::new(m, n).parallel_reduce(
        |j, s: &mut i64| *s = (*s).max(-((*j as i64 - 7).abs())),
        Max::new(),
    );
    maxes.set(m.team_slot(), mx);
    let empty = TeamVectorRange::new(m, 5..5).parallel_reduce(|_j, s: &mut f64| *s += 1.0, Sum::new());
    empties.set(m.team_slot(), empty);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): a `TeamThreadRange`
/// scan of `10 * league rank + j - 20` over `0..n` stores its final pass's prefixes into the
/// team's row of `out` and counts the final-pass calls per index atomically in its row of
/// `finals`;
/// every thread stores the totals of that scan, of a `ThreadVectorRange` scan over `4..n`
/// and of a `TeamVectorRange` scan over `0..n` in its slots.
#[kernel(crate = hoplite_core)]
pub fn nested_scan_totals(
    m: &impl TeamMember,
    out: BoundWriter<'_, i64, 2>,
    finals: BoundAtomic<'_, u32, 2>,
    team_thread: BoundTeamSlots<'_, i64>,
    thread_vector: BoundTeamSlots<'_, i64>,
    team_vector: BoundTeamSlots<'_, i64>,
    n: usize,
) {
    let lr = m.league_rank();
    let row = out.team_row(m.league_token());
    let total = TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
        if is_final {
            row.set(j, *partial);
            finals.fetch_add([lr, *j], 1);
        }
        *partial += (lr * 10 + *j) as i64 - 20;
    });
    let tail = ThreadVectorRange::new(m, 4..n).parallel_scan(|j, partial: &mut i64, _is_final| {
        *partial += (lr * 10 + *j) as i64 - 20;
    });
    let tv = TeamVectorRange::new(m, n).parallel_scan(|j, partial: &mut i64, _is_final| {
        *partial += (lr * 10 + *j) as i64 - 20;
    });
    team_thread.set(m.team_slot(), total);
    thread_vector.set(m.team_slot(), tail);
    team_vector.set(m.team_slot(), tv);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): a `TeamVectorRange`
/// scan stores its exclusive prefixes into the team's row; every thread stores the total in
/// its team slot.
#[kernel(crate = hoplite_core)]
pub fn scan_into_team_row(
    m: &impl TeamMember,
    out: BoundWriter<'_, i64, 2>,
    totals: BoundTeamSlots<'_, i64>,
    n: usize,
) {
    let lr = m.league_rank();
    let row = out.team_row(m.league_token());
    let total = TeamVectorRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
        if is_final {
            row.set(j, *partial);
        }
        *partial += ((lr * 7 + *j * 3) % 11) as i64 - 5;
    });
    totals.set(m.team_slot(), total);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): allocates the
/// requested bytes (as `u64`s) of team and thread scratch at levels 0 and 1, and stores the
/// four lengths in its slots.
#[kernel(crate = hoplite_core)]
pub fn requested_scratch(
    m: &impl TeamMember,
    team0_len: BoundTeamSlots<'_, usize>,
    thread0_len: BoundTeamSlots<'_, usize>,
    team1_len: BoundTeamSlots<'_, usize>,
    thread1_len: BoundTeamSlots<'_, usize>,
    team0: usize,
    thread0: usize,
    team1: usize,
    thread1: usize,
) {
    let a = m
        .team_scratch(0)
        .alloc::<u64>(team0 / 8)
        .expect("the policy asks for this much level-0 team scratch");
    let b = m
        .thread_scratch(0)
        .alloc::<u64>(thread0 / 8)
        .expect("the policy asks for this much level-0 thread scratch");
    let c = m
        .team_scratch(1)
        .alloc::<u64>(team1 / 8)
        .expect("the policy asks for this much level-1 team scratch");
    let d = m
        .thread_scratch(1)
        .alloc::<u64>(thread1 / 8)
        .expect("the policy asks for this much level-1 thread scratch");
    team0_len.set(m.team_slot(), a.len());
    thread0_len.set(m.team_slot(), b.len());
    team1_len.set(m.team_slot(), c.len());
    thread1_len.set(m.team_slot(), d.len());
}

/// A kernel of these checks (public so the NVRTC check compiles it too): every thread fills
/// its 8 `i64`s of level-0 thread scratch, and after a barrier reads them back; it records
/// how many it read, how many held another value than it stored, and the first such value
/// (-1 if none).
#[kernel(crate = hoplite_core)]
pub fn private_thread_scratch(
    m: &impl TeamMember,
    reads: BoundTeamSlots<'_, u32>,
    changed: BoundTeamSlots<'_, u32>,
    first_changed: BoundTeamSlots<'_, i64>,
) {
    let lr = m.league_rank() as i64;
    let tr = m.team_rank() as i64;
    let mine = m
        .thread_scratch(0)
        .alloc::<i64>(8)
        .expect("the policy asks for 8 i64 per thread");
    for k in 0..8 {
        mine.set(k, lr * 1000 + tr * 10 + k as i64);
    }
    m.team_barrier();
    let mut read = 0u32;
    let mut bad = 0u32;
    let mut first = -1i64;
    for k in 0..8 {
        let got = mine.get(k);
        read += 1;
        if got != lr * 1000 + tr * 10 + k as i64 {
            if bad == 0 {
                first = got;
            }
            bad += 1;
        }
    }
    reads.set(m.team_slot(), read);
    changed.set(m.team_slot(), bad);
    first_changed.set(m.team_slot(), first);
}

/// A kernel of these checks (public so the NVRTC check compiles it too): team rank 0 adds
/// `league rank + 1`.
#[kernel(crate = hoplite_core)]
pub fn league_rank_sum(m: &impl TeamMember, acc: &mut usize) {
    if m.team_rank() == 0 {
        *acc += m.league_rank() + 1;
    }
}

/// Runs a nested `parallel_for` of `level` over `3..n` in every team and checks which
/// indices each (team, thread) ran, and how often: once per team for the levels that split
/// over the team, each on the thread that owns it, and once per thread for `ThreadVector`.
fn nested_for_counts<S: LaunchSpace>(space: &S, level: NestedLevel) -> Outcome {
    let n = 29; // at most 64: the kernels record the indices a thread ran as bits of a u64
    let block = team_block::<S>();
    for ts in team_sizes(space) {
        for league in LEAGUES {
            let masks = SpaceView::<S, u64, 2>::new("nested-visits", [league, ts])?;
            let again = SpaceView::<S, u32, 2>::new("nested-revisits", [league, ts])?;
            let policy = TeamPolicy::new(space.clone(), league, ts);
            let handles = (masks.team_slots(), again.team_slots());
            match level {
                NestedLevel::TeamThread => {
                    parallel_for("nested-for", (policy, handles), team_thread_visits::with::<S>(n))?;
                }
                NestedLevel::ThreadVector => {
                    parallel_for(
                        "nested-for",
                        (policy, handles),
                        thread_vector_visits::with::<S>(n),
                    )?;
                }
                NestedLevel::TeamVector => {
                    parallel_for("nested-for", (policy, handles), team_vector_visits::with::<S>(n))?;
                }
            }
            same_at(&again.to_vec()?, &vec![0; league * ts], &[league, ts], || {
                format!("{level:?} indices a thread ran more than once (team, thread), team size {ts}")
            })?;
            let got = masks.to_vec()?;
            for lr in 0..league {
                for tr in 0..ts {
                    let mask = got[lr * ts + tr];
                    for j in 0..64 {
                        let ran = (mask >> j) & 1 == 1;
                        let want = (3..n).contains(&j)
                            && (level == NestedLevel::ThreadVector || team_owner(j, ts, block) == tr);
                        ensure!(
                            ran == want,
                            "{level:?} over 3..{n}: thread {tr} of team {lr} {} index {j} (team size {ts}; a team-level loop runs it on thread {})",
                            if ran { "ran" } else { "did not run" },
                            team_owner(j, ts, block)
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// Axiom 1: ranks are below sizes, league and team sizes are the policy's, and each (league
/// rank, team rank) pair is handed to exactly one member, for leagues of 0, 1, 7 and 33
/// teams. (That members report the policy's vector length is checked by
/// `team_single_broadcast_functor_and_vector_length`.)
pub fn each_league_team_rank_pair_seen_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in [0, 1, 7, 33] {
                let counts = SpaceView::<S, u32, 2>::new("team-ranks", [league, ts])?;
                let leagues = SpaceView::<S, usize, 2>::new("league-sizes", [league, ts])?;
                let teams = SpaceView::<S, usize, 2>::new("team-sizes", [league, ts])?;
                // A member with a rank outside the policy's fails its count and slot accesses.
                parallel_for(
                    "team-ranks",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (counts.atomic(), leagues.team_slots(), teams.team_slots()),
                    ),
                    team_rank_visits::with::<S>(),
                )?;
                same_at(
                    &leagues.to_vec()?,
                    &vec![league; league * ts],
                    &[league, ts],
                    || format!("the league size members report, league {league}, team size {ts}"),
                )?;
                same_at(&teams.to_vec()?, &vec![ts; league * ts], &[league, ts], || {
                    format!("the team size members report, league {league}, team size {ts}")
                })?;
                same_at(&counts.to_vec()?, &vec![1; league * ts], &[league, ts], || {
                    format!("visits of each (league rank, team rank), league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// `TeamSize::Auto` lets the space choose (Kokkos `AUTO`; ExecutionSpace axiom 7): the policy
/// reports the choice as its `team_size()`, which is `team_size_recommended()`, between 1 and
/// `team_size_max()`; and every launch of it runs teams of exactly that size, each member
/// reporting it. Without scratch and with a tenth of the space's level-0 scratch per team
/// (at most 40 KiB, enough to change a GPU's choice), so the size followed is the policy's.
pub fn auto_team_size_is_the_size_launched<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let max = space.max_team_size();
        ensure!(max >= 1, "max_team_size is 0");
        let league = 3;
        let per_team = (space.max_scratch_size(0) / 10).min(40 * 1024);
        let policies = [
            TeamPolicy::new(space.clone(), league, TeamSize::Auto),
            TeamPolicy::new(space.clone(), league, TeamSize::Auto).with_scratch_size(
                0,
                PerTeam(per_team),
                PerThread(0),
            ),
        ];
        for policy in policies {
            let what = format!("an Auto team with {:?} bytes of scratch", policy.scratch_size(0));
            let size = policy.team_size();
            ensure_eq!(
                (size, policy.team_size_max()),
                (policy.team_size_recommended(), max),
                "the team size of {what}"
            );
            ensure!(
                (1..=max).contains(&size),
                "{what} reports team size {size}, outside 1..={max}"
            );
            // Views for teams of the maximum, so that a member the policy does not count
            // (team rank `size` or above) leaves its mark too.
            let counts = SpaceView::<S, u32, 2>::new("auto-team", [league, max])?;
            let leagues = SpaceView::<S, usize, 2>::new("auto-league-sizes", [league, max])?;
            let teams = SpaceView::<S, usize, 2>::new("auto-team-sizes", [league, max])?;
            parallel_for(
                "auto-team",
                (
                    policy,
                    (counts.atomic(), leagues.team_slots(), teams.team_slots()),
                ),
                team_rank_visits::with::<S>(),
            )?;
            // Slot `k` is team rank `k % max`; ranks below `size` run once, the others never.
            let launched = |k: usize| k % max < size;
            let got = teams.to_vec()?;
            let want: Vec<usize> = (0..league * max)
                .map(|k| if launched(k) { size } else { 0 })
                .collect();
            if let Some(m) = mismatch(&got, &want) {
                let ran = got.iter().filter(|&&t| t != 0).count();
                return Err(crate::Failure::msg(format!(
                    "the team size members of {what} report, policy size {size} ({ran} members ran): {m}"
                )));
            }
            let want: Vec<u32> = (0..league * max).map(|k| u32::from(launched(k))).collect();
            same_at(&counts.to_vec()?, &want, &[league, max], || {
                format!("members of 3 teams of {what}, policy size {size}, per (league rank, team rank)")
            })?;
        }
        Ok(())
    })
}

/// ExecutionSpace axiom 6: a team size up to `max_team_size` launches; one above it is
/// `Error::TeamSizeTooLarge` naming the space, and the kernel does not run.
pub fn team_size_above_the_maximum_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let max = space.max_team_size();
        let league = 2;
        let counts = SpaceView::<S, u32, 2>::new("max-team", [league, max])?;
        let leagues = SpaceView::<S, usize, 2>::new("max-team-leagues", [league, max])?;
        let teams = SpaceView::<S, usize, 2>::new("max-team-sizes", [league, max])?;
        let launch = |team_size: usize, label: &str| {
            parallel_for(
                label,
                (
                    TeamPolicy::new(space.clone(), league, team_size),
                    (counts.atomic(), leagues.team_slots(), teams.team_slots()),
                ),
                team_rank_visits::with::<S>(),
            )
        };
        launch(max, "max-team")?;
        let full = vec![1; league * max];
        same_at(&counts.to_vec()?, &full, &[league, max], || {
            "members of 2 teams of the maximum size, per (league rank, team rank)".to_owned()
        })?;
        match launch(max + 1, "too-big") {
            Err(Error::TeamSizeTooLarge {
                label,
                requested,
                max: m,
                space: name,
            }) => {
                ensure_eq!(
                    (label.as_str(), requested, m, name),
                    ("too-big", max + 1, max, space.name()),
                    "the TeamSizeTooLarge error"
                );
            }
            other => {
                return Err(crate::Failure::msg(format!(
                    "team size {} (max {max}) gave {other:?}",
                    max + 1
                )));
            }
        }
        same_at(&counts.to_vec()?, &full, &[league, max], || {
            "members per (league rank, team rank) after a rejected launch, which must not run".to_owned()
        })
    })
}

/// Axiom 2: scratch writes a thread makes before `team_barrier` are visible to every
/// thread of its team after it (rounds of write, barrier, read, barrier). Only meaningful
/// with more than one thread per team, and must hold for one.
pub fn barrier_orders_scratch_writes<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (league, rounds) = (6, 4);
        for ts in team_sizes(space) {
            let policy = TeamPolicy::new(space.clone(), league, ts).with_scratch_size(
                0,
                PerTeam(8 * ts),
                PerThread(0),
            );
            let reads = SpaceView::<S, u32, 2>::new("barrier-reads", [league, ts])?;
            let stale = SpaceView::<S, u32, 2>::new("barrier-stale", [league, ts])?;
            let first = SpaceView::<S, i64, 2>::new("barrier-first-stale", [league, ts])?;
            parallel_for(
                "barrier",
                (
                    policy,
                    (reads.team_slots(), stale.team_slots(), first.team_slots()),
                ),
                barrier_rounds::with::<S>(rounds),
            )?;
            same_at(
                &reads.to_vec()?,
                &vec![(rounds * ts) as u32; league * ts],
                &[league, ts],
                || format!("slots read per (team, thread) in {rounds} rounds, team size {ts}"),
            )?;
            let (stale, first) = (stale.to_vec()?, first.to_vec()?);
            if let Some(k) = stale.iter().position(|&s| s != 0) {
                return Err(crate::Failure::msg(format!(
                    "team size {ts}: thread {} of team {} read {} slot(s) holding another value than their writer stored before the barrier, the first {}",
                    k % ts,
                    k / ts,
                    stale[k],
                    first[k]
                )));
            }
        }
        Ok(())
    })
}

/// Axiom 3: `team_broadcast(v, r)` returns on every thread the value of team rank `r`.
/// (The broadcast of a `String`, which a device kernel cannot hold, is checked by
/// `team_collectives_of_host_values_keep_rank_order`.)
pub fn broadcast_returns_the_source_value<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let calls = SpaceView::<S, u32, 2>::new("broadcasts", [league, ts])?;
                let wrong = SpaceView::<S, u32, 2>::new("wrong-broadcasts", [league, ts])?;
                let first = SpaceView::<S, usize, 2>::new("first-wrong-broadcast", [league, ts])?;
                parallel_for(
                    "broadcast",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (calls.team_slots(), wrong.team_slots(), first.team_slots()),
                    ),
                    broadcast_from_every_rank::with::<S>(),
                )?;
                same_at(
                    &calls.to_vec()?,
                    &vec![ts as u32; league * ts],
                    &[league, ts],
                    || format!("broadcasts per (team, thread), league {league}, team size {ts}"),
                )?;
                let (wrong, first) = (wrong.to_vec()?, first.to_vec()?);
                if let Some(k) = wrong.iter().position(|&w| w != 0) {
                    return Err(crate::Failure::msg(format!(
                        "league {league}, team size {ts}: thread {} of team {} got {} broadcast(s) other than the source's value, the first {}",
                        k % ts,
                        k / ts,
                        wrong[k],
                        first[k]
                    )));
                }
            }
        }
        Ok(())
    })
}

/// A kernel of these checks: per thread, what `team_single` gave (rank 0's `7 * league rank`,
/// computed once per team, as `calls` counts), what `team_broadcast_with` gave (the last rank's
/// `team rank + 1`, doubled there) and the member's vector length.
#[kernel(crate = hoplite_core)]
pub fn single_broadcast_with_and_vector_length(
    m: &impl TeamMember,
    singles: BoundTeamSlots<'_, u64>,
    doubled: BoundTeamSlots<'_, u64>,
    lengths: BoundTeamSlots<'_, u64>,
    calls: BoundAtomic<'_, u32, 1>,
) {
    let lr = m.league_rank();
    let once = m.team_single(|| {
        calls.fetch_add(0, 1);
        lr * 7
    });
    let twice = m.team_broadcast_with(|v: &mut usize| *v *= 2, m.team_rank() + 1, m.team_size() - 1);
    singles.set(m.team_slot(), once as u64);
    doubled.set(m.team_slot(), twice as u64);
    lengths.set(m.team_slot(), m.vector_length() as u64);
}

/// `team_single` runs its closure once per team and hands the result to every thread;
/// `team_broadcast_with` applies its functor on the source only and hands every thread the
/// result; members report the policy's vector length (1 by default), and `VectorLength::Auto`
/// resolves to the space's maximum.
pub fn team_single_broadcast_functor_and_vector_length<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let plain = TeamPolicy::new(space.clone(), league, ts);
                let auto = plain.clone().with_vector_length(VectorLength::Auto);
                for (policy, vector_length) in [(plain, 1), (auto, space.max_vector_length())] {
                    let slots = |label| SpaceView::<S, u64, 2>::new(label, [league, ts]);
                    let (singles, doubled, lengths) = (
                        slots("team-single")?,
                        slots("team-broadcast-with")?,
                        slots("team-vector-length")?,
                    );
                    let calls = SpaceView::<S, u32, 1>::new("team-single-calls", [1])?;
                    parallel_for(
                        "single",
                        (
                            policy,
                            (
                                singles.team_slots(),
                                doubled.team_slots(),
                                lengths.team_slots(),
                                calls.atomic(),
                            ),
                        ),
                        single_broadcast_with_and_vector_length::with::<S>(),
                    )?;
                    let what = || format!("league {league}, team size {ts}, vector length {vector_length}");
                    let want: Vec<u64> = (0..league).flat_map(|l| vec![7 * l as u64; ts]).collect();
                    same(&singles.to_vec()?, &want, || {
                        format!("team_single results, {}", what())
                    })?;
                    same(&doubled.to_vec()?, &vec![2 * ts as u64; league * ts], || {
                        format!("team_broadcast_with results, {}", what())
                    })?;
                    same(
                        &lengths.to_vec()?,
                        &vec![vector_length as u64; league * ts],
                        || format!("the members' vector lengths, {}", what()),
                    )?;
                    ensure_eq!(calls.to_vec()?, [league as u32], "team_single calls, {}", what());
                }
            }
        }
        ensure_eq!(
            TeamPolicy::new(space.clone(), 1, 1)
                .with_vector_length(VectorLength::Auto)
                .vector_length(),
            space.max_vector_length(),
            "VectorLength::Auto"
        );
        Ok(())
    })
}

/// Team slots: every thread stores at its own `[league rank, team rank]` of a rank-2 view,
/// each element exactly once; a slots handle conflicts with a writer of the same view.
pub fn team_slots_store_once_per_thread<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let slots = SpaceView::<S, usize, 2>::new("slots", [league, ts])?;
                parallel_for(
                    "slots",
                    (TeamPolicy::new(space.clone(), league, ts), (slots.team_slots(),)),
                    slot_tags::with::<S>(),
                )?;
                let want: Vec<usize> = (0..league)
                    .flat_map(|l| (0..ts).map(move |r| 1000 * l + r + 1))
                    .collect();
                same_at(&slots.to_vec()?, &want, &[league, ts], || {
                    format!("league {league}, team size {ts}")
                })?;
            }
        }
        let v = SpaceView::<S, f64, 2>::new("slot conflict", [2, 2])?;
        let result = parallel_for(
            "conflict",
            (TeamPolicy::new(space.clone(), 2, 1), (v.team_slots(), v.write())),
            slots_beside_rows::with::<S>(),
        );
        ensure!(
            matches!(result, Err(Error::BorrowConflict { .. })),
            "team slots beside a writer of the same view gave {result:?}"
        );
        Ok(())
    })
}

/// Axiom 4 for values that are no device scalars: `team_reduce` returns on every thread the
/// join of all threads' values in team-rank order (a `Vec` concatenation shows the order),
/// and `team_broadcast` hands every thread the source's `String`.
pub fn team_collectives_of_host_values_keep_rank_order<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                parallel_for("team-reduce", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    let sum = m.team_reduce(&Sum::<i64>::new(), ((tr + 1) * (lr + 1)) as i64);
                    let want_sum = (ts * (ts + 1) / 2 * (lr + 1)) as i64;
                    problems.check(sum == want_sum, || {
                        format!("team {lr}, thread {tr}: Sum gave {sum}, expected {want_sum}")
                    });
                    let max = m.team_reduce(&Max::<f64>::new(), tr as f64 - lr as f64);
                    let want_max = (ts - 1) as f64 - lr as f64;
                    problems.check(max == want_max, || {
                        format!("team {lr}, thread {tr}: Max gave {max}, expected {want_max}")
                    });
                    let order = m.team_reduce(&concat, vec![lr * 10 + tr]);
                    let want: Vec<usize> = (0..ts).map(|r| lr * 10 + r).collect();
                    problems.check(order == want, || {
                        format!("team {lr}, thread {tr}: concatenation gave {order:?}, expected {want:?}")
                    });
                    for source in 0..ts {
                        let text = m.team_broadcast(format!("{lr}/{tr}"), source);
                        problems.check(text == format!("{lr}/{source}"), || {
                            format!(
                                "team {lr}, thread {tr}: broadcast of a String from {source} gave {text:?}"
                            )
                        });
                    }
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
            }
        }
        Ok(())
    })
}

/// Axiom 5: `team_scan(v)` returns (the sum of the values of lower team ranks, the team's
/// total), for integers and floats.
pub fn team_scan_returns_exclusive_prefix_and_total<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let prefixes = SpaceView::<S, i64, 2>::new("team-scan-prefixes", [league, ts])?;
                let totals = SpaceView::<S, i64, 2>::new("team-scan-totals", [league, ts])?;
                let fprefixes = SpaceView::<S, f64, 2>::new("team-scan-f64-prefixes", [league, ts])?;
                let ftotals = SpaceView::<S, f64, 2>::new("team-scan-f64-totals", [league, ts])?;
                parallel_for(
                    "team-scan",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (
                            prefixes.team_slots(),
                            totals.team_slots(),
                            fprefixes.team_slots(),
                            ftotals.team_slots(),
                        ),
                    ),
                    team_scans::with::<S>(),
                )?;
                let n = ts as i64;
                let mut want = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for lr in 0..league as i64 {
                    for tr in 0..n {
                        want.0.push(tr * (tr + 1) / 2 * (lr + 1));
                        want.1.push(n * (n + 1) / 2 * (lr + 1));
                        want.2.push(0.25 * (tr * (tr + 1)) as f64);
                        want.3.push(0.25 * (n * (n + 1)) as f64);
                    }
                }
                let context = |what: &str| format!("{what} (team, thread), league {league}, team size {ts}");
                same_at(&prefixes.to_vec()?, &want.0, &[league, ts], || {
                    context("i64 team_scan prefixes")
                })?;
                same_at(&totals.to_vec()?, &want.1, &[league, ts], || {
                    context("i64 team_scan totals")
                })?;
                same_at(&fprefixes.to_vec()?, &want.2, &[league, ts], || {
                    context("f64 team_scan prefixes")
                })?;
                same_at(&ftotals.to_vec()?, &want.3, &[league, ts], || {
                    context("f64 team_scan totals")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a `TeamThreadRange` visits every index of its range once across the team.
pub fn team_thread_range_visits_every_index_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::TeamThread))
}

/// Axiom 6: a `ThreadVectorRange` visits every index of its range once on every thread
/// (its range is split over the lanes of the calling thread).
pub fn thread_vector_range_visits_every_index_once_per_thread<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::ThreadVector))
}

/// Axiom 6: a `TeamVectorRange` visits every index of its range once across the team.
pub fn team_vector_range_visits_every_index_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::TeamVector))
}

/// Team tokens: a team stores into its row of a rank-2 writer through team loops of
/// different ranges (each element stored once, by its owner, with no barrier between the
/// loops), and one thread of the team stores the row sum at its league token.
pub fn team_rows_and_league_tokens_store_once<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let cols = 41;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let a = SpaceView::<S, u64, 2>::new("team-rows", [league, cols])?;
                let sums = SpaceView::<S, u64, 1>::new("row-sums", [league])?;
                let policy = TeamPolicy::new(space.clone(), league, ts);
                parallel_for(
                    "team-rows",
                    (policy, (a.write(), sums.write())),
                    team_rows_and_sums::with::<S>(cols),
                )?;
                let got = a.to_vec()?;
                let want: Vec<u64> = (0..league)
                    .flat_map(|i| {
                        (0..cols)
                            .map(move |j| 1000 * i as u64 + j as u64 + u64::from((5..cols - 3).contains(&j)))
                    })
                    .collect();
                same_at(&got, &want, &[league, cols], || {
                    format!("row elements, league {league}, team size {ts}")
                })?;
                let want_sums: Vec<u64> = (0..league)
                    .map(|i| (0..cols).map(|j| 1000 * i as u64 + j as u64).sum())
                    .collect();
                same(&sums.to_vec()?, &want_sums, || {
                    format!("sums stored at league tokens, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Team planes of a rank-3 writer: each team owns its plane, each row goes to the thread
/// that owns it in a team loop, and that thread stores the whole row (here in a vector loop),
/// so every element is stored exactly once, also across two team loops of different ranges.
pub fn team_planes_store_every_element_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (37, 9);
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let a: View<u64, 3> = View::new("team-planes", [league, rows, cols])?;
                let policy = TeamPolicy::new(space.clone(), league, ts);
                parallel_for("team-planes", (policy, (a.write(),)), |(m, (a,))| {
                    let plane = a.team_plane(m.league_token());
                    let base = 10_000 * plane.plane() as u64;
                    TeamThreadRange::new(m, plane.rows()).parallel_for(|j| {
                        let row = plane.row(j);
                        ThreadVectorRange::new(m, row.len())
                            .parallel_for(|k| row.set(*k, base + 100 * *j as u64 + *k as u64));
                    });
                    // A second loop over other rows: the same thread owns each row again.
                    TeamVectorRange::new(m, 3..rows - 4).parallel_for(|j| {
                        let row = plane.row(j);
                        for k in 0..row.len() {
                            row.update(k, |v| v + 1_000_000);
                        }
                    });
                })?;
                let want: Vec<u64> = (0..league)
                    .flat_map(|i| {
                        (0..rows).flat_map(move |j| {
                            (0..cols).map(move |k| {
                                10_000 * i as u64
                                    + 100 * j as u64
                                    + k as u64
                                    + if (3..rows - 4).contains(&j) { 1_000_000 } else { 0 }
                            })
                        })
                    })
                    .collect();
                same(&a.to_vec()?, &want, || {
                    format!("plane elements, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a nested reduce returns the full result on every participating thread, and
/// the identity for an empty range.
pub fn nested_reduce_returns_the_result_on_every_thread<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 23;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let slots = |label| SpaceView::<S, u64, 2>::new(label, [league, ts]);
                let (team_thread, thread_vector, team_vector) = (
                    slots("nested-team-thread")?,
                    slots("nested-thread-vector")?,
                    slots("nested-team-vector")?,
                );
                let maxes = SpaceView::<S, i64, 2>::new("nested-max", [league, ts])?;
                let empties = SpaceView::<S, f64, 2>::new("nested-empty", [league, ts])?;
                parallel_for(
                    "nested-reduce",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (
                            team_thread.team_slots(),
                            thread_vector.team_slots(),
                            team_vector.team_slots(),
                            maxes.team_slots(),
                            empties.team_slots(),
                        ),
                    ),
                    nested_reductions_per_thread::with::<S>(n),
                )?;
                let want: Vec<u64> = (0..league as u64)
                    .flat_map(|lr| {
                        let sum: u64 = (2..n as u64).map(|j| lr * 100 + j).sum();
                        std::iter::repeat_n(sum, ts)
                    })
                    .collect();
                for (got, level) in [
                    (team_thread, "TeamThreadRange"),
                    (thread_vector, "ThreadVectorRange"),
                    (team_vector, "TeamVectorRange"),
                ] {
                    same_at(&got.to_vec()?, &want, &[league, ts], || {
                        format!("{level} sums over 2..{n} (team, thread), league {league}, team size {ts}")
                    })?;
                }
                same_at(&maxes.to_vec()?, &vec![0; league * ts], &[league, ts], || {
                    format!("nested Max (team, thread), league {league}, team size {ts}")
                })?;
                same_at(&empties.to_vec()?, &vec![0.0; league * ts], &[league, ts], || {
                    format!("an empty nested Sum (team, thread), league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a nested scan calls the final pass once per index with the exclusive prefix
/// of the team's range, and returns the total on every participating thread.
pub fn nested_scan_matches_sequential_prefix<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 19;
        let value = |lr: usize, j: usize| (lr * 10 + j) as i64 - 20;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let out = SpaceView::<S, i64, 2>::new("nested-scan", [league, n])?;
                let finals = SpaceView::<S, u32, 2>::new("nested-scan-finals", [league, n])?;
                let slots = |label| SpaceView::<S, i64, 2>::new(label, [league, ts]);
                let (team_thread, thread_vector, team_vector) = (
                    slots("scan-team-thread")?,
                    slots("scan-thread-vector")?,
                    slots("scan-team-vector")?,
                );
                parallel_for(
                    "nested-scan",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (
                            out.write(),
                            finals.atomic(),
                            team_thread.team_slots(),
                            thread_vector.team_slots(),
                            team_vector.team_slots(),
                        ),
                    ),
                    nested_scan_totals::with::<S>(n),
                )?;
                let total =
                    |lr: usize, range: std::ops::Range<usize>| range.map(|j| value(lr, j)).sum::<i64>();
                for (got, level, lo) in [
                    (team_thread, "TeamThreadRange", 0),
                    (thread_vector, "ThreadVectorRange", 4),
                    (team_vector, "TeamVectorRange", 0),
                ] {
                    let want: Vec<i64> = (0..league)
                        .flat_map(|lr| std::iter::repeat_n(total(lr, lo..n), ts))
                        .collect();
                    same_at(&got.to_vec()?, &want, &[league, ts], || {
                        format!(
                            "{level} scan totals over {lo}..{n} (team, thread), league {league}, team size {ts}"
                        )
                    })?;
                }
                let want: Vec<i64> = (0..league)
                    .flat_map(|lr| exclusive_prefix(&(0..n).map(|j| value(lr, j)).collect::<Vec<_>>(), 0).0)
                    .collect();
                same_at(&out.to_vec()?, &want, &[league, n], || {
                    format!("exclusive nested scan, league {league}, team size {ts}")
                })?;
                same_at(&finals.to_vec()?, &vec![1; league * n], &[league, n], || {
                    format!("final-pass calls per index, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// A team-level scan hands each index to the thread that owns it, so its tokens store the
/// scan's output into the team's row of a writer: an exclusive prefix over several blocks
/// per thread, equal to the sequential one.
pub fn nested_scan_stores_into_the_team_row<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let value = |lr: usize, j: usize| ((lr * 7 + j * 3) % 11) as i64 - 5;
        for n in [0, 1, 16, 17, 100] {
            for ts in team_sizes(space) {
                let league = 3;
                let out = SpaceView::<S, i64, 2>::new("scan-row", [league, n])?;
                let totals = SpaceView::<S, i64, 2>::new("scan-row-totals", [league, ts])?;
                parallel_for(
                    "scan-row",
                    (
                        TeamPolicy::new(space.clone(), league, ts),
                        (out.write(), totals.team_slots()),
                    ),
                    scan_into_team_row::with::<S>(n),
                )?;
                let want_totals: Vec<i64> = (0..league)
                    .flat_map(|lr| std::iter::repeat_n((0..n).map(|j| value(lr, j)).sum::<i64>(), ts))
                    .collect();
                same_at(&totals.to_vec()?, &want_totals, &[league, ts], || {
                    format!("scan totals (team, thread), n {n}, team size {ts}")
                })?;
                let want: Vec<i64> = (0..league)
                    .flat_map(|lr| exclusive_prefix(&(0..n).map(|j| value(lr, j)).collect::<Vec<_>>(), 0).0)
                    .collect();
                same_at(&out.to_vec()?, &want, &[league, n], || {
                    format!("scan into rows, n {n}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 7: team and thread scratch hold at least what the policy requested, at both
/// levels, and that much can be allocated. (An allocation of the whole request succeeds only
/// if the pad's capacity holds it, so the kernel allocates it: a device kernel has no
/// `capacity`.)
pub fn team_scratch_has_the_requested_size<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let league = 5;
        let [(team0, thread0), (team1, thread1)] = [(200, 48), (4096, 16)];
        for ts in team_sizes(space) {
            let policy = TeamPolicy::new(space.clone(), league, ts)
                .with_scratch_size(0, PerTeam(team0), PerThread(thread0))
                .with_scratch_size(1, PerTeam(team1), PerThread(thread1));
            let lens: Vec<SpaceView<S, usize, 2>> = ["team-0", "thread-0", "team-1", "thread-1"]
                .into_iter()
                .map(|label| SpaceView::<S, usize, 2>::new(label, [league, ts]))
                .collect::<Result<_, _>>()?;
            parallel_for(
                "scratch-size",
                (
                    policy,
                    (
                        lens[0].team_slots(),
                        lens[1].team_slots(),
                        lens[2].team_slots(),
                        lens[3].team_slots(),
                    ),
                ),
                requested_scratch::with::<S>(team0, thread0, team1, thread1),
            )
            .map_err(|e| {
                crate::Failure::msg(format!(
                    "allocating the requested scratch (level 0: {team0} bytes per team, {thread0} per thread; level 1: {team1}, {thread1}), team size {ts}: {e}"
                ))
            })?;
            let pads = ["level-0 team", "level-0 thread", "level-1 team", "level-1 thread"];
            for ((got, pad), bytes) in lens.iter().zip(pads).zip([team0, thread0, team1, thread1]) {
                same_at(
                    &got.to_vec()?,
                    &vec![bytes / 8; league * ts],
                    &[league, ts],
                    || {
                        format!(
                            "lengths of the {pad} allocations of {bytes} bytes as u64 (team, thread), team size {ts}"
                        )
                    },
                )?;
            }
        }
        Ok(())
    })
}

/// Axiom 7: thread scratch is private: what a thread stores there is what it reads back
/// after a team barrier, whatever the other threads stored in theirs.
pub fn thread_scratch_is_private<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let league = 7;
        for ts in team_sizes(space) {
            let policy =
                TeamPolicy::new(space.clone(), league, ts).with_scratch_size(0, PerTeam(0), PerThread(64));
            let reads = SpaceView::<S, u32, 2>::new("thread-scratch-reads", [league, ts])?;
            let changed = SpaceView::<S, u32, 2>::new("thread-scratch-changed", [league, ts])?;
            let first = SpaceView::<S, i64, 2>::new("thread-scratch-first-changed", [league, ts])?;
            parallel_for(
                "thread-scratch",
                (
                    policy,
                    (reads.team_slots(), changed.team_slots(), first.team_slots()),
                ),
                private_thread_scratch::with::<S>(),
            )?;
            same_at(&reads.to_vec()?, &vec![8; league * ts], &[league, ts], || {
                format!("thread scratch elements read back per (team, thread), team size {ts}")
            })?;
            let (changed, first) = (changed.to_vec()?, first.to_vec()?);
            if let Some(k) = changed.iter().position(|&c| c != 0) {
                return Err(crate::Failure::msg(format!(
                    "team size {ts}: thread {} of team {} found {} of its 8 thread-scratch elements changed after the barrier, the first holding {}",
                    k % ts,
                    k / ts,
                    changed[k],
                    first[k]
                )));
            }
        }
        Ok(())
    })
}

/// `parallel_reduce` over a team policy adds each team's contribution once, for static
/// and dynamic schedules and chunk sizes.
pub fn team_policy_reduce_sums_over_teams<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for (schedule, chunk) in [
                (Schedule::Static, None),
                (Schedule::Static, Some(3)),
                (Schedule::Dynamic, Some(2)),
            ] {
                let league = 41;
                let mut policy = TeamPolicy::new(space.clone(), league, ts).with_schedule(schedule);
                if let Some(c) = chunk {
                    policy = policy.with_chunk_size(c);
                }
                let total = parallel_reduce(
                    "team-sum",
                    policy,
                    league_rank_sum::with::<S>(),
                    Sum::<usize>::new(),
                )?;
                ensure_eq!(
                    total,
                    league * (league + 1) / 2,
                    "team reduction, team size {ts}, {schedule:?}, chunk {chunk:?}"
                );
            }
        }
        Ok(())
    })
}
