//! The `TeamMember` concept, nested ranges and team scratch memory.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::index::{Idx, LeagueToken, OwnedRanges, TeamIdx, TeamSlotIdx, for_each_owned};
use crate::reducer::{Custom, Reducer, ScanValue};

/// Which threads of a team share a nested range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NestedLevel {
    /// Split over the threads of the team (Kokkos `TeamThreadRange`).
    TeamThread,
    /// Split over the vector lanes of the calling thread (Kokkos `ThreadVectorRange`).
    ThreadVector,
    /// Split over all threads and vector lanes of the team (Kokkos `TeamVectorRange`).
    TeamVector,
}

/// The handle a team kernel receives (Kokkos `TeamHandle` concept).
///
/// Every thread of a team gets its own member; the collectives (`team_barrier`,
/// `team_broadcast`, `team_reduce`, `team_scan`, the nested reduces and scans of level
/// `TeamThread` and `TeamVector`) must be called by *all* threads of the team, in the same
/// order — as in Kokkos. Calling them from only some threads deadlocks on a multi-threaded
/// team. Nested `parallel_for` loops are not collectives: see axiom 6.
///
/// # Axioms
///
/// 1. `league_rank() < league_size()`, `team_rank() < team_size()`; within one launch each
///    pair `(league_rank, team_rank)` is handed to exactly one member.
/// 2. *Barrier.* Writes a thread makes before `team_barrier` are visible to every thread of
///    the team after it.
/// 3. *Broadcast.* `team_broadcast(v, r)` returns, on every thread, the `v` of team rank `r`.
/// 4. *Reduce.* `team_reduce` returns on every thread the join of all threads' values in
///    team-rank order.
/// 5. *Scan.* `team_scan(v)` returns `(prefix, total)`: the sum of the values of lower team
///    ranks (exclusive), and the sum over the team.
/// 6. *Nested ranges.* A nested `parallel_for` visits every index of its range exactly once
///    across the threads it is split over; a team-level one hands index `j` to the thread
///    [`team_owner`](crate::index::team_owner)`(j, team_size, TEAM_BLOCK)`, whatever the
///    range (the core runs these loops, so every backend agrees). Team-level scans follow the
///    same rule (the core runs them too, over the backend's `team_reduce`), so their tokens
///    store into team rows. A nested reduce or scan returns its result on every participating
///    thread.
/// 7. *Scratch.* [`team_scratch`](Self::team_scratch) is one region per team, shared by its
///    threads, of the size the policy requested; [`thread_scratch`](Self::thread_scratch)
///    is private to the thread. Contents are unspecified at the start of a team.
///
/// # Safety
///
/// Team kernels write views through tokens derived from the member (its
/// [`league_token`](Self::league_token) and the [`TeamIdx`] of team loops), so the member is
/// part of the proof that no two threads store to one element. An implementation promises:
///
/// * axiom 1, and that every member of a team reports the same `team_size()`;
/// * a member is used only on the thread that runs it: the type is not `Sync` (so a kernel
///   cannot hand `&member` to another thread), and the launch passes `&member` to a kernel
///   generic over its brand;
/// * the provided methods are not overridden;
/// * members are made only by the backend's dispatch, for a launch: no safe public function
///   returns one (a member had outside a launch could be borrowed at any launch's brand, and
///   its team loops would then hand out that launch's column tokens).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a team member",
    note = "team kernels receive `&S::TeamMember<'_>` of their execution space; backends implement `hoplite_core::TeamMember`"
)]
pub unsafe trait TeamMember {
    /// Team-level nested loops hand indices to threads in blocks of this many, round robin
    /// (see [`team_owner`](crate::index::team_owner)). Blocks keep each thread's indices
    /// contiguous, for vectorized inner loops and no false sharing within a block.
    const TEAM_BLOCK: usize = 16;

    /// This team's league rank as a token: it selects the row the team owns in a rank-2
    /// writer ([`BoundWriter::team_row`](crate::BoundWriter::team_row)), and one thread of the
    /// team gets it as a write token ([`LeagueToken::single`]).
    #[inline(always)]
    fn league_token(&self) -> LeagueToken<'_> {
        // SAFETY: by the trait's contract, the league rank belongs to this member's team alone
        // in this launch, team rank 0 exists once per team, and the member (hence the token,
        // borrowed from it) stays on its thread and inside the kernel call.
        unsafe { LeagueToken::new_unchecked(self.league_rank(), self.team_rank() == 0) }
    }

    /// This thread's slot `[league rank, team rank]` as a token: a
    /// [`TeamSlots`](crate::TeamSlots) handle of a rank-2 view stores there, one element per
    /// team thread, without atomics.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, TeamMember, TeamPolicy, View};
    /// use hoplite_serial::Serial;
    /// let partial: View<usize, 2> = View::new("partial", [3, 1])?;
    /// parallel_for("slots", (TeamPolicy::new(Serial::default(), 3, 1), (partial.team_slots(),)), |(m, (p,))| {
    ///     p.set(m.team_slot(), 100 * m.league_rank() + m.team_rank());
    /// })?;
    /// assert_eq!(partial.to_vec()?, [0, 100, 200]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline(always)]
    fn team_slot(&self) -> TeamSlotIdx<'_> {
        // SAFETY: by axiom 1 of the trait's contract, each (league rank, team rank) pair is
        // this member's alone in the launch; the member (hence the token, borrowed from it)
        // stays on its thread and inside the kernel call.
        unsafe { TeamSlotIdx::new_unchecked(self.league_rank(), self.team_rank()) }
    }

    /// Index of this team in the league.
    fn league_rank(&self) -> usize;
    /// Number of teams.
    fn league_size(&self) -> usize;
    /// Index of this thread in its team.
    fn team_rank(&self) -> usize;
    /// Number of threads in the team.
    fn team_size(&self) -> usize;
    /// Vector lanes per thread.
    fn vector_length(&self) -> usize;

    /// Waits for every thread of the team.
    fn team_barrier(&self);

    /// Returns the `value` of team rank `source` on every thread.
    ///
    /// Values crossing between team threads are `'static`: a reference into one thread's
    /// stack must not reach another thread, which may outlive that frame.
    fn team_broadcast<T: Clone + Send + Sync + 'static>(&self, value: T, source: usize) -> T;

    /// Runs `f` on one thread of the team (team rank 0) and returns its result on every
    /// thread (Kokkos `single(PerTeam(member), f, value)`): a value the team computes once and
    /// then shares, such as a row's norm or a random draw.
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, Sum, TeamMember, TeamPolicy};
    /// use hoplite_serial::Serial;
    /// let total = parallel_reduce("single", TeamPolicy::new(Serial::default(), 4, 1), |m, acc| {
    ///     let once = m.team_single(|| 10 * m.league_rank());
    ///     *acc += once;
    /// }, Sum::<usize>::new())?;
    /// assert_eq!(total, 60);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    fn team_single<T: Clone + Send + Sync + 'static>(&self, f: impl FnOnce() -> T) -> T {
        let mine = (self.team_rank() == 0).then(f);
        match self.team_broadcast(mine, 0) {
            Some(value) => value,
            // Axiom 3: every thread gets rank 0's value, and rank 0 made one.
            None => unreachable!("team_broadcast returned another rank's value"),
        }
    }

    /// Applies `f` to `value` on team rank `source`, then returns the result on every thread
    /// (Kokkos' `team_broadcast(f, value, source)` with a functor).
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, Sum, TeamMember, TeamPolicy};
    /// use hoplite_serial::Serial;
    /// let total = parallel_reduce("bcast", TeamPolicy::new(Serial::default(), 3, 1), |m, acc| {
    ///     *acc += m.team_broadcast_with(|v: &mut usize| *v *= 2, m.team_rank() + 1, 0);
    /// }, Sum::<usize>::new())?;
    /// assert_eq!(total, 6);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    fn team_broadcast_with<T: Clone + Send + Sync + 'static>(
        &self,
        f: impl FnOnce(&mut T),
        mut value: T,
        source: usize,
    ) -> T {
        if self.team_rank() == source {
            f(&mut value);
        }
        self.team_broadcast(value, source)
    }

    /// Joins every thread's `value` with `reducer`; every thread gets the result.
    fn team_reduce<R>(&self, reducer: &R, value: R::Value) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Sync + 'static;

    /// Exclusive prefix sum over the team: returns `(sum of lower ranks' values, team total)`.
    fn team_scan<T: ScanValue>(&self, value: T) -> (T, T);

    /// The team's shared scratch at `level` (0 or 1).
    fn team_scratch(&self, level: usize) -> &ScratchPad<'_>;

    /// This thread's private scratch at `level` (0 or 1).
    fn thread_scratch(&self, level: usize) -> &ScratchPad<'_>;

    /// Reduces over `range`, split as `level` says; every participating thread gets the result.
    /// Each thread passes its own kernel, which runs only on that thread (so it need not be
    /// `Sync` and may capture the member and the team's rows); only the values cross threads.
    fn nested_reduce<R, F>(
        &self,
        level: NestedLevel,
        range: Range<usize>,
        kernel: F,
        reducer: &R,
    ) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Send + Sync + 'static,
        F: for<'i> Fn(Idx<'i>, &mut R::Value);

    /// Scans over `range` (Kokkos scan functor: `(i, partial, is_final)`), split as `level`
    /// says; returns the total on every participating thread. As for `nested_reduce`, each
    /// thread's kernel runs only on that thread.
    fn nested_scan<T, F>(&self, level: NestedLevel, range: Range<usize>, kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool);
}

/// The bounds of a nested range: a count `n` (`0..n`) or a `Range<usize>`.
pub trait NestedBounds {
    /// The range.
    fn into_range(self) -> Range<usize>;
}

impl NestedBounds for usize {
    fn into_range(self) -> Range<usize> {
        0..self
    }
}

impl NestedBounds for Range<usize> {
    fn into_range(self) -> Range<usize> {
        self
    }
}

fn checked_nested(kind: &str, range: Range<usize>) -> Range<usize> {
    // Inside a kernel there is no Result to return: a bad nested range panics, and the launch
    // turns the panic into `Error::KernelPanicked` naming this message.
    assert!(
        range.start <= range.end,
        "{kind}: begin {} is greater than end {}; a nested range needs begin <= end",
        range.start,
        range.end
    );
    range
}

macro_rules! nested_range {
    ($(#[$doc:meta])* $name:ident, $level:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'m, M: TeamMember> {
            member: &'m M,
            range: Range<usize>,
        }

        impl<'m, M: TeamMember> $name<'m, M> {
            /// The range `bounds` (a count or `begin..end`) of `member`'s team.
            ///
            /// # Panics
            ///
            /// If `begin > end`; inside a launch the panic becomes
            /// [`Error::KernelPanicked`] with this message.
            pub fn new(member: &'m M, bounds: impl NestedBounds) -> Self {
                let range = checked_nested(stringify!($name), bounds.into_range());
                $name { member, range }
            }

            /// Reduces with `reducer`; every participating thread gets the result.
            pub fn parallel_reduce<R, F>(self, kernel: F, reducer: R) -> R::Value
            where
                R: Reducer,
                R::Value: Clone + Send + Sync + 'static,
                F: for<'i> Fn(Idx<'i>, &mut R::Value),
            {
                self.member.nested_reduce($level, self.range, kernel, &reducer)
            }
        }
    };
}

nested_range!(
    /// A range split over the threads of a team (Kokkos `TeamThreadRange`).
    ///
    /// ```
    /// use hoplite_core::{parallel_reduce, Sum, TeamMember, TeamPolicy, TeamThreadRange};
    /// use hoplite_serial::Serial;
    /// let rows = parallel_reduce("rows", TeamPolicy::new(Serial::default(), 4, 1), |m, acc: &mut usize| {
    ///     let row = m.league_rank();
    ///     let s = TeamThreadRange::new(m, 10).parallel_reduce(|j, s: &mut usize| *s += row * 10 + *j, Sum::new());
    ///     if m.team_rank() == 0 { *acc += s; }
    /// }, Sum::new())?;
    /// assert_eq!(rows, (0..40).sum());
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    TeamThreadRange,
    NestedLevel::TeamThread
);
nested_range!(
    /// A range split over the vector lanes of one thread (Kokkos `ThreadVectorRange`).
    ThreadVectorRange,
    NestedLevel::ThreadVector
);
nested_range!(
    /// A range split over all threads and lanes of a team (Kokkos `TeamVectorRange`).
    TeamVectorRange,
    NestedLevel::TeamVector
);

macro_rules! team_level_for {
    ($name:ident) => {
        impl<'m, M: TeamMember> $name<'m, M> {
            /// Runs `kernel` once per index, each on the thread of the team that owns it (see
            /// [`team_owner`](crate::index::team_owner)). The kernel gets a [`TeamIdx`], with
            /// which it stores into the team's row of a writer
            /// ([`BoundWriter::team_row`](crate::BoundWriter::team_row)). There is no barrier
            /// at the end (as in Kokkos): call `team_barrier` before reading what other threads
            /// stored. The kernel runs on the calling thread, so it may capture the member and
            /// the team's rows (which are not `Sync`) and update local state (`FnMut`).
            ///
            /// The tokens carry the brand of the member's borrow `'m` — in a team kernel the
            /// launch's brand — so they index the rows of that launch's writers only: a member
            /// of another launch (a nested team launch, where one thread owns every column)
            /// cannot make tokens for this launch's rows. Ownership is by index for the whole
            /// launch, so a token may outlive its iteration on its thread.
            #[inline(always)]
            pub fn parallel_for<F>(self, mut kernel: F)
            where
                F: FnMut(TeamIdx<'m>),
            {
                let m = self.member;
                for_each_owned(
                    self.range,
                    m.team_rank(),
                    m.team_size(),
                    M::TEAM_BLOCK,
                    |j| {
                        // SAFETY: `for_each_owned` yields only the indices `team_owner` gives this
                        // thread's team rank, for the block size of this member type, and the
                        // owner of an index is fixed for the whole launch; the member (and so
                        // this loop) runs on one thread, tokens are not `Send`, and they carry
                        // the brand of the member's borrow, so they cannot leave the launch.
                        kernel(unsafe { TeamIdx::new_unchecked(j) })
                    },
                )
            }

            /// Scans the range (Kokkos' `(j, partial, is_final)` scan functor) and returns the
            /// total on every thread. Each index runs on the thread that owns it, as in
            /// [`parallel_for`](Self::parallel_for), so the kernel's [`TeamIdx`] stores the
            /// scan's output into the team's row of a writer:
            /// `if is_final { row.set(j, *partial) } *partial += x.get(*j)`.
            ///
            /// Two passes over this thread's blocks of the range: the first (`is_final` false)
            /// sums each block, a team reduction gives every thread all block sums, and the
            /// second (`is_final` true) runs each block from the sum of the blocks before it.
            /// A team collective: every thread of the team calls it with the same range.
            ///
            /// ```
            /// use hoplite_core::{parallel_for, TeamMember, TeamPolicy, TeamThreadRange, View};
            /// use hoplite_serial::Serial;
            /// let offsets: View<usize, 2> = View::new("offsets", [2, 5])?;
            /// parallel_for("row scan", (TeamPolicy::new(Serial::default(), 2, 1), (offsets.write(),)), |(m, (o,))| {
            ///     let row = o.team_row(m.league_token());
            ///     let total = TeamThreadRange::new(m, 5).parallel_scan(|j, partial: &mut usize, is_final| {
            ///         if is_final { row.set(j, *partial) } // exclusive prefix
            ///         *partial += *j + m.league_rank();
            ///     });
            ///     assert_eq!(total, 10 + 5 * m.league_rank());
            /// })?;
            /// assert_eq!(offsets.to_vec()?, [0, 0, 1, 3, 6, 0, 1, 3, 6, 10]);
            /// # Ok::<(), hoplite_core::Error>(())
            /// ```
            pub fn parallel_scan<T, F>(self, mut kernel: F) -> T
            where
                T: ScanValue,
                F: FnMut(TeamIdx<'m>, &mut T, bool),
            {
                let m = self.member;
                let (rank, size, block) = (m.team_rank(), m.team_size(), M::TEAM_BLOCK.max(1));
                let range = self.range;
                // Called only with indices this thread owns: all of them in a team of one,
                // else those of `OwnedRanges`.
                let token = |j: usize| {
                    // SAFETY: `j` is an index `team_owner` gives this thread's team rank for
                    // this member type's block size (`OwnedRanges` yields exactly those, as
                    // `for_each_owned` does for `parallel_for`, and a team of one owns every
                    // index); the rest of `parallel_for`'s argument holds unchanged.
                    unsafe { TeamIdx::new_unchecked(j) }
                };
                if size == 1 {
                    let mut partial = T::zero();
                    for j in range {
                        kernel(token(j), &mut partial, true);
                    }
                    return partial;
                }
                let first_block = range.start / block;
                let blocks = if range.is_empty() {
                    0
                } else {
                    (range.end - 1) / block + 1 - first_block
                };
                let mut sums: Vec<Option<T>> = vec![None; blocks];
                for run in OwnedRanges::new(range.clone(), rank, size, block) {
                    let mut sum = T::zero();
                    let at = run.start / block - first_block;
                    for j in run {
                        kernel(token(j), &mut sum, false);
                    }
                    sums[at] = Some(sum);
                }
                // Every block's sum on every thread: each slot is filled by its owner only.
                let merge = Custom::new(
                    move || vec![None; blocks],
                    |dst: &mut Vec<Option<T>>, src: Vec<Option<T>>| {
                        for (d, s) in dst.iter_mut().zip(src) {
                            if s.is_some() {
                                *d = s;
                            }
                        }
                    },
                );
                let sums = m.team_reduce(&merge, sums);
                let mut prefixes = Vec::with_capacity(blocks);
                let mut total = T::zero();
                for sum in &sums {
                    prefixes.push(total);
                    total = total + sum.unwrap_or_else(T::zero);
                }
                for run in OwnedRanges::new(range, rank, size, block) {
                    let mut partial = prefixes[run.start / block - first_block];
                    for j in run {
                        kernel(token(j), &mut partial, true);
                    }
                }
                total
            }
        }
    };
}

team_level_for!(TeamThreadRange);
team_level_for!(TeamVectorRange);

impl<M: TeamMember> ThreadVectorRange<'_, M> {
    /// Scans (`(i, partial, is_final)`) on this thread's vector lanes; returns the total.
    pub fn parallel_scan<T, F>(self, kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool),
    {
        self.member
            .nested_scan(NestedLevel::ThreadVector, self.range, kernel)
    }

    /// Runs `kernel` once per index on the calling thread (its vector lanes), in order; the
    /// kernel may update local state (`FnMut`). The tokens index reads and thread-private
    /// data; stores into views go through team-level loops.
    #[inline(always)]
    pub fn parallel_for<F>(self, mut kernel: F)
    where
        F: for<'i> FnMut(Idx<'i>),
    {
        for j in self.range {
            // SAFETY: a sequential loop on this thread hands each index to one iteration at a
            // time, through a kernel generic over the brand.
            kernel(unsafe { Idx::new_unchecked(j) })
        }
    }
}

/// An element type that can live in scratch memory: a primitive number.
///
/// Scratch is shared between the threads of a team, so elements are stored in atomics and
/// accessed with relaxed loads and stores (plain moves on every mainstream CPU); the team
/// barrier orders them. That keeps scratch sound in safe code without a per-access cost.
///
/// # Safety
///
/// [`ScratchPad::alloc`] carves `Self::Atomic` cells out of 8-byte-aligned words of zeroed or
/// previously used scratch memory, shared by the team's threads. An implementation promises
/// that `Atomic` is an atomic type (safe to load and store from several threads at once),
/// at most 8 bytes in size and alignment, with no invalid bit patterns and no drop glue.
pub unsafe trait ScratchElement: Copy + Send + Sync + 'static {
    /// The atomic type that stores one element.
    type Atomic: Send + Sync + 'static;
    /// Relaxed load.
    fn load(cell: &Self::Atomic) -> Self;
    /// Relaxed store.
    fn store(cell: &Self::Atomic, value: Self);
}

macro_rules! scratch_element {
    ($($t:ty => $atomic:ty, $to:expr, $from:expr;)*) => {$(
        // SAFETY: `$atomic` is a standard atomic of 4 or 8 bytes: every bit pattern is valid,
        // it needs no drop, and its loads and stores are atomic.
        unsafe impl ScratchElement for $t {
            type Atomic = $atomic;
            #[inline(always)]
            fn load(cell: &$atomic) -> $t {
                let f: fn(_) -> $t = $from;
                f(cell.load(Ordering::Relaxed))
            }
            #[inline(always)]
            fn store(cell: &$atomic, value: $t) {
                let f: fn($t) -> _ = $to;
                cell.store(f(value), Ordering::Relaxed)
            }
        }
    )*};
}

scratch_element! {
    u32 => AtomicU32, |v| v, |v| v;
    i32 => AtomicI32, |v| v, |v| v;
    f32 => AtomicU32, f32::to_bits, f32::from_bits;
    u64 => AtomicU64, |v| v, |v| v;
    i64 => AtomicI64, |v| v, |v| v;
    f64 => AtomicU64, f64::to_bits, f64::from_bits;
    usize => AtomicUsize, |v| v, |v| v;
}

/// A team's (or a thread's) scratch memory: a bump allocator over a region of 8-byte words.
///
/// Every thread of a team makes the same allocations in the same order and so gets the same
/// slices, as in Kokkos. Backends make one per member with [`ScratchPad::with_level`].
#[derive(Debug)]
pub struct ScratchPad<'s> {
    words: &'s [AtomicU64],
    used_bytes: Cell<usize>,
    level: usize,
}

impl<'s> ScratchPad<'s> {
    /// A level-0 pad over `words`, with nothing allocated.
    pub fn new(words: &'s [AtomicU64]) -> Self {
        Self::with_level(words, 0)
    }

    /// A pad of scratch level `level` over `words`, with nothing allocated; the level is what
    /// a failed [`alloc`](Self::alloc) reports.
    pub fn with_level(words: &'s [AtomicU64], level: usize) -> Self {
        ScratchPad {
            words,
            used_bytes: Cell::new(0),
            level,
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.words.len() * 8
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.capacity() - self.used_bytes.get()
    }

    /// Forgets every allocation (backends call this between teams).
    pub fn reset(&self) {
        self.used_bytes.set(0);
    }

    /// Allocates `len` elements of `T`.
    ///
    /// Fails with [`Error::ScratchTooLarge`] if the pad has less room than `len` elements
    /// need; ask for more with `TeamPolicy::with_scratch_size`.
    pub fn alloc<T: ScratchElement>(&self, len: usize) -> Result<ScratchSlice<'s, T>> {
        let size = size_of::<T::Atomic>();
        let align = align_of::<T::Atomic>();
        // Atomics are at most 8 bytes and 8-aligned, so the word-aligned base serves every T.
        let start = self.used_bytes.get().next_multiple_of(align);
        let bytes = len.checked_mul(size);
        let end = bytes.and_then(|b| start.checked_add(b));
        match end {
            Some(end) if end <= self.capacity() => {
                self.used_bytes.set(end);
                let base = self.words.as_ptr().cast::<u8>();
                // SAFETY: `start..end` lies inside `words` (checked above), `start` is a
                // multiple of `align_of::<T::Atomic>()` and the base is 8-aligned, so the
                // pointer is aligned for `T::Atomic`. The atomics used here have no invalid bit
                // patterns and the same size as their storage, so reading the bytes of the
                // `AtomicU64` words as `len` values of `T::Atomic` is valid; every access goes
                // through atomic operations, so threads sharing the region do not race. The
                // bump pointer never hands out the same bytes twice before `reset`, which
                // backends call only between teams (after a barrier).
                let cells = unsafe { std::slice::from_raw_parts(base.add(start).cast::<T::Atomic>(), len) };
                Ok(ScratchSlice {
                    cells,
                    _t: PhantomData,
                })
            }
            _ => Err(Error::ScratchTooLarge {
                label: "scratch allocation".to_owned(),
                level: self.level,
                requested: bytes.unwrap_or(usize::MAX),
                max: self.remaining(),
            }),
        }
    }
}

/// `len` elements of `T` in scratch memory.
#[derive(Debug)]
pub struct ScratchSlice<'s, T: ScratchElement> {
    cells: &'s [T::Atomic],
    _t: PhantomData<T>,
}

impl<T: ScratchElement> ScratchSlice<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The element at `i` (panics if out of bounds).
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        T::load(&self.cells[i])
    }

    /// Stores `value` at `i` (panics if out of bounds).
    #[inline(always)]
    pub fn set(&self, i: usize, value: T) {
        T::store(&self.cells[i], value)
    }

    /// Stores `value` everywhere.
    pub fn fill(&self, value: T) {
        for c in self.cells {
            T::store(c, value);
        }
    }
}

/// `n` zeroed atomic words, or `None` if they cannot be allocated (never an abort). The memory
/// comes zeroed from the allocator (`alloc_zeroed`), so the pages of a large block are not
/// touched until used.
pub(crate) fn zeroed_words(n: usize) -> Option<Box<[AtomicU64]>> {
    if n == 0 {
        return Some(Box::default());
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(n).ok()?;
    // SAFETY: `layout` has a non-zero size (`n > 0`).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` is a fresh allocation of the global allocator with the layout of
    // `[AtomicU64; n]`, which is what `Box<[AtomicU64]>` frees it with; all-zero bytes are a
    // valid `AtomicU64` (0); nothing else points to it.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) })
}

/// Owns the scratch words of one level for a launch; backends carve pads out of it.
#[derive(Debug, Default)]
pub struct ScratchBuffer {
    words: Box<[AtomicU64]>,
}

impl ScratchBuffer {
    /// A zeroed buffer of at least `bytes` bytes for launch `label` on execution space
    /// `space`, or [`Error::AllocationFailed`] (nothing aborts, whatever `bytes` is).
    ///
    /// The memory comes zeroed from the allocator (`alloc_zeroed`), so the pages of a large
    /// buffer are not touched until a kernel uses them.
    ///
    /// ```
    /// use hoplite_core::{Error, ScratchBuffer};
    /// let buffer = ScratchBuffer::try_new("k", "Serial", 100)?;
    /// assert_eq!(buffer.words().len(), 13);
    /// let too_big = ScratchBuffer::try_new("k", "Serial", usize::MAX);
    /// assert!(matches!(too_big, Err(Error::AllocationFailed { .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn try_new(label: &str, space: &'static str, bytes: usize) -> Result<Self> {
        let words = bytes.div_ceil(8);
        let failed = |reason: &str| Error::AllocationFailed {
            label: format!("{label} (team scratch)"),
            bytes,
            space,
            reason: reason.to_owned(),
        };
        let words = zeroed_words(words).ok_or_else(|| failed("out of memory or size overflow"))?;
        Ok(ScratchBuffer { words })
    }

    /// The words.
    pub fn words(&self) -> &[AtomicU64] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_allocations_are_aligned_disjoint_and_bounded() {
        let buffer = ScratchBuffer::try_new("t", "test", 64).expect("64 bytes");
        let pad = ScratchPad::new(buffer.words());
        let a = pad.alloc::<f32>(3).expect("12 bytes fit");
        let b = pad.alloc::<f64>(2).expect("16 more bytes fit");
        a.fill(1.5);
        b.set(0, 2.5);
        b.set(1, -1.0);
        assert_eq!((a.get(0), a.get(2), b.get(0), b.get(1)), (1.5, 1.5, 2.5, -1.0));
        // 12 bytes rounded up to 16 for the f64s, plus 16: 32 used, 32 left.
        assert_eq!(pad.remaining(), 32);
        let err = pad.alloc::<u64>(5).expect_err("40 bytes do not fit in 32");
        assert!(
            matches!(
                err,
                Error::ScratchTooLarge {
                    requested: 40,
                    max: 32,
                    ..
                }
            ),
            "{err}"
        );
        pad.reset();
        assert_eq!(pad.remaining(), 64);
        assert!(pad.alloc::<u32>(0).is_ok_and(|s| s.is_empty()));
    }
}
