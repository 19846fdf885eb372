//! Every reducer over an empty range: its identity. The kernels are the other reducer checks'
//! (none of them runs here); `FirstLoc` and `LastLoc`, which device kernels do not reduce,
//! are checked over an empty range with the host-only location checks.

use hoplite_core::{
    BAnd, BOr, LAnd, LOr, Max, MaxLoc, Min, MinLoc, MinMax, MinMaxLoc, MinMaxLocScalar, MinMaxScalar, Prod,
    Sum, ValLoc, parallel_reduce,
};

use super::arith::{
    max_x_i64, min_quarter_x_f64, min_x_i64, minmax_x_i64, prod_small_i64, prod_x_f64, sum_x_f64, sum_x_i64,
};
use super::location::{max_loc_x_i64, min_loc_x_i64, minmax_loc_x_i64};
use super::logical::{all_x_above, and_cleared_index_bits, any_x_above, or_index_bits};
use super::{N, prod_data, reduce_all, tie_data};
use crate::{LaunchSpace, Outcome, SpaceView, check};

/// An empty range reduces to each reducer's identity, under every policy.
pub fn empty_range_gives_the_identity<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let e = 5..5;
        let xi = SpaceView::<S, i64, 1>::from_slice("x", [N], &tie_data())?;
        let xf = SpaceView::<S, f64, 1>::from_slice("xf", [N], &prod_data())?;
        let x = || (xi.read(),);
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("sum", (p, x()), sum_x_i64::with(), Sum::new()),
            &0,
            "Sum<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("prod", p, prod_small_i64::with(), Prod::new()),
            &1,
            "Prod<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("min", (p, x()), min_x_i64::with(), Min::new()),
            &i64::MAX,
            "Min<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("max", (p, x()), max_x_i64::with(), Max::new()),
            &i64::MIN,
            "Max<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("sum", (p, (xf.read(),)), sum_x_f64::with(), Sum::new()),
            &0.0,
            "Sum<f64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("prod", (p, (xf.read(),)), prod_x_f64::with(), Prod::new()),
            &1.0,
            "Prod<f64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("min", (p, x()), min_quarter_x_f64::with(), Min::new()),
            &f64::INFINITY,
            "Min<f64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("minmax", (p, x()), minmax_x_i64::with(), MinMax::new()),
            &MinMaxScalar {
                min: i64::MAX,
                max: i64::MIN,
            },
            "MinMax<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("min loc", (p, x()), min_loc_x_i64::with(), MinLoc::new()),
            &ValLoc {
                val: i64::MAX,
                loc: None,
            },
            "MinLoc<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("max loc", (p, x()), max_loc_x_i64::with(), MaxLoc::new()),
            &ValLoc {
                val: i64::MIN,
                loc: None,
            },
            "MaxLoc<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("minmax loc", (p, x()), minmax_loc_x_i64::with(), MinMaxLoc::new()),
            &MinMaxLocScalar {
                min_val: i64::MAX,
                max_val: i64::MIN,
                min_loc: None,
                max_loc: None,
            },
            "MinMaxLoc<i64>",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("and", (p, x()), all_x_above::with(0), LAnd),
            &true,
            "LAnd",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("or", (p, x()), any_x_above::with(0), LOr),
            &false,
            "LOr",
        )?;
        reduce_all(
            space,
            e.clone(),
            |p| parallel_reduce("band", p, and_cleared_index_bits::with(), BAnd::new()),
            &u64::MAX,
            "BAnd<u64>",
        )?;
        reduce_all(
            space,
            e,
            |p| parallel_reduce("bor", p, or_index_bits::with(), BOr::new()),
            &0,
            "BOr<u64>",
        )
    })
}
