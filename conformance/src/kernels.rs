//! `#[kernel]` functions are kernels like closures: the same launches give the same results
//! on every backend, for `parallel_for` over ranges and MDRanges, `parallel_reduce`, and team
//! reductions.

use hoplite_core::{
    BoundReader, BoundWriter, Idx, MDRangePolicy, MdIdx, RangePolicy, Sum, TeamMember, TeamPolicy, TeamSize,
    View, parallel_for, parallel_reduce,
};
use hoplite_macros::kernel;

use crate::util::same;
use crate::{FullSpace, Outcome, check};

/// A kernel of these checks (public so the NVRTC check compiles it too).
#[kernel(crate = hoplite_core)]
pub fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

/// A kernel of these checks (public so the NVRTC check compiles it too).
#[kernel(crate = hoplite_core)]
pub fn five_point(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    let sum =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    out.set(ij, sum - 4.0 * u.get(ij));
}

/// A kernel of these checks (public so the NVRTC check compiles it too).
#[kernel(crate = hoplite_core)]
pub fn weighted_count(i: Idx<'_>, x: BoundReader<'_, i64, 1>, threshold: i64, acc: &mut i64) {
    let v = x.get(i);
    if v > threshold {
        *acc += v;
    } else {
        *acc += 1;
    }
}

/// A kernel of these checks (public so the NVRTC check compiles it too).
#[kernel(crate = hoplite_core)]
pub fn team_row_norms(m: &impl TeamMember, a: BoundReader<'_, i64, 2>, cols: usize, acc: &mut i64) {
    let row = m.league_rank();
    let mut part = 0i64;
    let mut j = m.team_rank();
    while j < cols {
        let v = a.get([row, j]);
        part += v * v;
        j += m.team_size();
    }
    let total = m.team_reduce(&Sum::new(), part);
    let lead = m.team_broadcast(row as i64, 0);
    m.team_barrier();
    if m.team_rank() == 0 {
        *acc += total + lead;
    }
}

/// A `#[kernel]` range `parallel_for` stores what the same closure stores.
pub fn kernel_range_for_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 1000, 10_007] {
            let x: View<f64, 1> =
                View::from_slice("x", [n], &(0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>())?;
            let y: View<f64, 1> = View::from_slice("y", [n], &vec![1.0; n])?;
            let y2: View<f64, 1> = View::from_slice("y2", [n], &vec![1.0; n])?;
            let policy = RangePolicy::new(space.clone(), 0..n);
            parallel_for(
                "axpy kernel",
                (policy.clone(), (y.write(), x.read())),
                axpy::with(3.0),
            )?;
            parallel_for("axpy closure", (policy, (y2.write(), x.read())), |(i, (y, x))| {
                y.set(i, 3.0 * x.get(i) + y.get(i))
            })?;
            same(&y.to_vec()?, &y2.to_vec()?, || format!("axpy over {n} elements"))?;
        }
        Ok(())
    })
}

/// A `#[kernel]` MDRange stencil stores what the same closure stores.
pub fn kernel_mdrange_for_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (37, 29);
        let data: Vec<f64> = (0..rows * cols).map(|k| ((k * 7) % 23) as f64).collect();
        let u: View<f64, 2> = View::from_slice("u", [rows, cols], &data)?;
        let a: View<f64, 2> = View::new("a", [rows, cols])?;
        let b: View<f64, 2> = View::new("b", [rows, cols])?;
        let interior = MDRangePolicy::new(space.clone(), [1, 1], [rows - 1, cols - 1]);
        parallel_for(
            "stencil kernel",
            (interior.clone(), (a.write(), u.read())),
            five_point::with(),
        )?;
        parallel_for(
            "stencil closure",
            (interior, (b.write(), u.read())),
            |(ij, (out, u))| {
                let sum = u.neighbor(ij, [-1, 0])
                    + u.neighbor(ij, [1, 0])
                    + u.neighbor(ij, [0, -1])
                    + u.neighbor(ij, [0, 1]);
                out.set(ij, sum - 4.0 * u.get(ij));
            },
        )?;
        same(&a.to_vec()?, &b.to_vec()?, || format!("a {rows}x{cols} stencil"))
    })
}

/// A `#[kernel]` reduction with a scalar capture returns what the same closure returns.
pub fn kernel_reduce_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 999, 10_007] {
            let x: View<i64, 1> = View::from_slice(
                "x",
                [n],
                &(0..n as i64).map(|k| (k * 37) % 101).collect::<Vec<_>>(),
            )?;
            let policy = RangePolicy::new(space.clone(), 0..n);
            let got = parallel_reduce(
                "count kernel",
                (policy.clone(), (x.read(),)),
                weighted_count::with(50),
                Sum::<i64>::new(),
            )?;
            let want = parallel_reduce(
                "count closure",
                (policy, (x.read(),)),
                |(i, (x,)), acc: &mut i64| {
                    let v = x.get(i);
                    *acc += if v > 50 { v } else { 1 };
                },
                Sum::<i64>::new(),
            )?;
            ensure_eq!(got, want, "the weighted count over {n} elements");
        }
        Ok(())
    })
}

/// A `#[kernel]` team reduction (team ranks, `team_reduce`, `team_broadcast`, a barrier) returns
/// what the same closure returns, for every team size the space allows up to 4.
pub fn kernel_team_reduce_matches_closure<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (13, 37);
        let data: Vec<i64> = (0..(rows * cols) as i64).map(|k| (k * 7) % 19 - 9).collect();
        let a: View<i64, 2> = View::from_slice("a", [rows, cols], &data)?;
        let max = TeamPolicy::new(space.clone(), rows, TeamSize::Auto).team_size_max();
        for team in (1..=max.min(4)).collect::<Vec<_>>() {
            let policy = TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team));
            let got = parallel_reduce(
                "team kernel",
                (policy.clone(), (a.read(),)),
                team_row_norms::with::<S>(cols),
                Sum::<i64>::new(),
            )?;
            let want = parallel_reduce(
                "team closure",
                (policy, (a.read(),)),
                |(m, (a,)), acc: &mut i64| {
                    let row = m.league_rank();
                    let part: i64 = (m.team_rank()..cols)
                        .step_by(m.team_size())
                        .map(|j| a.get([row, j]).pow(2))
                        .sum();
                    let total = m.team_reduce(&Sum::new(), part);
                    let lead = m.team_broadcast(row as i64, 0);
                    m.team_barrier();
                    if m.team_rank() == 0 {
                        *acc += total + lead;
                    }
                },
                Sum::<i64>::new(),
            )?;
            ensure_eq!(got, want, "row norms by teams of {team}");
        }
        Ok(())
    })
}
