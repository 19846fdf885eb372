//! The implicit DAG runtime's costs, each beside its baseline in the same run.
//!
//! * `dag-vertex` — per-vertex overhead: 1000 launches of an empty one-iteration kernel with
//!   four view arguments (one writer, three readers: a chain on one stream), then one
//!   `synchronize`, against 1000 eager launches of the same kernel with the same handles.
//!   Per-vertex overhead = (hoplite - eager) / 1000.
//! * `dag-branches` — four independent branches of three medium kernels each (a 3x3 box blur
//!   of a 512x512 plane, then two more over the previous output) and a final combine: async on
//!   partitions of the pool (one stream each) against sync (every launch waits) on the whole
//!   pool, and against the same launches made eagerly.
//! * `dag-record` — a 64-vertex DAG of tiny kernels (four chains of 16 bumps over views of
//!   their own): recorded once into a graph and replayed per iteration, against launching the
//!   same 64 vertices through a context (and synchronizing) per iteration.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite_core::{BoundReader, LayoutRight, MDRangePolicy, MdIdx, RangePolicy, View, parallel_for};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, Execution};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

const LAUNCHES: usize = 1000;

fn vertex_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("dag-vertex");
    let views: Vec<View<f64, 1>> = (0..4)
        .map(|k| View::new(&format!("v{k}"), [1]).expect("view"))
        .collect();
    let [a, b, cc, d] = [&views[0], &views[1], &views[2], &views[3]];
    let range = RangePolicy::new(Serial::default(), 0..1);
    let ctx = Context::new(
        vec![HostDevice::new("cpu", vec![Serial::default()]).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    group.bench_function(BenchmarkId::new("serial-hoplite", LAUNCHES), |bench| {
        bench.iter(|| {
            for _ in 0..LAUNCHES {
                ctx.launch(
                    "empty",
                    (range.clone(), (a.write(), b.read(), cc.read(), d.read())),
                    |(i, (a, b, c, d))| {
                        black_box((i, a, b, c, d));
                    },
                )
                .expect("launch");
            }
            ctx.synchronize().expect("synchronize");
        });
    });
    group.bench_function(BenchmarkId::new("serial-eager", LAUNCHES), |bench| {
        bench.iter(|| {
            for _ in 0..LAUNCHES {
                parallel_for(
                    "empty",
                    (range.clone(), (a.write(), b.read(), cc.read(), d.read())),
                    |(i, (a, b, c, d))| {
                        black_box((i, a, b, c, d));
                    },
                )
                .expect("launch");
            }
        });
    });
    group.finish();
}

const SIDE: usize = 512;
const BRANCHES: usize = 4;
const DEPTH: usize = 3;

/// The 3x3 box blur of `p` at `ij`: the work of one point of every blur kernel.
#[inline(always)]
fn box_blur<'it>(p: &BoundReader<'it, f32, 2, LayoutRight>, ij: MdIdx<'it, 2>) -> f32 {
    let mut sum = 0.0;
    for dy in -1..=1 {
        for dx in -1..=1 {
            sum += p.neighbor(ij, [dy, dx]);
        }
    }
    sum / 9.0
}

/// Four branches of `DEPTH` blurs each, then a combine of their last planes.
fn branches(ctx: &Context<HostDevice<RayonSpace>>, planes: &[Vec<View<f32, 2>>], out: &View<f32, 2>) {
    let interior = MDRangePolicy::new(RayonSpace::default(), [1, 1], [SIDE - 1, SIDE - 1]);
    for branch in planes {
        for step in 1..branch.len() {
            ctx.launch(
                "blur",
                (interior.clone(), (branch[step].write(), branch[step - 1].read())),
                |(ij, (o, p))| o.set(ij, box_blur(&p, ij)),
            )
            .expect("blur");
        }
    }
    let last = |b: usize| planes[b][DEPTH].read();
    ctx.launch(
        "combine",
        (interior, (out.write(), last(0), last(1), last(2), last(3))),
        |(ij, (o, a, b, c, d))| o.set(ij, a.get(ij) + b.get(ij) + c.get(ij) + d.get(ij)),
    )
    .expect("combine");
    black_box(ctx.read(out).expect("out").get([SIDE / 2, SIDE / 2]));
}

fn branch_overlap(c: &mut Criterion) {
    let mut group = c.benchmark_group("dag-branches");
    group.measurement_time(Duration::from_secs(4));
    let space = RayonSpace::default();
    let planes: Vec<Vec<View<f32, 2>>> = (0..BRANCHES)
        .map(|b| {
            (0..=DEPTH)
                .map(|k| {
                    View::from_slice(&format!("p{b}.{k}"), [SIDE, SIDE], &vec![1.0; SIDE * SIDE])
                        .expect("plane")
                })
                .collect()
        })
        .collect();
    let out: View<f32, 2> = View::new("out", [SIDE, SIDE]).expect("out");
    let parts = space
        .partition_space(BRANCHES.min(hoplite_core::ExecutionSpace::concurrency(&space)))
        .expect("parts");
    let async_ctx = Context::new(
        vec![HostDevice::new("cpu", parts).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    let sync_ctx = Context::new(
        vec![HostDevice::new("cpu", vec![space.clone()]).expect("device")],
        ContextOptions::default().execution(Execution::Sync),
    )
    .expect("context");
    group.bench_function(BenchmarkId::new("rayon-hoplite", SIDE), |bench| {
        bench.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                branches(&async_ctx, &planes, &out);
            }
            t.elapsed()
        });
    });
    group.bench_function(BenchmarkId::new("rayon-eager", SIDE), |bench| {
        let interior = MDRangePolicy::new(space.clone(), [1, 1], [SIDE - 1, SIDE - 1]);
        bench.iter(|| {
            for branch in &planes {
                for step in 1..branch.len() {
                    parallel_for(
                        "blur",
                        (interior.clone(), (branch[step].write(), branch[step - 1].read())),
                        |(ij, (o, p))| o.set(ij, box_blur(&p, ij)),
                    )
                    .expect("blur");
                }
            }
            let last = |b: usize| planes[b][DEPTH].read();
            parallel_for(
                "combine",
                (
                    interior.clone(),
                    (out.write(), last(0), last(1), last(2), last(3)),
                ),
                |(ij, (o, a, b, c, d))| o.set(ij, a.get(ij) + b.get(ij) + c.get(ij) + d.get(ij)),
            )
            .expect("combine");
            black_box(out.host_read().expect("out").get([SIDE / 2, SIDE / 2]));
        });
    });
    group.bench_function(BenchmarkId::new("rayon-sync", SIDE), |bench| {
        bench.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                branches(&sync_ctx, &planes, &out);
            }
            t.elapsed()
        });
    });
    group.finish();
}

const CHAINS: usize = 4;
const CHAIN: usize = 16;

fn record_replay(c: &mut Criterion) {
    let mut group = c.benchmark_group("dag-record");
    let views: Vec<View<u64, 1>> = (0..CHAINS)
        .map(|k| View::new(&format!("c{k}"), [1]).expect("view"))
        .collect();
    let range = RangePolicy::new(Serial::default(), 0..1);
    let ctx = Context::new(
        vec![HostDevice::new("cpu", vec![Serial::default(); CHAINS]).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    let mut graph = ctx
        .record(&Serial::default(), |r| {
            for _ in 0..CHAIN {
                for v in &views {
                    r.launch("bump", (range.clone(), (v.write(),)), |(i, (v,))| {
                        v.set(i, v.get(i) + 1)
                    });
                }
            }
        })
        .expect("record");
    group.bench_function(BenchmarkId::new("serial-hoplite", CHAINS * CHAIN), |bench| {
        bench.iter(|| graph.submit().expect("submit"));
    });
    group.bench_function(BenchmarkId::new("serial-implicit", CHAINS * CHAIN), |bench| {
        bench.iter(|| {
            for _ in 0..CHAIN {
                for v in &views {
                    ctx.launch("bump", (range.clone(), (v.write(),)), |(i, (v,))| {
                        v.set(i, v.get(i) + 1)
                    })
                    .expect("launch");
                }
            }
            ctx.synchronize().expect("synchronize");
        });
    });
    group.finish();
}

criterion_group!(benches, vertex_overhead, branch_overlap, record_replay);
criterion_main!(benches);
