//! `LAnd`, `LOr`, `BAnd` and `BOr` against the sequential fold.

use hoplite_core::{BAnd, BOr, BoundReader, Idx, LAnd, LOr, parallel_reduce};
use hoplite_macros::kernel;

use super::{N, reduce_all, tie_data};
use crate::{LaunchSpace, Outcome, SpaceView, check};

/// A kernel of these checks: whether every `x` is above `threshold`.
#[kernel(crate = hoplite_core)]
pub fn all_x_above(i: Idx<'_>, x: BoundReader<'_, i64, 1>, threshold: i64, acc: &mut bool) {
    *acc = *acc && x.get(i) > threshold;
}

/// A kernel of these checks: whether any `x` is above `threshold`.
#[kernel(crate = hoplite_core)]
pub fn any_x_above(i: Idx<'_>, x: BoundReader<'_, i64, 1>, threshold: i64, acc: &mut bool) {
    *acc = *acc || x.get(i) > threshold;
}

/// A kernel of these checks: the union of the bits `1 << (i % 61)`.
#[kernel(crate = hoplite_core)]
pub fn or_index_bits(i: Idx<'_>, acc: &mut u64) {
    let bit: u64 = 1 << (*i % 61);
    *acc |= bit;
}

/// A kernel of these checks: all bits but the `1 << (i % 61)`.
#[kernel(crate = hoplite_core)]
pub fn and_cleared_index_bits(i: Idx<'_>, acc: &mut u64) {
    let bit: u64 = 1 << (*i % 61);
    *acc &= !bit;
}

/// `LAnd` and `LOr` equal the sequential `all` and `any`.
pub fn logical_and_or_match_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let x = tie_data();
        let xv = SpaceView::<S, i64, 1>::from_slice("x", [N], &x)?;
        for (threshold, all, any) in [
            (-4, true, true),
            (-3, false, true),
            (39, false, true),
            (40, false, false),
        ] {
            reduce_all(
                space,
                0..N,
                |p| parallel_reduce("reduce", (p, (xv.read(),)), all_x_above::with(threshold), LAnd),
                &all,
                &format!("LAnd of x > {threshold}"),
            )?;
            reduce_all(
                space,
                0..N,
                |p| parallel_reduce("reduce", (p, (xv.read(),)), any_x_above::with(threshold), LOr),
                &any,
                &format!("LOr of x > {threshold}"),
            )?;
        }
        Ok(())
    })
}

/// `BAnd` and `BOr` equal the sequential bitwise folds.
pub fn bitwise_and_or_match_sequential_fold<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let bit = |i: usize| 1u64 << (i % 61);
        for range in [0..N, 10..40, 200..201] {
            let any = range.clone().fold(0u64, |a, i| a | bit(i));
            let all = range.clone().fold(!0u64, |a, i| a & !bit(i));
            reduce_all(
                space,
                range.clone(),
                |p| parallel_reduce("reduce", p, or_index_bits::with(), BOr::new()),
                &any,
                "BOr<u64>",
            )?;
            reduce_all(
                space,
                range,
                |p| parallel_reduce("reduce", p, and_cleared_index_bits::with(), BAnd::new()),
                &all,
                "BAnd<u64>",
            )?;
        }
        Ok(())
    })
}
