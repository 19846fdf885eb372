//! The axioms a custom reducer can observe: joins in index order, `finalize` once, and
//! tuples of reducers that keep each component's axioms.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use hoplite_core::{Custom, MinLoc, Sum, ValLoc, parallel_reduce};

use super::{N, policies, tie_data};
use crate::util::same;
use crate::{FullSpace, Outcome, check};

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
