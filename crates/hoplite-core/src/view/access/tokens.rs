//! What a handle can be indexed with: plain indices ([`ViewIndex`]), iteration tokens
//! ([`Token`]) and read indices ([`ReadIndex`]).

use crate::index::{Idx, LeagueIdx, LeagueToken, MdIdx, TeamIdx};

mod sealed {
    pub trait Sealed {}
}

/// An index a handle accepts anywhere: a number for rank 1, an array, or a token (read as its
/// plain value). Such accesses are bounds-checked.
pub trait ViewIndex<const R: usize>: Copy + sealed::Sealed {
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl sealed::Sealed for usize {}
impl<const R: usize> sealed::Sealed for [usize; R] {}
impl sealed::Sealed for Idx<'_> {}
impl<const R: usize> sealed::Sealed for MdIdx<'_, R> {}
impl sealed::Sealed for LeagueIdx<'_> {}
impl sealed::Sealed for LeagueToken<'_> {}
impl sealed::Sealed for TeamIdx<'_> {}

/// Team tokens read as their plain index anywhere (checked).
macro_rules! plain_view_index {
    ($($t:ident),*) => {$(
        impl ViewIndex<1> for $t<'_> {
            #[inline(always)]
            fn index(self) -> [usize; 1] {
                [self.get()]
            }
        }
    )*};
}

plain_view_index!(LeagueIdx, LeagueToken, TeamIdx);

impl ViewIndex<1> for usize {
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self]
    }
}

impl<const R: usize> ViewIndex<R> for [usize; R] {
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self
    }
}

impl ViewIndex<1> for Idx<'_> {
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl<const R: usize> ViewIndex<R> for MdIdx<'_, R> {
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

/// An iteration token of the launch with brand `'it`, of rank `R`: what bound writers store
/// at. [`Idx`] (rank 1) and [`MdIdx`] are tokens of ranges the launch checked against every
/// handle; [`LeagueIdx`] (rank 1) is the league rank of a team launch, which no launch-wide
/// range covers, so accesses at it are checked. The trait is sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an iteration token of this launch",
    label = "writers store only at the launch's own tokens",
    note = "pass the kernel's token (`i` of `|(i, (y,))|`, or the `MdIdx` of an MDRange launch) to `set`; to store at an index the kernel computes, take an atomic handle (`view.atomic()`) or a `team_slots` handle",
    note = "to read at a computed index, use `neighbor(token, offset)` or a `lookup()` handle"
)]
pub trait Token<'it, const R: usize>: Copy + sealed::Sealed {
    /// Whether an access at this token must be checked against the extents.
    const CHECKED: bool;
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl<'it> Token<'it, 1> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

/// A rank-0 view has one element: a writer of it accepts the token of a launch with one
/// iteration (the launch refuses a rank-0 writer when it has more,
/// [`Error::ScalarWriterInWideLaunch`](crate::Error::ScalarWriterInWideLaunch)), so exactly one iteration stores it.
impl<'it> Token<'it, 0> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 0] {
        []
    }
}

impl<'it, const R: usize> Token<'it, R> for MdIdx<'it, R> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

impl<'it> Token<'it, 1> for LeagueIdx<'it> {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

/// What a bound reader takes: a token of its launch (unchecked) or any plain index (checked).
pub trait ReadIndex<'it, const R: usize>: Copy + sealed::Sealed {
    /// Whether the index must be checked against the extents.
    const CHECKED: bool;
    /// The multi-index.
    fn index(self) -> [usize; R];
}

impl<'it> ReadIndex<'it, 1> for Idx<'it> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl<'it, const R: usize> ReadIndex<'it, R> for MdIdx<'it, R> {
    const CHECKED: bool = false;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self.get()
    }
}

impl<'it> ReadIndex<'it, 1> for LeagueIdx<'it> {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self.get()]
    }
}

impl ReadIndex<'_, 1> for usize {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; 1] {
        [self]
    }
}

impl<const R: usize> ReadIndex<'_, R> for [usize; R] {
    const CHECKED: bool = true;
    #[inline(always)]
    fn index(self) -> [usize; R] {
        self
    }
}
