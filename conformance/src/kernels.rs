//! `#[kernel]` functions give the results that the same loop gives on the host, on every
//! backend a GPU's included, for `parallel_for` over ranges and MDRanges, `parallel_reduce`,
//! and team reductions. Every check of this module is portable: its data lives in the space's
//! own memory and its expectations are computed by plain host loops.

use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, Idx, MDRangePolicy, MdIdx, RangePolicy, Sum, TeamMember, TeamPolicy, TeamSize,
    parallel_for, parallel_reduce,
};
use hoplite_macros::kernel;

use crate::util::same;
use crate::{LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<axpy>,
    DeviceKernelInfo::of::<five_point>,
    DeviceKernelInfo::of::<weighted_count>,
    DeviceKernelInfo::of::<team_row_norms>,
];

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

/// A `#[kernel]` range `parallel_for` stores what the same loop computes on the host.
pub fn kernel_range_for_matches_host_loop<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 1000, 10_007] {
            let xs: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
            let x = SpaceView::<S, f64, 1>::from_slice("x", [n], &xs)?;
            let y = SpaceView::<S, f64, 1>::from_slice("y", [n], &vec![1.0; n])?;
            parallel_for(
                "axpy kernel",
                (RangePolicy::new(space.clone(), 0..n), (y.write(), x.read())),
                axpy::with(3.0),
            )?;
            let want: Vec<f64> = xs.iter().map(|x| 3.0 * x + 1.0).collect();
            same(&y.to_vec()?, &want, || format!("axpy over {n} elements"))?;
        }
        Ok(())
    })
}

/// A `#[kernel]` MDRange stencil stores what the same loop computes on the host, and leaves
/// the points outside its range alone.
pub fn kernel_mdrange_for_matches_host_loop<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (37, 29);
        let data: Vec<f64> = (0..rows * cols).map(|k| ((k * 7) % 23) as f64).collect();
        let u = SpaceView::<S, f64, 2>::from_slice("u", [rows, cols], &data)?;
        let out = SpaceView::<S, f64, 2>::new("out", [rows, cols])?;
        parallel_for(
            "stencil kernel",
            (
                MDRangePolicy::new(space.clone(), [1, 1], [rows - 1, cols - 1]),
                (out.write(), u.read()),
            ),
            five_point::with(),
        )?;
        let at = |i: usize, j: usize| data[i * cols + j];
        let mut want = vec![0.0; rows * cols];
        for i in 1..rows - 1 {
            for j in 1..cols - 1 {
                let sum = at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1);
                want[i * cols + j] = sum - 4.0 * at(i, j);
            }
        }
        same(&out.to_vec()?, &want, || format!("a {rows}x{cols} stencil"))
    })
}

/// A `#[kernel]` reduction with a scalar capture returns what the same loop computes on the
/// host.
pub fn kernel_reduce_matches_host_loop<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 999, 10_007] {
            let xs: Vec<i64> = (0..n as i64).map(|k| (k * 37) % 101).collect();
            let x = SpaceView::<S, i64, 1>::from_slice("x", [n], &xs)?;
            let got = parallel_reduce(
                "count kernel",
                (RangePolicy::new(space.clone(), 0..n), (x.read(),)),
                weighted_count::with(50),
                Sum::<i64>::new(),
            )?;
            let want: i64 = xs.iter().map(|&v| if v > 50 { v } else { 1 }).sum();
            ensure_eq!(got, want, "the weighted count over {n} elements");
        }
        Ok(())
    })
}

/// A `#[kernel]` team reduction (team ranks, `team_reduce`, `team_broadcast`, a barrier) returns
/// what the same loop computes on the host, for every team size the space allows up to 4.
pub fn kernel_team_reduce_matches_host_loop<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (13, 37);
        let data: Vec<i64> = (0..(rows * cols) as i64).map(|k| (k * 7) % 19 - 9).collect();
        let a = SpaceView::<S, i64, 2>::from_slice("a", [rows, cols], &data)?;
        let want: i64 = (0..rows)
            .map(|row| {
                let norm: i64 = data[row * cols..(row + 1) * cols].iter().map(|v| v * v).sum();
                norm + row as i64
            })
            .sum();
        let max = TeamPolicy::new(space.clone(), rows, TeamSize::Auto).team_size_max();
        for team in 1..=max.min(4) {
            let got = parallel_reduce(
                "team kernel",
                (
                    TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team)),
                    (a.read(),),
                ),
                team_row_norms::with::<S>(cols),
                Sum::<i64>::new(),
            )?;
            ensure_eq!(got, want, "row norms by teams of {team}");
        }
        Ok(())
    })
}
