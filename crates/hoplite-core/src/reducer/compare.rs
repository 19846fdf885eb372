//! The comparison rules the min/max and location reducers share: NaN never wins, and ties go
//! to the lowest location (or the highest, for the `Last` variants).

use std::cmp::Ordering;

/// Which end of the order a comparison reducer is after.
#[derive(Clone, Copy)]
pub(super) enum Dir {
    Min,
    Max,
}

/// Which index wins when two values compare equal.
#[derive(Clone, Copy)]
pub(super) enum Tie {
    Lowest,
    Highest,
}

/// `true` for values not comparable with themselves (NaN).
#[inline]
pub(super) fn is_unordered<T: PartialOrd>(x: &T) -> bool {
    x.partial_cmp(x).is_none()
}

/// Ranks `a` against `b`: `Less` means `a` is better for `dir`.
///
/// Unordered values (NaN) rank below every ordered value and equal to each
/// other; two ordered but incomparable values rank equal.
#[inline]
pub(super) fn rank<T: PartialOrd>(dir: Dir, a: &T, b: &T) -> Ordering {
    match (is_unordered(a), is_unordered(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => {
            let ord = a.partial_cmp(b).unwrap_or(Ordering::Equal);
            match dir {
                Dir::Min => ord,
                Dir::Max => ord.reverse(),
            }
        }
    }
}

/// Whether `new` is strictly better than `cur` (NaN loses to any number).
#[inline]
pub(super) fn better<T: PartialOrd>(dir: Dir, new: &T, cur: &T) -> bool {
    rank(dir, new, cur) == Ordering::Less
}

/// Whether the pair (`new_val`, `new_loc`) should replace (`cur_val`,
/// `cur_loc`): a `None` location always loses, otherwise the better value
/// wins and equal values go to the index chosen by `tie`.
#[inline]
pub(super) fn replaces<T: PartialOrd, I: Ord>(
    dir: Dir,
    tie: Tie,
    cur_val: &T,
    cur_loc: Option<I>,
    new_val: &T,
    new_loc: Option<I>,
) -> bool {
    match (cur_loc, new_loc) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(cur), Some(new)) => match rank(dir, new_val, cur_val) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => match tie {
                Tie::Lowest => new < cur,
                Tie::Highest => new > cur,
            },
        },
    }
}
