//! The access model against raw slices: axpy and a 2-D 5-point stencil through writers and
//! readers bound to the launch, beside the same loops on plain slices, in one run.
//!
//! Ids follow `<backend>-hoplite` / `<backend>-<baseline>` within a group so that
//! `cargo xtask bench` can pair each hoplite measurement with its baseline.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite::prelude::*;
use hoplite::serial::Serial;

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

criterion_group!(benches, axpy, stencil);
criterion_main!(benches);
