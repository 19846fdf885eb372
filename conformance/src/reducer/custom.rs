//! The axioms a custom reducer can observe: joins in index order, `finalize` once, and
//! tuples of reducers that keep each component's axioms.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use hoplite_core::{Custom, Idx, MinLoc, Sum, ValLoc, parallel_reduce};
use hoplite_macros::kernel;

use super::{N, policies, tie_data};
use crate::{FullSpace, LaunchSpace, Outcome, check};

/// No index seen yet: the identity of [`extend_run`]'s value.
pub(crate) const NO_RUN: i64 = -1;

/// Indices that are not one increasing run.
const BROKEN_RUN: i64 = -2;

/// A kernel of these checks: the run `[lo, hi)` of consecutive indices seen in index order,
/// as `(lo << 32) + hi`; `-1` before the first index, `-2` once an index does not continue
/// the run.
#[kernel(crate = hoplite_core)]
pub fn extend_run(i: Idx<'_>, acc: &mut i64) {
    let k = *i as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// Joins two runs (`dst` before `src`): one run if `src` starts where `dst` ends.
pub(crate) fn join_runs(dst: &mut i64, src: i64) {
    *dst = if src == NO_RUN {
        *dst
    } else if *dst == NO_RUN {
        src
    } else if *dst >= 0 && src >= 0 && *dst & LOW == src >> 32 {
        (*dst >> 32 << 32) + (src & LOW)
    } else {
        BROKEN_RUN
    };
}

/// A run as `lo..hi`, for messages.
pub(crate) fn show_run(run: i64) -> String {
    match run {
        NO_RUN => "no index".to_owned(),
        BROKEN_RUN => "indices out of order, missing or repeated".to_owned(),
        run => format!("{}..{}", run >> 32, run & LOW),
    }
}

/// Reducer axiom 3 (index order): partial results are joined with `dst` covering lower
/// indices than `src`, so a non-commutative concatenation yields the indices in order.
///
/// The concatenation is kept as the run of consecutive indices it spells (`lo..hi`), or
/// "broken": the run is `begin..end` exactly when the concatenation is the range's indices in
/// order, and the value is an `i64`, which a device reduction carries.
pub fn custom_join_keeps_index_order<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let concat = Custom::new(|| NO_RUN, join_runs);
        for range in [0..N, 3..N, 0..1, 7..7] {
            let want = if range.is_empty() {
                NO_RUN
            } else {
                ((range.start as i64) << 32) + range.end as i64
            };
            for (policy, how) in policies(space, range.clone()) {
                let got = parallel_reduce("concat", policy, extend_run::with(), &concat)?;
                ensure!(
                    got == want,
                    "concatenation of the indices over {range:?} with the {how}: got {}, expected {}",
                    show_run(got),
                    show_run(want)
                );
            }
        }
        Ok(())
    })
}

/// A kernel of these checks: the count of indices in the high 32 bits and their sum in the
/// low 32 bits of one `i64` (both stay exact: at most 2^31 indices, sums below 2^32).
#[kernel(crate = hoplite_core)]
pub fn count_and_sum_indices(i: Idx<'_>, acc: &mut i64) {
    *acc += (1 << 32) + *i as i64;
}

/// The low 32 bits of a packed `(count, sum)`.
const LOW: i64 = 0xffff_ffff;

/// Reducer axiom 4: `finalize` runs exactly once per launch, on the total (also on the
/// identity of an empty range).
pub fn finalize_runs_once_on_the_total<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let calls = AtomicUsize::new(0);
        // The value is `(count << 32) + sum`, joined by addition; `finalize` turns the sum into
        // `3 * sum + 1` and keeps the count, so a finalize of partials, a second finalize or
        // none at all changes the result.
        let counted = Custom::with_finalize(
            || 0i64,
            |dst: &mut i64, src: i64| *dst += src,
            |v: &mut i64| {
                calls.fetch_add(1, Ordering::Relaxed);
                *v = (*v >> 32 << 32) + (*v & LOW) * 3 + 1;
            },
        );
        for (range, want) in [
            (0..N, (N as i64, (N * (N - 1) / 2) as i64 * 3 + 1)),
            (9..9, (0, 1)),
        ] {
            for (policy, how) in policies(space, range.clone()) {
                let before = calls.load(Ordering::Relaxed);
                let got = parallel_reduce("finalize", policy, count_and_sum_indices::with(), &counted)?;
                let ran = calls.load(Ordering::Relaxed) - before;
                ensure_eq!(
                    ran,
                    1,
                    "finalize calls for one launch over {range:?} with the {how}"
                );
                ensure_eq!(
                    (got >> 32, got & LOW),
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
