//! What a handle takes of an allocation: its [`AccessKind`] and the [`Footprint`] (the region of
//! elements) it covers.

use std::sync::Arc;

/// How a handle uses an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum AccessKind {
    /// Loads only; shared with other readers.
    Read,
    /// Loads and stores; exclusive.
    Write,
    /// Atomic read-modify-writes; shared with other atomic handles only.
    Atomic,
}

impl AccessKind {
    pub(crate) fn compatible(self, other: AccessKind) -> bool {
        matches!(
            (self, other),
            (AccessKind::Read, AccessKind::Read) | (AccessKind::Atomic, AccessKind::Atomic)
        )
    }

    /// What a handle of this kind is called in messages: "reader", "writer" or "atomic
    /// handle".
    ///
    /// ```
    /// use hoplite_core::AccessKind;
    /// assert_eq!(AccessKind::Write.noun(), "writer");
    /// ```
    pub fn noun(self) -> &'static str {
        match self {
            AccessKind::Read => "reader",
            AccessKind::Write => "writer",
            AccessKind::Atomic => "atomic handle",
        }
    }
}

/// Largest rank of a view.
pub const MAX_VIEW_RANK: usize = 8;

/// The region of an allocation a view covers: all of it, or a box of index ranges in the
/// coordinates of the allocation's original (root) view. Two views of one allocation overlap
/// exactly when their boxes intersect in every root dimension.
///
/// Most views cover their whole allocation, so that case holds no ranges: a footprint is two
/// words, and handles, which carry their view's footprint into every launch, stay small to move
/// (a 136-byte box of ranges was copied several times per launch). Subviews share their box.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Footprint(Region);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Region {
    /// Every element of the allocation; `empty` when it has none.
    Whole { empty: bool },
    /// The elements of a box: one `lo..hi` range per root dimension.
    Box(Arc<[(usize, usize)]>),
}

impl Footprint {
    /// The whole of a root view of `extents`.
    pub fn whole(extents: &[usize]) -> Self {
        Footprint(Region::Whole {
            empty: extents.contains(&0),
        })
    }

    /// The box as one `lo..hi` range per root dimension. `root_extents` are the root view's
    /// extents, the answer when the footprint is the whole allocation (the view asking is
    /// then the root view, or one with its extents).
    pub(crate) fn ranges(&self, root_extents: &[usize]) -> Vec<(usize, usize)> {
        match &self.0 {
            Region::Whole { .. } => root_extents.iter().map(|&e| (0, e)).collect(),
            Region::Box(ranges) => ranges.to_vec(),
        }
    }

    /// The box of `ranges` (one per root dimension).
    pub(crate) fn from_ranges(ranges: Vec<(usize, usize)>) -> Self {
        Footprint(Region::Box(ranges.into()))
    }

    /// Whether the region is the whole allocation (possibly empty).
    pub(crate) fn is_whole(&self) -> bool {
        matches!(self.0, Region::Whole { .. })
    }

    /// Whether the region holds no element.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Region::Whole { empty } => *empty,
            Region::Box(ranges) => ranges.iter().any(|(lo, hi)| lo >= hi),
        }
    }

    /// Whether every element of `other` is in this region (both of one allocation). A box is
    /// not known to cover the whole allocation (the root's extents are not at hand), so the
    /// answer can be a conservative `false`, never a wrong `true`.
    ///
    /// ```
    /// use hoplite_core::{Slice, View};
    /// let x: View<f64, 1> = View::new("x", [10])?;
    /// let low: View<f64, 1> = x.subview([Slice::Range(0..5)])?;
    /// let mid: View<f64, 1> = x.subview([Slice::Range(2..4)])?;
    /// assert!(x.footprint().covers(&low.footprint()));
    /// assert!(low.footprint().covers(&mid.footprint()));
    /// assert!(!mid.footprint().covers(&low.footprint()));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn covers(&self, other: &Footprint) -> bool {
        if other.is_empty() {
            return true;
        }
        match (&self.0, &other.0) {
            (Region::Whole { empty }, _) => !empty,
            (Region::Box(a), Region::Box(b)) => a.iter().zip(b.iter()).all(|(a, b)| a.0 <= b.0 && b.1 <= a.1),
            (Region::Box(_), Region::Whole { .. }) => false,
        }
    }

    /// Whether the two regions (of one allocation) share an element.
    pub fn overlaps(&self, other: &Footprint) -> bool {
        if self.is_empty() || other.is_empty() {
            return false;
        }
        match (&self.0, &other.0) {
            (Region::Box(a), Region::Box(b)) => a.iter().zip(b.iter()).all(|(a, b)| a.0 < b.1 && b.0 < a.1),
            // A non-empty whole allocation meets every non-empty part of it.
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_overlap_only_when_every_dimension_does() {
        let whole = Footprint::whole(&[10, 20]);
        let narrowed = |dim: usize, lo: usize, hi: usize| {
            let mut ranges = whole.ranges(&[10, 20]);
            ranges[dim] = (lo, hi);
            Footprint::from_ranges(ranges)
        };
        let left = narrowed(1, 0, 10);
        let right = narrowed(1, 10, 20);
        let row3 = narrowed(0, 3, 4);
        assert!(!left.overlaps(&right));
        assert!(left.overlaps(&row3) && right.overlaps(&row3));
        assert!(whole.overlaps(&left) && left.overlaps(&whole) && whole.overlaps(&whole));
        let empty = narrowed(0, 5, 5);
        assert!(empty.is_empty());
        assert!(!empty.overlaps(&whole) && !whole.overlaps(&empty));
        let nothing = Footprint::whole(&[10, 0]);
        assert!(nothing.is_empty() && !nothing.overlaps(&nothing) && !nothing.overlaps(&left));
    }
}
