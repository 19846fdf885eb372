//! `LAnd`, `LOr`, `BAnd` and `BOr` against the sequential fold.

use hoplite_core::{BAnd, BOr, LAnd, LOr};

use super::{N, reduce_all, tie_data};
use crate::{FullSpace, Outcome, check};

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
