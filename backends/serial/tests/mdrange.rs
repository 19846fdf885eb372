//! MDRange launches on the serial backend: every point exactly once, in the declared order.
//!
//! The expected order is computed here independently of the library: tiles are enumerated in
//! the outer order, then the points of each tile in the inner order, by plain recursion.

use std::sync::Mutex;

use hoplite_core::{
    DEFAULT_LINE_TILE, Error, ExecutionPolicy, IterationOrder, MDRangePolicy, RangePolicy, parallel_for,
};
use hoplite_serial::Serial;
use proptest::prelude::*;

use IterationOrder::{Left, Right};

const ORDERS: [(IterationOrder, IterationOrder); 4] =
    [(Right, Right), (Right, Left), (Left, Right), (Left, Left)];

/// Every point of `lo..hi` with the dimension that runs fastest in `order` innermost.
fn nested_loops<const R: usize>(lo: [usize; R], hi: [usize; R], order: IterationOrder) -> Vec<[usize; R]> {
    // Dimensions from slowest to fastest.
    let dims: Vec<usize> = match order {
        Right => (0..R).collect(),
        Left => (0..R).rev().collect(),
    };
    fn rec<const R: usize>(
        dims: &[usize],
        lo: &[usize; R],
        hi: &[usize; R],
        cur: &mut [usize; R],
        out: &mut Vec<[usize; R]>,
    ) {
        match dims.split_first() {
            None => out.push(*cur),
            Some((&d, rest)) => {
                for v in lo[d]..hi[d] {
                    cur[d] = v;
                    rec(rest, lo, hi, cur, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut cur = lo;
    rec(&dims, &lo, &hi, &mut cur, &mut out);
    out
}

/// The visit order of a tiled box: tiles in `outer` order, points of a tile in `inner` order.
fn tiled_order<const R: usize>(
    begin: [usize; R],
    end: [usize; R],
    tiles: [usize; R],
    outer: IterationOrder,
    inner: IterationOrder,
) -> Vec<[usize; R]> {
    let counts: [usize; R] = std::array::from_fn(|d| (end[d] - begin[d]).div_ceil(tiles[d]));
    let mut out = Vec::new();
    for tile in nested_loops([0; R], counts, outer) {
        let lo: [usize; R] = std::array::from_fn(|d| begin[d] + tile[d] * tiles[d]);
        let hi: [usize; R] = std::array::from_fn(|d| (lo[d] + tiles[d]).min(end[d]));
        out.extend(nested_loops(lo, hi, inner));
    }
    out
}

/// Runs `policy` and returns the points in the order the kernel saw them.
fn record<const R: usize>(label: &str, policy: MDRangePolicy<Serial, R>) -> Vec<[usize; R]> {
    let seen = Mutex::new(Vec::new());
    parallel_for(label, policy, |p| seen.lock().expect("not poisoned").push(*p)).expect("launch succeeds");
    seen.into_inner().expect("not poisoned")
}

/// Checks exactly-once coverage of the box, independently of the order.
fn assert_covers_once<const R: usize>(seen: &[[usize; R]], begin: [usize; R], end: [usize; R]) {
    let mut sorted = seen.to_vec();
    sorted.sort_unstable();
    let mut all = nested_loops(begin, end, Right);
    all.sort_unstable();
    assert_eq!(sorted, all, "every point of {begin:?}..{end:?} exactly once");
}

#[test]
fn rank1_tiles_in_order() {
    for tile in [1, 3, 4, 10, 11, 50] {
        for (outer, inner) in ORDERS {
            let p = MDRangePolicy::new(Serial::default(), [3], [13])
                .with_tiles([tile])
                .with_iteration(outer, inner);
            let seen = record("rank1", p);
            assert_eq!(seen, (3..13).map(|i| [i]).collect::<Vec<_>>(), "tile {tile}");
        }
    }
}

#[test]
fn rank2_all_order_combinations_with_odd_tiles() {
    let (begin, end) = ([0, 0], [7, 5]);
    for tiles in [[3, 2], [2, 3], [1, 1], [7, 5], [4, 9]] {
        for (outer, inner) in ORDERS {
            let p = MDRangePolicy::new(Serial::default(), begin, end)
                .with_tiles(tiles)
                .with_iteration(outer, inner);
            let seen = record("rank2", p);
            assert_covers_once(&seen, begin, end);
            assert_eq!(
                seen,
                tiled_order(begin, end, tiles, outer, inner),
                "tiles {tiles:?}, outer {outer:?}, inner {inner:?}"
            );
        }
    }
}

#[test]
fn rank2_order_spelled_out() {
    // A 3x3 box in 2x2 tiles, both orders Right: tiles (0,0) (0,1) (1,0) (1,1) row by row.
    let p = MDRangePolicy::new(Serial::default(), [0, 0], [3, 3]).with_tiles([2, 2]);
    assert_eq!(
        record("spelled-rr", p),
        [
            [0, 0],
            [0, 1],
            [1, 0],
            [1, 1],
            [0, 2],
            [1, 2],
            [2, 0],
            [2, 1],
            [2, 2]
        ]
    );
    // Both Left: tiles (0,0) (1,0) (0,1) (1,1), points column by column.
    let p = MDRangePolicy::new(Serial::default(), [0, 0], [3, 3])
        .with_tiles([2, 2])
        .with_iteration(Left, Left);
    assert_eq!(
        record("spelled-ll", p),
        [
            [0, 0],
            [1, 0],
            [0, 1],
            [1, 1],
            [2, 0],
            [2, 1],
            [0, 2],
            [1, 2],
            [2, 2]
        ]
    );
}

#[test]
fn rank3_all_order_combinations_with_odd_tiles_and_nonzero_begins() {
    let (begin, end) = ([1, 2, 3], [6, 9, 7]);
    for tiles in [[2, 3, 3], [4, 1, 2], [5, 7, 4]] {
        for (outer, inner) in ORDERS {
            let p = MDRangePolicy::new(Serial::default(), begin, end)
                .with_tiles(tiles)
                .with_iteration(outer, inner);
            let seen = record("rank3", p);
            assert_eq!(seen.len(), 5 * 7 * 4);
            assert_covers_once(&seen, begin, end);
            assert_eq!(
                seen,
                tiled_order(begin, end, tiles, outer, inner),
                "tiles {tiles:?}, outer {outer:?}, inner {inner:?}"
            );
        }
    }
}

#[test]
fn rank6_small_extents() {
    let begin = [0, 1, 0, 2, 0, 1];
    let end = [2, 4, 3, 4, 3, 3];
    let tiles = [1, 2, 2, 1, 2, 3];
    for (outer, inner) in ORDERS {
        let p = MDRangePolicy::new(Serial::default(), begin, end)
            .with_tiles(tiles)
            .with_iteration(outer, inner);
        let seen = record("rank6", p);
        assert_eq!(seen.len(), 2 * 3 * 3 * 2 * 3 * 2);
        assert_covers_once(&seen, begin, end);
        assert_eq!(
            seen,
            tiled_order(begin, end, tiles, outer, inner),
            "{outer:?}/{inner:?}"
        );
    }
    // Default tiles: plain nested loops.
    let seen = record("rank6-default", MDRangePolicy::new(Serial::default(), begin, end));
    assert_eq!(seen, nested_loops(begin, end, Right));
}

#[test]
fn default_tiles_visit_in_plain_nested_loop_order() {
    for (outer, inner) in ORDERS {
        let p = MDRangePolicy::new(Serial::default(), [2, 1, 4], [5, 4, 6]).with_iteration(outer, inner);
        let seen = record("default-3", p);
        // With the default tiles the outer order does not matter: the inner one decides.
        assert_eq!(
            seen,
            nested_loops([2, 1, 4], [5, 4, 6], inner),
            "{outer:?}/{inner:?}"
        );

        let p = MDRangePolicy::new(Serial::default(), [1, 0], [4, 3]).with_iteration(outer, inner);
        let expected: Vec<[usize; 2]> = match inner {
            Right => (1..4).flat_map(|i| (0..3).map(move |j| [i, j])).collect(),
            Left => (0..3).flat_map(|j| (1..4).map(move |i| [i, j])).collect(),
        };
        assert_eq!(record("default-2", p), expected, "{outer:?}/{inner:?}");
    }
}

/// Lines longer than `DEFAULT_LINE_TILE` are cut into several default tiles (so rank-1 boxes
/// and boxes of few long lines can be shared among threads), and the visit order stays that
/// of nested loops.
#[test]
fn long_lines_are_cut_into_default_tiles_in_nested_loop_order() {
    let n = 2 * DEFAULT_LINE_TILE + 7;
    let p = MDRangePolicy::new(Serial::default(), [3], [3 + n]);
    assert_eq!((p.tiles(), p.num_tiles()), ([DEFAULT_LINE_TILE], 3));
    let seen: Vec<usize> = record("long-1", p).into_iter().map(|[i]| i).collect();
    assert_eq!(seen, (3..3 + n).collect::<Vec<_>>());
    for (outer, inner) in ORDERS {
        let p = MDRangePolicy::new(Serial::default(), [0, 0], [2, n]).with_iteration(outer, inner);
        let expected_tiles = match inner {
            Right => ([1, DEFAULT_LINE_TILE], 2 * 3),
            Left => ([2, 1], n),
        };
        assert_eq!((p.tiles(), p.num_tiles()), expected_tiles, "{outer:?}/{inner:?}");
        assert_eq!(
            record("long-2", p),
            nested_loops([0, 0], [2, n], inner),
            "{outer:?}/{inner:?}"
        );
    }
}

#[test]
fn empty_boxes_visit_nothing() {
    for (outer, inner) in ORDERS {
        let p = MDRangePolicy::new(Serial::default(), [0, 4, 0], [5, 4, 5])
            .with_tiles([2, 2, 2])
            .with_iteration(outer, inner);
        assert!(p.is_empty());
        assert_eq!(p.num_tiles(), 0);
        assert!(record("empty-tiled", p).is_empty());
        let p = MDRangePolicy::new(Serial::default(), [3, 0], [3, 0]).with_iteration(outer, inner);
        assert!(record("empty-default", p).is_empty());
    }
    assert!(record("empty-1", MDRangePolicy::new(Serial::default(), [9], [9])).is_empty());
}

#[test]
fn range_policy_converts_to_rank1_mdrange_with_the_same_points() {
    let r = RangePolicy::new(Serial::default(), 4..19).with_chunk_size(4);
    let md = MDRangePolicy::<_, 1>::from(r.clone());
    assert_eq!((md.begin(), md.end(), md.tiles()), ([4], [19], [4]));
    let from_range = Mutex::new(Vec::new());
    parallel_for("range", r, |i| from_range.lock().expect("not poisoned").push(*i)).expect("range launches");
    let from_md: Vec<usize> = record("md", md).into_iter().map(|[i]| i).collect();
    assert_eq!(from_md, from_range.into_inner().expect("not poisoned"));
    assert_eq!(from_md, (4..19).collect::<Vec<_>>());
}

#[test]
fn from_slices_and_try_with_tiles() {
    let p = MDRangePolicy::<Serial, 2>::from_slices(Serial::default(), &[1, 2], &[4, 6])
        .expect("two entries each")
        .try_with_tiles(&[2, 3])
        .expect("two tiles");
    assert_eq!((p.begin(), p.end(), p.tiles()), ([1, 2], [4, 6], [2, 3]));
    assert_eq!(
        record("slices", p),
        tiled_order([1, 2], [4, 6], [2, 3], Right, Right)
    );

    let err = MDRangePolicy::<Serial, 2>::from_slices(Serial::default(), &[0, 0, 0], &[1, 1])
        .expect_err("three begins for rank 2");
    assert!(
        matches!(
            err,
            Error::RankMismatch {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("begin") && msg.contains("expected 2") && msg.contains("got 3"),
        "{msg}"
    );

    let err = MDRangePolicy::<Serial, 3>::from_slices(Serial::default(), &[0, 0, 0], &[1])
        .expect_err("one end for rank 3");
    assert!(
        matches!(
            err,
            Error::RankMismatch {
                expected: 3,
                found: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("end"), "{err}");

    let err = MDRangePolicy::new(Serial::default(), [0, 0], [4, 4])
        .try_with_tiles(&[2])
        .expect_err("one tile for rank 2");
    assert!(
        matches!(
            err,
            Error::RankMismatch {
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("tiles") && msg.contains("expected 2") && msg.contains("got 1"),
        "{msg}"
    );
}

#[test]
fn mdrange_validation_names_the_dimension() {
    let p = MDRangePolicy::new(Serial::default(), [0, 5, 0], [2, 4, 2]);
    let err = p.validate("md").expect_err("begin > end in dimension 1");
    assert_eq!(
        err,
        Error::InvalidRange {
            label: "md".into(),
            dim: Some(1),
            begin: 5,
            end: 4
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_rank3_boxes_match_the_model(
        begin in prop::array::uniform3(0usize..4),
        extent in prop::array::uniform3(0usize..6),
        tiles in prop::array::uniform3(1usize..5),
        outer_left in any::<bool>(),
        inner_left in any::<bool>(),
    ) {
        let end: [usize; 3] = std::array::from_fn(|d| begin[d] + extent[d]);
        let outer = if outer_left { Left } else { Right };
        let inner = if inner_left { Left } else { Right };
        let p = MDRangePolicy::new(Serial::default(), begin, end)
            .with_tiles(tiles)
            .with_iteration(outer, inner);
        let seen = record("prop", p);
        prop_assert_eq!(seen, tiled_order(begin, end, tiles, outer, inner));
    }
}
