//! Results reduced into views and host variables (`parallel_reduce_into`), and reducer
//! values stored in views.

use hoplite_core::{
    Max, MaxLoc, Min, MinLoc, MinMax, MinMaxLoc, MinMaxScalar, RangePolicy, Sum, ValLoc, View,
    parallel_reduce_into,
};

use crate::util::int_data;
use crate::{FullSpace, Outcome, check};

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
