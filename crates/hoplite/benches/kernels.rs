//! `#[kernel]` functions against the same closures, in one run: the native path of a
//! single-source kernel should cost what the closure costs.
//!
//! Ids follow `<backend>-hoplite` (the `#[kernel]`) / `<backend>-closure` (the closure), so
//! `cargo xtask bench` pairs them.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, ParallelFor, ParallelReduce, RayonSpace, Serial, kernel};

#[kernel]
fn triad(
    i: Idx<'_>,
    a: BoundWriter<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    c: BoundReader<'_, f64, 1>,
    s: f64,
) {
    a.set(i, b.get(i) + s * c.get(i));
}

#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

fn triad_kernel<S: ParallelFor<RangePolicy<S>>>(
    space: S,
    n: usize,
    s: f64,
    a: &View<f64, 1>,
    b: &View<f64, 1>,
    c: &View<f64, 1>,
) {
    parallel_for(
        "triad",
        (RangePolicy::new(space, 0..n), (a.write(), b.read(), c.read())),
        triad::with(s),
    )
    .expect("triad")
}

fn triad_closure<S: ParallelFor<RangePolicy<S>>>(
    space: S,
    n: usize,
    s: f64,
    a: &View<f64, 1>,
    b: &View<f64, 1>,
    c: &View<f64, 1>,
) {
    parallel_for(
        "triad",
        (RangePolicy::new(space, 0..n), (a.write(), b.read(), c.read())),
        |(i, (a, b, c))| a.set(i, b.get(i) + s * c.get(i)),
    )
    .expect("triad")
}

fn dot_kernel<S: ParallelReduce<RangePolicy<S>>>(
    space: S,
    n: usize,
    x: &View<f64, 1>,
    y: &View<f64, 1>,
) -> f64 {
    parallel_reduce(
        "dot",
        (RangePolicy::new(space, 0..n), (x.read(), y.read())),
        dot::with(),
        Sum::<f64>::new(),
    )
    .expect("dot")
}

fn dot_closure<S: ParallelReduce<RangePolicy<S>>>(
    space: S,
    n: usize,
    x: &View<f64, 1>,
    y: &View<f64, 1>,
) -> f64 {
    parallel_reduce(
        "dot",
        (RangePolicy::new(space, 0..n), (x.read(), y.read())),
        |(i, (x, y)), acc: &mut f64| *acc += x.get(i) * y.get(i),
        Sum::<f64>::new(),
    )
    .expect("dot")
}

fn kernels(c: &mut Criterion) {
    let n = 1usize << 22;
    let b_data: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let c_data: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    let a = View::<f64, 1>::new("a", [n]).expect("a");
    let b = View::<f64, 1>::from_slice("b", [n], &b_data).expect("b");
    let cv = View::<f64, 1>::from_slice("c", [n], &c_data).expect("c");
    let rayon = RayonSpace::default();

    let mut group = c.benchmark_group("kernel-triad");
    group.throughput(Throughput::Bytes((3 * n * size_of::<f64>()) as u64));
    group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, &n| {
        bench.iter(|| triad_kernel(Serial::default(), n, 3.0, &a, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("serial-closure", n), &n, |bench, &n| {
        bench.iter(|| triad_closure(Serial::default(), n, 3.0, &a, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, &n| {
        bench.iter(|| triad_kernel(rayon.clone(), n, 3.0, &a, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("rayon-closure", n), &n, |bench, &n| {
        bench.iter(|| triad_closure(rayon.clone(), n, 3.0, &a, &b, &cv))
    });
    group.finish();

    let mut group = c.benchmark_group("kernel-dot");
    group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
    group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, &n| {
        bench.iter(|| dot_kernel(Serial::default(), n, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("serial-closure", n), &n, |bench, &n| {
        bench.iter(|| dot_closure(Serial::default(), n, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, &n| {
        bench.iter(|| dot_kernel(rayon.clone(), n, &b, &cv))
    });
    group.bench_with_input(BenchmarkId::new("rayon-closure", n), &n, |bench, &n| {
        bench.iter(|| dot_closure(rayon.clone(), n, &b, &cv))
    });
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
