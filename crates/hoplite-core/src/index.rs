//! Iteration tokens: the index a launch hands to one iteration of a kernel.
//!
//! A token is the proof that "this iteration owns this index". Writers (see the views module)
//! store only at the token of the current iteration, which is what makes data-parallel writes
//! race-free in safe Rust. Three properties make that proof unforgeable:
//!
//! * only backends make tokens, through `unsafe` constructors whose contract is that each index
//!   is handed to exactly one iteration at a time;
//! * a token carries the invariant lifetime brand `'it` of the launch that made it, and kernels
//!   are `for<'it> Fn(Idx<'it>)`, so a token cannot be stored past its iteration;
//! * tokens are `Copy` but neither `Send` nor `Sync`, so they cannot be smuggled to another
//!   thread.
//!
//! For reading, a token is just its index: `*i`, `i.get()`, `i + 1` and `usize::from(i)` all
//! give plain `usize` values.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Add, Deref, Sub};

/// Invariant in `'it`, and `!Send + !Sync` through the raw pointer: the brand of tokens and of
/// the handles bound to a launch.
pub(crate) type Brand<'it> = PhantomData<(fn(&'it ()) -> &'it (), *const ())>;

/// The index of one iteration of a one-dimensional launch (range policies, nested ranges).
///
/// ```
/// use hoplite_core::Idx;
/// fn body(i: Idx<'_>) -> usize {
///     *i + (i + 1) + i.get() // a token reads as a plain index
/// }
/// # let _ = body;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Idx<'it> {
    index: usize,
    brand: Brand<'it>,
}

impl<'it> Idx<'it> {
    /// Makes the token of index `index` for one iteration of a launch.
    ///
    /// # Safety
    ///
    /// For backend authors only. While this token (or a copy) is alive, no other live token of
    /// the same launch may carry the same index: each index is handed to exactly one iteration
    /// at a time, and the token is used only on the thread that runs that iteration. The launch
    /// must pass the token to a kernel that is generic over `'it`
    /// (`for<'it> Fn(Idx<'it>, ..)`), so the token cannot outlive the iteration.
    #[inline(always)]
    pub unsafe fn new_unchecked(index: usize) -> Self {
        Idx {
            index,
            brand: PhantomData,
        }
    }

    /// The index as a plain number.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }
}

impl From<Idx<'_>> for usize {
    #[inline(always)]
    fn from(i: Idx<'_>) -> usize {
        i.index
    }
}

impl Add<usize> for Idx<'_> {
    type Output = usize;
    #[inline(always)]
    fn add(self, rhs: usize) -> usize {
        self.index + rhs
    }
}

impl Sub<usize> for Idx<'_> {
    type Output = usize;
    #[inline(always)]
    fn sub(self, rhs: usize) -> usize {
        self.index - rhs
    }
}

impl fmt::Display for Idx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.index, f)
    }
}

/// The index of one iteration of a rank-`R` [`MDRangePolicy`](crate::MDRangePolicy) launch.
///
/// ```
/// use hoplite_core::MdIdx;
/// fn body(ij: MdIdx<'_, 2>) -> usize {
///     let [i, j] = *ij;
///     i * 10 + j + ij[1]
/// }
/// # let _ = body;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MdIdx<'it, const R: usize> {
    index: [usize; R],
    brand: Brand<'it>,
}

impl<'it, const R: usize> MdIdx<'it, R> {
    /// Makes the token of the multi-index `index` for one iteration of a launch.
    ///
    /// # Safety
    ///
    /// The same contract as [`Idx::new_unchecked`]: each multi-index is handed to exactly one
    /// iteration at a time, on one thread, through a kernel generic over `'it`.
    #[inline(always)]
    pub unsafe fn new_unchecked(index: [usize; R]) -> Self {
        MdIdx {
            index,
            brand: PhantomData,
        }
    }

    /// The multi-index as plain numbers.
    #[inline(always)]
    pub fn get(self) -> [usize; R] {
        self.index
    }
}

impl<const R: usize> Deref for MdIdx<'_, R> {
    type Target = [usize; R];
    #[inline(always)]
    fn deref(&self) -> &[usize; R] {
        &self.index
    }
}

impl<const R: usize> fmt::Debug for MdIdx<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MdIdx{:?}", self.index)
    }
}

/// The league rank of a team, as every thread of the team holds it (from
/// [`TeamMember::league_token`](crate::TeamMember::league_token)).
///
/// It is not a write token — all threads of the team hold the same one — but it selects the
/// row of a rank-2 writer that the team owns ([`BoundWriter::team_row`](crate::BoundWriter::team_row)),
/// and on one thread of the team it becomes the write token of the league rank itself
/// ([`single`](Self::single)). Like every token it is branded with its launch, `Copy`, and
/// neither `Send` nor `Sync`.
///
/// ```
/// use hoplite_core::{parallel_for, TeamMember, TeamPolicy, View};
/// use hoplite_serial::Serial;
/// let y: View<usize, 1> = View::new("y", [4])?;
/// parallel_for("ranks", (TeamPolicy::new(Serial::default(), 4, 1), (y.write(),)), |(m, (y,))| {
///     let league = m.league_token();
///     if let Some(i) = league.single() {
///         y.set(i, 10 * *league);
///     }
/// })?;
/// assert_eq!(y.to_vec()?, [0, 10, 20, 30]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeagueToken<'it> {
    index: usize,
    leader: bool,
    brand: Brand<'it>,
}

impl<'it> LeagueToken<'it> {
    /// Makes the league token of a team thread.
    ///
    /// # Safety
    ///
    /// For backend authors (the provided [`TeamMember::league_token`](crate::TeamMember::league_token)
    /// calls it). Within one launch, `rank` is the league rank of exactly one team, every token
    /// of brand `'it` with that rank is made on a thread of that team, and `leader` is true on
    /// exactly one of those threads. The token is used only on the thread that made it, and the
    /// launch passes it (through the team member) to a kernel generic over `'it`.
    #[inline(always)]
    pub unsafe fn new_unchecked(rank: usize, leader: bool) -> Self {
        LeagueToken {
            index: rank,
            leader,
            brand: PhantomData,
        }
    }

    /// The league rank as a plain number.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }

    /// The league rank as a write token, on one thread of the team (team rank 0) and `None`
    /// on the others: the Kokkos `single(PerTeam(member), ..)` of a store at the league rank.
    #[inline(always)]
    pub fn single(self) -> Option<LeagueIdx<'it>> {
        self.leader.then_some(LeagueIdx {
            index: self.index,
            brand: PhantomData,
        })
    }
}

/// The slot `[league rank, team rank]` of one team thread: the token a
/// [`TeamSlots`](crate::TeamSlots) handle stores at (per-thread partial results of a team
/// launch, Kokkos' `y(league_rank, team_rank) = ...`). Made by
/// [`TeamMember::team_slot`](crate::TeamMember::team_slot); each launch hands every pair to
/// exactly one thread.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TeamSlotIdx<'it> {
    index: [usize; 2],
    brand: Brand<'it>,
}

impl TeamSlotIdx<'_> {
    /// Makes the slot token of a team thread.
    ///
    /// # Safety
    ///
    /// Within one launch, `[league, rank]` is the league and team rank of exactly one thread,
    /// every token of brand `'it` with that pair is made on that thread and used only there,
    /// and the launch passes it (through the team member) to a kernel generic over `'it`.
    #[inline(always)]
    pub(crate) unsafe fn new_unchecked(league: usize, rank: usize) -> Self {
        TeamSlotIdx {
            index: [league, rank],
            brand: PhantomData,
        }
    }

    /// `[league rank, team rank]`.
    #[inline(always)]
    pub fn get(self) -> [usize; 2] {
        self.index
    }
}

impl fmt::Debug for TeamSlotIdx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TeamSlotIdx({:?})", self.index)
    }
}

/// The league rank as a write token, held by one thread of the team
/// ([`LeagueToken::single`]). A rank-1 writer stores at it; because a team kernel has no
/// launch-wide range to check it against, that store checks the extent (one compare per
/// team).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeagueIdx<'it> {
    index: usize,
    brand: Brand<'it>,
}

impl LeagueIdx<'_> {
    /// The league rank as a plain number.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }
}

/// The index of one iteration of a team-level nested loop
/// ([`TeamThreadRange`](crate::TeamThreadRange), [`TeamVectorRange`](crate::TeamVectorRange)).
///
/// Team loops hand index `j` always to the same thread of the team — the owner of `j`'s block,
/// see [`team_owner`] — whatever the loop's range. So a team's row
/// ([`BoundWriter::team_row`](crate::BoundWriter::team_row)) has one owner per element for the
/// whole launch, and stores through it need no barrier to be race-free, even across loops of
/// different lengths.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TeamIdx<'i> {
    index: usize,
    brand: Brand<'i>,
}

impl TeamIdx<'_> {
    /// Makes the token of index `index` for one iteration of a team-level nested loop.
    ///
    /// # Safety
    ///
    /// The calling thread has team rank `r` in a team of `n` threads of a
    /// [`TeamMember`](crate::TeamMember) type `M`, `team_owner(index, n, M::TEAM_BLOCK) == r`,
    /// the token is used only on this thread, and `'i` is the borrow of that member, which a
    /// launch hands out at the launch's own brand (so the token indexes only that launch's
    /// team rows).
    #[inline(always)]
    pub(crate) unsafe fn new_unchecked(index: usize) -> Self {
        TeamIdx {
            index,
            brand: PhantomData,
        }
    }

    /// The index as a plain number.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }
}

impl Add<usize> for TeamIdx<'_> {
    type Output = usize;
    #[inline(always)]
    fn add(self, rhs: usize) -> usize {
        self.index + rhs
    }
}

/// The team rank that owns index `index` in team-level nested loops of a team of `team_size`
/// threads: indices go to threads in blocks of `block`, round robin. The owner depends on the
/// index alone, never on a loop's range.
///
/// ```
/// use hoplite_core::team_owner;
/// assert_eq!([0, 15, 16, 31, 32].map(|j| team_owner(j, 2, 16)), [0, 0, 1, 1, 0]);
/// ```
#[inline(always)]
pub fn team_owner(index: usize, team_size: usize, block: usize) -> usize {
    (index / block.max(1)) % team_size.max(1)
}

/// Calls `f` with every index of `range` that [`team_owner`] gives to `team_rank`, in order.
#[inline(always)]
pub(crate) fn for_each_owned(
    range: std::ops::Range<usize>,
    team_rank: usize,
    team_size: usize,
    block: usize,
    mut f: impl FnMut(usize),
) {
    // One call site of `f`, inside plain loops: a kernel called from two places (the
    // one-thread case and the general one) was compiled out of line, and a vector loop in it
    // then read everything it captured through memory on every iteration (a team-plane kernel
    // ran 2.6x slower than the same loops on slices).
    for owned in OwnedRanges::new(range, team_rank, team_size, block) {
        for j in owned {
            f(j);
        }
    }
}

/// The runs of consecutive indices of a range that one team rank owns, in order.
pub(crate) struct OwnedRanges {
    /// The next block that may hold owned indices.
    block_index: usize,
    /// Blocks between two owned ones (the team size).
    step: usize,
    block: usize,
    start: usize,
    end: usize,
}

impl OwnedRanges {
    #[inline(always)]
    pub(crate) fn new(
        range: std::ops::Range<usize>,
        team_rank: usize,
        team_size: usize,
        block: usize,
    ) -> Self {
        if team_size <= 1 {
            // Everything is owned: one block covering the range.
            return OwnedRanges {
                block_index: 0,
                step: 1,
                block: range.end,
                start: range.start,
                end: range.end,
            };
        }
        let block = block.max(1);
        let first = range.start / block;
        OwnedRanges {
            // The first block at or after `first` whose owner is `team_rank`.
            block_index: first + (team_rank + team_size - first % team_size) % team_size,
            step: team_size,
            block,
            start: range.start,
            end: range.end,
        }
    }
}

impl Iterator for OwnedRanges {
    type Item = std::ops::Range<usize>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let lo = self.block_index.checked_mul(self.block)?;
        // An empty range owns no run, not even an empty one (a team scan indexes its block
        // sums by run, and an empty range has no blocks).
        if lo >= self.end || self.start >= self.end {
            return None;
        }
        let hi = lo.saturating_add(self.block).min(self.end);
        // Past the last representable block, the next call stops: block `usize::MAX` starts at
        // or after `usize::MAX`, or overflows.
        self.block_index = self.block_index.saturating_add(self.step);
        Some(lo.max(self.start)..hi)
    }
}

/// The one-index tokens read as their index (`*i`) and print as `Name(index)`.
macro_rules! reads_as_index {
    ($($name:ident),*) => {$(
        impl Deref for $name<'_> {
            type Target = usize;
            #[inline(always)]
            fn deref(&self) -> &usize {
                &self.index
            }
        }

        impl fmt::Debug for $name<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.index)
            }
        }
    )*};
}

reads_as_index!(Idx, LeagueToken, LeagueIdx, TeamIdx);

/// The index space a launch covers, for checking handles against it once per launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexBounds {
    /// A one-dimensional range `begin..end`.
    Range {
        /// First index.
        begin: usize,
        /// One past the last index.
        end: usize,
    },
    /// A box `lo..hi` of rank `rank` (entries past the rank are unused).
    Box {
        /// Rank of the box.
        rank: usize,
        /// Lower corner.
        lo: [usize; 8],
        /// Upper corner (exclusive).
        hi: [usize; 8],
    },
    /// A league of teams; team kernels have no element tokens of the launch.
    League {
        /// Number of teams.
        size: usize,
    },
}

impl IndexBounds {
    /// The rank of the iteration tokens, and the exclusive upper bound of each dimension.
    pub(super) fn token_extents(&self) -> Option<(usize, [usize; 8], [usize; 8])> {
        match *self {
            IndexBounds::Range { begin, end } => {
                let mut lo = [0; 8];
                let mut hi = [0; 8];
                lo[0] = begin;
                hi[0] = end;
                Some((1, lo, hi))
            }
            IndexBounds::Box { rank, lo, hi } => Some((rank, lo, hi)),
            IndexBounds::League { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_range_owns_no_runs() {
        // 20..20 lies inside block 1 of 16: no rank gets a run, empty or not.
        for rank in 0..3 {
            assert_eq!(OwnedRanges::new(20..20, rank, 3, 16).count(), 0, "rank {rank}");
        }
        let runs: Vec<(usize, usize)> = OwnedRanges::new(20..40, 1, 2, 16)
            .map(|r| (r.start, r.end))
            .collect();
        assert_eq!(runs, [(20, 32)]);
    }

    #[test]
    fn tokens_read_as_plain_indices() {
        // SAFETY: a single token of index 7, used only on this thread.
        let i = unsafe { Idx::new_unchecked(7) };
        assert_eq!(*i, 7);
        assert_eq!(i + 1, 8);
        assert_eq!(i - 7, 0);
        assert_eq!(usize::from(i), 7);
        assert_eq!(format!("{i} {i:?}"), "7 Idx(7)");
        // SAFETY: a single token of index [1, 2], used only on this thread.
        let ij = unsafe { MdIdx::new_unchecked([1, 2]) };
        assert_eq!(ij[0] * 10 + ij[1], 12);
        assert_eq!(ij.get(), [1, 2]);
    }

    #[test]
    fn owned_shares_partition_any_range_by_index_alone() {
        for team_size in 1..5 {
            for block in [1, 3, 16] {
                for range in [0..0, 0..1, 5..70, 15..17, 31..200] {
                    let mut seen = vec![0u8; range.end];
                    for rank in 0..team_size {
                        for_each_owned(range.clone(), rank, team_size, block, |j| {
                            assert_eq!(
                                team_owner(j, team_size, block),
                                rank,
                                "{j} given to the wrong rank"
                            );
                            seen[j] += 1;
                        });
                    }
                    for (j, &count) in seen.iter().enumerate() {
                        assert_eq!(count, u8::from(range.contains(&j)), "index {j} of {range:?}");
                    }
                }
            }
        }
        // Near the top of usize the block arithmetic saturates instead of overflowing.
        let mut last = Vec::new();
        for_each_owned(usize::MAX - 3..usize::MAX, 0, 2, 1, |j| last.push(j));
        assert_eq!(last.len(), 2);
    }
}
