//! A signal-processing pipeline through the implicit DAG: five launches written one after
//! another, as if eager; the context infers from their handles that the two filters are
//! independent branches, runs them side by side on partitions of the pool, and joins them.
//! It prints the DAG in DOT, writes a Chrome/Perfetto trace of the run, and checks the result
//! against the same launches made eagerly.
//!
//! `cargo run --release --example dag_pipeline` (the trace goes to
//! `target/dag_pipeline_trace.json`; open it in ui.perfetto.dev)

use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};

#[path = "common/filters.rs"]
mod filters;
use filters::{combine, derivative, eager_energy, energy, smooth};

/// `y = (x - mean) / scale`.
#[kernel]
fn normalize(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, mean: f64, scale: f64) {
    y.set(i, (x.get(i) - mean) / scale);
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let n = 1 << 20;
    let signal: Vec<f64> = (0..n)
        .map(|k| ((k % 1000) as f64 * 0.01).sin() * 3.0 + 1.0)
        .collect();
    let x = View::<f64, 1>::from_slice("signal", [n], &signal)?;
    let [norm, low, slope, out] =
        ["normalized", "smoothed", "slope", "out"].map(|l| View::<f64, 1>::new(l, [n]));
    let (norm, low, slope, out) = (norm?, low?, slope?, out?);

    // The context: one device whose streams are partitions of the default pool.
    let space = DefaultExecutionSpace::default();
    let ctx = Context::new(
        vec![HostDevice::partitioned(
            "cpu",
            &space,
            space.concurrency().clamp(1, 4),
        )?],
        ContextOptions::default(),
    )?;
    let all = || RangePolicy::new(space.clone(), 0..n);
    ctx.launch(
        "normalize",
        (all(), (norm.write(), x.read())),
        normalize::with(1.0, 3.0),
    )?;
    ctx.launch("smooth", (all(), (low.write(), norm.read())), smooth::with(8, n))?;
    ctx.launch(
        "derivative",
        (all(), (slope.write(), norm.read())),
        derivative::with(n),
    )?;
    ctx.launch(
        "combine",
        (all(), (out.write(), low.read(), slope.read())),
        combine::with(10.0),
    )?;
    let total = ctx.reduce("energy", (all(), (out.read(),)), energy::with(), Sum::new())?;
    let dag_energy = total.get()?;
    ctx.synchronize()?;

    println!("{}", ctx.to_dot());
    let parents = ctx.parents();
    println!(
        "the two filters only wait for `normalize`: {:?} and {:?}",
        parents[1], parents[2]
    );
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/dag_pipeline_trace.json");
    ctx.write_trace(&trace)?;
    // The trace is Trace Event JSON with every dependency drawn as an arrow.
    let events: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace)?)?;
    let arrows = events["traceEvents"]
        .as_array()
        .map_or(0, |e| e.iter().filter(|e| e["ph"] == "f").count());
    let edges: usize = parents.iter().map(Vec::len).sum();
    assert_eq!(arrows, edges, "one arrow per dependency");
    println!(
        "trace of the run ({edges} dependencies as arrows): {}",
        trace.display()
    );

    // The same launches, eagerly, give the same energy.
    parallel_for(
        "normalize",
        (all(), (norm.write(), x.read())),
        normalize::with(1.0, 3.0),
    )?;
    let eager = eager_energy(&norm, &low, &slope, &out)?;
    let relative = (dag_energy - eager).abs() / eager.abs().max(1.0);
    assert!(relative < 1e-12, "DAG {dag_energy} and eager {eager} differ");
    println!("energy of the filtered signal: {dag_energy:.6} (eager: {eager:.6})");
    Ok(())
}
