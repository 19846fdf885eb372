//! The `Reducer` axioms through `parallel_reduce` on the space: every built-in reducer against
//! a sequential fold, tie rules of the location reducers, identities of empty ranges, index
//! order of joins and `finalize` once.
//!
//! Each reduction runs with the default policy, small static chunks and dynamic chunks, so
//! a backend that splits the range has to join many partial results.

use std::fmt::Debug;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    BAnd, BOr, Custom, FirstLoc, Idx, LAnd, LOr, LastLoc, Max, MaxLoc, Min, MinLoc, MinMax,
    MinMaxFirstLastLoc, MinMaxLoc, MinMaxLocScalar, MinMaxScalar, Prod, RangePolicy, Reducer, Schedule, Sum,
    ValLoc, View, parallel_for, parallel_reduce, parallel_reduce_into,
};

use crate::util::{exact_f64_data, int_data, same};
use crate::{FullSpace, Outcome, check};

const N: usize = 1000;

/// The policies every reduction runs with.
fn policies<S: FullSpace>(space: &S, range: Range<usize>) -> [(RangePolicy<S>, &'static str); 4] {
    let p = || RangePolicy::new(space.clone(), range.clone());
    [
        (p(), "default policy"),
        (p().with_chunk_size(7), "static chunks of 7"),
        (p().with_chunk_size(1), "static chunks of 1"),
        (
            p().with_schedule(Schedule::Dynamic).with_chunk_size(64),
            "dynamic chunks of 64",
        ),
    ]
}

/// Reduces `range` with `reducer` and `kernel` under every policy and compares with `want`.
fn reduce_all<S, R, F>(
    space: &S,
    range: Range<usize>,
    reducer: &R,
    kernel: F,
    want: &R::Value,
    what: &str,
) -> Outcome
where
    S: FullSpace,
    R: Reducer,
    R::Value: PartialEq + Debug,
    F: for<'it> Fn(Idx<'it>, &mut R::Value) + Send + Sync,
{
    for (policy, how) in policies(space, range.clone()) {
        let got = parallel_reduce("reduce", policy, &kernel, reducer)?;
        ensure_eq!(got, *want, "{what} over {range:?} with the {how}");
    }
    Ok(())
}

/// Values with repeated minima (-3 at 333, 600, 999) and maxima (40 at 100, 700, 800).
fn tie_data() -> Vec<i64> {
    let mut v: Vec<i64> = (0..N).map(|i| 5 + (i * 3 % 7) as i64).collect();
    for i in [333, 600, 999] {
        v[i] = -3;
    }
    for i in [100, 700, 800] {
        v[i] = 40;
    }
    v
}

/// Powers of two and their signs, so that every product is exact.
fn prod_data() -> Vec<f64> {
    (0..N)
        .map(|i| [1.0, 2.0, 0.5, -1.0, 1.0, 0.5, 2.0][i % 7])
        .collect()
}

/// `Sum` of integers (i64, u32) and of exactly representable floats equals the sequential
/// sum, for ranges starting at zero or not.
pub fn sum_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let f = exact_f64_data(N);
        for range in [0..N, 13..N, 0..1, 500..502] {
            let want: i64 = x[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                &Sum::new(),
                |i, acc: &mut i64| *acc += x[*i],
                &want,
                "Sum<i64>",
            )?;
            let want: f64 = f[range.clone()].iter().sum();
            reduce_all(
                space,
                range.clone(),
                &Sum::new(),
                |i, acc: &mut f64| *acc += f[*i],
                &want,
                "Sum<f64>",
            )?;
            let want: u32 = range.clone().map(|i| i as u32).sum();
            reduce_all(
                space,
                range,
                &Sum::new(),
                |i, acc: &mut u32| *acc += *i as u32,
                &want,
                "Sum<u32>",
            )?;
        }
        Ok(())
    })
}

/// `Prod` equals the sequential product (f64 powers of two; small integers).
pub fn prod_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let f = prod_data();
        let want: f64 = f.iter().product();
        reduce_all(
            space,
            0..N,
            &Prod::new(),
            |i, acc: &mut f64| *acc *= f[*i],
            &want,
            "Prod<f64>",
        )?;
        let small = |i: usize| -> i64 {
            if i % 50 == 7 {
                2
            } else if i % 31 == 3 {
                -1
            } else {
                1
            }
        };
        let want: i64 = (0..N).map(small).product();
        reduce_all(
            space,
            0..N,
            &Prod::new(),
            |i, acc: &mut i64| *acc *= small(*i),
            &want,
            "Prod<i64>",
        )
    })
}

/// `Min` and `Max` equal the sequential minimum and maximum.
pub fn min_and_max_match_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        for range in [0..N, 77..N, 3..4] {
            let lo = x[range.clone()].iter().copied().fold(i64::MAX, i64::min);
            let hi = x[range.clone()].iter().copied().fold(i64::MIN, i64::max);
            reduce_all(
                space,
                range.clone(),
                &Min::new(),
                |i, acc: &mut i64| *acc = (*acc).min(x[*i]),
                &lo,
                "Min<i64>",
            )?;
            reduce_all(
                space,
                range.clone(),
                &Max::new(),
                |i, acc: &mut i64| *acc = (*acc).max(x[*i]),
                &hi,
                "Max<i64>",
            )?;
            let (lo, hi) = (lo as f64 * 0.25, hi as f64 * 0.25);
            reduce_all(
                space,
                range.clone(),
                &Min::new(),
                |i, acc: &mut f64| *acc = acc.min(x[*i] as f64 * 0.25),
                &lo,
                "Min<f64>",
            )?;
            reduce_all(
                space,
                range,
                &Max::new(),
                |i, acc: &mut f64| *acc = acc.max(x[*i] as f64 * 0.25),
                &hi,
                "Max<f64>",
            )?;
        }
        Ok(())
    })
}

/// `Min` and `Max` ignore NaN; a range of only NaNs reduces to the identity.
pub fn min_and_max_ignore_nan<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = |i: usize| if i.is_multiple_of(3) { f64::NAN } else { i as f64 };
        let update_min = |i: Idx<'_>, acc: &mut f64| {
            let x = v(*i);
            if x < *acc {
                *acc = x;
            }
        };
        let update_max = |i: Idx<'_>, acc: &mut f64| {
            let x = v(*i);
            if x > *acc {
                *acc = x;
            }
        };
        reduce_all(space, 0..N, &Min::new(), update_min, &1.0, "Min<f64> with NaNs")?;
        reduce_all(space, 0..N, &Max::new(), update_max, &998.0, "Max<f64> with NaNs")?;
        let only_nan = |_: Idx<'_>, acc: &mut f64| *acc = acc.min(f64::NAN);
        reduce_all(
            space,
            0..N,
            &Min::new(),
            only_nan,
            &f64::INFINITY,
            "Min<f64> of only NaNs",
        )
    })
}

/// `MinMax` equals the sequential minimum and maximum.
pub fn minmax_matches_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = int_data(N);
        let want = MinMaxScalar {
            min: *x.iter().min().unwrap_or(&0),
            max: *x.iter().max().unwrap_or(&0),
        };
        reduce_all(
            space,
            0..N,
            &MinMax::new(),
            |i, acc: &mut MinMaxScalar<i64>| acc.update(x[*i]),
            &want,
            "MinMax<i64>",
        )
    })
}

/// `MinLoc` finds the minimum at its lowest index, however the range is split.
pub fn min_loc_ties_go_to_lowest_index<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        for (range, loc) in [(0..N, 333), (50..N, 333), (334..N, 600), (601..N, 999)] {
            let want = ValLoc {
                val: -3,
                loc: Some(loc),
            };
            reduce_all(
                space,
                range.clone(),
                &MinLoc::new(),
                |i, acc: &mut ValLoc<i64>| acc.update_min(x[*i], *i),
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
                &MinLoc::new(),
                |i, acc: &mut ValLoc<f64>| acc.update_min(x[*i] as f64 * 0.5, *i),
                &want,
                "MinLoc<f64>",
            )?;
        }
        Ok(())
    })
}

/// `MaxLoc` finds the maximum at its lowest index, however the range is split.
pub fn max_loc_ties_go_to_lowest_index<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        for (range, loc) in [(0..N, 100), (101..N, 700), (701..N, 800)] {
            let want = ValLoc {
                val: 40,
                loc: Some(loc),
            };
            reduce_all(
                space,
                range,
                &MaxLoc::new(),
                |i, acc: &mut ValLoc<i64>| acc.update_max(x[*i], *i),
                &want,
                "MaxLoc<i64>",
            )?;
        }
        Ok(())
    })
}

/// `MinMaxLoc` keeps the lowest index on both sides.
pub fn minmax_loc_ties_go_to_lowest_index<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let want = MinMaxLocScalar {
            min_val: -3,
            max_val: 40,
            min_loc: Some(333),
            max_loc: Some(100),
        };
        reduce_all(
            space,
            0..N,
            &MinMaxLoc::new(),
            |i, acc: &mut MinMaxLocScalar<i64>| acc.update(x[*i], *i),
            &want,
            "MinMaxLoc<i64>",
        )
    })
}

/// `MinMaxFirstLastLoc` keeps the lowest index on the min side and the highest on the max
/// side.
pub fn minmax_first_last_loc_max_ties_go_to_highest_index<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let want = MinMaxLocScalar {
            min_val: -3,
            max_val: 40,
            min_loc: Some(333),
            max_loc: Some(800),
        };
        reduce_all(
            space,
            0..N,
            &MinMaxFirstLastLoc::new(),
            |i, acc: &mut MinMaxLocScalar<i64>| acc.update_first_last(x[*i], *i),
            &want,
            "MinMaxFirstLastLoc<i64>",
        )
    })
}

/// A range whose values all equal the identity still reports an index (the lowest): a
/// location of `None` always loses.
pub fn loc_reducers_report_an_index_for_identity_values<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let range = 17..N;
        let want = ValLoc {
            val: i64::MAX,
            loc: Some(17),
        };
        reduce_all(
            space,
            range.clone(),
            &MinLoc::new(),
            |i, acc: &mut ValLoc<i64>| acc.update_min(i64::MAX, *i),
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
            &MaxLoc::new(),
            |i, acc: &mut ValLoc<f64>| acc.update_max(f64::NEG_INFINITY, *i),
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
                &MinMaxLoc::new(),
                |i, acc: &mut MinMaxLocScalar<i64>| acc.update(v, *i),
                &want,
                "MinMaxLoc of identity values",
            )?;
        }
        Ok(())
    })
}

/// `FirstLoc` and `LastLoc` report the smallest and largest index where a predicate holds,
/// and `None` where it never does.
pub fn first_loc_and_last_loc_find_the_extremes<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let hit = |i: usize| x[i] == -3;
        reduce_all(
            space,
            0..N,
            &FirstLoc,
            |i, acc: &mut Option<usize>| {
                if hit(*i) {
                    FirstLoc::update(acc, *i)
                }
            },
            &Some(333),
            "FirstLoc",
        )?;
        reduce_all(
            space,
            0..N,
            &LastLoc,
            |i, acc: &mut Option<usize>| {
                if hit(*i) {
                    LastLoc::update(acc, *i)
                }
            },
            &Some(999),
            "LastLoc",
        )?;
        reduce_all(
            space,
            0..333,
            &FirstLoc,
            |i, acc: &mut Option<usize>| {
                if hit(*i) {
                    FirstLoc::update(acc, *i)
                }
            },
            &None,
            "FirstLoc without a hit",
        )
    })
}

/// `LAnd` and `LOr` equal the sequential `all` and `any`.
pub fn logical_and_or_match_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        for (threshold, all, any) in [
            (-4, true, true),
            (-3, false, true),
            (39, false, true),
            (40, false, false),
        ] {
            reduce_all(
                space,
                0..N,
                &LAnd,
                |i, acc: &mut bool| *acc = *acc && x[*i] > threshold,
                &all,
                &format!("LAnd of x > {threshold}"),
            )?;
            reduce_all(
                space,
                0..N,
                &LOr,
                |i, acc: &mut bool| *acc = *acc || x[*i] > threshold,
                &any,
                &format!("LOr of x > {threshold}"),
            )?;
        }
        Ok(())
    })
}

/// `BAnd` and `BOr` equal the sequential bitwise folds.
pub fn bitwise_and_or_match_sequential_fold<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let bit = |i: usize| 1u64 << (i % 61);
        for range in [0..N, 10..40, 200..201] {
            let any = range.clone().fold(0u64, |a, i| a | bit(i));
            let all = range.clone().fold(!0u64, |a, i| a & !bit(i));
            reduce_all(
                space,
                range.clone(),
                &BOr::new(),
                |i, acc: &mut u64| *acc |= bit(*i),
                &any,
                "BOr<u64>",
            )?;
            reduce_all(
                space,
                range,
                &BAnd::new(),
                |i, acc: &mut u64| *acc &= !bit(*i),
                &all,
                "BAnd<u64>",
            )?;
        }
        Ok(())
    })
}

/// An empty range reduces to each reducer's identity.
pub fn empty_range_gives_the_identity<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let e = 5..5;
        reduce_all(
            space,
            e.clone(),
            &Sum::new(),
            |_, a: &mut f64| *a += 1.0,
            &0.0,
            "Sum",
        )?;
        reduce_all(
            space,
            e.clone(),
            &Prod::new(),
            |_, a: &mut i32| *a *= 3,
            &1,
            "Prod",
        )?;
        reduce_all(
            space,
            e.clone(),
            &Min::new(),
            |_, a: &mut i32| *a = 0,
            &i32::MAX,
            "Min",
        )?;
        reduce_all(
            space,
            e.clone(),
            &Max::new(),
            |_, a: &mut f32| *a = 0.0,
            &f32::NEG_INFINITY,
            "Max",
        )?;
        reduce_all(
            space,
            e.clone(),
            &MinMax::new(),
            |_, a: &mut MinMaxScalar<u8>| a.update(3),
            &MinMaxScalar { min: u8::MAX, max: 0 },
            "MinMax",
        )?;
        reduce_all(
            space,
            e.clone(),
            &MinLoc::new(),
            |i, a: &mut ValLoc<i64>| a.update_min(0, *i),
            &ValLoc {
                val: i64::MAX,
                loc: None,
            },
            "MinLoc",
        )?;
        reduce_all(
            space,
            e.clone(),
            &MaxLoc::new(),
            |i, a: &mut ValLoc<i64>| a.update_max(0, *i),
            &ValLoc {
                val: i64::MIN,
                loc: None,
            },
            "MaxLoc",
        )?;
        let none = MinMaxLocScalar {
            min_val: f64::INFINITY,
            max_val: f64::NEG_INFINITY,
            min_loc: None,
            max_loc: None,
        };
        reduce_all(
            space,
            e.clone(),
            &MinMaxLoc::new(),
            |i, a: &mut MinMaxLocScalar<f64>| a.update(0.0, *i),
            &none,
            "MinMaxLoc",
        )?;
        reduce_all(
            space,
            e.clone(),
            &FirstLoc,
            |i, a: &mut Option<usize>| FirstLoc::update(a, *i),
            &None,
            "FirstLoc",
        )?;
        reduce_all(
            space,
            e.clone(),
            &LastLoc,
            |i, a: &mut Option<usize>| LastLoc::update(a, *i),
            &None,
            "LastLoc",
        )?;
        reduce_all(
            space,
            e.clone(),
            &LAnd,
            |_, a: &mut bool| *a = false,
            &true,
            "LAnd",
        )?;
        reduce_all(space, e.clone(), &LOr, |_, a: &mut bool| *a = true, &false, "LOr")?;
        reduce_all(
            space,
            e.clone(),
            &BAnd::new(),
            |_, a: &mut u16| *a = 0,
            &u16::MAX,
            "BAnd",
        )?;
        reduce_all(space, e, &BOr::new(), |_, a: &mut u16| *a = 1, &0, "BOr")
    })
}

/// Reducer axiom 3 (index order): partial results are joined with `dst` covering lower
/// indices than `src`, so a non-commutative concatenation yields the indices in order.
pub fn custom_join_keeps_index_order<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
        for range in [0..N, 3..N, 0..1, 7..7] {
            let want: Vec<usize> = range.clone().collect();
            for (policy, how) in policies(space, range.clone()) {
                let got = parallel_reduce("concat", policy, |i, acc: &mut Vec<usize>| acc.push(*i), &concat)?;
                same(&got, &want, || {
                    format!("concatenation of the indices over {range:?} with the {how}")
                })?;
            }
        }
        Ok(())
    })
}

/// Reducer axiom 4: `finalize` runs exactly once per launch, on the total (also on the
/// identity of an empty range).
pub fn finalize_runs_once_on_the_total<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let calls = AtomicUsize::new(0);
        let counted = Custom::with_finalize(
            || (0u64, 0i64),
            |dst: &mut (u64, i64), src: (u64, i64)| {
                dst.0 += src.0;
                dst.1 += src.1;
            },
            |v: &mut (u64, i64)| {
                calls.fetch_add(1, Ordering::Relaxed);
                v.1 = v.1 * 3 + 1;
            },
        );
        for (range, want) in [
            (0..N, (N as u64, (N * (N - 1) / 2) as i64 * 3 + 1)),
            (9..9, (0, 1)),
        ] {
            for (policy, how) in policies(space, range.clone()) {
                let before = calls.load(Ordering::Relaxed);
                let got = parallel_reduce(
                    "finalize",
                    policy,
                    |i, acc: &mut (u64, i64)| {
                        acc.0 += 1;
                        acc.1 += *i as i64;
                    },
                    &counted,
                )?;
                let ran = calls.load(Ordering::Relaxed) - before;
                ensure_eq!(
                    ran,
                    1,
                    "finalize calls for one launch over {range:?} with the {how}"
                );
                ensure_eq!(
                    got,
                    want,
                    "a finalized (count, 3 * sum + 1) over {range:?} with the {how}"
                );
            }
        }
        Ok(())
    })
}

/// A tuple of reducers reduces every component as its own reducer would: a sum, a location
/// reducer with ties, a non-commutative concatenation and a finalizing reducer in one pass
/// give the results of four separate reductions (index order and finalize-once included),
/// also over an empty range.
pub fn tuple_of_reducers_matches_separate_reductions<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = tie_data();
        let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
        let finals = AtomicUsize::new(0);
        let doubled = Custom::with_finalize(
            || 0i64,
            |dst: &mut i64, src: i64| *dst += src,
            |v: &mut i64| {
                finals.fetch_add(1, Ordering::Relaxed);
                *v *= 2;
            },
        );
        for range in [0..N, 5..N - 5, 4..4] {
            let sum: i64 = data[range.clone()].iter().sum();
            let mut min = ValLoc {
                val: i64::MAX,
                loc: None,
            };
            for i in range.clone() {
                min.update_min(data[i], i);
            }
            let order: Vec<usize> = range.clone().collect();
            let want = (sum, min, order, 2 * range.clone().map(|i| i as i64).sum::<i64>());
            for (policy, how) in policies(space, range.clone()) {
                let before = finals.load(Ordering::Relaxed);
                let got = parallel_reduce(
                    "tuple",
                    policy,
                    |i, acc: &mut (i64, ValLoc<i64>, Vec<usize>, i64)| {
                        acc.0 += data[*i];
                        acc.1.update_min(data[*i], *i);
                        acc.2.push(*i);
                        acc.3 += *i as i64;
                    },
                    (Sum::<i64>::new(), MinLoc::<i64>::new(), &concat, &doubled),
                )?;
                ensure_eq!(
                    finals.load(Ordering::Relaxed) - before,
                    1,
                    "finalize calls of the tuple's fourth reducer over {range:?} with the {how}"
                );
                ensure_eq!(
                    got,
                    want,
                    "(sum, min loc, index order, 2 * index sum) over {range:?} with the {how}"
                );
            }
        }
        Ok(())
    })
}

/// `parallel_reduce_into`: a result stored into a rank-0 view (also one the kernel read), into
/// a host variable, and a tuple of reducers into one target per component, over range and
/// MDRange policies; a target view borrowed elsewhere is a typed error.
pub fn reduce_into_views_and_variables<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 1000;
        let data = int_data(n);
        let x: View<i64, 1> = View::from_slice("reduce-into-x", [n], &data)?;
        let total: View<i64, 0> = View::new("reduce-into-total", [])?;
        parallel_reduce_into(
            "into-view",
            (RangePolicy::new(space.clone(), 0..n), (x.read(),)),
            |(i, (x,)), acc: &mut i64| *acc += x.get(i),
            Sum::<i64>::new(),
            &total,
        )?;
        let expected: i64 = data.iter().sum();
        ensure_eq!(
            total.host_read()?.get([]),
            expected,
            "the sum stored into a rank-0 view"
        );

        // The target is a view the kernel reads: its handle is gone before the store.
        parallel_reduce_into(
            "into-read-view",
            (RangePolicy::new(space.clone(), 0..1), (total.read(),)),
            |(_i, (t,)), acc: &mut i64| *acc += 2 * t.get([]),
            Sum::<i64>::new(),
            &total,
        )?;
        ensure_eq!(
            total.host_read()?.get([]),
            2 * expected,
            "a target the kernel read"
        );

        let (mut min, mut max) = (0i64, 0i64);
        let count: View<i64, 0> = View::new("reduce-into-count", [])?;
        parallel_reduce_into(
            "into-tuple",
            hoplite_core::MDRangePolicy::new(space.clone(), [0, 0], [10, 100]),
            |ij, (lo, hi, c): &mut (i64, i64, i64)| {
                let v = data[ij[0] * 100 + ij[1]];
                *lo = (*lo).min(v);
                *hi = (*hi).max(v);
                *c += 1;
            },
            (Min::<i64>::new(), Max::<i64>::new(), Sum::<i64>::new()),
            (&mut min, &mut max, &count),
        )?;
        ensure_eq!(
            (min, max, count.host_read()?.get([])),
            (
                *data.iter().min().unwrap_or(&0),
                *data.iter().max().unwrap_or(&0),
                n as i64
            ),
            "a tuple of reducers into a tuple of targets"
        );

        let held = total.read();
        match parallel_reduce_into(
            "into-borrowed",
            RangePolicy::new(space.clone(), 0..4),
            |_i, acc: &mut i64| *acc += 1,
            Sum::<i64>::new(),
            &total,
        ) {
            Err(hoplite_core::Error::BorrowConflict { .. }) => {}
            other => {
                return Err(crate::Failure::msg(format!(
                    "storing into a view with a live reader: {other:?}, expected BorrowConflict"
                )));
            }
        }
        drop(held);
        Ok(())
    })
}

/// `Sum` and `Prod` of complex numbers, `Sum`/`Prod`/`Min`/`Max` of fixed-size arrays
/// (element by element, NaN ignored by `Min`/`Max`), and lock-based atomic adds of complex
/// numbers from every iteration, all equal to the sequential fold.
pub fn complex_array_reductions_and_locked_atomics<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        use hoplite_core::Complex;
        let n = 1000;
        let z = |i: usize| Complex::new((i % 7) as f64 - 3.0, (i % 5) as f64 * 0.5);
        let sum = parallel_reduce(
            "csum",
            RangePolicy::new(space.clone(), 0..n),
            |i, a| *a += z(*i),
            Sum::<Complex<f64>>::new(),
        )?;
        let want = (0..n).map(z).fold(Complex::new(0.0, 0.0), |a, b| a + b);
        ensure_eq!(sum, want, "complex sum");
        let unit = |i: usize| Complex::from_polar(1.0, i as f64 * 0.25);
        let prod = parallel_reduce(
            "cprod",
            RangePolicy::new(space.clone(), 0..8),
            |i, a: &mut Complex<f64>| *a *= unit(*i),
            Prod::new(),
        )?;
        let want = (0..8).map(unit).fold(Complex::new(1.0, 0.0), |a, b| a * b);
        let close = (prod - want).norm() < 1e-12;
        ensure!(close, "complex product {prod} vs {want}");

        let v = |i: usize| {
            [
                i as f64,
                -(i as f64),
                if i == 3 { f64::NAN } else { (i % 10) as f64 },
            ]
        };
        let s = parallel_reduce(
            "asum",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [i64; 2]| {
                a[0] += *i as i64;
                a[1] += 1;
            },
            Sum::new(),
        )?;
        ensure_eq!(s, [(n * (n - 1) / 2) as i64, n as i64], "array sum");
        let lo = parallel_reduce(
            "amin",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [f64; 3]| hoplite_core::MinMaxValue::keep_min(a, v(*i)),
            Min::new(),
        )?;
        let hi = parallel_reduce(
            "amax",
            RangePolicy::new(space.clone(), 0..n),
            |i, a: &mut [f64; 3]| hoplite_core::MinMaxValue::keep_max(a, v(*i)),
            Max::new(),
        )?;
        ensure_eq!(
            (lo, hi),
            ([0.0, -999.0, 0.0], [999.0, 0.0, 9.0]),
            "array min and max"
        );
        let p = parallel_reduce(
            "aprod",
            RangePolicy::new(space.clone(), 1..6),
            |i, a: &mut [u64; 2]| {
                a[0] *= *i as u64;
                a[1] *= 2;
            },
            Prod::new(),
        )?;
        ensure_eq!(p, [120, 32], "array product");

        let acc: View<Complex<f64>, 1> = View::new("complex bins", [3])?;
        {
            let atomics = acc.atomic();
            parallel_for("cadd", RangePolicy::new(space.clone(), 0..n), |i| {
                atomics.fetch_add(*i % 3, z(*i));
            })?;
        }
        let got = acc.to_vec()?;
        for (bin, value) in got.iter().enumerate() {
            let want = (0..n)
                .filter(|i| i % 3 == bin)
                .map(z)
                .fold(Complex::new(0.0, 0.0), |a, b| a + b);
            ensure_eq!(*value, want, "complex atomic bin {bin}");
        }
        Ok(())
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

/// Reducer values live in views: a `MinLoc` (1-d and 2-d locations), a `MinMax` and a
/// `MinMaxLoc` result reduced straight into rank-0 views, and a view of `ValLoc` starts as
/// "nothing seen" (`loc: None`).
pub fn reducer_values_reduce_into_views<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        use hoplite_core::{MDRangePolicy, MinMaxLocScalar};
        let fresh: View<ValLoc<f64>, 1> = View::new("fresh", [2])?;
        ensure_eq!(fresh.host_read()?.get(1).loc, None, "a new view of ValLoc");
        let x: Vec<f64> = (0..500).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
        let at: View<ValLoc<f64>, 0> = View::new("argmin", [])?;
        let range: View<MinMaxScalar<f64>, 0> = View::new("range", [])?;
        let both: View<MinMaxLocScalar<f64>, 0> = View::new("both", [])?;
        parallel_reduce_into(
            "into views",
            RangePolicy::new(space.clone(), 0..x.len()),
            |i, (a, r, b): &mut (ValLoc<f64>, MinMaxScalar<f64>, MinMaxLocScalar<f64>)| {
                a.update_min(x[*i], *i);
                r.update(x[*i]);
                b.update(x[*i], *i);
            },
            (
                MinLoc::<f64>::new(),
                MinMax::<f64>::new(),
                MinMaxLoc::<f64>::new(),
            ),
            (&at, &range, &both),
        )?;
        let first_min = x.iter().position(|&v| v == -50.0);
        ensure_eq!(
            at.host_read()?.get([]),
            ValLoc {
                val: -50.0,
                loc: first_min
            },
            "MinLoc into a view"
        );
        ensure_eq!(
            (range.host_read()?.get([]).min, range.host_read()?.get([]).max),
            (-50.0, 50.0),
            "MinMax into a view"
        );
        ensure_eq!(
            both.host_read()?.get([]).min_loc,
            first_min,
            "MinMaxLoc into a view"
        );
        let md: View<ValLoc<i32, [usize; 2]>, 0> = View::new("md argmax", [])?;
        parallel_reduce_into(
            "md into a view",
            MDRangePolicy::new(space.clone(), [0, 0], [6, 7]),
            |ij, acc: &mut ValLoc<i32, [usize; 2]>| {
                let [i, j] = *ij;
                acc.update_max(((i * 7 + j) % 5) as i32, [i, j]);
            },
            MaxLoc::<i32, [usize; 2]>::new(),
            &md,
        )?;
        ensure_eq!(
            md.host_read()?.get([]),
            ValLoc {
                val: 4,
                loc: Some([0, 4])
            },
            "MaxLoc of a box into a view"
        );
        Ok(())
    })
}
