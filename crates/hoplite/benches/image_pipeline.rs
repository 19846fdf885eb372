//! `image-pipeline`: GrCUDA's image pipeline (its benchmark 8, `common/image.rs`) at 2048²,
//! where the kernels dominate, launched through the implicit DAG and eagerly, in one run.
//!
//! * `rayon-hoplite` — async: vertices on two streams that both launch on the whole pool;
//! * `rayon-partitions` — async: vertices on two streams, each on its half of the pool's
//!   threads (the branches overlap, each kernel on fewer threads);
//! * `rayon-sync` — every launch waits (synchronous execution);
//! * `rayon-eager` — the same launches with `parallel_for` (the baseline).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite::RayonSpace;
use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions, Execution};
use hoplite::prelude::*;

#[path = "common/image.rs"]
mod image;

use image::{Eager, Images, pipeline};

const SIDE: usize = 2048;

fn image_pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("image-pipeline");
    group.sample_size(10);
    let space = RayonSpace::default();
    let images = Images::new(SIDE).expect("images");
    let interior = MDRangePolicy::new(space.clone(), [3, 3], [SIDE - 3, SIDE - 3]);
    let streams = space.concurrency().clamp(1, 4);
    let on_pool = Context::new(
        vec![HostDevice::new("cpu", vec![space.clone(); streams]).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    let on_parts = Context::new(
        vec![HostDevice::partitioned("cpu", &space, streams).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    let sync = Context::new(
        vec![HostDevice::new("cpu", vec![space.clone()]).expect("device")],
        ContextOptions::default().execution(Execution::Sync),
    )
    .expect("context");
    group.bench_function(BenchmarkId::new("rayon-hoplite", SIDE), |b| {
        b.iter(|| pipeline(&on_pool, &interior, &images).expect("pipeline"))
    });
    group.bench_function(BenchmarkId::new("rayon-partitions", SIDE), |b| {
        b.iter(|| pipeline(&on_parts, &interior, &images).expect("pipeline"))
    });
    group.bench_function(BenchmarkId::new("rayon-sync", SIDE), |b| {
        b.iter(|| pipeline(&sync, &interior, &images).expect("pipeline"))
    });
    group.bench_function(BenchmarkId::new("rayon-eager", SIDE), |b| {
        b.iter(|| pipeline(&Eager, &interior, &images).expect("pipeline"))
    });
    group.finish();
}

criterion_group!(benches, image_pipeline);
criterion_main!(benches);
