//! Graph submit vs eager launches of tiny kernels: a 64-node chain and a 2 x 32 fan-out
//! (root -> 32 nodes -> join -> 32 nodes), 1000 runs per iteration, on serial and rayon.
//!
//! Each kernel is one iteration doing one relaxed atomic add, so the time per node is the
//! launch overhead. Per-node overhead = time per iteration / (1000 * 64). A third group,
//! `graph-chain-64-handles`, gives every node a writer handle (`(policy, (y.write(),))`), so
//! each run also borrows the view, as an eager launch does.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite_core::{ExecutionSpace, ParallelFor, RangePolicy, View, parallel_for};
use hoplite_graph::{Graph, NodeRef, create_graph};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

const RUNS: usize = 1000;
const CHAIN: usize = 64;
const WIDTH: usize = 32;

fn chain<S: ExecutionSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &Arc<AtomicU64>) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for _ in 0..CHAIN {
            let h = hits.clone();
            last = last
                .then_parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| {
                    h.fetch_add(1, Ordering::Relaxed);
                })
                .erase();
        }
    })
    .expect("chain graph");
    graph.instantiate().expect("instantiate");
    graph
}

fn fanout<S: ExecutionSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &Arc<AtomicU64>) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut from = g.root();
        for _ in 0..2 {
            let mut wave = Vec::with_capacity(WIDTH);
            for _ in 0..WIDTH {
                let h = hits.clone();
                wave.push(
                    from.then_parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| {
                        h.fetch_add(1, Ordering::Relaxed);
                    })
                    .erase(),
                );
            }
            from = g.when_all(wave).erase();
        }
    })
    .expect("fan-out graph");
    graph.instantiate().expect("instantiate");
    graph
}

/// A chain whose nodes each take a writer handle: every run re-borrows the view, as an eager
/// launch does.
fn chain_with_handles<S: ExecutionSpace + ParallelFor<RangePolicy<S>>>(
    space: &S,
    y: &View<u64, 1>,
) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for _ in 0..CHAIN {
            last = last
                .then_parallel_for(
                    "tiny",
                    (RangePolicy::new(space.clone(), 0..1), (y.write(),)),
                    |(i, (y,))| y.set(i, y.get(i) + 1),
                )
                .erase();
        }
    })
    .expect("chain graph");
    graph.instantiate().expect("instantiate");
    graph
}

fn eager<S: ExecutionSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &AtomicU64, nodes: usize) {
    for _ in 0..nodes {
        parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), |_i| {
            hits.fetch_add(1, Ordering::Relaxed);
        })
        .expect("launch");
    }
}

fn bench_space<S: ExecutionSpace + ParallelFor<RangePolicy<S>>>(c: &mut Criterion, prefix: &str, space: S) {
    let hits = Arc::new(AtomicU64::new(0));
    for (group, make) in [
        (
            "graph-chain-64",
            chain::<S> as fn(&S, &Arc<AtomicU64>) -> Graph<S>,
        ),
        ("graph-fanout-2x32", fanout::<S>),
    ] {
        let mut g = c.benchmark_group(group);
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        let mut graph = make(&space, &hits);
        g.bench_with_input(
            BenchmarkId::new(format!("{prefix}-hoplite"), RUNS),
            &RUNS,
            |b, &runs| {
                b.iter(|| {
                    for _ in 0..runs {
                        graph.submit().expect("submit");
                    }
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new(format!("{prefix}-eager"), RUNS),
            &RUNS,
            |b, &runs| {
                b.iter(|| {
                    for _ in 0..runs {
                        eager(&space, &hits, 2 * WIDTH);
                    }
                })
            },
        );
        g.finish();
    }
    black_box(hits.load(Ordering::Relaxed));

    let y: View<u64, 1> = View::new("y", [1]).expect("y");
    let mut g = c.benchmark_group("graph-chain-64-handles");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let mut graph = chain_with_handles(&space, &y);
    g.bench_with_input(
        BenchmarkId::new(format!("{prefix}-hoplite"), RUNS),
        &RUNS,
        |b, &runs| {
            b.iter(|| {
                for _ in 0..runs {
                    graph.submit().expect("submit");
                }
            })
        },
    );
    g.bench_with_input(
        BenchmarkId::new(format!("{prefix}-eager"), RUNS),
        &RUNS,
        |b, &runs| {
            b.iter(|| {
                for _ in 0..runs {
                    for _ in 0..CHAIN {
                        parallel_for(
                            "tiny",
                            (RangePolicy::new(space.clone(), 0..1), (y.write(),)),
                            |(i, (y,))| y.set(i, y.get(i) + 1),
                        )
                        .expect("launch");
                    }
                }
            })
        },
    );
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_space(c, "serial", Serial::default());
    bench_space(c, "rayon", RayonSpace::default());
}

criterion_group!(graph_benches, benches);
criterion_main!(graph_benches);
