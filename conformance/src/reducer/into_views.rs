//! Results reduced into views and host variables (`parallel_reduce_into`), and reducer
//! values stored in views.

use hoplite_core::{
    MDRangePolicy, Max, MaxLoc, Min, MinLoc, MinMax, MinMaxLoc, MinMaxLocScalar, MinMaxScalar, RangePolicy,
    Sum, ValLoc, View, parallel_reduce_into,
};

use super::arith::{minmax_x_i64, sum_x_i64};
use super::location::{min_loc_x_i64, minmax_loc_x_i64};
use super::{N, tie_data};
use crate::mdrange_policy::count_points_2;
use crate::util::int_data;
use crate::{FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// `parallel_reduce_into` with closures: a result stored into a rank-0 view (also one the kernel
/// read), into a host variable, and tuples of reducers (location reducers too) into one target
/// per component, over range and MDRange policies (a multi-index location too); a target view
/// borrowed elsewhere is a typed error.
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

        // A tuple of location reducers into a tuple of views, and a multi-index location.
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

/// Reducer values live in views of the space's memory: `MinLoc`, `MinMax` and `MinMaxLoc`
/// results and a `Sum` reduced straight into rank-0 views (also over an MDRange), a result
/// into a host variable, a view of `ValLoc` starts as "nothing seen" (`loc: None`), and a
/// target view with a live handle is a borrow conflict.
pub fn reducer_values_reduce_into_views<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let fresh = SpaceView::<S, ValLoc<f64>, 1>::new("fresh", [2])?;
        ensure_eq!(fresh.to_vec()?[1].loc, None, "a new view of ValLoc");
        let data = tie_data();
        let x = SpaceView::<S, i64, 1>::from_slice("x", [N], &data)?;
        let all = || (RangePolicy::new(space.clone(), 0..N), (x.read(),));
        let at = SpaceView::<S, ValLoc<i64>, 0>::new("argmin", [])?;
        parallel_reduce_into("min loc", all(), min_loc_x_i64::with(), MinLoc::new(), &at)?;
        ensure_eq!(
            at.to_vec()?,
            [ValLoc {
                val: -3,
                loc: Some(333)
            }],
            "MinLoc into a view"
        );
        let range = SpaceView::<S, MinMaxScalar<i64>, 0>::new("range", [])?;
        parallel_reduce_into("minmax", all(), minmax_x_i64::with(), MinMax::new(), &range)?;
        ensure_eq!(
            range.to_vec()?,
            [MinMaxScalar { min: -3, max: 40 }],
            "MinMax into a view"
        );
        let both = SpaceView::<S, MinMaxLocScalar<i64>, 0>::new("both", [])?;
        parallel_reduce_into(
            "minmax loc",
            all(),
            minmax_loc_x_i64::with(),
            MinMaxLoc::new(),
            &both,
        )?;
        ensure_eq!(
            both.to_vec()?,
            [MinMaxLocScalar {
                min_val: -3,
                max_val: 40,
                min_loc: Some(333),
                max_loc: Some(100)
            }],
            "MinMaxLoc into a view"
        );
        let total = SpaceView::<S, i64, 0>::new("total", [])?;
        parallel_reduce_into("sum", all(), sum_x_i64::with(), Sum::new(), &total)?;
        ensure_eq!(total.to_vec()?, [data.iter().sum::<i64>()], "Sum into a view");
        let points = SpaceView::<S, i64, 0>::new("points", [])?;
        parallel_reduce_into(
            "md count",
            MDRangePolicy::new(space.clone(), [0, 0], [10, 100]),
            count_points_2::with(),
            Sum::new(),
            &points,
        )?;
        ensure_eq!(
            points.to_vec()?,
            [1000],
            "a count over a 10 x 100 box into a view"
        );
        let mut host = 0i64;
        parallel_reduce_into(
            "sum into a variable",
            all(),
            sum_x_i64::with(),
            Sum::new(),
            &mut host,
        )?;
        ensure_eq!(host, data.iter().sum::<i64>(), "Sum into a host variable");
        let held = total.read();
        let refused = parallel_reduce_into("into a held view", all(), sum_x_i64::with(), Sum::new(), &total);
        ensure!(
            matches!(refused, Err(hoplite_core::Error::BorrowConflict { .. })),
            "storing into a view with a live reader gave {refused:?}"
        );
        drop(held);
        Ok(())
    })
}
