//! Overhead of select + submit + wait per call, for each policy, against calling the function
//! directly, on serial instances (whose fence is free), so the difference is the policy's and
//! the backend's own cost.
//!
//! `select-async-overlap`: eight equal independent tasks (a compute-bound `parallel_reduce`
//! each) submitted with `submit_async` round robin over two one-thread partitions of a rayon
//! pool, then the submission group waited on (`rayon-hoplite`), against the same eight run one
//! after another on one partition (`rayon-sequential`): what asynchronous submission overlaps.
//!
//! Ids follow `<backend>-hoplite` / `<backend>-<baseline>` within a group so that
//! `cargo xtask bench` can pair each hoplite measurement with its baseline.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite_core::{RangePolicy, Sum, parallel_reduce};
use hoplite_rayon::RayonSpace;
use hoplite_select::{
    AutoTune, Backend, DynamicLoad, FixedResource, KeyFor, Policy, RoundRobin, submit, submit_async,
};
use hoplite_serial::Serial;

fn work(_: &Serial, x: u64) -> u64 {
    black_box(x).wrapping_mul(3).wrapping_add(1)
}

fn overhead<L, B>(c: &mut Criterion, group: &str, policy: &Policy<L, Serial, B>)
where
    L: KeyFor<fn(&Serial, u64) -> u64, u64>,
    B: Backend<Resource = Serial>,
{
    let f: fn(&Serial, u64) -> u64 = work;
    let mut g = c.benchmark_group(group);
    g.bench_function(BenchmarkId::new("host-hoplite", 1), |b| {
        let mut x = 0u64;
        b.iter(|| {
            let s = submit(policy, f, black_box(x)).expect("submit");
            s.wait().expect("wait");
            x = s.unwrap();
        })
    });
    let space = Serial::new();
    g.bench_function(BenchmarkId::new("host-direct-call", 1), |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = f(black_box(&space), black_box(x));
        })
    });
    g.finish();
}

fn spaces() -> Vec<Serial> {
    (0..4).map(|_| Serial::new()).collect()
}

fn policies(c: &mut Criterion) {
    overhead(c, "select-round-robin", &RoundRobin::new(spaces()));
    overhead(
        c,
        "select-fixed-resource",
        &FixedResource::new(spaces()).with_offset(1),
    );
    overhead(c, "select-dynamic-load", &DynamicLoad::new(spaces()));
    overhead(c, "select-auto-tune", &AutoTune::new(spaces()));
}

/// One task: a compute-bound sum over `0..TASK_POINTS` on `part` (about a millisecond on one
/// core).
const TASK_POINTS: usize = 400_000;
const TASKS: usize = 8;

fn task(part: &RayonSpace) -> f64 {
    parallel_reduce(
        "task",
        RangePolicy::new(part.clone(), 0..TASK_POINTS),
        |i, acc: &mut f64| {
            let x = *i as f64;
            *acc += (x * 1e-6).sin() * (x * 1e-6).cos();
        },
        Sum::new(),
    )
    .expect("the task runs")
}

fn async_overlap(c: &mut Criterion) {
    let parts = RayonSpace::with_threads(2)
        .and_then(|pool| pool.partition_space(2))
        .expect("two one-thread partitions");
    let policy = RoundRobin::new(parts.clone());
    let want = task(&parts[0]);
    let mut g = c.benchmark_group("select-async-overlap");
    g.sample_size(20);
    g.bench_function(BenchmarkId::new("rayon-hoplite", TASKS), |b| {
        b.iter(|| {
            let submissions: Vec<_> = (0..TASKS)
                .map(|_| submit_async(&policy, |part, ()| task(part), ()).expect("queued"))
                .collect();
            for s in submissions {
                assert_eq!(s.unwrap().expect("ran"), want);
            }
        })
    });
    g.bench_function(BenchmarkId::new("rayon-sequential", TASKS), |b| {
        b.iter(|| {
            for _ in 0..TASKS {
                assert_eq!(black_box(task(&parts[0])), want);
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = policies, async_overlap
}
criterion_main!(benches);
