//! Splitting index spaces into units and shares, per-participant result slots, and the fixed
//! join tree of deterministic reductions.

use std::ops::Range;

use crossbeam_utils::CachePadded;
use hoplite_core::Reducer;

use crate::barrier::lock;
use crate::sync_prims::Mutex;

/// Smallest block of a deterministic reduction without a chunk size.
pub const DETERMINISTIC_MIN_BLOCK: usize = 4096;
/// Largest number of blocks of a deterministic reduction without a chunk size (larger ranges
/// get larger blocks).
pub const DETERMINISTIC_MAX_BLOCKS: usize = 1024;

/// The block size of a deterministic reduction over `len` indices: the chunk size if one was
/// set, else `max(DETERMINISTIC_MIN_BLOCK, ceil(len / DETERMINISTIC_MAX_BLOCKS))`. It depends
/// on the range alone, never on the number of threads.
pub(crate) fn deterministic_block(len: usize, chunk: Option<usize>) -> usize {
    chunk.unwrap_or_else(|| DETERMINISTIC_MIN_BLOCK.max(len.div_ceil(DETERMINISTIC_MAX_BLOCKS)))
}

/// The default chunk of a dynamic schedule: about 16 chunks per thread.
pub(crate) fn dynamic_chunk(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1) * 16).max(1)
}

/// `begin..end` cut into `count` units of `unit` indices (the last one may be short).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Units {
    begin: usize,
    len: usize,
    unit: usize,
    /// Number of units.
    pub(crate) count: usize,
}

impl Units {
    pub(crate) fn new(begin: usize, end: usize, unit: usize) -> Self {
        let len = end.saturating_sub(begin);
        let unit = unit.max(1);
        Units {
            begin,
            len,
            unit,
            count: len.div_ceil(unit),
        }
    }

    /// The indices of units `lo..hi`.
    #[inline]
    pub(crate) fn range(&self, lo: usize, hi: usize) -> Range<usize> {
        let offset = |u: usize| u.saturating_mul(self.unit).min(self.len);
        self.begin + offset(lo)..self.begin + offset(hi)
    }
}

/// Part `part` of `0..count` split into `parts` contiguous shares whose sizes differ by at
/// most one (earlier parts are the larger ones).
#[inline]
pub(crate) fn share(count: usize, parts: usize, part: usize) -> (usize, usize) {
    let parts = parts.max(1);
    let base = count / parts;
    let extra = count % parts;
    let lo = base * part + part.min(extra);
    let hi = lo + base + usize::from(part < extra);
    (lo.min(count), hi.min(count))
}

/// A result slot written by one participant and read by the caller after the launch.
pub(crate) struct Slot<V>(CachePadded<Mutex<Option<V>>>);

impl<V> Slot<V> {
    pub(crate) fn new() -> Self {
        Slot(CachePadded::new(Mutex::new(None)))
    }

    pub(crate) fn put(&self, value: V) {
        *lock(&self.0) = Some(value);
    }

    pub(crate) fn take(&self) -> Option<V> {
        lock(&self.0).take()
    }

    /// `n` empty slots.
    pub(crate) fn many(n: usize) -> Vec<Self> {
        (0..n).map(|_| Slot::new()).collect()
    }
}

/// Joins `parts` (in index order) left to right and finalizes; the identity if empty.
pub(crate) fn join_in_order<R: Reducer>(reducer: &R, parts: impl IntoIterator<Item = R::Value>) -> R::Value {
    let mut parts = parts.into_iter();
    let mut total = parts.next().unwrap_or_else(|| reducer.init());
    for part in parts {
        reducer.join(&mut total, part);
    }
    reducer.finalize(&mut total);
    total
}

/// Joins `parts` (in index order) in a fixed pairwise tree that depends only on their number,
/// then finalizes; the identity if empty.
pub(crate) fn join_tree<R: Reducer>(reducer: &R, mut parts: Vec<R::Value>) -> R::Value {
    while parts.len() > 1 {
        let mut next = Vec::with_capacity(parts.len().div_ceil(2));
        let mut it = parts.into_iter();
        while let Some(mut left) = it.next() {
            if let Some(right) = it.next() {
                reducer.join(&mut left, right);
            }
            next.push(left);
        }
        parts = next;
    }
    let mut total = parts.pop().unwrap_or_else(|| reducer.init());
    reducer.finalize(&mut total);
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoplite_core::Custom;

    #[test]
    fn shares_cover_everything_once() {
        for count in [0, 1, 2, 7, 100] {
            for parts in 1..6 {
                let mut next = 0;
                for part in 0..parts {
                    let (lo, hi) = share(count, parts, part);
                    assert_eq!(lo, next);
                    assert!(hi >= lo && hi - lo <= count / parts + 1);
                    next = hi;
                }
                assert_eq!(next, count);
            }
        }
        let u = Units::new(10, 21, 4);
        assert_eq!(u.count, 3);
        assert_eq!(
            (u.range(0, 1), u.range(2, 3), u.range(0, 3)),
            (10..14, 18..21, 10..21)
        );
        let huge = Units::new(usize::MAX - 3, usize::MAX, 2);
        assert_eq!(huge.range(1, 2), usize::MAX - 1..usize::MAX);
    }

    #[test]
    fn joins_keep_index_order() {
        let concat = Custom::new(String::new, |a: &mut String, b: String| a.push_str(&b));
        let parts: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
        assert_eq!(join_tree(&concat, parts.clone()), "abcde");
        assert_eq!(join_in_order(&concat, parts), "abcde");
        assert_eq!(join_tree(&concat, Vec::new()), "");
        assert_eq!(deterministic_block(10, None), DETERMINISTIC_MIN_BLOCK);
        assert_eq!(deterministic_block(10_000_000, None), 9766);
        assert_eq!(deterministic_block(10, Some(3)), 3);
    }
}
