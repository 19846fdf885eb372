//! Graph submit vs eager launches of tiny kernels: a 64-node chain and a 2 x 32 fan-out
//! (root -> 32 nodes -> join -> 32 nodes), 1000 runs per iteration, on serial and rayon.
//!
//! Each kernel is one iteration that bumps the node's own counter (a relaxed load and store on
//! a 128-byte-aligned cell, no locked instruction), so the time per node is the launch
//! overhead. Per-node counters keep the measurement about launches: with one shared counter,
//! every node did a locked add on the same address, and a node whose data happened to share
//! its low 12 address bits with that counter (4K aliasing) waited on the locked add, so the
//! result depended on the heap layout of each process. The eager baseline bumps the same
//! counters. A second baseline, `eager-boxed`, launches the same kernels from a list of boxed
//! closures, as a program that keeps its kernels in a table does. Per-node overhead = time per iteration / (1000 * 64). A third group,
//! `graph-chain-64-handles`, gives every node a writer handle (`(policy, (y.write(),))`), so
//! each run also borrows the view, as an eager launch does.
//!
//! `graph-build-1000` measures construction: building a graph of [`BUILD`] one-iteration
//! nodes (a chain, or a fan-out from the root joined by one `when_all`), with its policy
//! validation, `instantiate` (the race check and the schedule) and dropping it, as a program
//! that rebuilds its graph when the shape changes pays it. The `-views` shapes give every node
//! a handle (the chain writes one view, the fan-out reads one), so the race check has accesses
//! to compare. Per-node cost = time per iteration / [`BUILD`].

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite_core::{ParallelFor, RangePolicy, View, parallel_for};
use hoplite_graph::{Graph, GraphSpace, NodeRef, create_graph};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

const RUNS: usize = 1000;
const CHAIN: usize = 64;
const WIDTH: usize = 32;
/// Nodes of the construction benchmark's graphs.
const BUILD: usize = 1000;

/// A node's counter, alone on its cache lines (128 bytes: adjacent-line prefetch pairs lines).
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    /// One node's work: a load and a store, no lock prefix (a node never runs concurrently with
    /// itself: graph runs are ordered by the fence of each submit).
    #[inline]
    fn bump(&self) {
        self.0
            .store(self.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// One counter per node, each its own allocation.
fn counters(nodes: usize) -> Vec<Arc<Counter>> {
    (0..nodes).map(|_| Arc::new(Counter::default())).collect()
}

fn chain<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &[Arc<Counter>]) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for hit in hits {
            let h = hit.clone();
            last = last
                .then_parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| h.bump())
                .erase();
        }
    })
    .expect("chain graph");
    graph.instantiate().expect("instantiate");
    graph
}

fn fanout<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &[Arc<Counter>]) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut from = g.root();
        for half in hits.chunks(WIDTH) {
            let mut wave = Vec::with_capacity(WIDTH);
            for hit in half {
                let h = hit.clone();
                wave.push(
                    from.then_parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| h.bump())
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
fn chain_with_handles<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, y: &View<u64, 1>) -> Graph<S> {
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

fn eager<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, hits: &[Arc<Counter>]) {
    for hit in hits {
        let h: &Counter = hit;
        parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), |_i| h.bump()).expect("launch");
    }
}

/// The eager launches as a program that keeps its kernels in a list of boxed closures (an
/// operator list, a plugin table): each launch is one indirect call that cannot inline.
type EagerLaunch = Box<dyn Fn() -> hoplite_core::Result<()>>;

fn eager_launch_list<S: GraphSpace + ParallelFor<RangePolicy<S>>>(
    space: &S,
    hits: &[Arc<Counter>],
) -> Vec<EagerLaunch> {
    hits.iter()
        .map(|hit| {
            let (space, h) = (space.clone(), hit.clone());
            Box::new(move || parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), |_i| h.bump()))
                as EagerLaunch
        })
        .collect()
}

/// A benchmark group with the settings every group here uses.
fn group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g
}

/// Benchmarks `RUNS` calls of `run` as `<prefix>-<name>`.
fn bench_runs(g: &mut BenchmarkGroup<'_, WallTime>, prefix: &str, name: &str, mut run: impl FnMut()) {
    g.bench_function(BenchmarkId::new(format!("{prefix}-{name}"), RUNS), |b| {
        b.iter(|| {
            for _ in 0..RUNS {
                run();
            }
        })
    });
}

fn bench_space<S: GraphSpace + ParallelFor<RangePolicy<S>>>(c: &mut Criterion, prefix: &str, space: S) {
    let hits = counters(CHAIN);
    debug_assert_eq!(CHAIN, 2 * WIDTH, "both shapes have 64 nodes");
    for (name, make) in [
        (
            "graph-chain-64",
            chain::<S> as fn(&S, &[Arc<Counter>]) -> Graph<S>,
        ),
        ("graph-fanout-2x32", fanout::<S>),
    ] {
        let mut g = group(c, name);
        let mut graph = make(&space, &hits);
        bench_runs(&mut g, prefix, "hoplite", || graph.submit().expect("submit"));
        bench_runs(&mut g, prefix, "eager", || eager(&space, &hits));
        let launches = eager_launch_list(&space, &hits);
        bench_runs(&mut g, prefix, "eager-boxed", || {
            for launch in &launches {
                launch().expect("launch");
            }
        });
        g.finish();
    }
    black_box(hits.iter().map(|h| h.0.load(Ordering::Relaxed)).sum::<u64>());

    let y: View<u64, 1> = View::new("y", [1]).expect("y");
    let mut g = group(c, "graph-chain-64-handles");
    let mut graph = chain_with_handles(&space, &y);
    bench_runs(&mut g, prefix, "hoplite", || graph.submit().expect("submit"));
    bench_runs(&mut g, prefix, "eager", || {
        for _ in 0..CHAIN {
            parallel_for(
                "tiny",
                (RangePolicy::new(space.clone(), 0..1), (y.write(),)),
                |(i, (y,))| y.set(i, y.get(i) + 1),
            )
            .expect("launch");
        }
    });
    g.finish();
}

/// Builds and instantiates a chain of `BUILD` nodes.
fn build_chain<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for k in 0..BUILD {
            last = last
                .then_parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| {
                    black_box(k);
                })
                .erase();
        }
    })
    .expect("chain graph");
    graph.instantiate().expect("instantiate");
    graph
}

/// Builds and instantiates `BUILD - 1` nodes after the root, joined by one `when_all`.
fn build_fanout<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let nodes: Vec<NodeRef<'_, S>> = (0..BUILD - 1)
            .map(|k| {
                g.parallel_for("tiny", RangePolicy::new(space.clone(), 0..1), move |_i| {
                    black_box(k);
                })
                .erase()
            })
            .collect();
        g.when_all(nodes);
    })
    .expect("fan-out graph");
    graph.instantiate().expect("instantiate");
    graph
}

/// As [`build_chain`], every node writing `y`.
fn build_chain_views<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, y: &View<u64, 1>) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for _ in 0..BUILD {
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

/// As [`build_fanout`], every node reading `x`.
fn build_fanout_views<S: GraphSpace + ParallelFor<RangePolicy<S>>>(space: &S, x: &View<u64, 1>) -> Graph<S> {
    let mut graph = create_graph(space, |g| {
        let nodes: Vec<NodeRef<'_, S>> = (0..BUILD - 1)
            .map(|_| {
                g.parallel_for(
                    "tiny",
                    (RangePolicy::new(space.clone(), 0..1), (x.read(),)),
                    |(i, (x,))| {
                        black_box(x.get(i));
                    },
                )
                .erase()
            })
            .collect();
        g.when_all(nodes);
    })
    .expect("fan-out graph");
    graph.instantiate().expect("instantiate");
    graph
}

fn bench_build<S: GraphSpace + ParallelFor<RangePolicy<S>>>(c: &mut Criterion, prefix: &str, space: S) {
    let views: View<u64, 1> = View::new("v", [1]).expect("v");
    let mut g = group(c, "graph-build-1000");
    g.bench_function(BenchmarkId::new(format!("{prefix}-chain"), BUILD), |b| {
        b.iter(|| build_chain(&space))
    });
    g.bench_function(BenchmarkId::new(format!("{prefix}-fanout"), BUILD), |b| {
        b.iter(|| build_fanout(&space))
    });
    g.bench_function(BenchmarkId::new(format!("{prefix}-chain-views"), BUILD), |b| {
        b.iter(|| build_chain_views(&space, &views))
    });
    g.bench_function(BenchmarkId::new(format!("{prefix}-fanout-views"), BUILD), |b| {
        b.iter(|| build_fanout_views(&space, &views))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_build(c, "serial", Serial::default());
    bench_build(c, "rayon", RayonSpace::default());
    bench_space(c, "serial", Serial::default());
    bench_space(c, "rayon", RayonSpace::default());
}

criterion_group!(graph_benches, benches);
criterion_main!(graph_benches);
