//! `TeamPolicy` and [`RayonTeamMember`]: teams of real threads that meet in barriers.
//!
//! A launch with team size `t` on `n` threads forms `n / t` *groups* of `t` consecutive ranks
//! (leftover ranks idle). A group runs one team at a time: all its threads get the same
//! league rank, run the kernel, and meet in a barrier before the next team, so team-level
//! collectives and scratch memory are never mixed between teams. Static schedules give each
//! group a contiguous share of the league (in whole chunks); dynamic schedules let team rank
//! 0 of each group claim the next chunk from a shared counter and announce it through the
//! barrier.
//!
//! # Collectives
//!
//! `team_broadcast`, `team_reduce`, `team_scan` and the team-level nested reduce and scan
//! *exchange* values: every thread publishes a pointer to its value in its slot of the group
//! (tagged with the barrier generation and the collective's type), meets the others in the
//! barrier, reads the slots it needs, and meets them again before its value may go out of
//! scope. The second meeting leaves a poisoned team only once every thread of the team waits
//! in it or has departed (see `Barrier::wait_guarded`): a thread that passed the first meeting
//! and is reading will arrive (a thread that panics while reading arrives from a drop guard),
//! so no thread can leave while another still reads its value — yet a thread whose peers
//! called collectives in another order and failed does not wait for them forever.
//!
//! Values are matched by the collective and the `TypeId` of their type (every exchanged type
//! is `'static`), so two different types never meet even when their names, sizes and
//! alignments agree (two closures of one function, say).

use std::any::TypeId;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::panic::resume_unwind;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use hoplite_core::point_loop::TeamShare;
use hoplite_core::{
    ExecutionPolicy, ForKernel, Idx, NestedLevel, ReduceKernel, Reducer, Result, SCRATCH_LEVELS, ScanValue,
    Schedule, ScratchBuffer, ScratchPad, TeamMember, TeamPolicy,
};

use crate::context::InKernel;
use crate::pool::{Job, Payload, pick_panic, run_participant};
use crate::sealed::Internal;
use crate::split::{Slot, Units, join_in_order, share};
use crate::sync::{Barrier, raise_poisoned};
use crate::{Mode, RayonPolicy, RayonSpace};

type Tp = TeamPolicy<RayonSpace>;

/// The collective operations that exchange values between the threads of a team.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collective {
    Broadcast,
    Reduce,
    Scan,
    NestedReduce,
    NestedScan,
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Collective::Broadcast => "team_broadcast",
            Collective::Reduce => "team_reduce",
            Collective::Scan => "team_scan",
            Collective::NestedReduce => "nested parallel_reduce",
            Collective::NestedScan => "nested parallel_scan",
        })
    }
}

/// What a published value is: the collective and the value's type. Readers compare it with
/// their own before they look at the value.
#[derive(Clone, Copy, Debug)]
struct Tag {
    collective: Collective,
    type_id: TypeId,
    /// For messages only: distinct types may share a name.
    type_name: &'static str,
}

impl Tag {
    fn of<T: 'static>(collective: Collective) -> Self {
        Tag {
            collective,
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }

    /// Whether a value with tag `other` is of this collective and this very type.
    fn matches(&self, other: &Tag) -> bool {
        self.collective == other.collective && self.type_id == other.type_id
    }
}

/// A value published for an exchange; `tag` first, so a reader can check the tag through a
/// pointer of unknown `T`.
#[repr(C)]
struct Published<T> {
    tag: Tag,
    value: *const T,
}

/// One thread's exchange slot: the barrier generation it published in, and what.
struct ExchangeSlot {
    round: AtomicUsize,
    ptr: AtomicPtr<()>,
}

/// The threads that run one team at a time.
pub(crate) struct Group {
    barrier: Barrier,
    slots: Box<[CachePadded<ExchangeSlot>]>,
    claim: CachePadded<AtomicUsize>,
}

impl Group {
    fn new(team_size: usize) -> Self {
        Group {
            barrier: Barrier::new(team_size),
            slots: (0..team_size)
                .map(|_| {
                    CachePadded::new(ExchangeSlot {
                        round: AtomicUsize::new(usize::MAX),
                        ptr: AtomicPtr::new(ptr::null_mut()),
                    })
                })
                .collect(),
            claim: CachePadded::new(AtomicUsize::new(0)),
        }
    }
}

/// Waits for the whole team when dropped: the end of an exchange. On a poisoned team it
/// leaves once no other thread can still read this thread's value, then raises the poison
/// echo (unless this thread is already unwinding).
struct DoneGuard<'a>(&'a Barrier, usize);

impl Drop for DoneGuard<'_> {
    fn drop(&mut self) {
        if !self.0.wait_guarded(self.1) && !std::thread::panicking() {
            raise_poisoned();
        }
    }
}

/// Tells the group's barrier, when dropped, that this thread's share of the launch is over.
struct Departure<'a>(&'a Barrier);

impl Drop for Departure<'_> {
    fn drop(&mut self) {
        self.0.depart();
    }
}

/// Read access to the values the team published in one exchange.
struct Peers<'p, T> {
    group: &'p Group,
    round: usize,
    tag: Tag,
    _value: PhantomData<&'p T>,
}

impl<T> Peers<'_, T> {
    /// The value team rank `k` published.
    ///
    /// # Panics
    ///
    /// If rank `k` is not in the same collective with the same value type (the team's threads
    /// called collectives in different orders).
    fn get(&self, k: usize) -> &T {
        let slot = &self.group.slots[k];
        let round = slot.round.load(Ordering::Acquire);
        let published = slot.ptr.load(Ordering::Acquire);
        assert!(
            round == self.round && !published.is_null(),
            "{}: team rank {k} did not join this collective; every thread of a team must call the same collectives in the same order",
            self.tag.collective
        );
        // SAFETY: `round` matches, so rank `k` stored `published` for this very barrier
        // generation: it points to a live `Published<U>` (for some `U`) in rank `k`'s
        // `exchange` frame, which rank `k` leaves only after the closing barrier completes,
        // and that needs this thread's arrival, which happens only after its `read` closure
        // returned (see the module docs). Code that runs inside `read` (a `Clone`, a
        // reducer's `join`, a scan value's `Add`) cannot arrive early: reaching the barrier
        // takes a `&RayonTeamMember`, which is `!Sync` and so cannot be captured by the
        // `Send + Sync` reducer or value types, and is not `'static` for scan values. `Published` is `repr(C)` with the tag first, so the
        // pointer is a valid pointer to its `Tag` whatever `U` is.
        let tag = unsafe { &*published.cast::<Tag>() };
        assert!(
            tag.matches(&self.tag),
            "{}: team rank {k} is in {} with a value of type `{}`, this thread with `{}`; every thread of a team must call the same collectives in the same order",
            self.tag.collective,
            tag.collective,
            tag.type_name,
            self.tag.type_name
        );
        // SAFETY: the tags match, so rank `k` published a `Published<U>` with
        // `TypeId::of::<U>() == TypeId::of::<T>()`, i.e. `U` is `T`; `value` points to rank
        // `k`'s argument, alive as argued above, and shared references to it are allowed
        // because `T: Sync` (required by every collective).
        unsafe { &*(*published.cast::<Published<T>>()).value }
    }
}

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
                let member = RayonTeamMember {
                    league_rank,
                    league_size: self.league_size,
                    team_rank,
                    team_size: t,
                    group,
                    team_scratch,
                    thread_scratch,
                    _not_sync: PhantomData,
                };
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
                    run_participant(job, rank)
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
            payloads.extend(run_participant(job, 0));
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

/// The team member of the rayon backend: one per thread of a team.
///
/// Collectives (`team_barrier`, `team_broadcast`, `team_reduce`, `team_scan`, and nested
/// ranges at the `TeamThread` / `TeamVector` levels) must be called by every thread of the
/// team in the same order. A thread that calls a different collective than the others makes
/// them panic with a message naming both (when the mismatch is detectable) or deadlock.
///
/// *Value types of collectives.* `team_broadcast` and `team_reduce` hand a value made on one
/// thread to the others; the values are `'static` (owned), so none can borrow the sending
/// thread's stack. The backend checks that all threads use the same collective with a value
/// of the same type (by `TypeId`); a mismatch panics on the threads that detect it, and the
/// other threads of the team leave with it instead of waiting.
///
/// ```
/// use hoplite_core::{parallel_for, PerTeam, PerThread, TeamMember, TeamPolicy, TeamThreadRange, Sum};
/// use hoplite_rayon::RayonSpace;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let space = RayonSpace::with_threads(2)?;
/// let rows = AtomicUsize::new(0);
/// let policy = TeamPolicy::new(space, 8, 2).with_scratch_size(0, PerTeam(64), PerThread(0));
/// parallel_for("rows", policy, |m| {
///     let shared = m.team_scratch(0).alloc::<u64>(2).expect("64 bytes");
///     shared.set(m.team_rank(), m.team_rank() as u64 + 1);
///     m.team_barrier();
///     let both = shared.get(0) + shared.get(1); // written by two different threads
///     let row: usize = TeamThreadRange::new(m, 10).parallel_reduce(|j, s: &mut usize| *s += *j, Sum::new());
///     if m.team_rank() == 0 {
///         rows.fetch_add(row * both as usize, Ordering::Relaxed);
///     }
/// })?;
/// assert_eq!(rows.into_inner(), 8 * 45 * 3);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct RayonTeamMember<'t> {
    league_rank: usize,
    league_size: usize,
    team_rank: usize,
    team_size: usize,
    group: &'t Group,
    team_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
    thread_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
    /// Keeps the member `!Sync` whatever the scratch pads are: collectives rely on code they
    /// call (reducers, `Clone`) being unable to hold a member (see `Peers::get`).
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for RayonTeamMember<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RayonTeamMember")
            .field("league_rank", &self.league_rank)
            .field("league_size", &self.league_size)
            .field("team_rank", &self.team_rank)
            .field("team_size", &self.team_size)
            .field("barrier", &self.group.barrier)
            .finish()
    }
}

impl RayonTeamMember<'_> {
    /// This thread's contiguous share of `range` among the team's threads.
    fn team_share(&self, range: Range<usize>) -> Range<usize> {
        let (lo, hi) = share(range.len(), self.team_size, self.team_rank);
        range.start + lo..range.start + hi
    }

    /// Publishes `value`, waits for the team, runs `read` on everybody's values, and waits
    /// for the team again before `value` may go out of scope (see the module docs).
    fn exchange<T: 'static, O>(
        &self,
        collective: Collective,
        value: &T,
        read: impl FnOnce(&Peers<'_, T>) -> O,
    ) -> O {
        let group = self.group;
        let round = group.barrier.generation();
        let published = Published {
            tag: Tag::of::<T>(collective),
            value: ptr::from_ref(value),
        };
        let slot = &group.slots[self.team_rank];
        slot.ptr
            .store(ptr::from_ref(&published).cast_mut().cast(), Ordering::Relaxed);
        slot.round.store(round, Ordering::Relaxed);
        // Releases the slot to the team (or leaves with the poison echo before anybody could
        // read it: a poisoned generation never completes).
        group.barrier.wait(self.team_rank);
        let _done = DoneGuard(&group.barrier, self.team_rank);
        read(&Peers {
            group,
            round,
            tag: published.tag,
            _value: PhantomData,
        })
    }

    /// `(sum of lower ranks' values, sum of all values)` of an exchange of `T`s.
    fn prefix_and_total<T: ScanValue>(&self, peers: &Peers<'_, T>) -> (T, T) {
        let mut prefix = T::zero();
        for k in 0..self.team_rank {
            prefix = prefix + *peers.get(k);
        }
        let mut total = prefix;
        for k in self.team_rank..self.team_size {
            total = total + *peers.get(k);
        }
        (prefix, total)
    }
}

fn scratch_level<'a, 't>(pads: &'a [ScratchPad<'t>; SCRATCH_LEVELS], level: usize) -> &'a ScratchPad<'t> {
    pads.get(level)
        .unwrap_or_else(|| panic!("scratch level {level} does not exist; levels are 0 and 1"))
}

#[inline(always)]
fn nested_fold<F, V>(range: Range<usize>, kernel: &F, acc: &mut V)
where
    F: for<'i> Fn(Idx<'i>, &mut V),
{
    for i in range {
        // SAFETY: the nested range is split into disjoint shares (or walked by one
        // thread); each index is handed to one iteration of this nested launch, on this
        // thread, and the kernel is generic over the brand.
        kernel(unsafe { Idx::new_unchecked(i) }, acc);
    }
}

#[inline(always)]
fn nested_scan_pass<F, T>(range: Range<usize>, kernel: &F, partial: &mut T, is_final: bool)
where
    F: for<'i> Fn(Idx<'i>, &mut T, bool),
{
    for i in range {
        // SAFETY: as in `nested_fold`.
        kernel(unsafe { Idx::new_unchecked(i) }, partial, is_final);
    }
}

// SAFETY: a launch hands each league rank to one team and each team rank of it to one
// thread (`run_team`), every member of a team carries the team's `team_size`, the member is
// not `Sync` (its scratch pads hold `Cell`s) and is passed by reference to a kernel generic
// over its brand on the thread that runs it. The provided methods are not overridden.
unsafe impl TeamMember for RayonTeamMember<'_> {
    fn league_rank(&self) -> usize {
        self.league_rank
    }

    fn league_size(&self) -> usize {
        self.league_size
    }

    fn team_rank(&self) -> usize {
        self.team_rank
    }

    fn team_size(&self) -> usize {
        self.team_size
    }

    fn vector_length(&self) -> usize {
        1
    }

    fn team_barrier(&self) {
        self.group.barrier.wait(self.team_rank);
    }

    fn team_broadcast<T: Clone + Send + Sync + 'static>(&self, value: T, source: usize) -> T {
        assert!(
            source < self.team_size,
            "team_broadcast: source rank {source} is not below the team size {}",
            self.team_size
        );
        if self.team_size == 1 {
            return value;
        }
        let me = self.team_rank;
        let received = self.exchange(Collective::Broadcast, &value, |peers| {
            (source != me).then(|| peers.get(source).clone())
        });
        received.unwrap_or(value)
    }

    fn team_reduce<R>(&self, reducer: &R, value: R::Value) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Sync + 'static,
    {
        if self.team_size == 1 {
            return value;
        }
        self.exchange(Collective::Reduce, &value, |peers| {
            let mut total = peers.get(0).clone();
            for k in 1..self.team_size {
                reducer.join(&mut total, peers.get(k).clone());
            }
            total
        })
    }

    fn team_scan<T: ScanValue>(&self, value: T) -> (T, T) {
        if self.team_size == 1 {
            return (T::zero(), value);
        }
        self.exchange(Collective::Scan, &value, |peers| self.prefix_and_total(peers))
    }

    fn team_scratch(&self, level: usize) -> &ScratchPad<'_> {
        scratch_level(&self.team_scratch, level)
    }

    fn thread_scratch(&self, level: usize) -> &ScratchPad<'_> {
        scratch_level(&self.thread_scratch, level)
    }

    fn nested_reduce<R, F>(&self, level: NestedLevel, range: Range<usize>, kernel: F, reducer: &R) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Send + Sync + 'static,
        F: for<'i> Fn(Idx<'i>, &mut R::Value),
    {
        let mut acc = reducer.init();
        if level == NestedLevel::ThreadVector || self.team_size == 1 {
            nested_fold(range, &kernel, &mut acc);
            return acc;
        }
        nested_fold(self.team_share(range), &kernel, &mut acc);
        // Shares are contiguous and ordered by team rank, so joining by rank is index order.
        self.exchange(Collective::NestedReduce, &acc, |peers| {
            let mut total = peers.get(0).clone();
            for k in 1..self.team_size {
                reducer.join(&mut total, peers.get(k).clone());
            }
            total
        })
    }

    fn nested_scan<T, F>(&self, level: NestedLevel, range: Range<usize>, kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool),
    {
        let mut partial = T::zero();
        if level == NestedLevel::ThreadVector || self.team_size == 1 {
            nested_scan_pass(range, &kernel, &mut partial, true);
            return partial;
        }
        // Two passes over this thread's share; rank 0's prefix is zero, so its first pass is
        // already the final one.
        let mine = self.team_share(range);
        let first_is_final = self.team_rank == 0;
        nested_scan_pass(mine.clone(), &kernel, &mut partial, first_is_final);
        let (prefix, total) = self.exchange(Collective::NestedScan, &partial, |peers| {
            self.prefix_and_total(peers)
        });
        if !first_is_final {
            let mut partial = prefix;
            nested_scan_pass(mine, &kernel, &mut partial, true);
        }
        total
    }
}
