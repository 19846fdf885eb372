//! The access model against raw slices: axpy and a 2-D 5-point stencil through writers and
//! readers bound to the launch, and a row scaling through team rows, beside the same loops on
//! plain slices (and rayon's `par_chunks_mut` for the rows), in one run; and `deep_copy`
//! between layouts beside a transposing slice loop.
//!
//! Ids follow `<backend>-hoplite` / `<backend>-<baseline>` within a group so that
//! `cargo xtask bench` can pair each hoplite measurement with its baseline.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite::prelude::*;
use hoplite::serial::Serial;
use hoplite::{ExecutionSpace, ParallelFor, RayonSpace};
use rayon::prelude::*;

mod common;
use common::raw_pool;

fn axpy(c: &mut Criterion) {
    let mut group = c.benchmark_group("axpy");
    for log2 in [20, 24] {
        let n = 1usize << log2;
        let a = 1.5f64;
        group.throughput(Throughput::Bytes((3 * n * size_of::<f64>()) as u64));
        let x_data: Vec<f64> = (0..n).map(|i| (i % 97) as f64).collect();
        let x = View::<f64, 1>::from_slice("x", [n], &x_data).expect("x");
        let y = View::<f64, 1>::new("y", [n]).expect("y");
        group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |b, &n| {
            b.iter(|| {
                let policy = RangePolicy::new(Serial::default(), 0..n);
                parallel_for("axpy", (policy, (y.write(), x.read())), |(i, (y, x))| {
                    y.set(i, a * x.get(i) + y.get(i))
                })
                .expect("axpy");
            })
        });
        let xs = x_data.clone();
        let mut ys = vec![0.0f64; n];
        group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &n, |b, _| {
            b.iter(|| {
                for (y, x) in ys.iter_mut().zip(&xs) {
                    *y += a * *x;
                }
                black_box(&mut ys);
            })
        });
    }
    group.finish();
}

fn stencil(c: &mut Criterion) {
    let mut group = c.benchmark_group("stencil-2d");
    for side in [1024usize, 4096] {
        let n = side * side;
        group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
        let data: Vec<f64> = (0..n).map(|k| (k % 13) as f64).collect();
        let input = View::<f64, 2>::from_slice("in", [side, side], &data).expect("in");
        let output = View::<f64, 2>::new("out", [side, side]).expect("out");
        group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &side, |b, &side| {
            b.iter(|| {
                let policy = MDRangePolicy::new(Serial::default(), [1, 1], [side - 1, side - 1]);
                parallel_for(
                    "stencil",
                    (policy, (output.write(), input.read())),
                    |(ij, (out, u))| {
                        let lap = u.neighbor(ij, [-1, 0])
                            + u.neighbor(ij, [1, 0])
                            + u.neighbor(ij, [0, -1])
                            + u.neighbor(ij, [0, 1]);
                        out.set(ij, 0.25 * lap - u.get(ij));
                    },
                )
                .expect("stencil");
            })
        });
        let u = data.clone();
        let mut out = vec![0.0f64; n];
        group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &side, |b, &side| {
            b.iter(|| {
                for i in 1..side - 1 {
                    let (up, row, down) = (&u[(i - 1) * side..], &u[i * side..], &u[(i + 1) * side..]);
                    let dst = &mut out[i * side..(i + 1) * side];
                    for j in 1..side - 1 {
                        let lap = up[j] + down[j] + row[j - 1] + row[j + 1];
                        dst[j] = 0.25 * lap - row[j];
                    }
                }
                black_box(&mut out);
            })
        });
    }
    group.finish();
}

/// `b(i, j) = a(i, j) * s(i)` with one team per row: the team's row of `b` through
/// `team_row`, its columns through a team loop, and `s(i)` read at the league rank.
fn scale_rows_on<S>(space: S, a: &View<f64, 2>, s: &View<f64, 1>, b: &View<f64, 2>)
where
    S: ExecutionSpace + ParallelFor<TeamPolicy<S>>,
{
    let [rows, cols] = a.extents();
    // One-thread teams: the league spreads over the pool, as Kokkos' CPU backends recommend.
    let policy = TeamPolicy::new(space, rows, 1);
    parallel_for(
        "scale-rows",
        (policy, (b.write(), a.read(), s.read())),
        |(m, (b, a, s))| {
            let league = m.league_token();
            let (i, scale) = (*league, s.get(*league));
            let row = b.team_row(league);
            let src = a.row(i);
            TeamThreadRange::new(m, cols).parallel_for(|j| row.set(j, src.get(j) * scale));
        },
    )
    .expect("scale rows");
}

fn team_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("team-rows");
    let (rows, cols) = (4096usize, 1024usize);
    let n = rows * cols;
    group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
    let a_data: Vec<f64> = (0..n).map(|k| (k % 13) as f64).collect();
    let s_data: Vec<f64> = (0..rows).map(|i| 1.0 + (i % 5) as f64).collect();
    let a = View::<f64, 2>::from_slice("a", [rows, cols], &a_data).expect("a");
    let s = View::<f64, 1>::from_slice("s", [rows], &s_data).expect("s");
    let b = View::<f64, 2>::new("b", [rows, cols]).expect("b");
    group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, _| {
        bench.iter(|| scale_rows_on(Serial::default(), &a, &s, &b))
    });
    let mut out = vec![0.0f64; n];
    group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &n, |bench, _| {
        bench.iter(|| {
            for ((dst, src), scale) in out.chunks_mut(cols).zip(a_data.chunks(cols)).zip(&s_data) {
                for (d, x) in dst.iter_mut().zip(src) {
                    *d = x * scale;
                }
            }
            black_box(&mut out);
        })
    });
    let space = RayonSpace::default();
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, _| {
        bench.iter(|| scale_rows_on(space.clone(), &a, &s, &b))
    });
    let pool = raw_pool(&space);
    group.bench_with_input(BenchmarkId::new("rayon-par-chunks", n), &n, |bench, _| {
        bench.iter(|| {
            pool.install(|| {
                out.par_chunks_mut(cols)
                    .zip(a_data.par_chunks(cols))
                    .zip(&s_data)
                    .for_each(|((dst, src), scale)| {
                        for (d, x) in dst.iter_mut().zip(src) {
                            *d = x * scale;
                        }
                    })
            });
            black_box(&mut out);
        })
    });
    group.finish();
}

/// Batched outer products `C[b] = u[b] v[b]^T` through team planes (league over the batch,
/// team loop over rows, vector loop over columns), on `space` with one-thread teams.
fn outer_products_on<S>(space: S, u: &View<f64, 2>, v: &View<f64, 2>, c: &View<f64, 3>)
where
    S: ExecutionSpace + ParallelFor<TeamPolicy<S>>,
{
    let [batch, _n] = u.extents();
    let policy = TeamPolicy::new(space, batch, 1);
    parallel_for(
        "outer-products",
        (policy, (c.write(), u.read(), v.read())),
        |(m, (c, u, v))| {
            let plane = c.team_plane(m.league_token());
            let (u, v) = (u.row(plane.plane()), v.row(plane.plane()));
            TeamThreadRange::new(m, plane.rows()).parallel_for(|i| {
                let (row, ui) = (plane.row(i), u.get(*i));
                ThreadVectorRange::new(m, row.len()).parallel_for(|k| row.set(*k, ui * v.get(*k)));
            });
        },
    )
    .expect("outer products");
}

fn team_planes(c: &mut Criterion) {
    let mut group = c.benchmark_group("team-planes");
    let (batch, n) = (256usize, 128usize);
    let total = batch * n * n;
    group.throughput(Throughput::Bytes((total * size_of::<f64>()) as u64));
    let u_data: Vec<f64> = (0..batch * n).map(|k| (k % 7) as f64).collect();
    let v_data: Vec<f64> = (0..batch * n).map(|k| (k % 5) as f64).collect();
    let u = View::<f64, 2>::from_slice("u", [batch, n], &u_data).expect("u");
    let v = View::<f64, 2>::from_slice("v", [batch, n], &v_data).expect("v");
    let cv = View::<f64, 3>::new("c", [batch, n, n]).expect("c");
    group.bench_with_input(BenchmarkId::new("serial-hoplite", total), &n, |bench, _| {
        bench.iter(|| outer_products_on(Serial::default(), &u, &v, &cv))
    });
    let mut out = vec![0.0f64; total];
    let raw = |plane: &mut [f64], b: usize| {
        let (ub, vb) = (&u_data[b * n..(b + 1) * n], &v_data[b * n..(b + 1) * n]);
        for (row, ui) in plane.chunks_mut(n).zip(ub) {
            for (x, vk) in row.iter_mut().zip(vb) {
                *x = ui * vk;
            }
        }
    };
    group.bench_with_input(BenchmarkId::new("serial-raw-loop", total), &n, |bench, _| {
        bench.iter(|| {
            for (b, plane) in out.chunks_mut(n * n).enumerate() {
                raw(plane, b);
            }
            black_box(&mut out);
        })
    });
    let space = RayonSpace::default();
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", total), &n, |bench, _| {
        bench.iter(|| outer_products_on(space.clone(), &u, &v, &cv))
    });
    let pool = raw_pool(&space);
    group.bench_with_input(BenchmarkId::new("rayon-par-chunks", total), &n, |bench, _| {
        bench.iter(|| {
            pool.install(|| {
                out.par_chunks_mut(n * n)
                    .enumerate()
                    .for_each(|(b, plane)| raw(plane, b))
            });
            black_box(&mut out);
        })
    });
    group.finish();
}

/// `deep_copy` from a `LayoutRight` to a `LayoutLeft` matrix (a transpose in memory) beside
/// the slice loop a user would write (in the destination's order) and a tiled slice loop.
fn deep_copy_transpose(c: &mut Criterion) {
    let mut group = c.benchmark_group("deep-copy-transpose");
    let n = 4096usize;
    group.throughput(Throughput::Bytes((2 * n * n * size_of::<f64>()) as u64));
    let data: Vec<f64> = (0..n * n).map(|k| (k % 1013) as f64).collect();
    let right = View::<f64, 2>::from_slice("right", [n, n], &data).expect("right");
    let left = View::<f64, 2, LayoutLeft>::new("left", [n, n]).expect("left");
    group.bench_with_input(BenchmarkId::new("serial-hoplite", n * n), &n, |b, _| {
        b.iter(|| deep_copy(&left, &right).expect("deep_copy"))
    });
    let mut out = vec![0.0f64; n * n];
    group.bench_with_input(BenchmarkId::new("serial-raw-loop", n * n), &n, |b, &n| {
        b.iter(|| {
            // Column-major destination: element (i, j) at j * n + i.
            for j in 0..n {
                for i in 0..n {
                    out[j * n + i] = data[i * n + j];
                }
            }
            black_box(&mut out);
        })
    });
    group.bench_with_input(BenchmarkId::new("serial-raw-tiled", n * n), &n, |b, &n| {
        b.iter(|| {
            const T: usize = 32;
            for jj in (0..n).step_by(T) {
                for ii in (0..n).step_by(T) {
                    for j in jj..(jj + T).min(n) {
                        for i in ii..(ii + T).min(n) {
                            out[j * n + i] = data[i * n + j];
                        }
                    }
                }
            }
            black_box(&mut out);
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    axpy,
    stencil,
    team_rows,
    team_planes,
    deep_copy_transpose
);
criterion_main!(benches);
