//! Every reducer over an empty range: its identity.

use hoplite_core::{
    BAnd, BOr, FirstLoc, LAnd, LOr, LastLoc, Max, MaxLoc, Min, MinLoc, MinMax, MinMaxLoc, MinMaxLocScalar,
    MinMaxScalar, Prod, Sum, ValLoc,
};

use super::reduce_closure_all;
use crate::{FullSpace, Outcome, check};

/// An empty range reduces to each reducer's identity.
pub fn empty_range_gives_the_identity<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let e = 5..5;
        reduce_closure_all(
            space,
            e.clone(),
            &Sum::new(),
            |_, a: &mut f64| *a += 1.0,
            &0.0,
            "Sum",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &Prod::new(),
            |_, a: &mut i32| *a *= 3,
            &1,
            "Prod",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &Min::new(),
            |_, a: &mut i32| *a = 0,
            &i32::MAX,
            "Min",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &Max::new(),
            |_, a: &mut f32| *a = 0.0,
            &f32::NEG_INFINITY,
            "Max",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &MinMax::new(),
            |_, a: &mut MinMaxScalar<u8>| a.update(3),
            &MinMaxScalar { min: u8::MAX, max: 0 },
            "MinMax",
        )?;
        reduce_closure_all(
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
        reduce_closure_all(
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
        reduce_closure_all(
            space,
            e.clone(),
            &MinMaxLoc::new(),
            |i, a: &mut MinMaxLocScalar<f64>| a.update(0.0, *i),
            &none,
            "MinMaxLoc",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &FirstLoc,
            |i, a: &mut Option<usize>| FirstLoc::update(a, *i),
            &None,
            "FirstLoc",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &LastLoc,
            |i, a: &mut Option<usize>| LastLoc::update(a, *i),
            &None,
            "LastLoc",
        )?;
        reduce_closure_all(
            space,
            e.clone(),
            &LAnd,
            |_, a: &mut bool| *a = false,
            &true,
            "LAnd",
        )?;
        reduce_closure_all(space, e.clone(), &LOr, |_, a: &mut bool| *a = true, &false, "LOr")?;
        reduce_closure_all(
            space,
            e.clone(),
            &BAnd::new(),
            |_, a: &mut u16| *a = 0,
            &u16::MAX,
            "BAnd",
        )?;
        reduce_closure_all(space, e, &BOr::new(), |_, a: &mut u16| *a = 1, &0, "BOr")
    })
}
