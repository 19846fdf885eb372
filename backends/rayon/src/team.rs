//! `TeamPolicy` launches on the rayon backend: teams of real threads that meet in barriers (the
//! member a kernel receives, and its collectives, are in `member.rs`).
//!
//! A launch with team size `t` on `n` threads forms `n / t` *groups* of `t` consecutive ranks
//! (leftover ranks idle). A group runs one team at a time: all its threads get the same
//! league rank, run the kernel, and meet in a barrier before the next team, so team-level
//! collectives and scratch memory are never mixed between teams. Static schedules give each
//! group a contiguous share of the league (in whole chunks); dynamic schedules let team rank
//! 0 of each group claim the next chunk from a shared counter and announce it through the
//! barrier.

use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use hoplite_core::point_loop::TeamShare;
use hoplite_core::{
    ExecutionPolicy, ForKernel, ReduceKernel, Reducer, Result, SCRATCH_LEVELS, Schedule, ScratchBuffer,
    ScratchPad, TeamPolicy,
};

use crate::context::InKernel;
use crate::member::{Departure, Group, RayonTeamMember};
use crate::pool::{Job, Payload, pick_panic, run_participant};
use crate::sealed::Internal;
use crate::split::{Slot, Units, join_in_order, share};
use crate::{Mode, RayonPolicy, RayonSpace};

type Tp = TeamPolicy<RayonSpace>;

/// Scratch memory of one team launch: per level, one region per group made of the team part
/// followed by one thread part per team rank.
struct ScratchPlan {
    buffers: [ScratchBuffer; SCRATCH_LEVELS],
    team_words: [usize; SCRATCH_LEVELS],
    thread_words: [usize; SCRATCH_LEVELS],
    team_size: usize,
}

impl ScratchPlan {
    /// One region per group; fails (before any kernel runs) if the memory cannot be had.
    fn new(label: &str, policy: &TeamPolicy<RayonSpace>, groups: usize, team_size: usize) -> Result<Self> {
        let team_words: [usize; SCRATCH_LEVELS] =
            std::array::from_fn(|l| policy.scratch_size(l).0.div_ceil(8));
        let thread_words: [usize; SCRATCH_LEVELS] =
            std::array::from_fn(|l| policy.scratch_size(l).1.div_ceil(8));
        let mut buffers: [ScratchBuffer; SCRATCH_LEVELS] = Default::default();
        for (l, buffer) in buffers.iter_mut().enumerate() {
            let bytes = team_size
                .checked_mul(thread_words[l])
                .and_then(|w| w.checked_add(team_words[l]))
                .and_then(|w| w.checked_mul(groups))
                .and_then(|w| w.checked_mul(8))
                .unwrap_or(usize::MAX);
            *buffer = ScratchBuffer::try_new(label, crate::NAME, bytes)?;
        }
        Ok(ScratchPlan {
            buffers,
            team_words,
            thread_words,
            team_size,
        })
    }

    fn pads(&self, group: usize, team_rank: usize) -> ([ScratchPad<'_>; 2], [ScratchPad<'_>; 2]) {
        let region = |l: usize| -> (&[AtomicU64], &[AtomicU64]) {
            let per_group = self.team_words[l] + self.team_size * self.thread_words[l];
            let words = &self.buffers[l].words()[group * per_group..(group + 1) * per_group];
            let (team, threads) = words.split_at(self.team_words[l]);
            let own = team_rank * self.thread_words[l];
            (team, &threads[own..own + self.thread_words[l]])
        };
        let (t0, p0) = region(0);
        let (t1, p1) = region(1);
        (
            [ScratchPad::new(t0), ScratchPad::new(t1)],
            [ScratchPad::new(p0), ScratchPad::new(p1)],
        )
    }
}

/// Everything one team launch shares between its participants.
struct TeamLaunch {
    groups: Vec<Group>,
    scratch: ScratchPlan,
    next: CachePadded<AtomicUsize>,
    league_size: usize,
    team_size: usize,
    units: Units,
    dynamic: bool,
}

impl TeamLaunch {
    /// The groups of `threads` threads for `policy`: as many as run at once, and no more than
    /// there are teams, each with its scratch memory.
    fn new(label: &str, policy: &TeamPolicy<RayonSpace>, threads: usize) -> Result<Self> {
        let team_size = policy.team_size().max(1);
        let groups = (threads / team_size).min(policy.league_size()).max(1);
        Ok(TeamLaunch {
            groups: (0..groups).map(|_| Group::new(team_size)).collect(),
            scratch: ScratchPlan::new(label, policy, groups, team_size)?,
            next: CachePadded::new(AtomicUsize::new(0)),
            league_size: policy.league_size(),
            team_size,
            units: Units::new(0, policy.league_size(), policy.chunk_size().unwrap_or(1)),
            dynamic: policy.schedule() == Schedule::Dynamic,
        })
    }

    /// Number of participants that run teams.
    fn participants(&self) -> usize {
        self.groups.len() * self.team_size
    }

    /// Runs participant `rank`'s teams, calling `visit(key, member)` per team; `key` is the
    /// first league chunk of the contiguous run the team belongs to (results with equal keys
    /// may be folded together).
    // Inlined into the kernel's own team loop (`hoplite_core::point_loop`), so that the
    // kernel's body is compiled with the loop that makes its members.
    #[inline(always)]
    fn drive(&self, rank: usize, mut visit: impl FnMut(usize, &RayonTeamMember<'_>)) {
        let t = self.team_size;
        let (g, team_rank) = (rank / t, rank % t);
        let Some(group) = self.groups.get(g) else {
            return;
        };
        let _departure = Departure(&group.barrier);
        let mut run_unit = |key: usize, unit: usize| {
            for league_rank in self.units.range(unit, unit + 1) {
                let (team_scratch, thread_scratch) = self.scratch.pads(g, team_rank);
                let member = RayonTeamMember::new(
                    (league_rank, self.league_size),
                    (team_rank, t),
                    group,
                    team_scratch,
                    thread_scratch,
                );
                visit(key, &member);
                // The team is done before any of its threads starts the next one.
                group.barrier.wait(team_rank);
            }
        };
        if self.dynamic {
            loop {
                if team_rank == 0 {
                    group
                        .claim
                        .store(self.next.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
                }
                // Publishes the claim; every thread read it before the barrier that ends the
                // claimed chunk's first team, so rank 0 never overwrites an unread claim.
                group.barrier.wait(team_rank);
                let unit = group.claim.load(Ordering::Relaxed);
                if unit >= self.units.count {
                    return;
                }
                run_unit(unit, unit);
            }
        } else {
            let (lo, hi) = share(self.units.count, self.groups.len(), g);
            for unit in lo..hi {
                run_unit(lo, unit);
            }
        }
    }

    fn abort(&self, rank: usize) {
        if let Some(group) = self.groups.get(rank / self.team_size) {
            group.barrier.poison();
        }
    }
}

struct ForJob<'a, F> {
    launch: &'a TeamLaunch,
    kernel: &'a F,
}

/// One participant's teams of a launch, as the kernel's team loop walks them.
struct Participant<'a> {
    launch: &'a TeamLaunch,
    rank: usize,
}

// SAFETY: `drive` makes each member once per launch, for the participant's rank and its own
// teams, on this thread (the `RayonTeamMember` contract is argued at its impl).
unsafe impl<'a> TeamShare for Participant<'a> {
    type Member<'it> = &'it RayonTeamMember<'it>;

    #[inline(always)]
    unsafe fn visit<V>(self, mut visit: V)
    where
        V: for<'it> FnMut(usize, &'it RayonTeamMember<'it>),
    {
        self.launch.drive(self.rank, |key, member| visit(key, member));
    }
}

impl<K: ForKernel<Tp>> Job for ForJob<'_, K> {
    fn run(&self, rank: usize) {
        let teams = Participant {
            launch: self.launch,
            rank,
        };
        // SAFETY: each rank's teams go to this one participant, on this thread.
        unsafe { self.kernel.run_teams(teams) };
    }

    fn abort(&self, rank: usize) {
        self.launch.abort(rank);
    }
}

/// Per participant: `(key, partial)` pairs in league order.
type Partials<V> = Vec<(usize, V)>;

struct ReduceJob<'a, F, R: Reducer> {
    launch: &'a TeamLaunch,
    kernel: &'a F,
    reducer: &'a R,
    slots: &'a [Slot<Partials<R::Value>>],
}

impl<F, R> Job for ReduceJob<'_, F, R>
where
    R: Reducer,
    F: ReduceKernel<Tp, R::Value>,
{
    fn run(&self, rank: usize) {
        let teams = Participant {
            launch: self.launch,
            rank,
        };
        // SAFETY: as in `ForJob::run`.
        let partials: Partials<R::Value> = unsafe { self.kernel.fold_teams(teams, self.reducer) };
        self.slots[rank].put(partials);
    }

    fn abort(&self, rank: usize) {
        self.launch.abort(rank);
    }
}

/// Runs a team job: on the hot team, or (nested) on this thread plus `t - 1` helper threads.
fn run_team_job<J: Job>(space: &RayonSpace, mode: Mode<'_>, launch: &TeamLaunch, job: &J) {
    match mode {
        Mode::Team(guard) => space.execute(&guard, job),
        Mode::Inline => {
            let _in = space.enter_inline();
            run_nested(space, job, launch.participants());
        }
    }
}

/// Runs ranks `0..n` of `job`: rank 0 on this thread, the others on scoped helper threads.
fn run_nested<J: Job>(space: &RayonSpace, job: &J, n: usize) {
    if n <= 1 {
        job.run(0);
        return;
    }
    let id = space.instance_id();
    let mut payloads: Vec<Payload> = Vec::new();
    let mut spawn_error = None;
    std::thread::scope(|s| {
        let mut helpers = Vec::with_capacity(n - 1);
        for rank in 1..n {
            let spawned = std::thread::Builder::new()
                .name(format!("hoplite-rayon-{id}-nested{rank}"))
                .spawn_scoped(s, move || {
                    let _in = InKernel::enter(id, None);
                    run_participant(job, rank, n)
                });
            match spawned {
                Ok(handle) => helpers.push(handle),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        if spawn_error.is_some() {
            // The started helpers wait for rank 0 in a barrier: release them.
            for rank in 0..n {
                job.abort(rank);
            }
        } else {
            payloads.extend(run_participant(job, 0, n));
        }
        for helper in helpers {
            match helper.join() {
                Ok(payload) => payloads.extend(payload),
                Err(payload) => payloads.push(payload),
            }
        }
    });
    if let Some(e) = spawn_error {
        panic!("could not start a helper thread for a nested team launch of {n} threads: {e}");
    }
    if let Some(payload) = pick_panic(payloads) {
        resume_unwind(payload);
    }
}

impl RayonPolicy for TeamPolicy<RayonSpace> {
    fn rayon_for<K: ForKernel<Self>>(&self, _internal: Internal, label: &str, kernel: &K) -> Result<()> {
        if self.league_size() == 0 {
            return Ok(());
        }
        let space = self.space();
        let mode = space.mode();
        let threads = match mode {
            Mode::Team(_) => space.threads(),
            Mode::Inline => self.team_size(),
        };
        let launch = TeamLaunch::new(label, self, threads)?;
        run_team_job(
            space,
            mode,
            &launch,
            &ForJob {
                launch: &launch,
                kernel,
            },
        );
        Ok(())
    }

    fn rayon_reduce<R: Reducer, K: ReduceKernel<Self, R::Value>>(
        &self,
        _internal: Internal,
        label: &str,
        kernel: &K,
        reducer: &R,
    ) -> Result<R::Value> {
        if self.league_size() == 0 {
            return Ok(join_in_order(reducer, None));
        }
        let space = self.space();
        let mode = space.mode();
        let threads = match mode {
            Mode::Team(_) => space.threads(),
            Mode::Inline => self.team_size(),
        };
        let launch = TeamLaunch::new(label, self, threads)?;
        let slots = Slot::many(threads.max(launch.participants()));
        run_team_job(
            space,
            mode,
            &launch,
            &ReduceJob {
                launch: &launch,
                kernel,
                reducer,
                slots: &slots,
            },
        );
        // Join in league order, and within one team in team-rank order.
        let t = launch.team_size;
        let mut partials: Vec<(usize, usize, R::Value)> = slots
            .iter()
            .enumerate()
            .filter_map(|(rank, slot)| slot.take().map(|p| (rank % t, p)))
            .flat_map(|(team_rank, p)| p.into_iter().map(move |(key, v)| (key, team_rank, v)))
            .collect();
        partials.sort_by_key(|&(key, team_rank, _)| (key, team_rank));
        Ok(join_in_order(reducer, partials.into_iter().map(|(_, _, v)| v)))
    }
}
