//! [`RayonTeamMember`]: what a team kernel's thread sees of its team (ranks, barrier, scratch,
//! nested loops), and the collectives, which exchange values between the team's threads.
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
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use hoplite_core::{Idx, NestedLevel, Reducer, SCRATCH_LEVELS, ScanValue, ScratchPad, TeamMember};

use crate::barrier::{Barrier, raise_poisoned};
use crate::split::share;

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
    pub(crate) barrier: Barrier,
    slots: Box<[CachePadded<ExchangeSlot>]>,
    pub(crate) claim: CachePadded<AtomicUsize>,
}

impl Group {
    pub(crate) fn new(team_size: usize) -> Self {
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
pub(crate) struct Departure<'a>(pub(crate) &'a Barrier);

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

impl<'t> RayonTeamMember<'t> {
    /// The member at `team_rank` of team `league_rank` (of `league_size` teams of `team_size`
    /// threads), meeting its team in `group` and using the given scratch pads.
    #[inline(always)]
    pub(crate) fn new(
        (league_rank, league_size): (usize, usize),
        (team_rank, team_size): (usize, usize),
        group: &'t Group,
        team_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
        thread_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
    ) -> Self {
        RayonTeamMember {
            league_rank,
            league_size,
            team_rank,
            team_size,
            group,
            team_scratch,
            thread_scratch,
            _not_sync: PhantomData,
        }
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
