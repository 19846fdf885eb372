//! The location reducers: tie rules of `MinLoc`, `MaxLoc`, `MinMaxLoc` and `MinMaxFirstLastLoc`,
//! identity-valued data, `FirstLoc`/`LastLoc`, and multi-index locations over an MDRange.

use hoplite_core::{
    BoundReader, FirstLoc, Idx, LastLoc, MaxLoc, MinLoc, MinMaxFirstLastLoc, MinMaxLoc, MinMaxLocScalar,
    ValLoc, parallel_reduce,
};
use hoplite_macros::kernel;

use super::{N, reduce_all, tie_data};
use crate::{FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// A kernel of these checks: the minimum of `x` and its lowest index.
#[kernel(crate = hoplite_core)]
pub fn min_loc_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut ValLoc<i64>) {
    acc.update_min(x.get(i), *i);
}

/// A kernel of these checks: the minimum of `x / 2` as `f64` and its lowest index.
#[kernel(crate = hoplite_core)]
pub fn min_loc_half_x_f64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut ValLoc<f64>) {
    acc.update_min(x.get(i) as f64 * 0.5, *i);
}

/// A kernel of these checks: the maximum of `x` and its lowest index.
#[kernel(crate = hoplite_core)]
pub fn max_loc_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut ValLoc<i64>) {
    acc.update_max(x.get(i), *i);
}

/// A kernel of these checks: the minimum and maximum of `x`, each at its lowest index.
#[kernel(crate = hoplite_core)]
pub fn minmax_loc_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut MinMaxLocScalar<i64>) {
    acc.update(x.get(i), *i);
}

/// A kernel of these checks: the minimum of `x` at its lowest index and the maximum at its
/// highest.
#[kernel(crate = hoplite_core)]
pub fn minmax_first_last_loc_x_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut MinMaxLocScalar<i64>) {
    acc.update_first_last(x.get(i), *i);
}

/// A kernel of these checks: `MinLoc` of `i64::MAX` (the identity's value) at every index.
#[kernel(crate = hoplite_core)]
pub fn min_loc_of_i64_max(i: Idx<'_>, acc: &mut ValLoc<i64>) {
    acc.update_min(i64::MAX, *i);
}

/// A kernel of these checks: `MaxLoc` of `-inf` (the identity's value) at every index.
#[kernel(crate = hoplite_core)]
pub fn max_loc_of_f64_neg_infinity(i: Idx<'_>, acc: &mut ValLoc<f64>) {
    acc.update_max(f64::NEG_INFINITY, *i);
}

/// A kernel of these checks: `MinMaxLoc` of the constant `v` at every index.
#[kernel(crate = hoplite_core)]
pub fn minmax_loc_of_constant_i64(i: Idx<'_>, v: i64, acc: &mut MinMaxLocScalar<i64>) {
    acc.update(v, *i);
}

/// `MinLoc` finds the minimum at its lowest index, however the range is split.
pub fn min_loc_ties_go_to_lowest_index<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        for (range, loc) in [(0..N, 333), (50..N, 333), (334..N, 600), (601..N, 999)] {
            let want = ValLoc {
                val: -3,
                loc: Some(loc),
            };
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", (p, (xv.read(),)), min_loc_x_i64::with(), MinLoc::new()),
                &want,
                "MinLoc<i64>",
            )?;
            let want = ValLoc {
                val: -1.5,
                loc: Some(loc),
            };
            reduce_all(
                space,
                range,
                |p| {
                    parallel_reduce(
                        "reduce",
                        (p, (xv.read(),)),
                        min_loc_half_x_f64::with(),
                        MinLoc::new(),
                    )
                },
                &want,
                "MinLoc<f64>",
            )?;
        }
        Ok(())
    })
}

/// `MaxLoc` finds the maximum at its lowest index, however the range is split.
pub fn max_loc_ties_go_to_lowest_index<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        for (range, loc) in [(0..N, 100), (101..N, 700), (701..N, 800)] {
            let want = ValLoc {
                val: 40,
                loc: Some(loc),
            };
            reduce_all(
                space,
                range,
                |p| parallel_reduce("reduce", (p, (xv.read(),)), max_loc_x_i64::with(), MaxLoc::new()),
                &want,
                "MaxLoc<i64>",
            )?;
        }
        Ok(())
    })
}

/// `MinMaxLoc` keeps the lowest index on both sides.
pub fn minmax_loc_ties_go_to_lowest_index<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        let want = MinMaxLocScalar {
            min_val: -3,
            max_val: 40,
            min_loc: Some(333),
            max_loc: Some(100),
        };
        reduce_all(
            space,
            0..N,
            |p| {
                parallel_reduce(
                    "reduce",
                    (p, (xv.read(),)),
                    minmax_loc_x_i64::with(),
                    MinMaxLoc::new(),
                )
            },
            &want,
            "MinMaxLoc<i64>",
        )
    })
}

/// `MinMaxFirstLastLoc` keeps the lowest index on the min side and the highest on the max
/// side.
pub fn minmax_first_last_loc_max_ties_go_to_highest_index<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        let want = MinMaxLocScalar {
            min_val: -3,
            max_val: 40,
            min_loc: Some(333),
            max_loc: Some(800),
        };
        reduce_all(
            space,
            0..N,
            |p| {
                parallel_reduce(
                    "reduce",
                    (p, (xv.read(),)),
                    minmax_first_last_loc_x_i64::with(),
                    MinMaxFirstLastLoc::new(),
                )
            },
            &want,
            "MinMaxFirstLastLoc<i64>",
        )
    })
}

/// A range whose values all equal the identity still reports an index (the lowest): a
/// location of `None` always loses.
pub fn loc_reducers_report_an_index_for_identity_values<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let range = 17..N;
        let want = ValLoc {
            val: i64::MAX,
            loc: Some(17),
        };
        reduce_all(
            space,
            range.clone(),
            |p| parallel_reduce("reduce", p, min_loc_of_i64_max::with(), MinLoc::new()),
            &want,
            "MinLoc of +inf values",
        )?;
        let want = ValLoc {
            val: f64::NEG_INFINITY,
            loc: Some(17),
        };
        reduce_all(
            space,
            range.clone(),
            |p| parallel_reduce("reduce", p, max_loc_of_f64_neg_infinity::with(), MaxLoc::new()),
            &want,
            "MaxLoc of -inf values",
        )?;
        for v in [i64::MAX, i64::MIN] {
            let want = MinMaxLocScalar {
                min_val: v,
                max_val: v,
                min_loc: Some(17),
                max_loc: Some(17),
            };
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", p, minmax_loc_of_constant_i64::with(v), MinMaxLoc::new()),
                &want,
                "MinMaxLoc of identity values",
            )?;
        }
        Ok(())
    })
}

/// A kernel of these checks: the lowest index where `x` is `target` (`FirstLoc`).
#[kernel(crate = hoplite_core)]
pub fn first_x_equal_to(i: Idx<'_>, x: BoundReader<'_, i64, 1>, target: i64, acc: &mut Option<usize>) {
    if x.get(i) == target {
        FirstLoc::update(acc, *i);
    }
}

/// A kernel of these checks: the highest index where `x` is `target` (`LastLoc`).
#[kernel(crate = hoplite_core)]
pub fn last_x_equal_to(i: Idx<'_>, x: BoundReader<'_, i64, 1>, target: i64, acc: &mut Option<usize>) {
    if x.get(i) == target {
        LastLoc::update(acc, *i);
    }
}

/// `FirstLoc` and `LastLoc` report the smallest and largest index where a predicate holds,
/// and `None` where it never does (an empty range included), however the range is split.
pub fn first_loc_and_last_loc_find_the_extremes<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &tie_data())?;
        let first = |range, want: Option<usize>, what: &str| {
            reduce_all(
                space,
                range,
                |p| parallel_reduce("first", (p, (xv.read(),)), first_x_equal_to::with(-3), FirstLoc),
                &want,
                what,
            )
        };
        let last = |range, want: Option<usize>, what: &str| {
            reduce_all(
                space,
                range,
                |p| parallel_reduce("last", (p, (xv.read(),)), last_x_equal_to::with(-3), LastLoc),
                &want,
                what,
            )
        };
        first(0..N, Some(333), "FirstLoc")?;
        last(0..N, Some(999), "LastLoc")?;
        first(334..N, Some(600), "FirstLoc past the first hit")?;
        last(0..999, Some(600), "LastLoc before the last hit")?;
        first(0..333, None, "FirstLoc without a hit")?;
        last(0..333, None, "LastLoc without a hit")?;
        first(5..5, None, "FirstLoc over an empty range")?;
        last(5..5, None, "LastLoc over an empty range")
    })
}

/// Location reducers over an MDRange report a multi-index (`ValLoc<T, [usize; 2]>`), ties
/// going to the first in row-major order whatever the tiling.
pub fn mdrange_loc_reducers_report_multi_indices<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        use hoplite_core::{MDRangePolicy, MinMaxLocScalar};
        // Minimum 0 at (3, 5) and (7, 1); maximum 9 at (2, 8) and (6, 0).
        let f = |i: usize, j: usize| match (i, j) {
            (3, 5) | (7, 1) => 0,
            (2, 8) | (6, 0) => 9,
            _ => 1 + ((i * 3 + j) % 7) as i32,
        };
        for tile in [[1, 1], [2, 3], [16, 16]] {
            let policy = MDRangePolicy::new(space.clone(), [0, 0], [10, 12]).with_tiles(tile);
            let min = parallel_reduce(
                "md min loc",
                policy.clone(),
                |ij, acc: &mut ValLoc<i32, [usize; 2]>| {
                    let [i, j] = *ij;
                    acc.update_min(f(i, j), [i, j]);
                },
                MinLoc::<i32, [usize; 2]>::new(),
            )?;
            ensure_eq!(
                min,
                ValLoc {
                    val: 0,
                    loc: Some([3, 5])
                },
                "MinLoc over tiles {tile:?}"
            );
            let both = parallel_reduce(
                "md minmax loc",
                policy,
                |ij, acc: &mut MinMaxLocScalar<i32, [usize; 2]>| {
                    let [i, j] = *ij;
                    acc.update(f(i, j), [i, j]);
                },
                MinMaxLoc::<i32, [usize; 2]>::new(),
            )?;
            ensure_eq!(
                (both.min_loc, both.max_val, both.max_loc),
                (Some([3, 5]), 9, Some([2, 8])),
                "MinMaxLoc over tiles {tile:?}"
            );
        }
        Ok(())
    })
}
