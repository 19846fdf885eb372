//! Overhead of select + submit + wait per call, for each policy, against calling the function
//! directly, on serial instances (whose fence is free), so the difference is the policy's and
//! the backend's own cost.
//!
//! Ids follow `<backend>-hoplite` / `<backend>-<baseline>` within a group so that
//! `cargo xtask bench` can pair each hoplite measurement with its baseline.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite_select::{AutoTune, Backend, DynamicLoad, FixedResource, KeyFor, Policy, RoundRobin, submit};
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

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = policies
}
criterion_main!(benches);
