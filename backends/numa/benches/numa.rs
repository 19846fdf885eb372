//! The NUMA backend beside the rayon backend and hand-written rayon, in one run: triad and dot
//! on every node at once (first-touch arrays), and the dispatch latency of a node pool.
//!
//! Ids follow `numa-hoplite` / `numa-<baseline>` within a group, so `cargo xtask bench` pairs
//! each NUMA measurement with the rayon backend (`numa-rayon-backend`, a pool of as many
//! threads) and hand-written rayon (`numa-raw-...`, a rayon pool of as many threads).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite_core::{ExecutionSpace, LayoutRight, RangePolicy, Sum, View, parallel_for, parallel_reduce};
use hoplite_numa::{NumaMemory, NumaSpace};
use hoplite_rayon::RayonSpace;
use rayon::prelude::*;

const CHUNK: usize = 1 << 14;

/// The machine's NUMA space, the rayon backend and a raw rayon pool of the same size.
fn spaces() -> (NumaSpace, RayonSpace, rayon::ThreadPool) {
    let numa = NumaSpace::new().expect("NUMA pools");
    let threads = numa.concurrency();
    let rayon_backend = RayonSpace::with_threads(threads).expect("a rayon-backend pool");
    let raw = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon pool");
    (numa, rayon_backend, raw)
}

type NumaView = View<f64, 1, LayoutRight, NumaMemory>;

fn triad(c: &mut Criterion) {
    let mut group = c.benchmark_group("numa-triad");
    let (numa, rayon_backend, raw) = spaces();
    let n = 1usize << 24;
    let s = 3.0f64;
    group.throughput(Throughput::Bytes((3 * n * size_of::<f64>()) as u64));
    let (a, b, cv): (NumaView, NumaView, NumaView) = (
        numa.first_touch_view("a", n, 0.0).expect("a"),
        numa.first_touch_view("b", n, 1.0).expect("b"),
        numa.first_touch_view("c", n, 2.0).expect("c"),
    );
    group.bench_with_input(BenchmarkId::new("numa-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            parallel_for(
                "triad",
                (
                    RangePolicy::new(numa.clone(), 0..n),
                    (a.write(), b.read(), cv.read()),
                ),
                |(i, (a, b, c))| a.set(i, b.get(i) + s * c.get(i)),
            )
            .expect("triad")
        })
    });
    let (ha, hb, hc) = (
        View::<f64, 1>::new("a", [n]).expect("a"),
        View::<f64, 1>::from_slice("b", [n], &vec![1.0; n]).expect("b"),
        View::<f64, 1>::from_slice("c", [n], &vec![2.0; n]).expect("c"),
    );
    group.bench_with_input(BenchmarkId::new("numa-rayon-backend", n), &n, |bench, &n| {
        bench.iter(|| {
            parallel_for(
                "triad",
                (
                    RangePolicy::new(rayon_backend.clone(), 0..n),
                    (ha.write(), hb.read(), hc.read()),
                ),
                |(i, (a, b, c))| a.set(i, b.get(i) + s * c.get(i)),
            )
            .expect("triad")
        })
    });
    let (mut raw_a, raw_b, raw_c) = (vec![0.0f64; n], vec![1.0f64; n], vec![2.0f64; n]);
    group.bench_with_input(BenchmarkId::new("numa-raw-par-chunks", n), &n, |bench, _| {
        bench.iter(|| {
            raw.install(|| {
                raw_a
                    .par_chunks_mut(CHUNK)
                    .zip(raw_b.par_chunks(CHUNK).zip(raw_c.par_chunks(CHUNK)))
                    .for_each(|(a, (b, c))| {
                        for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                            *a = b + s * c;
                        }
                    })
            });
            black_box(&mut raw_a);
        })
    });
    group.finish();
}

fn dot(c: &mut Criterion) {
    let mut group = c.benchmark_group("numa-dot");
    let (numa, rayon_backend, raw) = spaces();
    let n = 1usize << 24;
    group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
    let (x, y): (NumaView, NumaView) = (
        numa.first_touch_view("x", n, 0.5).expect("x"),
        numa.first_touch_view("y", n, 2.0).expect("y"),
    );
    group.bench_with_input(BenchmarkId::new("numa-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            parallel_reduce(
                "dot",
                (RangePolicy::new(numa.clone(), 0..n), (x.read(), y.read())),
                |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
                Sum::<f64>::new(),
            )
            .expect("dot")
        })
    });
    let (hx, hy) = (
        View::<f64, 1>::from_slice("x", [n], &vec![0.5; n]).expect("x"),
        View::<f64, 1>::from_slice("y", [n], &vec![2.0; n]).expect("y"),
    );
    group.bench_with_input(BenchmarkId::new("numa-rayon-backend", n), &n, |bench, &n| {
        bench.iter(|| {
            parallel_reduce(
                "dot",
                (
                    RangePolicy::new(rayon_backend.clone(), 0..n),
                    (hx.read(), hy.read()),
                ),
                |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
                Sum::<f64>::new(),
            )
            .expect("dot")
        })
    });
    let (raw_x, raw_y) = (vec![0.5f64; n], vec![2.0f64; n]);
    group.bench_with_input(BenchmarkId::new("numa-raw-par-iter-sum", n), &n, |bench, _| {
        bench.iter(|| raw.install(|| raw_x.par_iter().zip(&raw_y).map(|(x, y)| x * y).sum::<f64>()))
    });
    group.finish();
}

/// An empty launch of one index per thread on node 0's pool.
fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("numa-empty-dispatch");
    let numa = NumaSpace::new().expect("NUMA pools");
    let node = numa.node(0).expect("node 0");
    let n = node.concurrency();
    let rayon_backend = RayonSpace::with_threads(n).expect("a rayon-backend pool");
    let raw = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("a rayon pool");
    group.bench_function(BenchmarkId::new("numa-hoplite", n), |bench| {
        bench.iter(|| {
            parallel_for("empty", RangePolicy::new(node.clone(), 0..n), |i| {
                black_box(i);
            })
        })
    });
    group.bench_function(BenchmarkId::new("numa-rayon-backend", n), |bench| {
        bench.iter(|| {
            parallel_for("empty", RangePolicy::new(rayon_backend.clone(), 0..n), |i| {
                black_box(i);
            })
        })
    });
    group.bench_function(BenchmarkId::new("numa-raw-install", n), |bench| {
        bench.iter(|| {
            raw.install(|| {
                (0..n).into_par_iter().for_each(|i| {
                    black_box(i);
                })
            })
        })
    });
    group.finish();
}

criterion_group!(benches, triad, dot, dispatch);
criterion_main!(benches);
