//! Dynamic selection (oneDPL's): a policy picks, for each submission, the execution-space
//! instance it runs on. A batch of jobs of uneven sizes goes to partitions of the thread pool,
//! first round robin, then to the least-loaded partition, from several host threads at once;
//! every job's result is checked. Then auto-tuning picks, for one kind of job, the faster of a
//! one-partition instance and the whole pool, after a few timed trial rounds.
//!
//! `cargo run --release --example selection`

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hoplite::prelude::*;
use hoplite::select::{AutoTune, DynamicLoad, Policy, RoundRobin, submit_and_wait};
use hoplite::{RayonSpace, kernel};

/// The sum of the square roots of the indices.
#[kernel]
fn sqrt_sum(i: Idx<'_>, acc: &mut f64) {
    *acc += (*i as f64).sqrt();
}

/// One job: the sum over `0..n` on `space`, and which instance ran it.
fn job(space: &RayonSpace, n: usize) -> (Result<f64>, u64) {
    let sum = parallel_reduce(
        "job",
        RangePolicy::new(space.clone(), 0..n),
        sqrt_sum::with(),
        Sum::new(),
    );
    (sum, space.instance_id())
}

/// What the job must give, summed on the host.
fn expected(n: usize) -> f64 {
    (0..n).map(|i| (i as f64).sqrt()).sum()
}

/// Runs `sizes` through `policy` from `threads` host threads; checks every result and returns
/// how many jobs each instance ran (by instance id).
fn run_batch<L>(
    policy: &Policy<L, RayonSpace>,
    sizes: &[usize],
    threads: usize,
) -> std::result::Result<Vec<(u64, usize)>, Box<dyn std::error::Error + Send + Sync>>
where
    L: hoplite::select::KeyFor<fn(&RayonSpace, usize) -> (Result<f64>, u64), usize>,
{
    let next = AtomicUsize::new(0);
    let ran = Mutex::new(std::collections::BTreeMap::<u64, usize>::new());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(
                    || -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
                        while let Some(&n) = sizes.get(next.fetch_add(1, Ordering::Relaxed)) {
                            let f: fn(&RayonSpace, usize) -> (Result<f64>, u64) = job;
                            let (sum, instance) = submit_and_wait(policy, f, n)?;
                            let (got, want) = (sum?, expected(n));
                            assert!((got - want).abs() <= 1e-9 * want, "job of {n}: {got}, not {want}");
                            *ran.lock()
                                .map_err(|_| "a worker panicked")?
                                .entry(instance)
                                .or_default() += 1;
                        }
                        Ok(())
                    },
                )
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| "a worker panicked")?)
    })?;
    let ran = ran.into_inner().map_err(|_| "a worker panicked")?;
    Ok(ran.into_iter().collect())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let whole = RayonSpace::default();
    let parts = whole.partition_space(whole.concurrency().clamp(2, 4))?;
    let sizes: Vec<usize> = (0..24).map(|k| (k % 6 + 1) * 50_000).collect();

    for (name, ran) in [
        (
            "round robin",
            run_batch(
                &RoundRobin::<RayonSpace>::with_resources(parts.clone()),
                &sizes,
                parts.len(),
            )?,
        ),
        (
            "dynamic load",
            run_batch(
                &DynamicLoad::<RayonSpace>::with_resources(parts.clone()),
                &sizes,
                parts.len(),
            )?,
        ),
    ] {
        let total: usize = ran.iter().map(|(_, jobs)| jobs).sum();
        assert_eq!(total, sizes.len(), "{name}: every job ran once");
        println!(
            "{name}: {} jobs over {} partitions, jobs per instance {ran:?}",
            total,
            parts.len()
        );
    }

    // Auto-tuning: each resource is tried in trial rounds, then the fastest is used.
    let tune = AutoTune::<RayonSpace>::with_resources(vec![parts[0].clone(), whole.clone()]);
    let t = Instant::now();
    let mut chosen = Vec::new();
    for _ in 0..12 {
        let (sum, instance) = submit_and_wait(&tune, job, 1 << 21)?;
        sum?;
        chosen.push(instance);
    }
    let settled = chosen[chosen.len() - 4..]
        .iter()
        .all(|&i| i == chosen[chosen.len() - 1]);
    assert!(settled, "auto-tuning settles on one resource: {chosen:?}");
    println!(
        "auto-tune between a {}-thread partition (instance {}) and the {}-thread pool (instance {}): picks {chosen:?} in {:.1} ms",
        parts[0].concurrency(),
        parts[0].instance_id(),
        whole.concurrency(),
        whole.instance_id(),
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
